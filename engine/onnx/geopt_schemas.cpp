// Schemas of geopt's own fused ops (domain ai.geopt, version 1), registered with
// libonnx so that onnx::checker and ONNX shape inference understand optimized
// models. Semantics are documented in docs/OPS.md.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <mutex>

#include "ir/auto_pad.h"
#include "ir/node.h"
#include "ir/shape.h"
#include "onnx/schema_helpers.h"
#include "onnx/validate.h"

namespace geopt::onnx_io {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

const std::vector<std::string> kFloatTypes = {"tensor(float)", "tensor(float16)", "tensor(bfloat16)",
                                              "tensor(double)"};

const std::vector<std::string> kNumericTypes = {"tensor(float)",  "tensor(float16)", "tensor(bfloat16)",
                                                "tensor(double)", "tensor(int8)",    "tensor(uint8)",
                                                "tensor(int32)",  "tensor(int64)"};

OpSchema geopt_op(const char* name, const char* doc) {
  OpSchema s;
  s.SetName(name).SetDomain(std::string(kGeoptDomain)).SinceVersion(kGeoptOpsetVersion).SetDoc(doc);
  return s;
}

OpSchema base(const char* name, const char* doc) {
  OpSchema s = geopt_op(name, doc);
  s.TypeConstraint("T", kFloatTypes, "Floating-point tensors.");
  return s;
}

void same_as_first_input(InferenceContext& ctx) { onnx::propagateShapeAndTypeFromFirstInput(ctx); }

// Runs a standard ONNX op's inference (Conv, MatMul) for a fused op that wraps it.
void infer_like(const char* op, int opset, InferenceContext& ctx) {
  const OpSchema* s = onnx::OpSchemaRegistry::Schema(op, opset);
  if (s && s->GetTypeAndShapeInferenceFunction()) s->GetTypeAndShapeInferenceFunction()(ctx);
}

// Output spatial size of a sliding window (ONNX Conv rules; auto_pad SAME/VALID/NOTSET).
int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_total,
                   const std::string& auto_pad) {
  const std::optional<AutoPad> pad = parse_auto_pad(auto_pad);
  if (pad && is_same(*pad)) return (in + stride - 1) / stride;
  if (pad == AutoPad::Valid) pad_total = 0;
  return (in + pad_total - ((k - 1) * dilation + 1)) / stride + 1;
}

// ONNX Conv-11's attributes, for the fused convolutions.
void add_conv_attrs(OpSchema& s) {
  s.Attr("auto_pad", "As Conv.", AttributeProto::STRING, std::string("NOTSET"));
  s.Attr("dilations", "As Conv.", AttributeProto::INTS, false);
  s.Attr("group", "As Conv.", AttributeProto::INT, int64_t{1});
  s.Attr("kernel_shape", "As Conv.", AttributeProto::INTS, false);
  s.Attr("pads", "As Conv.", AttributeProto::INTS, false);
  s.Attr("strides", "As Conv.", AttributeProto::INTS, false);
}

void add_activation_attrs(OpSchema& s) {
  s.Attr("activation",
         "Activation applied last: none, Relu, Clip, LeakyRelu, HardSwish, Sigmoid, SiLU, Mish, QuickGelu, "
         "Gelu, Tanh.",
         AttributeProto::STRING, std::string("none"));
  s.Attr("activation_params", "Parameters of the activation (Clip: min, max; LeakyRelu: alpha).",
         AttributeProto::FLOATS, false);
}

// A normalization over axes axis..rank-1 with a scale (and a bias).
OpSchema norm(const char* name, const char* doc, float eps, bool has_bias) {
  OpSchema s = base(name, doc);
  s.Attr("axis", "First normalized axis; normalization covers axis..rank-1.", AttributeProto::INT,
         int64_t{-1});
  s.Attr("epsilon", "Added to the variance (or mean square) before the square root.", AttributeProto::FLOAT,
         eps);
  s.Input(0, "X", "Input.", "T").Input(1, "Scale", "Scale (gamma), broadcast over the normalized axes.", "T");
  if (has_bias) s.Input(2, "B", "Bias (beta).", "T", OpSchema::Optional);
  s.Output(0, "Y", "Normalized output, same shape as X.", "T");
  s.TypeAndShapeInferenceFunction(same_as_first_input);
  return s;
}

