// Schemas of geopt's own fused ops (domain ai.geopt, version 1), registered with
// libonnx so that onnx::checker and ONNX shape inference understand optimized
// models. Semantics are documented in docs/OPS.md.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <mutex>

#include "ir/node.h"
#include "ir/shape.h"
#include "onnx/validate.h"

namespace geopt::onnx_io {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

const std::vector<std::string> kFloatTypes = {"tensor(float)", "tensor(float16)", "tensor(bfloat16)",
                                              "tensor(double)"};
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

// Ascend's 5-D layout: [N, C, H, W] -> [N, ceil(C/C0), H, W, C0]; C0 = 32 for 8-bit types, else 16.
int64_t c0_of(int32_t elem_type) {
  return elem_type == onnx::TensorProto::INT8 || elem_type == onnx::TensorProto::UINT8 ? 32 : 16;
}

// Output spatial size of a sliding window (ONNX Conv rules; auto_pad SAME/VALID/NOTSET).
int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_total,
                   const std::string& auto_pad) {
  if (auto_pad == "SAME_UPPER" || auto_pad == "SAME_LOWER") return (in + stride - 1) / stride;
  if (auto_pad == "VALID") pad_total = 0;
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

void register_channel_ops();

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
OpSchema quantized_cube_op(const char* name, const char* doc, const char* wrapped, int opset) {
  OpSchema s;
  s.SetName(name).SetDomain(kDomain).SinceVersion(kVersion).SetDoc(doc);
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

// LayerNorm, RMSNorm and AddLayerNorm.
void register_norms() {
  {
    OpSchema s = norm("LayerNorm",
                      "Y = (X - mean) / sqrt(var + epsilon) * Scale + B over axes axis..-1 (ND), or over the "
                      "channels at each position (NCHW, NC1HWC0).",
                      1e-5f, true);
    s.Attr("data_format",
           "ND: over axes axis..rank-1. NCHW: over axis 1 of [N, C, ...], Scale and B [C]. NC1HWC0: over the "
           "`channels` real channels of [N, C1, H, W, C0], padding left 0.",
           AttributeProto::STRING, std::string("ND"));
    s.Attr("channels", "C, the real channels of an NC1HWC0 input.", AttributeProto::INT, false);
    onnx::RegisterSchema(std::move(s));
  }
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

// TransData: Ascend's layout conversions.
void register_trans_data() {
  OpSchema s;
  s.SetName("TransData").SetDomain(kDomain).SinceVersion(kVersion);
  s.SetDoc(
      "Converts between layouts: NCHW <-> NC1HWC0 ([N, ceil(C/C0), H, W, C0], zero-padded; C0 = 16, or 32 "
      "for 8-bit types); "
      "weights NCHW -> FRACTAL_Z and ND -> FRACTAL_NZ (the Cube's operand layouts).");
  s.TypeConstraint("T",
                   {"tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(double)", "tensor(int8)",
                    "tensor(uint8)", "tensor(int32)", "tensor(int64)"},
                   "Any numeric tensor.");
  s.Attr("src_format", "NCHW, NC1HWC0 or ND.", AttributeProto::STRING);
  s.Attr("dst_format", "NCHW, NC1HWC0, FRACTAL_Z or FRACTAL_NZ.", AttributeProto::STRING);
  s.Attr("channels", "C of the NCHW side, needed when converting back from NC1HWC0.", AttributeProto::INT,
         int64_t{0});
  s.Input(0, "X", "Input.", "T").Output(0, "Y", "Output.", "T");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto& in = ctx.getInputType(0)->tensor_type().shape();
    const auto* src = ctx.getAttribute("src_format");
    const auto* dst = ctx.getAttribute("dst_format");
    if (!src || !dst) fail_shape_inference("TransData needs src_format and dst_format");
    const int64_t c0 = c0_of(ctx.getInputType(0)->tensor_type().elem_type());
    onnx::TensorShapeProto out;
    if (src->s() == "NCHW" && dst->s() == "NC1HWC0") {
      if (in.dim_size() != 4) fail_shape_inference("NCHW -> NC1HWC0 needs a 4-D input");
      *out.add_dim() = in.dim(0);
      if (in.dim(1).has_dim_value())
        out.add_dim()->set_dim_value((in.dim(1).dim_value() + c0 - 1) / c0);
      else
        out.add_dim();
      *out.add_dim() = in.dim(2);
      *out.add_dim() = in.dim(3);
      out.add_dim()->set_dim_value(c0);
    } else if (src->s() == "NC1HWC0" && dst->s() == "NCHW") {
      if (in.dim_size() != 5) fail_shape_inference("NC1HWC0 -> NCHW needs a 5-D input");
      const auto* channels = ctx.getAttribute("channels");
      if (!channels || channels->i() <= 0) fail_shape_inference("NC1HWC0 -> NCHW needs `channels`");
      *out.add_dim() = in.dim(0);
      out.add_dim()->set_dim_value(channels->i());
      *out.add_dim() = in.dim(2);
      *out.add_dim() = in.dim(3);
    } else if (src->s() == "NCHW" && dst->s() == "FRACTAL_Z") {
      // Conv weights [N, C, H, W] -> [ceil(C/C0) * H * W, ceil(N/16), 16, C0].
      if (in.dim_size() != 4) fail_shape_inference("NCHW -> FRACTAL_Z needs 4-D weights");
      bool known = true;
      for (int i = 0; i < 4; ++i) known = known && in.dim(i).has_dim_value();
      if (known) {
        out.add_dim()->set_dim_value((in.dim(1).dim_value() + c0 - 1) / c0 * in.dim(2).dim_value() *
                                     in.dim(3).dim_value());
        out.add_dim()->set_dim_value((in.dim(0).dim_value() + 15) / 16);
      } else {
        out.add_dim();
        out.add_dim();
      }
      out.add_dim()->set_dim_value(16);
      out.add_dim()->set_dim_value(c0);
    } else if (src->s() == "ND" && dst->s() == "FRACTAL_NZ") {
      // [..., H, W] -> [..., ceil(W/C0), ceil(H/16), 16, C0].
      if (in.dim_size() < 2) fail_shape_inference("ND -> FRACTAL_NZ needs rank >= 2");
      for (int i = 0; i + 2 < in.dim_size(); ++i) *out.add_dim() = in.dim(i);
      const auto& h = in.dim(in.dim_size() - 2);
      const auto& w = in.dim(in.dim_size() - 1);
      if (w.has_dim_value())
        out.add_dim()->set_dim_value((w.dim_value() + c0 - 1) / c0);
      else
        out.add_dim();
      if (h.has_dim_value())
        out.add_dim()->set_dim_value((h.dim_value() + 15) / 16);
      else
        out.add_dim();
      out.add_dim()->set_dim_value(16);
      out.add_dim()->set_dim_value(c0);
    } else {
      fail_shape_inference("TransData supports NCHW <-> NC1HWC0, NCHW -> FRACTAL_Z and ND -> FRACTAL_NZ");
    }
    onnx::updateOutputShape(ctx, 0, out);
  });
  onnx::RegisterSchema(std::move(s));
}

// FusedConv.
void register_fused_conv() {
  OpSchema s =
      base("FusedConv",
           "Y = activation(Conv(X, W, B) [+ Z]) * post_scale + post_shift; Conv attributes as ONNX Conv-11. "
           "With data_format NC1HWC0, X, Z and Y are 5-D NC1HWC0 tensors (W stays [M, C/group, k...]).");
  add_conv_attrs(s);
  s.Attr("data_format", "NCHW, or NC1HWC0 (Ascend's 5-D layout).", AttributeProto::STRING,
         std::string("NCHW"));
  s.Attr("weight_format", "NCHW, or FRACTAL_Z (with data_format NC1HWC0 and group 1).",
         AttributeProto::STRING, std::string("NCHW"));
  s.Attr("channels", "Output channels M: needed with FRACTAL_Z weights, whose dims are padded.",
         AttributeProto::INT, int64_t{0});
  s.Attr("input_format",
         "Empty: X is in data_format. NCHW (with data_format NC1HWC0): X is the 4-D NCHW tensor as given, "
         "read directly (GE's C04 input "
         "for a first conv of at most 4 channels), Y in NC1HWC0.",
         AttributeProto::STRING, std::string(""));
  add_activation_attrs(s);
  s.Attr("post_scale", "Multiplies the activation's output (a learnable affine block after it, PP-LCNet's).",
         AttributeProto::FLOAT, 1.0f);
  s.Attr("post_shift", "Added last, after post_scale; an NC1HWC0 output's padding channels stay 0.",
         AttributeProto::FLOAT, 0.0f);
  s.Input(0, "X", "Input.", "T")
      .Input(1, "W", "Weights.", "T")
      .Input(2, "B", "Bias.", "T", OpSchema::Optional);
  s.Input(3, "Z", "Residual added before the activation.", "T", OpSchema::Optional);
  s.Output(0, "Y", "Output.", "T");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    const auto* fmt = ctx.getAttribute("data_format");
    const auto* in_fmt = ctx.getAttribute("input_format");
    if (in_fmt && !in_fmt->s().empty() && (in_fmt->s() != "NCHW" || !fmt || fmt->s() != "NC1HWC0"))
      fail_shape_inference("input_format must be empty, or NCHW with data_format NC1HWC0");
    if (!fmt || fmt->s() == "NCHW") {
      infer_like("Conv", 11, ctx);
      return;
    }
    if (fmt->s() != "NC1HWC0") fail_shape_inference("data_format must be NCHW or NC1HWC0");
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 1)) return;
    const auto& x = ctx.getInputType(0)->tensor_type().shape();
    const auto& w = ctx.getInputType(1)->tensor_type().shape();
    const bool nchw_in = in_fmt && in_fmt->s() == "NCHW";
    if (x.dim_size() != (nchw_in ? 4 : 5) || w.dim_size() != 4)
      fail_shape_inference(nchw_in ? "an NC1HWC0 FusedConv reading NCHW needs a 4-D input and 4-D weights"
                                   : "NC1HWC0 FusedConv needs a 5-D input and 4-D weights");
    const auto* wf = ctx.getAttribute("weight_format");
    const bool fractal = wf && wf->s() == "FRACTAL_Z";
    if (wf && !fractal && wf->s() != "NCHW") fail_shape_inference("weight_format must be NCHW or FRACTAL_Z");
    const auto* m_attr = ctx.getAttribute("channels");
    if (fractal && (!m_attr || m_attr->i() <= 0)) fail_shape_inference("FRACTAL_Z weights need `channels`");
    auto ints = [&](const char* name, std::vector<int64_t> fallback) {
      const auto* a = ctx.getAttribute(name);
      return a && a->ints_size() ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
    };
    const auto* ap = ctx.getAttribute("auto_pad");
    const std::string auto_pad = ap ? ap->s() : "NOTSET";
    auto strides = ints("strides", {1, 1}), dil = ints("dilations", {1, 1}),
         pads = ints("pads", {0, 0, 0, 0});
    const int64_t c0 = c0_of(ctx.getInputType(0)->tensor_type().elem_type());
    onnx::TensorShapeProto out;
    *out.add_dim() = x.dim(0);
    if (fractal)
      out.add_dim()->set_dim_value((m_attr->i() + c0 - 1) / c0);
    else if (w.dim(0).has_dim_value())
      out.add_dim()->set_dim_value((w.dim(0).dim_value() + c0 - 1) / c0);
    else
      out.add_dim();
    const auto kernel = ints("kernel_shape", {});
    for (int i = 0; i < 2; ++i) {
      auto* d = out.add_dim();
      // The kernel's extent: from kernel_shape, or the NCHW weights' dims.
      int64_t k = kernel.size() == 2
                      ? kernel[static_cast<size_t>(i)]
                      : (!fractal && w.dim(2 + i).has_dim_value() ? w.dim(2 + i).dim_value() : 0);
      if (x.dim(2 + i).has_dim_value() && k > 0)
        d->set_dim_value(window_out(
            x.dim(2 + i).dim_value(), k, strides[static_cast<size_t>(i)], dil[static_cast<size_t>(i)],
            pads[static_cast<size_t>(i)] + pads[static_cast<size_t>(i) + 2], auto_pad));
      else if (x.dim(2 + i).has_dim_param() && k > 0 && auto_pad == "NOTSET")
        // A symbolic dim keeps a name, the one ONNX's Conv gets from geopt's shape preparation.
        if (const Dim o = window_output(Dim::symbol(x.dim(2 + i).dim_param()), k,
                                        strides[static_cast<size_t>(i)], dil[static_cast<size_t>(i)],
                                        pads[static_cast<size_t>(i)] + pads[static_cast<size_t>(i) + 2]);
            o.is_symbolic())
          d->set_dim_param(o.symbol_name());
    }
    out.add_dim()->set_dim_value(c0);
    onnx::updateOutputShape(ctx, 0, out);
  });
  onnx::RegisterSchema(std::move(s));
}

