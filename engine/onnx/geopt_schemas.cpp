// Schemas of geopt's own fused ops (domain ai.geopt, version 1), registered with
// libonnx so that onnx::checker and ONNX shape inference understand optimized
// models. Semantics are documented in docs/OPS.md.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <mutex>

#include "ir/node.h"
#include "onnx/validate.h"

namespace geopt::onnx_io {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

const std::vector<std::string> kFloatTypes = {"tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(double)"};
const std::string kDomain(kGeoptDomain);
constexpr int kVersion = 1;

OpSchema base(const char* name, const char* doc) {
  OpSchema s;
  s.SetName(name).SetDomain(kDomain).SinceVersion(kVersion).SetDoc(doc);
  s.TypeConstraint("T", kFloatTypes, "Floating-point tensors.");
  return s;
}

void same_as_first_input(InferenceContext& ctx) { onnx::propagateShapeAndTypeFromFirstInput(ctx); }

// Runs a standard ONNX op's inference (Conv, MatMul) for a fused op that wraps it.
void infer_like(const char* op, int opset, InferenceContext& ctx) {
  const OpSchema* s = onnx::OpSchemaRegistry::Schema(op, opset);
  if (s && s->GetTypeAndShapeInferenceFunction()) s->GetTypeAndShapeInferenceFunction()(ctx);
}

void add_activation_attrs(OpSchema& s) {
  s.Attr("activation", "Activation applied last: none, Relu, Clip, LeakyRelu, HardSwish, Sigmoid, SiLU, Gelu, Tanh.",
         AttributeProto::STRING, std::string("none"));
  s.Attr("activation_params", "Parameters of the activation (Clip: min, max; LeakyRelu: alpha).",
         AttributeProto::FLOATS, false);
}

void register_all() {
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  if (ranges.Map().count(kDomain) == 0) ranges.AddDomainToVersion(kDomain, kVersion, kVersion);

  auto norm = [](const char* name, const char* doc, float eps, bool has_bias) {
    OpSchema s = base(name, doc);
    s.Attr("axis", "First normalized axis; normalization covers axis..rank-1.", AttributeProto::INT, int64_t{-1});
    s.Attr("epsilon", "Added to the variance (or mean square) before the square root.", AttributeProto::FLOAT, eps);
    s.Input(0, "X", "Input.", "T").Input(1, "Scale", "Scale (gamma), broadcast over the normalized axes.", "T");
    if (has_bias) s.Input(2, "B", "Bias (beta).", "T", OpSchema::Optional);
    s.Output(0, "Y", "Normalized output, same shape as X.", "T");
    s.TypeAndShapeInferenceFunction(same_as_first_input);
    return s;
  };
  onnx::RegisterSchema(norm("LayerNorm", "Y = (X - mean) / sqrt(var + epsilon) * Scale + B over axes axis..-1.", 1e-5f, true));
  onnx::RegisterSchema(norm("RMSNorm", "Y = X / sqrt(mean(X^2) + epsilon) * Scale over axes axis..-1.", 1e-6f, false));

  {
    OpSchema s = base("AddLayerNorm", "S = X + Residual; Y = LayerNorm(S). The sum is an optional second output.");
    s.Attr("axis", "First normalized axis.", AttributeProto::INT, int64_t{-1});
    s.Attr("epsilon", "Added to the variance.", AttributeProto::FLOAT, 1e-5f);
    s.Input(0, "X", "Input.", "T").Input(1, "Residual", "Residual, same shape as X.", "T");
    s.Input(2, "Scale", "Scale (gamma).", "T").Input(3, "B", "Bias (beta).", "T", OpSchema::Optional);
    s.Output(0, "Y", "LayerNorm(X + Residual).", "T").Output(1, "Sum", "X + Residual.", "T", OpSchema::Optional);
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      for (size_t i = 0; i < ctx.getNumOutputs(); ++i) {
        onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
        if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, i);
      }
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = base("Gelu", "Y = 0.5 * X * (1 + erf(X / sqrt(2))), or the tanh approximation.");
    s.Attr("approximate", "none (erf form) or tanh.", AttributeProto::STRING, std::string("none"));
    s.Input(0, "X", "Input.", "T").Output(0, "Y", "Output.", "T");
    s.TypeAndShapeInferenceFunction(same_as_first_input);
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = base("FlashAttention",
                      "Y = softmax(Q K^T * scale + Mask [+ causal mask]) V over the last two axes; "
                      "Q [..., S, D], K [..., T, D], V [..., T, Dv].");
    s.Attr("scale", "Multiplier of Q K^T; 0 means 1/sqrt(D).", AttributeProto::FLOAT, 0.0f);
    s.Attr("causal", "1: position i attends only to positions <= i + (T - S).", AttributeProto::INT, int64_t{0});
    s.Input(0, "Q", "Queries.", "T").Input(1, "K", "Keys.", "T").Input(2, "V", "Values.", "T");
    s.Input(3, "Mask", "Additive mask broadcast to [..., S, T].", "T", OpSchema::Optional);
    s.Output(0, "Y", "Attention output [..., S, Dv].", "T");
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 2)) return;
      onnx::TensorShapeProto shape = ctx.getInputType(0)->tensor_type().shape();
      const auto& v = ctx.getInputType(2)->tensor_type().shape();
      if (shape.dim_size() < 2 || v.dim_size() < 2) fail_shape_inference("FlashAttention needs rank >= 2 inputs");
      *shape.mutable_dim(shape.dim_size() - 1) = v.dim(v.dim_size() - 1);
      onnx::updateOutputShape(ctx, 0, shape);
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = base("FusedConv", "Y = activation(Conv(X, W, B) [+ Z]); Conv attributes as ONNX Conv-11.");
    s.Attr("auto_pad", "As Conv.", AttributeProto::STRING, std::string("NOTSET"));
    s.Attr("dilations", "As Conv.", AttributeProto::INTS, false);
    s.Attr("group", "As Conv.", AttributeProto::INT, int64_t{1});
    s.Attr("kernel_shape", "As Conv.", AttributeProto::INTS, false);
    s.Attr("pads", "As Conv.", AttributeProto::INTS, false);
    s.Attr("strides", "As Conv.", AttributeProto::INTS, false);
    add_activation_attrs(s);
    s.Input(0, "X", "Input.", "T").Input(1, "W", "Weights.", "T").Input(2, "B", "Bias.", "T", OpSchema::Optional);
    s.Input(3, "Z", "Residual added before the activation.", "T", OpSchema::Optional);
    s.Output(0, "Y", "Output.", "T");
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) { infer_like("Conv", 11, ctx); });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = base("FusedMatMul", "Y = activation(MatMul(A, B) + Bias) with ONNX MatMul broadcasting.");
    add_activation_attrs(s);
    s.Input(0, "A", "Left operand.", "T").Input(1, "B", "Right operand.", "T");
    s.Input(2, "Bias", "Bias broadcast to the product.", "T", OpSchema::Optional);
    s.Output(0, "Y", "Output.", "T");
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) { infer_like("MatMul", 13, ctx); });
    onnx::RegisterSchema(std::move(s));
  }
}

}  // namespace

void register_geopt_schemas() {
  static std::once_flag once;
  std::call_once(once, register_all);
}

}  // namespace geopt::onnx_io