// The int8 Cube ops the QDQ fusion rules make (rules/quantize.gerule): 8-bit operands,
// their products summed exactly in int32, dequantized to a float output.
void add_post_affine_attrs(OpSchema& s) {
  s.Attr("post_scale", "Multiplies the activation's output (a learnable affine block after it, PP-LCNet's).",
         AttributeProto::FLOAT, 1.0f);
  s.Attr("post_shift",
         "Added last, after post_scale and before any requantization; a channel-blocked output's padding "
         "channels keep 0 (or the zero point).",
         AttributeProto::FLOAT, 0.0f);
}

OpSchema quantized_cube_op(const char* name, const char* doc, const char* wrapped, int opset) {
  OpSchema s = geopt_op(name, doc);
  s.TypeConstraint("T1", {"tensor(uint8)", "tensor(int8)"}, "The quantized activation and its zero point.");
  s.TypeConstraint("T2", {"tensor(int8)", "tensor(uint8)"}, "The quantized weight and its zero point.");
  s.TypeConstraint("T", kFloatTypes, "Scales, bias and output.");
  add_activation_attrs(s);
  s.Input(0, "X", "The quantized activation.", "T1").Input(1, "W", "The quantized weight.", "T2");
  s.Input(2, "X_scale", "The activation's scale (one value).", "T")
      .Input(3, "X_zero_point", "The activation's zero point (one value).", "T1");
  s.Input(4, "W_scale", "The weight's scale: one value, or one per output channel.", "T");
  s.Input(5, "W_zero_point", "The weight's zero point: one value, or one per output channel.", "T2");
  s.Input(6, "B", "Float bias, one per output channel.", "T", OpSchema::Optional);
  // Requantization: the next layer's QuantizeLinear of Y, taken into the kernel.
  s.Attr("output_dtype",
         "1 (float, the scales' type): Y as computed. 2 (uint8) or 3 (int8): Y requantized, "
         "saturate(round_half_even(Y / output_scale) + output_zero_point), as QuantizeLinear does.",
         AttributeProto::INT, int64_t{1});
  s.Attr("output_scale", "The requantized output's scale.", AttributeProto::FLOAT, 1.0f);
  s.Attr("output_zero_point", "The requantized output's zero point.", AttributeProto::INT, int64_t{0});
  s.TypeConstraint("T3",
                   {"tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(double)", "tensor(uint8)",
                    "tensor(int8)"},
                   "The output: the scales' type, or 8-bit when requantized.");
  s.Output(0, "Y", "The output, float or requantized.", "T3");
  std::string wrapped_op = wrapped;
  s.TypeAndShapeInferenceFunction([wrapped_op, opset](InferenceContext& ctx) {
    infer_like(wrapped_op.c_str(), opset, ctx);  // shapes from X and W
    const auto* dtype = ctx.getAttribute("output_dtype");
    const int64_t out = dtype ? dtype->i() : 1;
    if (out == onnx::TensorProto::UINT8 || out == onnx::TensorProto::INT8)
      ctx.getOutputType(0)->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(out));
    else if (out == onnx::TensorProto::FLOAT)
      onnx::propagateElemTypeFromInputToOutput(ctx, 2, 0);
    else
      fail_type_inference("output_dtype must be 1 (float), 2 (uint8) or 3 (int8), not ", out);
  });
  return s;
}