// FusedMatMul.
void register_fused_matmul() {
  OpSchema s = base("FusedMatMul", "Y = activation(MatMul(A, B) + Bias) with ONNX MatMul broadcasting.");
  add_activation_attrs(s);
  s.Attr("b_format", "ND, or FRACTAL_NZ (B a K x N matrix, or a stack of them, laid out for the Cube).",
         AttributeProto::STRING, std::string("ND"));
  s.Attr("n", "Columns of B: needed with FRACTAL_NZ, whose dims are padded.", AttributeProto::INT,
         int64_t{0});
  s.Input(0, "A", "Left operand.", "T").Input(1, "B", "Right operand.", "T");
  s.Input(2, "Bias", "Bias broadcast to the product.", "T", OpSchema::Optional);
  s.Output(0, "Y", "Output.", "T");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    const auto* bf = ctx.getAttribute("b_format");
    if (!bf || bf->s() == "ND") {
      infer_like("MatMul", 13, ctx);
      return;
    }
    if (bf->s() != "FRACTAL_NZ") fail_shape_inference("b_format must be ND or FRACTAL_NZ");
    const auto* n = ctx.getAttribute("n");
    if (!n || n->i() <= 0) fail_shape_inference("a FRACTAL_NZ B needs `n`");
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto& a = ctx.getInputType(0)->tensor_type().shape();
    if (a.dim_size() < 2) fail_shape_inference("a FRACTAL_NZ B needs A of rank >= 2");
    // Batch dims: A's and those in front of B's four fractal dims (a stack of weights), broadcast.
    onnx::TensorShapeProto a_batch, b_batch, out;
    for (int i = 0; i + 2 < a.dim_size(); ++i) *a_batch.add_dim() = a.dim(i);
    if (onnx::hasInputShape(ctx, 1)) {
      const auto& b = ctx.getInputType(1)->tensor_type().shape();
      if (b.dim_size() < 4) fail_shape_inference("a FRACTAL_NZ B has rank >= 4");
      for (int i = 0; i + 4 < b.dim_size(); ++i) *b_batch.add_dim() = b.dim(i);
    }
    onnx::bidirectionalBroadcastShapeInference(a_batch, b_batch, out);
    *out.add_dim() = a.dim(a.dim_size() - 2);
    out.add_dim()->set_dim_value(n->i());
    onnx::updateOutputShape(ctx, 0, out);
  });
  onnx::RegisterSchema(std::move(s));
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
        "Y = activation(Conv((X - X_zero_point) X_scale, (W - W_zero_point) W_scale) + B [+ Z]): "
        "a 2-D Conv of an 8-bit NCHW X and 8-bit W [M, C/group, kH, kW], products summed in int32; Conv "
        "attributes as ONNX Conv-11.",
        "Conv", 11);
    add_conv_attrs(s);
    s.Input(7, "Z", "Float residual of Y's shape, added before the activation.", "T", OpSchema::Optional);
    onnx::RegisterSchema(std::move(s));
  }
}

