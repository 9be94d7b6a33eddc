#include "onnx/proto_types.h"

#include "util/error.h"

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
      if (d.has_dim_value())
        dims.emplace_back(d.dim_value());
      else if (d.has_dim_param() && !d.dim_param().empty())
        dims.push_back(Dim::symbol(d.dim_param()));
      else
        dims.emplace_back();
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
      if (d.is_static())
        pd->set_dim_value(d.value());
      else if (d.is_symbolic())
        pd->set_dim_param(d.symbol_name());
    }
  }
  return true;
}

void tensor_header_to_proto(const Tensor& t, onnx::TensorProto* out) {
  out->set_name(t.name);
  out->set_data_type(static_cast<int32_t>(t.dtype));
  for (int64_t d : t.dims) out->add_dims(d);
  if (!t.doc_string.empty()) out->set_doc_string(t.doc_string);
  for (const auto& s : t.strings) out->add_string_data(s);
}

void tensor_to_proto(const Tensor& t, onnx::TensorProto* out) {
  tensor_header_to_proto(t, out);
  if (t.dtype != DType::String) out->set_raw_data(t.bytes().data(), t.bytes().size());
}

void attribute_to_proto(const Attribute& a, onnx::AttributeProto* out) {
  out->set_name(a.name);
  out->set_type(static_cast<onnx::AttributeProto::AttributeType>(a.kind));
  if (!a.ref_attr_name.empty()) out->set_ref_attr_name(a.ref_attr_name);
  if (!a.doc_string.empty()) out->set_doc_string(a.doc_string);
  auto parse = [&](auto* msg, const std::string& bytes) {
    if (!msg->ParseFromString(bytes))
      throw InternalError("attribute '" + a.name + "' holds a corrupt subgraph");
  };
  switch (a.kind) {
    case AttrKind::Float:
      out->set_f(a.f);
      break;
    case AttrKind::Int:
      out->set_i(a.i);
      break;
    case AttrKind::String:
      out->set_s(a.s);
      break;
    case AttrKind::Floats:
      for (float f : a.floats) out->add_floats(f);
      break;
    case AttrKind::Ints:
      for (int64_t i : a.ints) out->add_ints(i);
      break;
    case AttrKind::Strings:
      for (const auto& s : a.strings) out->add_strings(s);
      break;
    case AttrKind::Tensor:
      tensor_to_proto(*a.tensors.at(0), out->mutable_t());
      break;
    case AttrKind::Tensors:
      for (const auto& t : a.tensors) tensor_to_proto(*t, out->add_tensors());
      break;
    case AttrKind::Graph:
      parse(out->mutable_g(), a.opaque.at(0));
      break;
    case AttrKind::Graphs:
      for (const auto& g : a.opaque) parse(out->add_graphs(), g);
      break;
    case AttrKind::SparseTensor:
      parse(out->mutable_sparse_tensor(), a.opaque.at(0));
      break;
    case AttrKind::SparseTensors:
      for (const auto& s : a.opaque) parse(out->add_sparse_tensors(), s);
      break;
    case AttrKind::TypeProto:
      parse(out->mutable_tp(), a.opaque.at(0));
      break;
    case AttrKind::TypeProtos:
      for (const auto& t : a.opaque) parse(out->add_type_protos(), t);
      break;
    case AttrKind::Undefined:
      throw InternalError("attribute '" + a.name + "' has no type");
  }
}

}  // namespace geopt::onnx_io