namespace {

// RMSNorm and AddLayerNorm.
void register_norms() {
  onnx::RegisterSchema(
      norm("RMSNorm", "Y = X / sqrt(mean(X^2) + epsilon) * Scale over axes axis..-1.", 1e-6f, false));
  {
    OpSchema s =
        base("AddLayerNorm", "S = X + Residual; Y = LayerNorm(S). The sum is an optional second output.");
    s.Attr("axis", "First normalized axis.", AttributeProto::INT, int64_t{-1});
    s.Attr("epsilon", "Added to the variance.", AttributeProto::FLOAT, 1e-5f);
    s.Input(0, "X", "Input.", "T")
        .Input(1, "Residual",
               "Residual: the shape of X, or its trailing dims (broadcast over the leading ones).", "T");
    s.Input(2, "Scale", "Scale (gamma).", "T").Input(3, "B", "Bias (beta).", "T", OpSchema::Optional);
    s.Output(0, "Y", "LayerNorm(X + Residual).", "T")
        .Output(1, "Sum", "X + Residual.", "T", OpSchema::Optional);
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      for (size_t i = 0; i < ctx.getNumOutputs(); ++i) {
        onnx::propagateElemTypeFromInputToOutput(ctx, 0, i);
        if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, i);
      }
    });
    onnx::RegisterSchema(std::move(s));
  }
}

// Gelu and Rsqrt.
void register_elementwise_ops() {
  {
    OpSchema s = base("Gelu", "Y = 0.5 * X * (1 + erf(X / sqrt(2))), or the tanh approximation.");
    s.Attr("approximate", "none (erf form) or tanh.", AttributeProto::STRING, std::string("none"));
    s.Input(0, "X", "Input.", "T").Output(0, "Y", "Output.", "T");
    s.TypeAndShapeInferenceFunction(same_as_first_input);
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = base("Rsqrt", "Y = 1 / sqrt(X), one Vector instruction.");
    s.Input(0, "X", "Input.", "T").Output(0, "Y", "Output.", "T");
    s.TypeAndShapeInferenceFunction(same_as_first_input);
    onnx::RegisterSchema(std::move(s));
  }
}

// FlashAttention and FlashAttentionLayerNorm.
void register_attention() {
  {
    OpSchema s = base("FlashAttention",
                      "Y = softmax(Q K^T * scale + Mask [+ causal mask]) V over the last two axes; "
                      "Q [..., S, D], K [..., T, D], V [..., T, Dv].");
    s.Attr("scale", "Multiplier of Q K^T; 0 means 1/sqrt(D).", AttributeProto::FLOAT, 0.0f);
    s.Attr("causal", "1: position i attends only to positions <= i + (T - S).", AttributeProto::INT,
           int64_t{0});
    s.Attr("input_layout",
           "BNSD: Q, K, V and Y are [..., N, S, D] (heads before the sequence). BSND: [..., S, N, D], the "
           "sequence axis before the "
           "heads (in 3-D, [S, B*N, D]), as an exporter's head split leaves them, so its Transposes are "
           "absorbed (Ascend's "
           "FlashAttentionScore input_layout). The mask broadcasts to the [..., N, S, T] scores either way.",
           AttributeProto::STRING, std::string("BNSD"));
    s.Input(0, "Q", "Queries.", "T").Input(1, "K", "Keys.", "T").Input(2, "V", "Values.", "T");
    s.Input(3, "Mask", "Additive mask broadcast to [..., S, T].", "T", OpSchema::Optional);
    s.Output(0, "Y", "Attention output [..., S, Dv].", "T");
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 2)) return;
      onnx::TensorShapeProto shape = ctx.getInputType(0)->tensor_type().shape();
      const auto& v = ctx.getInputType(2)->tensor_type().shape();
      if (shape.dim_size() < 2 || v.dim_size() < 2)
        fail_shape_inference("FlashAttention needs rank >= 2 inputs");
      *shape.mutable_dim(shape.dim_size() - 1) = v.dim(v.dim_size() - 1);
      onnx::updateOutputShape(ctx, 0, shape);
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s =
        base("FlashAttentionLayerNorm",
             "Y = Residual + LayerNorm(FlashAttention(Q, K, V, Mask)) over the last axis: the attention, "
             "its LayerNorm, the Dropout after it (the identity at inference) and the residual Add in one "
             "kernel.");
    s.Attr("scale", "As FlashAttention.", AttributeProto::FLOAT, 0.0f);
    s.Attr("causal", "As FlashAttention.", AttributeProto::INT, int64_t{0});
    s.Attr("epsilon", "LayerNorm's epsilon.", AttributeProto::FLOAT, 1e-5f);
    s.Input(0, "Q", "Queries.", "T").Input(1, "K", "Keys.", "T").Input(2, "V", "Values.", "T");
    s.Input(3, "Scale", "LayerNorm scale over the last axis.", "T")
        .Input(4, "B", "LayerNorm bias.", "T", OpSchema::Optional);
    s.Input(5, "Residual", "Added last; shape of the attention output.", "T");
    s.Input(6, "Mask", "Additive mask, as FlashAttention's.", "T", OpSchema::Optional);
    s.Output(0, "Y", "Output [..., S, Dv].", "T");
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 2)) return;
      onnx::TensorShapeProto shape = ctx.getInputType(0)->tensor_type().shape();
      const auto& v = ctx.getInputType(2)->tensor_type().shape();
      if (shape.dim_size() < 2 || v.dim_size() < 2)
        fail_shape_inference("FlashAttentionLayerNorm needs rank >= 2 inputs");
      *shape.mutable_dim(shape.dim_size() - 1) = v.dim(v.dim_size() - 1);
      onnx::updateOutputShape(ctx, 0, shape);
    });
    onnx::RegisterSchema(std::move(s));
  }
}

