#pragma once
// The output types of one op, from its input types (and constant inputs), by
// ONNX's own per-op type and shape inference. Rewrites use it to type the values
// they create; nullopt where the op has no schema or inference cannot tell.
// Inference that rejects the op (its input types or attributes are wrong for it)
// says why in `error`: a rewrite making such an op is refused, not waved through.
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/value.h"

namespace geopt::onnx_io {

struct InferredTypes {
  std::vector<std::optional<ValueType>> types;  // per output
  std::string error;                            // set when inference rejected the op
};

InferredTypes infer_output_types(const std::string& domain, const std::string& op_type,
                                 const std::vector<Attribute>& attributes,
                                 const std::vector<const ValueType*>& input_types,
                                 const std::vector<const Tensor*>& input_constants, size_t num_outputs,
                                 int64_t opset);

}  // namespace geopt::onnx_io
