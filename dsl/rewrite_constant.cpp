#include "dsl/rewrite_constant.h"

#include "kernels/cast.h"

namespace geopt::dsl {

std::optional<HostTensor> rewrite_constant(const Replacement& r, const BoundLookup& bound, std::string* why) {
  DType dtype = DType::Undefined;
  if (!r.const_dtype_of.empty()) {
    const ValueType* t = bound.type_of(r.const_dtype_of);
    if (t) dtype = t->dtype;
  } else if (auto d = parse_dtype(r.const_dtype)) {
    dtype = *d;
  }
  if (dtype == DType::Undefined || dtype == DType::String) {
    if (why) *why = "the element type of the constant at " + r.loc.to_string() + " is unknown here";
    return std::nullopt;
  }
  auto values = list_value(r.const_items, bound, why);
  if (!values) return std::nullopt;
  std::vector<int64_t> dims;
  if (r.const_is_list) dims.push_back(static_cast<int64_t>(values->size()));
  HostTensor wide = HostTensor::from_vector(DType::F64, dims, *values);
  return dtype == DType::F64 ? wide : cast_tensor(wide, dtype);
}

}  // namespace geopt::dsl