// SwiGLU and RotaryEmbedding.
void register_mlp_ops() {
  {
    OpSchema s = base("SwiGLU", "Y = SiLU(X W1) * (X W3) (LLaMA's gated MLP before its down projection).");
    s.Input(0, "X", "Input [..., K].", "T")
        .Input(1, "W1", "Gate weight [K, N].", "T")
        .Input(2, "W3", "Up weight [K, N].", "T");
    s.Output(0, "Y", "Output [..., N].", "T");
    s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
      if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 1)) return;
      onnx::TensorShapeProto shape = ctx.getInputType(0)->tensor_type().shape();
      const auto& w = ctx.getInputType(1)->tensor_type().shape();
      if (shape.dim_size() < 1 || w.dim_size() != 2)
        fail_shape_inference("SwiGLU needs X of rank >= 1 and 2-D weights");
      *shape.mutable_dim(shape.dim_size() - 1) = w.dim(1);
      onnx::updateOutputShape(ctx, 0, shape);
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = base("RotaryEmbedding",
                      "Y = X * Cos + concat(-X[..., split:], X[..., :split]) * Sin over the last axis "
                      "(rotary position embedding).");
    s.Attr("split", "Where the last axis is cut in two; 0 means half of it.", AttributeProto::INT,
           int64_t{0});
    s.Input(0, "X", "Input.", "T")
        .Input(1, "Cos", "Broadcast to X.", "T")
        .Input(2, "Sin", "Broadcast to X.", "T");
    s.Output(0, "Y", "Shape of X.", "T");
    s.TypeAndShapeInferenceFunction(same_as_first_input);
    onnx::RegisterSchema(std::move(s));
  }
}

// QuantMatMul and QuantConv.
void register_quantized_cube_ops() {
  {
    OpSchema s = quantized_cube_op(
        "QuantMatMul",
        "Y = activation(((X - X_zero_point) X_scale) x ((W - W_zero_point) W_scale) + B): "
        "MatMul of an 8-bit X [..., K] and an 8-bit 2-D W [K, N], products summed in int32.",
        "MatMul", 13);
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = quantized_cube_op(
        "QuantConv",
        "Y = activation(Conv((X - X_zero_point) X_scale, (W - W_zero_point) W_scale) + B [+ Z]) * post_scale "
        "+ "
        "post_shift: "
        "a 2-D Conv of an 8-bit NCHW X and 8-bit W [M, C/group, kH, kW], products summed in int32; Conv "
        "attributes as ONNX Conv-11.",
        "Conv", 11);
    add_conv_attrs(s);
    add_post_affine_attrs(s);
    s.Input(7, "Z", "Float residual of Y's shape, added before the activation.", "T", OpSchema::Optional);
    onnx::RegisterSchema(std::move(s));
  }
}

