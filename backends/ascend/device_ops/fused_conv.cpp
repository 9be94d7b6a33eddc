// FusedConv: a convolution with its bias, residual, activation and affine tail, in NCHW
// or in NC1HWC0 (weights NCHW or FRACTAL_Z, input NCHW for GE's C04 first conv). The
// host kernel is engine's oneDNN convolution (kernels/conv.h), NC1HWC0 its channel-
// blocked form.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "device_ops/device_ops.h"
#include "device_ops/layout_conversions.h"
#include "eval/kernel.h"
#include "ir/auto_pad.h"
#include "ir/domain.h"
#include "ir/shape.h"
#include "kernels/conv.h"
#include "layout.h"
#include "onnx/schema_helpers.h"

namespace geopt::ascend {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;
using onnx_io::add_activation_attrs;
using onnx_io::add_conv_attrs;
using onnx_io::base;
using onnx_io::infer_like;
using onnx_io::window_out;

// The layouts a FusedConv's attributes name, checked once for its inference and kernel.
struct ConvFormats {
  bool blocked = false;          // data_format NC1HWC0 (else NCHW)
  bool fractal_weights = false;  // weight_format FRACTAL_Z (else NCHW)
  bool plain_input = false;      // input_format NCHW under an NC1HWC0 output
};

ConvFormats conv_formats(const std::function<std::string(const char*, const char*)>& attr,
                         const std::function<void(const std::string&)>& fail) {
  const std::optional<Format> data = parse_format(attr("data_format", "NCHW"));
  const std::optional<Format> weights = parse_format(attr("weight_format", "NCHW"));
  const std::string input = attr("input_format", "");
  if (data != Format::NCHW && data != Format::NC1HWC0) fail("data_format must be NCHW or NC1HWC0");
  if (weights != Format::NCHW && weights != Format::FRACTAL_Z)
    fail("weight_format must be NCHW or FRACTAL_Z");
  ConvFormats f;
  f.blocked = data == Format::NC1HWC0;
  f.fractal_weights = weights == Format::FRACTAL_Z;
  f.plain_input = !input.empty();
  if (f.plain_input && (parse_format(input) != Format::NCHW || !f.blocked))
    fail("input_format must be empty, or NCHW with data_format NC1HWC0");
  return f;
}

// One oneDNN convolution: NC1HWC0 is its nChw16c, the residual and activation its
// post-ops; the padding channels come out zero, as a device kernel leaves them.
void fused_conv(KernelContext& ctx) {
  const ConvFormats f =
      conv_formats([&](const char* name, const char* fallback) { return ctx.attr_string(name, fallback); },
                   [&](const std::string& message) { ctx.fail(message); });
  const HostTensor& x_in = ctx.input(0);
  HostTensor w = ctx.input(1);
  if (f.fractal_weights) {
    const std::vector<int64_t> k = ctx.attr_ints("kernel_shape", {});
    const int64_t m = ctx.attr_int("channels", 0);
    if (!f.blocked || ctx.attr_int("group", 1) != 1 || k.size() != 2 || m <= 0)
      ctx.fail("FRACTAL_Z weights need data_format NC1HWC0, group 1, a 2-D kernel_shape and `channels`");
    if (x_in.rank() != (f.plain_input ? 4 : 5))
      ctx.fail("the input " + x_in.shape_string() + " is not in its format");
    // An NC1HWC0 input's padding channels meet zero weights.
    const int64_t channels_in = x_in.rank() == 5 ? x_in.dim(1) * x_in.dim(4) : x_in.dim(1);
    w = unpacked_weight(w, {m, channels_in, k[0], k[1]}, false);
  }
  ConvFusion fusion;
  fusion.x_blocked = f.blocked && !f.plain_input;
  fusion.y_blocked = f.blocked;
  fusion.residual = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  if (fusion.residual) fusion.residual_input = 3;
  fusion.activation = ctx.attr_string("activation", "none");
  fusion.activation_params = ctx.attr_floats("activation_params");
  fusion.post_scale = ctx.attr_float("post_scale", 1.0f);
  fusion.post_shift = ctx.attr_float("post_shift", 0.0f);
  if (ctx.wants_output(1)) fusion.channel_means = &ctx.outputs[1];
  if (ctx.has_input(4)) fusion.input_scale = &ctx.input(4);
  ctx.outputs[0] = fused_convolution(ctx, x_in, w, ctx.has_input(2) ? &ctx.input(2) : nullptr, fusion);
}

}  // namespace