// Roll.
void register_roll() {
  OpSchema s;
  s.SetName("Roll").SetDomain(kDomain).SinceVersion(kVersion);
  s.SetDoc(
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
  if (ranges.Map().count(kDomain) == 0) ranges.AddDomainToVersion(kDomain, kVersion, kVersion);
  register_norms();
  register_elementwise_ops();
  register_attention();
  register_mlp_ops();
  register_trans_data();
  register_fused_conv();
  register_fused_matmul();
  register_quantized_cube_ops();
  register_roll();
  register_channel_ops();
}

// Channel movement in NC1HWC0: each input holds `channels` real channels in
// ceil(channels / C0) blocks; the output's blocks hold its own count.
void register_channel_ops() {
  auto numeric = [](OpSchema& s) {
    s.TypeConstraint("T",
                     {"tensor(float)", "tensor(float16)", "tensor(bfloat16)", "tensor(double)",
                      "tensor(int8)", "tensor(uint8)", "tensor(int32)", "tensor(int64)"},
                     "Any numeric tensor.");
  };
  // The output of an NC1HWC0 op: input 0's N, H, W and C0, blocks for `channels`.
  auto blocked_like_first = [](InferenceContext& ctx, int64_t channels) {
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto& in = ctx.getInputType(0)->tensor_type().shape();
    if (in.dim_size() != 5) fail_shape_inference("an NC1HWC0 input has rank 5");
    const int64_t c0 = in.dim(4).has_dim_value() ? in.dim(4).dim_value()
                                                 : c0_of(ctx.getInputType(0)->tensor_type().elem_type());
    onnx::TensorShapeProto out;
    *out.add_dim() = in.dim(0);
    out.add_dim()->set_dim_value((channels + c0 - 1) / c0);
    *out.add_dim() = in.dim(2);
    *out.add_dim() = in.dim(3);
    out.add_dim()->set_dim_value(c0);
    onnx::updateOutputShape(ctx, 0, out);
  };
  auto positive = [](InferenceContext& ctx, const char* name) {
    const auto* a = ctx.getAttribute(name);
    if (!a || a->i() <= 0) fail_shape_inference(std::string("`") + name + "` must be positive");
    return a->i();
  };
  {
    OpSchema s;
    s.SetName("ShuffleChannel").SetDomain(kDomain).SinceVersion(kVersion);
    s.SetDoc(
        "ShuffleNet's channel shuffle on an NC1HWC0 tensor: its `channels` seen as [group, channels / group] "
        "and transposed, "
        "so output channel j = a * group + b is input channel b * (channels / group) + a.");
    numeric(s);
    s.Attr("group", "Groups the channels are shuffled across; divides `channels`.", AttributeProto::INT);
    s.Attr("channels", "Real channels of the input (and output).", AttributeProto::INT);
    s.Input(0, "X", "NC1HWC0 input.", "T").Output(0, "Y", "NC1HWC0 output, the shape of X.", "T");
    s.TypeAndShapeInferenceFunction([=](InferenceContext& ctx) {
      const int64_t channels = positive(ctx, "channels"), group = positive(ctx, "group");
      if (channels % group != 0) fail_shape_inference("`group` must divide `channels`");
      blocked_like_first(ctx, channels);
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s;
    s.SetName("ChannelSlice").SetDomain(kDomain).SinceVersion(kVersion);
    s.SetDoc(
        "Channels [start, start + count) of an NC1HWC0 tensor, repacked from block 0 (a split or slice along "
        "C at any offset).");
    numeric(s);
    s.Attr("channels", "Real channels of the input.", AttributeProto::INT);
    s.Attr("start", "First channel taken.", AttributeProto::INT, int64_t{0});
    s.Attr("count", "Channels taken.", AttributeProto::INT);
    s.Input(0, "X", "NC1HWC0 input.", "T").Output(0, "Y", "NC1HWC0 output holding `count` channels.", "T");
    s.TypeAndShapeInferenceFunction([=](InferenceContext& ctx) {
      const int64_t channels = positive(ctx, "channels"), count = positive(ctx, "count");
      const auto* start = ctx.getAttribute("start");
      const int64_t first = start ? start->i() : 0;
      if (first < 0 || first > channels - count)
        fail_shape_inference("[start, start + count) must lie within `channels`");
      blocked_like_first(ctx, count);
    });
    onnx::RegisterSchema(std::move(s));
  }
  {
    OpSchema s;
    s.SetName("ChannelConcat").SetDomain(kDomain).SinceVersion(kVersion);
    s.SetDoc(
        "NC1HWC0 tensors concatenated along their real channels (input i holds channels[i]), repacked so "
        "that no padding sits "
        "inside the result: a concatenation along C of inputs that are not whole C0 blocks.");
    numeric(s);
    s.Attr("channels", "Real channels of each input.", AttributeProto::INTS);
    s.Input(0, "X", "NC1HWC0 inputs of one N, H, W and C0.", "T", OpSchema::Variadic);
    s.Output(0, "Y", "NC1HWC0 output holding sum(channels).", "T");
    s.TypeAndShapeInferenceFunction([=](InferenceContext& ctx) {
      const auto* channels = ctx.getAttribute("channels");
      if (!channels || static_cast<size_t>(channels->ints_size()) != ctx.getNumInputs())
        fail_shape_inference("`channels` must give one count per input");
      int64_t total = 0;
      for (int64_t c : channels->ints()) {
        if (c <= 0) fail_shape_inference("channel counts must be positive");
        total += c;
      }
      blocked_like_first(ctx, total);
    });
    onnx::RegisterSchema(std::move(s));
  }
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