// QuantAdd and QuantMul (an 8-bit sum or product of two dequantized tensors, quantized).
void register_quant_binary(const char* name, const char* op, const char* sign) {
  const std::string doc =
      std::string("C = saturate(round_half_even(activation((A - A_zero_point) A_scale ") + sign +
      " (B - B_zero_point) B_scale) / C_scale) + C_zero_point): " + op +
      " between two DequantizeLinears and a QuantizeLinear (onnxruntime's QLinear" + op +
      "'s signature), each dequantized value, the " + (sign[0] == '+' ? "sum" : "product") +
      " and the division in float as those ops compute them; one scale per tensor, numpy broadcasting.";
  OpSchema s = geopt_op(name, "");
  s.SetDoc(doc);
  const std::vector<std::string> eight_bit = {"tensor(int8)", "tensor(uint8)"};
  s.TypeConstraint("TA", eight_bit, "A's 8-bit type.");
  s.TypeConstraint("TB", eight_bit, "B's 8-bit type.");
  s.TypeConstraint("TC", eight_bit, "C's 8-bit type.");
  s.TypeConstraint("S", {"tensor(float)"}, "Scales.");
  s.Attr("activation", "none, or Relu applied before the result is quantized.", AttributeProto::STRING,
         std::string("none"));
  s.Input(0, "A", "8-bit input.", "TA")
      .Input(1, "A_scale", "A's scale (a scalar).", "S")
      .Input(2, "A_zero_point", "A's zero point (a scalar).", "TA")
      .Input(3, "B", "8-bit input, broadcast against A.", "TB")
      .Input(4, "B_scale", "B's scale (a scalar).", "S")
      .Input(5, "B_zero_point", "B's zero point (a scalar).", "TB")
      .Input(6, "C_scale", "The output's scale (a scalar).", "S")
      .Input(7, "C_zero_point", "The output's zero point (a scalar): its type is C's.", "TC");
  s.Output(0, "C", "The quantized result, of A and B broadcast.", "TC");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 7, 0);
    if (onnx::hasInputShape(ctx, 0) && onnx::hasInputShape(ctx, 3))
      onnx::bidirectionalBroadcastShapeInference(ctx.getInputType(0)->tensor_type().shape(),
                                                 ctx.getInputType(3)->tensor_type().shape(),
                                                 *onnx::getOutputShape(ctx, 0));
  });
  onnx::RegisterSchema(std::move(s));
}

// QuantLookup: a function of an 8-bit tensor as a table of its 256 results.
void register_quant_lookup() {
  OpSchema s = geopt_op(
      "QuantLookup",
      "Y = Table[X - the lowest value of X's type]: any function of one 8-bit tensor, Table holding its "
      "256 results (a QuantizeLinear of an activation of a DequantizeLinear, folded when the model is "
      "compiled; onnxruntime's QLinearSigmoid and QLinearLeakyRelu work so).");
  const std::vector<std::string> eight_bit = {"tensor(int8)", "tensor(uint8)"};
  s.TypeConstraint("T1", eight_bit, "X's 8-bit type.");
  s.TypeConstraint("T2", eight_bit, "Y's 8-bit type.");
  s.Input(0, "X", "8-bit input.", "T1")
      .Input(1, "Table", "[256]: the result for each value of X's type, lowest first.", "T2");
  s.Output(0, "Y", "X's shape, Table's type.", "T2");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 1, 0);
    if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
  });
  onnx::RegisterSchema(std::move(s));
}

