#include "onnx/validate.h"

#include <onnx/checker.h>
#include <onnx/defs/schema.h>
#include <onnx/shape_inference/implementation.h>

#include <unordered_map>

#include "ir/domain.h"
#include "util/error.h"

namespace geopt::onnx_io {
namespace {

std::unordered_map<std::string, int> opset_map(const onnx::ModelProto& model) {
  std::unordered_map<std::string, int> opsets;
  for (const auto& o : model.opset_import())
    opsets[canonical_domain(o.domain())] = static_cast<int>(o.version());
  return opsets;
}

}  // namespace

void run_checker(onnx::ModelProto& model, const std::filesystem::path& model_path) {
  register_geopt_schemas();
  // onnx 1.12's checker wants a shape on every graph input and output; ONNX since 1.13
  // and ONNX Runtime accept a tensor type without one (rank unknown), as exporters
  // write it. Such a type gets an empty shape while the checker runs, and loses it after.
  std::vector<onnx::TypeProto_Tensor*> shapeless;
  for (auto* values : {model.mutable_graph()->mutable_input(), model.mutable_graph()->mutable_output()})
    for (auto& v : *values)
      if (v.type().has_tensor_type() && !v.type().tensor_type().has_shape()) {
        shapeless.push_back(v.mutable_type()->mutable_tensor_type());
        shapeless.back()->mutable_shape();
      }
  struct Restore {
    std::vector<onnx::TypeProto_Tensor*>& types;
    ~Restore() {
      for (auto* t : types) t->clear_shape();
    }
  } restore{shapeless};
  onnx::checker::CheckerContext ctx;
  ctx.set_ir_version(static_cast<int>(model.ir_version()));
  ctx.set_opset_imports(opset_map(model));
  ctx.set_model_dir(model_path.parent_path().string());
  try {
    onnx::checker::LexicalScopeContext lex;
    onnx::checker::check_graph(model.graph(), ctx, lex);
    onnx::checker::check_model_local_functions(model, ctx, lex);
  } catch (const std::exception& e) {
    throw Error(model_path.string() + ": invalid model: " + e.what());
  }
}

void run_shape_inference(onnx::ModelProto& model, const std::filesystem::path& model_path) {
  register_geopt_schemas();
  // check_type: reject type mismatches; error_mode 1: node-level errors throw.
  onnx::ShapeInferenceOptions options(/*check_type=*/true, /*strict_mode=*/1, /*data_prop=*/true);
  try {
    onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(), options);
  } catch (const std::exception& e) {
    throw Error(model_path.string() + ": type/shape inference failed: " + e.what());
  }
}

bool has_schema(const onnx::ModelProto& model, const onnx::NodeProto& node) {
  register_geopt_schemas();
  const std::string domain = canonical_domain(node.domain());
  for (const auto& f : model.functions())
    if (f.name() == node.op_type() && f.domain() == node.domain()) return true;
  auto opsets = opset_map(model);
  auto it = opsets.find(domain);
  if (it == opsets.end()) return false;
  return onnx::OpSchemaRegistry::Schema(node.op_type(), it->second, domain) != nullptr;
}

}  // namespace geopt::onnx_io
