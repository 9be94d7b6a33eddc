#include "ir/tensor.h"

namespace geopt {

int64_t Tensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

}  // namespace geopt