// QuantGlobalAveragePool: each channel's mean of an 8-bit tensor, requantized.
void register_quant_global_average_pool() {
  OpSchema s = geopt_op(
      "QuantGlobalAveragePool",
      "Y = saturate(round_half_even(mean((X - X_zero_point) X_scale) / Y_scale) + Y_zero_point): a "
      "GlobalAveragePool between a DequantizeLinear and a QuantizeLinear (onnxruntime's "
      "QLinearGlobalAveragePool's inputs), the mean over every dim after C, or with channel_blocked over "
      "every dim between the channel blocks and the lanes of a block (each lane alone); the sum exact in "
      "integers, so within one step of the float ops.");
  const std::vector<std::string> eight_bit = {"tensor(int8)", "tensor(uint8)"};
  s.TypeConstraint("T1", eight_bit, "X's 8-bit type.");
  s.TypeConstraint("T2", eight_bit, "Y's 8-bit type.");
  s.TypeConstraint("S", {"tensor(float)"}, "Scales.");
  s.Attr("channel_blocked",
         "0: X is [N, C, ...] (rank 3 or more). 1: X is channel-blocked, [N, C / block, H, W, block].",
         AttributeProto::INT, int64_t{0});
  s.Input(0, "X", "8-bit input.", "T1")
      .Input(1, "X_scale", "X's scale (a scalar).", "S")
      .Input(2, "X_zero_point", "X's zero point (a scalar).", "T1")
      .Input(3, "Y_scale", "Y's scale (a scalar).", "S")
      .Input(4, "Y_zero_point", "Y's zero point (a scalar): its type is Y's.", "T2");
  s.Output(0, "Y", "X's shape with the averaged dims 1.", "T2");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 4, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto* channel_blocked = ctx.getAttribute("channel_blocked");
    const int64_t blocked = channel_blocked ? channel_blocked->i() : 0;
    if (blocked != 0 && blocked != 1) fail_shape_inference("channel_blocked must be 0 or 1, not ", blocked);
    const auto& in = ctx.getInputType(0)->tensor_type().shape();
    if (in.dim_size() < 3 || (blocked && in.dim_size() != 5))
      fail_shape_inference("QuantGlobalAveragePool's X must be of rank 3 or more (5 channel-blocked), not ",
                           in.dim_size());
    auto* out = onnx::getOutputShape(ctx, 0);
    for (int d = 0; d < in.dim_size(); ++d) {
      if (d >= 2 && (!blocked || d < in.dim_size() - 1))
        out->add_dim()->set_dim_value(1);
      else
        *out->add_dim() = in.dim(d);
    }
  });
  onnx::RegisterSchema(std::move(s));
}

