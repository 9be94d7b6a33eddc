#include "ir/tensor.h"

#include "util/checked_size.h"

#include <cstring>

namespace geopt {

int64_t Tensor::element_count() const {
  return checked_element_count(dims, name.empty() ? "a constant" : "constant '" + name + "'");
}

bool Tensor::same_contents(const Tensor& o) const {
  return dtype == o.dtype && dims == o.dims && strings == o.strings && bytes().size() == o.bytes().size() &&
         (bytes().empty() || std::memcmp(bytes().data(), o.bytes().data(), bytes().size()) == 0);
}

}  // namespace geopt
