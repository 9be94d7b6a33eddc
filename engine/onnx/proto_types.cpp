#include "onnx/proto_types.h"

namespace geopt::onnx_io {

ValueType value_type_from_proto(const onnx::TypeProto& t) {
  ValueType vt;
  if (t.value_case() != onnx::TypeProto::kTensorType) {
    if (t.value_case() != onnx::TypeProto::VALUE_NOT_SET) vt.opaque = t.SerializeAsString();
    return vt;
  }
  const auto& tt = t.tensor_type();
  vt.dtype = static_cast<DType>(tt.elem_type());
  if (tt.has_shape()) {
    std::vector<Dim> dims;
    dims.reserve(tt.shape().dim_size());
    for (const auto& d : tt.shape().dim()) {
      if (d.has_dim_value()) dims.emplace_back(d.dim_value());
      else if (d.has_dim_param() && !d.dim_param().empty()) dims.push_back(Dim::symbol(d.dim_param()));
      else dims.emplace_back();
    }
    vt.shape = Shape(std::move(dims));
  }
  return vt;
}

bool value_type_to_proto(const ValueType& vt, onnx::TypeProto* out) {
  if (!vt.is_tensor()) return out->ParseFromString(vt.opaque);
  if (vt.dtype == DType::Undefined && !vt.shape) return false;
  auto* tt = out->mutable_tensor_type();
  tt->set_elem_type(static_cast<int32_t>(vt.dtype));
  if (vt.shape) {
    auto* shape = tt->mutable_shape();
    for (const Dim& d : vt.shape->dims()) {
      auto* pd = shape->add_dim();
      if (d.is_static()) pd->set_dim_value(d.value());
      else if (d.is_symbolic()) pd->set_dim_param(d.symbol_name());
    }
  }
  return true;
}

}  // namespace geopt::onnx_io
