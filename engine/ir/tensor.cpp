#include "ir/tensor.h"

#include <cstring>

namespace geopt {

int64_t Tensor::element_count() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

bool Tensor::same_contents(const Tensor& o) const {
  return dtype == o.dtype && dims == o.dims && strings == o.strings && bytes().size() == o.bytes().size() &&
         (bytes().empty() || std::memcmp(bytes().data(), o.bytes().data(), bytes().size()) == 0);
}

}  // namespace geopt
