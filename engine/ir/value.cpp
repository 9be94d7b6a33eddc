#include "ir/value.h"

namespace geopt {

std::string ValueType::to_string() const {
  if (!is_tensor()) return "<non-tensor>";
  return dtype_name(dtype) + (shape ? shape->to_string() : "[*]");
}

}  // namespace geopt
