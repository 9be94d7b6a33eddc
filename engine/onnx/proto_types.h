#pragma once
// Conversions between ONNX protobuf types and IR types that import and export share.
#include <onnx/onnx_pb.h>

#include "ir/attribute.h"
#include "ir/value.h"

namespace geopt::onnx_io {

ValueType value_type_from_proto(const onnx::TypeProto& t);
// Returns false when there is nothing known to write (undefined dtype, tensor value).
bool value_type_to_proto(const ValueType& vt, onnx::TypeProto* out);
// Name, dtype, dims, doc and strings; no element bytes.
void tensor_header_to_proto(const Tensor& t, onnx::TensorProto* out);
// All of it, bytes as raw_data.
void tensor_to_proto(const Tensor& t, onnx::TensorProto* out);
void attribute_to_proto(const Attribute& a, onnx::AttributeProto* out);

}  // namespace geopt::onnx_io
