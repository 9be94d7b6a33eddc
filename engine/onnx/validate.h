#pragma once
// Wrappers over libonnx's checker and shape inference. Kept in their own
// translation unit: onnx/defs/parser.h (pulled in by shape inference) clashes
// with PEGTL's headers.
#include <onnx/onnx_pb.h>

#include <filesystem>
#include <string>

namespace geopt::onnx_io {

// onnx::checker over the whole model; throws geopt::Error("<file>: <checker message>").
// The model is left as it was (a shapeless input or output gets a shape while it runs).
void run_checker(onnx::ModelProto& model, const std::filesystem::path& model_path);
// Strict type and shape inference; results land in graph.value_info.
void run_shape_inference(onnx::ModelProto& model, const std::filesystem::path& model_path);
// Does libonnx (or a model-local function) define this op at the model's opset?
bool has_schema(const onnx::ModelProto& model, const onnx::NodeProto& node);
// Registers the ai.geopt fused-op schemas, and the standard ops of opsets 18-21 that
// libonnx lacks, with libonnx (idempotent).
void register_geopt_schemas();
// The standard ops new or changed in opsets 18-21 (standard_schemas_18_21.cpp).
void register_standard_schemas_18_21();

}  // namespace geopt::onnx_io
