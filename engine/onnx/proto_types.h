#pragma once
// Conversions between ONNX protobuf types and IR types that import and export share.
#include <onnx/onnx_pb.h>

#include "ir/value.h"

namespace geopt::onnx_io {

ValueType value_type_from_proto(const onnx::TypeProto& t);
// Returns false when there is nothing known to write (undefined dtype, tensor value).
bool value_type_to_proto(const ValueType& vt, onnx::TypeProto* out);

}  // namespace geopt::onnx_io