// QuantSoftmax and QuantLayerNorm: a row op between a DequantizeLinear and a QuantizeLinear.
void register_quant_rows() {
  const std::vector<std::string> eight_bit = {"tensor(int8)", "tensor(uint8)"};
  auto eight_bit_rows = [&](OpSchema& s) {
    s.TypeConstraint("T1", eight_bit, "X's 8-bit type.");
    s.TypeConstraint("T2", eight_bit, "Y's 8-bit type.");
    s.TypeConstraint("S", {"tensor(float)"}, "Scales and the norm's scale and bias.");
    s.Input(0, "X", "8-bit input.", "T1")
        .Input(1, "X_scale", "X's scale (a scalar).", "S")
        .Input(2, "X_zero_point", "X's zero point (a scalar).", "T1");
    s.Output(0, "Y", "X's shape, Y_zero_point's type.", "T2");
  };
  // Y: X's shape, the type of the zero point at input `zero_point`.
  auto shape_of_x_type_of = [](int zero_point) {
    return [zero_point](InferenceContext& ctx) {
      onnx::propagateElemTypeFromInputToOutput(ctx, zero_point, 0);
      if (onnx::hasInputShape(ctx, 0)) onnx::propagateShapeFromInputToOutput(ctx, 0, 0);
    };
  };
  {
    OpSchema s = geopt_op(
        "QuantSoftmax",
        "Y = QuantizeLinear(Softmax(DequantizeLinear(X, X_scale, X_zero_point), axis), Y_scale, "
        "Y_zero_point): "
        "ONNX's Softmax (opset 13's semantics: along `axis` alone) between the two, each value dequantized, "
        "normalized and quantized as those ops compute them (onnxruntime's QLinearSoftmax's inputs).");
    eight_bit_rows(s);
    s.Attr("axis", "The axis normalized along (negative: counted from the end).", AttributeProto::INT,
           int64_t{-1});
    s.Input(3, "Y_scale", "Y's scale (a scalar).", "S")
        .Input(4, "Y_zero_point", "Y's zero point (a scalar).", "T2");
    s.TypeAndShapeInferenceFunction(shape_of_x_type_of(4));
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s = geopt_op(
        "QuantLayerNorm",
        "Y = QuantizeLinear(LayerNormalization(DequantizeLinear(X, X_scale, X_zero_point), Scale, B, axis, "
        "epsilon), Y_scale, Y_zero_point): ONNX's LayerNormalization between the two, each value "
        "dequantized, "
        "normalized and quantized as those ops compute them; Scale and B float.");
    eight_bit_rows(s);
    s.Attr("axis", "The first normalized axis (negative: counted from the end).", AttributeProto::INT,
           int64_t{-1});
    s.Attr("epsilon", "Added to the variance.", AttributeProto::FLOAT, 1e-5f);
    s.Input(3, "Scale", "Broadcast to the normalized dims.", "S")
        .Input(4, "B", "Broadcast to the normalized dims.", "S", OpSchema::Optional)
        .Input(5, "Y_scale", "Y's scale (a scalar).", "S")
        .Input(6, "Y_zero_point", "Y's zero point (a scalar).", "T2");
    s.TypeAndShapeInferenceFunction(shape_of_x_type_of(6));
    onnx::RegisterSchema(std::move(s));
  }
}

// Roll.
void register_roll() {
  OpSchema s = geopt_op(
      "Roll",
      "A rotation along `axes` (torch.roll, GE's Roll): along axis a, output element j is input element (j "
      "+ starts[a]) mod n, "
      "so the output starts at input element `starts` (torch.roll(x, -starts)). What exporters write as "
      "two Slices and a Concat.");
  s.TypeConstraint("T",
                   {"tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(double)", "tensor(int8)",
                    "tensor(uint8)", "tensor(int32)", "tensor(int64)", "tensor(bool)"},
                   "Any tensor.");
  s.Attr("starts", "Per axis, the input element the output starts at (negative: counted from the end).",
         AttributeProto::INTS);
  s.Attr("axes", "The axes rotated, one per entry of `starts`.", AttributeProto::INTS);
  s.Input(0, "X", "Input.", "T").Output(0, "Y", "Shape of X.", "T");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    const auto* starts = ctx.getAttribute("starts");
    const auto* axes = ctx.getAttribute("axes");
    if (!starts || !axes || starts->ints_size() != axes->ints_size())
      fail_shape_inference("Roll needs `starts` and `axes`, one entry each per axis");
    onnx::propagateShapeAndTypeFromFirstInput(ctx);
  });
  onnx::RegisterSchema(std::move(s));
}

void register_all() {
  auto& ranges = onnx::OpSchemaRegistry::DomainToVersionRange::Instance();
  const std::string domain(kGeoptDomain);
  if (ranges.Map().count(domain) == 0)
    ranges.AddDomainToVersion(domain, kGeoptOpsetVersion, kGeoptOpsetVersion);
  register_norms();
  register_elementwise_ops();
  register_attention();
  register_mlp_ops();
  register_quantized_cube_ops();
  register_quant_binary("QuantAdd", "Add", "+");
  register_quant_binary("QuantMul", "Mul", "*");
  register_quant_lookup();
  register_quant_global_average_pool();
  register_quant_rows();
  register_roll();
}

}  // namespace

void register_geopt_schemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    register_standard_schemas_18_21();
    register_all();
  });
}

}  // namespace geopt::onnx_io
