#pragma once
// The output types of one op, from its input types (and constant inputs), by
// ONNX's own per-op type and shape inference. Rewrites use it to type the values
// they create; nullopt where the op has no schema or inference cannot tell.
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/value.h"

namespace geopt::onnx_io {

std::vector<std::optional<ValueType>> infer_output_types(const std::string& domain, const std::string& op_type,
                                                         const std::vector<Attribute>& attributes,
                                                         const std::vector<const ValueType*>& input_types,
                                                         const std::vector<const Tensor*>& input_constants, size_t num_outputs,
                                                         int64_t opset);

}  // namespace geopt::onnx_io
