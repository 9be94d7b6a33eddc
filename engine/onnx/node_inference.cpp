#include "onnx/node_inference.h"

#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <climits>

#include "onnx/captures.h"
#include "onnx/proto_types.h"
#include "onnx/validate.h"

namespace geopt::onnx_io {

InferredTypes infer_output_types(const std::string& domain, const std::string& op_type,
                                 const std::vector<Attribute>& attributes,
                                 const std::vector<const ValueType*>& input_types,
                                 const std::vector<const Tensor*>& input_constants, size_t num_outputs,
                                 int64_t opset) {
  // Captured values (trailing inputs named by kCapturesAttr) are geopt's, not ONNX's.
  for (const auto& a : attributes)
    if (a.name == kCapturesAttr && a.strings.size() <= input_types.size()) {
      std::vector<Attribute> own;
      for (const auto& b : attributes)
        if (b.name != kCapturesAttr) own.push_back(b);
      const size_t n = input_types.size() - a.strings.size();
      return infer_output_types(
          domain, op_type, own, {input_types.begin(), input_types.begin() + static_cast<std::ptrdiff_t>(n)},
          {input_constants.begin(),
           input_constants.begin() + static_cast<std::ptrdiff_t>(std::min(n, input_constants.size()))},
          num_outputs, opset);
    }
  InferredTypes result;
  result.types.resize(num_outputs);
  auto& out = result.types;
  register_geopt_schemas();
  const onnx::OpSchema* schema =
      onnx::OpSchemaRegistry::Schema(op_type, static_cast<int>(opset > 0 ? opset : INT_MAX), domain);
  if (!schema || !schema->GetTypeAndShapeInferenceFunction()) return result;
  onnx::NodeProto node;
  node.set_op_type(op_type);
  node.set_domain(domain);
  for (const auto& a : attributes) attribute_to_proto(a, node.add_attribute());
  std::vector<onnx::TypeProto> types(input_types.size());
  std::vector<onnx::TensorProto> data(input_types.size());
  std::unordered_map<std::string, onnx::TypeProto*> types_by_name;
  std::unordered_map<std::string, const onnx::TensorProto*> data_by_name;
  for (size_t i = 0; i < input_types.size(); ++i) {
    if (!input_types[i]) {
      node.add_input("");
      continue;
    }
    std::string name = "in" + std::to_string(i);
    node.add_input(name);
    if (value_type_to_proto(*input_types[i], &types[i])) types_by_name[name] = &types[i];
    // Inference reads the data of shape-like inputs only (shapes, axes, pads, scales,
    // scalars: rank 0 or 1, small); weights are passed by type alone, never copied.
    if (i < input_constants.size() && input_constants[i] && input_constants[i]->dims.size() <= 1 &&
        input_constants[i]->byte_size() <= 4096) {
      tensor_to_proto(*input_constants[i], &data[i]);
      data_by_name[name] = &data[i];
    }
  }
  for (size_t k = 0; k < num_outputs; ++k) node.add_output("out" + std::to_string(k));
  try {
    onnx::shape_inference::InferenceContextImpl ctx(node, types_by_name, data_by_name, {});
    // The inputs' types against the op's type constraints at this opset first (a MaxPool of
    // uint8 before opset 12 is refused here, not left for ONNX Runtime to refuse).
    schema->CheckInputOutputType(ctx);
    schema->GetTypeAndShapeInferenceFunction()(ctx);
    for (size_t k = 0; k < num_outputs; ++k) {
      const onnx::TypeProto* t = ctx.getOutputType(k);
      if (t && t->value_case() != onnx::TypeProto::VALUE_NOT_SET) out[k] = value_type_from_proto(*t);
    }
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  return result;
}

}  // namespace geopt::onnx_io