// The NC1HWC0 output of a 2-D conv (FusedConv's, FusedQuantConv's): [N, ceil(M/c0), OH,
// OW, c0] from X (5-D NC1HWC0, or 4-D NCHW with `plain_input`), W and the Conv attributes;
// M is `channels` where given (> 0; FRACTAL_Z weights' dims are padded), else W's dim 0.
void infer_blocked_conv_shape(InferenceContext& ctx, bool plain_input, int64_t channels, int64_t c0) {
  if (!onnx::hasInputShape(ctx, 0) || !onnx::hasInputShape(ctx, 1)) return;
  const auto& x = ctx.getInputType(0)->tensor_type().shape();
  const auto& w = ctx.getInputType(1)->tensor_type().shape();
  if (x.dim_size() != (plain_input ? 4 : 5) || w.dim_size() != 4)
    fail_shape_inference(plain_input ? "an NC1HWC0 conv reading NCHW needs a 4-D input and 4-D weights"
                                     : "an NC1HWC0 conv needs a 5-D input and 4-D weights");
  auto ints = [&](const char* name, std::vector<int64_t> fallback) {
    const auto* a = ctx.getAttribute(name);
    return a && a->ints_size() ? std::vector<int64_t>(a->ints().begin(), a->ints().end()) : fallback;
  };
  const auto* ap = ctx.getAttribute("auto_pad");
  const std::string auto_pad = ap ? ap->s() : "NOTSET";
  const std::optional<AutoPad> pad = parse_auto_pad(auto_pad);
  auto strides = ints("strides", {1, 1}), dil = ints("dilations", {1, 1}), pads = ints("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4)
    fail_shape_inference("a 2-D conv needs 2 strides, 2 dilations and 4 pads");
  const bool padded_weights = channels > 0;  // W's dims are not the conv's (FRACTAL_Z)
  onnx::TensorShapeProto out;
  *out.add_dim() = x.dim(0);
  if (padded_weights)
    out.add_dim()->set_dim_value((channels + c0 - 1) / c0);
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
                    : (!padded_weights && w.dim(2 + i).has_dim_value() ? w.dim(2 + i).dim_value() : 0);
    if (x.dim(2 + i).has_dim_value() && k > 0)
      d->set_dim_value(window_out(x.dim(2 + i).dim_value(), k, strides[static_cast<size_t>(i)],
                                  dil[static_cast<size_t>(i)],
                                  pads[static_cast<size_t>(i)] + pads[static_cast<size_t>(i) + 2], auto_pad));
    else if (x.dim(2 + i).has_dim_param() && k > 0 && pad == AutoPad::NotSet)
      // A symbolic dim keeps a name, the one ONNX's Conv gets from geopt's shape preparation.
      if (const Dim o = window_output(Dim::symbol(x.dim(2 + i).dim_param()), k,
                                      strides[static_cast<size_t>(i)], dil[static_cast<size_t>(i)],
                                      pads[static_cast<size_t>(i)] + pads[static_cast<size_t>(i) + 2]);
          o.is_symbolic())
        d->set_dim_param(o.symbol_name());
  }
  out.add_dim()->set_dim_value(c0);
  onnx::updateOutputShape(ctx, 0, out);
}

// Y's type and shape: ONNX Conv's for NCHW, infer_blocked_conv_shape's for NC1HWC0.
// Returns whether Y is NC1HWC0.
bool infer_fused_conv(InferenceContext& ctx) {
  const ConvFormats f = conv_formats(
      [&](const char* name, const char* fallback) {
        const auto* a = ctx.getAttribute(name);
        return a ? a->s() : std::string(fallback);
      },
      [](const std::string& message) { fail_shape_inference(message); });
  if (!f.blocked) {
    infer_like("Conv", 11, ctx);
    return false;
  }
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const auto* m_attr = ctx.getAttribute("channels");
  if (f.fractal_weights && (!m_attr || m_attr->i() <= 0))
    fail_shape_inference("FRACTAL_Z weights need `channels`");
  infer_blocked_conv_shape(ctx, f.plain_input, f.fractal_weights ? m_attr->i() : 0,
                           c0_for(static_cast<DType>(ctx.getInputType(0)->tensor_type().elem_type())));
  return true;
}

void register_fused_conv_schema() {
  OpSchema s = base(
      "FusedConv",
      "Y = activation(Conv(X [* S], W, B) [+ Z]) * post_scale + post_shift; Conv attributes as ONNX Conv-11. "
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
  s.Input(
      4, "S",
      "Optional: one scale per input channel, X read times it (a squeeze-and-excitation gate): [1 or N, C, "
      "1...], NC1HWC0: [1 or N, C1, 1, 1, C0].",
      "T", OpSchema::Optional);
  s.Output(0, "Y", "Output.", "T");
  s.Output(
      1, "M",
      "Optional: each channel's mean of Y over the spatial axes ([N, M, 1...]; NC1HWC0: [N, M1, 1, 1, C0]), "
      "taken as Y is written (a squeeze-and-excitation squeeze or a global average pool that reads Y).",
      "T", OpSchema::Optional);
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    const bool blocked = infer_fused_conv(ctx);
    if (ctx.getNumOutputs() < 2) return;
    // The means: Y's type, its spatial dims 1 (NC1HWC0's C0 stays).
    onnx::propagateElemTypeFromInputToOutput(ctx, 0, 1);
    if (!onnx::hasShape(*ctx.getOutputType(0))) return;
    onnx::TensorShapeProto means = ctx.getOutputType(0)->tensor_type().shape();
    for (int i = 2; i < means.dim_size() - (blocked ? 1 : 0); ++i) means.mutable_dim(i)->set_dim_value(1);
    onnx::updateOutputShape(ctx, 1, means);
  });
  onnx::RegisterSchema(std::move(s));
}

void add_fused_conv(OpRegistry& r) {
  OpTraits t;
  t.in_place_input = 3;  // the residual, added where the conv writes
  add_device_op(r, "FusedConv", fused_conv, /*half_via_f32=*/true, t);
  r.set_tactic_knobs(kGeoptDomain, "FusedConv", kTacticConv);  // fused_convolution reads them
}

}  // namespace geopt::ascend
