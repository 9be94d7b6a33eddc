// FusedQuantConv: an int8 QuantConv on the Cube in NC1HWC0. Its 8-bit input comes in
// blocks of C0 = 32 (Ascend's int8 fractal), or as the NCHW image for a first conv of at
// most 4 channels (GE's C04); its output is float in blocks of 16, or, requantized, 8-bit
// in blocks of 32, so consecutive int8 layers pass int8 NC1HWC0 with no conversion
// between them. The weights stay [M, C/group, kH, kW] int8, laid out for the Cube when
// the plan is built. The host kernel is engine's int8 convolution (kernels/quantized_conv.h)
// on oneDNN's int8 primitives, NC1HWC0 its channel-blocked form.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <cmath>
#include <functional>
#include <optional>
#include <string>

#include "device_ops/device_ops.h"
#include "eval/kernel.h"
#include "ir/domain.h"
#include "kernels/quantize.h"
#include "kernels/quantized_conv.h"
#include "layout.h"
#include "onnx/schema_helpers.h"

namespace geopt::ascend {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

// Whether the input is the NCHW image (input_format NCHW) rather than NC1HWC0.
bool reads_plain_input(const std::string& input_format, const std::function<void(const std::string&)>& fail) {
  if (input_format.empty()) return false;
  if (parse_format(input_format) != Format::NCHW) fail("input_format must be empty or NCHW");
  return true;
}

// The output's type: float (output_dtype 1, the scales' type) or the requantized 8-bit type.
std::optional<DType> output_type(int64_t output_dtype) {
  if (output_dtype == 1) return DType::F32;
  if (output_dtype == static_cast<int64_t>(DType::U8) || output_dtype == static_cast<int64_t>(DType::I8))
    return static_cast<DType>(output_dtype);
  return std::nullopt;
}

void fused_quant_conv(KernelContext& ctx) {
  const bool plain = reads_plain_input(ctx.attr_string("input_format", ""),
                                       [&](const std::string& message) { ctx.fail(message); });
  const std::optional<DType> out = output_type(ctx.attr_int("output_dtype", 1));
  if (!out) ctx.fail("output_dtype must be 1 (float), 2 (uint8) or 3 (int8)");
  const HostTensor& w = ctx.input(1);
  if (w.rank() == 4 && ctx.attr_int("channels", 0) != w.dim(0))
    ctx.fail("`channels` " + std::to_string(ctx.attr_int("channels", 0)) + " is not the weights' " +
             std::to_string(w.dim(0)) + " output channels");
  QuantConvBlocks blocks;
  blocks.y = c0_for(*out);
  blocks.z = c0_for(DType::F32);
  if (ctx.attr_int("quantize_input", 0) == 0) {
    blocks.x = plain ? 0 : c0_for(ctx.input(0).dtype());
    quantized_convolution(ctx, blocks);
    return;
  }
  // A float X, quantized first as the QuantizeLinear this kernel took in would (into
  // X_zero_point's type).
  const HostTensor& x = ctx.input(0);
  const DType type = ctx.input(3).dtype();
  if (type != DType::U8 && type != DType::I8)
    ctx.fail("X_zero_point must be uint8 or int8, not " + dtype_name(type));
  const float scale = ctx.attr_float("input_scale", 1.0f);
  const int64_t zero = ctx.attr_int("input_zero_point", 0);
  if (plain) {
    if (x.dtype() != DType::F32 || x.rank() != 4)
      ctx.fail("a float NCHW X must be f32 and 4-D, not " + dtype_name(x.dtype()) + x.shape_string());
    if (!(scale > 0.0f) || !std::isfinite(scale)) ctx.fail("input_scale must be positive and finite");
    if (zero < (type == DType::U8 ? 0 : -128) || zero > (type == DType::U8 ? 255 : 127))
      ctx.fail("input_zero_point " + std::to_string(zero) + " is outside " + dtype_name(type));
    HostTensor q = HostTensor::uninitialized(type, x.dims());
    quantize_floats(x.data<float>(), x.size(), scale, static_cast<float>(zero), type, q.mutable_raw());
    quantized_convolution(ctx, blocks, &q);
    return;
  }
  const int64_t channels = w.rank() == 4 ? w.dim(1) * ctx.attr_int("group", 1) : 0;
  check_quantization(ctx, x, channels, scale, zero, type);
  const int64_t c0 = c0_for(type);
  HostTensor q =
      HostTensor::uninitialized(type, {x.dim(0), (channels + c0 - 1) / c0, x.dim(2), x.dim(3), c0});
  quantize_to_nc1hwc0(x, channels, scale, zero, q);
  blocks.x = c0;
  quantized_convolution(ctx, blocks, &q);
}

}  // namespace

void register_fused_quant_conv_schema() {
  OpSchema s = onnx_io::quantized_cube_op(
      "FusedQuantConv",
      "QuantConv in NC1HWC0: Y = activation(Conv((X - X_zero_point) X_scale, (W - W_zero_point) W_scale) + B "
      "[+ Z]) * post_scale + post_shift, requantized with output_dtype 2 or 3. X is 8-bit NC1HWC0 with C0 = "
      "32 (or the 4-D NCHW image, "
      "input_format NCHW); Y is NC1HWC0 with C0 = 16 (float) or 32 (8-bit), its padding channels 0 or the "
      "output zero point; Z is float NC1HWC0 with C0 = 16. W stays [M, C/group, kH, kW].",
      "Conv", 11);
  onnx_io::add_conv_attrs(s);
  onnx_io::add_post_affine_attrs(s);
  s.Input(7, "Z", "Float NC1HWC0 residual of Y's channels, added before the activation.", "T",
          OpSchema::Optional);
  s.Attr("channels", "Output channels M (the weights' dim 0).", AttributeProto::INT);
  // X may be float: its own type constraint (QuantConv's X shares T1 with its zero point).
  s.TypeConstraint("TX", {"tensor(uint8)", "tensor(int8)", "tensor(float)"},
                   "X: 8-bit, or float to quantize.");
  s.Input(0, "X", "The 8-bit activation, or with quantize_input the float one.", "TX");
  s.Attr(
      "quantize_input",
      "0: X is 8-bit. 1: X is float (NC1HWC0 with C0 = 16, or NCHW with input_format NCHW), quantized first "
      "as QuantizeLinear(X, input_scale, input_zero_point) into X_zero_point's type (AscendQuant taken into "
      "the conv).",
      AttributeProto::INT, int64_t{0});
  s.Attr("input_scale", "With quantize_input: the quantization's scale.", AttributeProto::FLOAT, 1.0f);
  s.Attr("input_zero_point", "With quantize_input: the quantization's zero point.", AttributeProto::INT,
         int64_t{0});
  s.Attr(
      "input_format",
      "Empty: X is NC1HWC0. NCHW: X is the 4-D NCHW tensor as given (GE's C04 input for a first conv of at "
      "most 4 channels).",
      AttributeProto::STRING, std::string(""));
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    const auto* input_format = ctx.getAttribute("input_format");
    const bool plain = reads_plain_input(input_format ? input_format->s() : std::string(),
                                         [](const std::string& message) { fail_shape_inference(message); });
    const auto* dtype = ctx.getAttribute("output_dtype");
    const std::optional<DType> out = output_type(dtype ? dtype->i() : 1);
    if (!out) fail_type_inference("output_dtype must be 1 (float), 2 (uint8) or 3 (int8)");
    const auto* channels = ctx.getAttribute("channels");
    if (!channels || channels->i() <= 0) fail_shape_inference("FusedQuantConv needs `channels`");
    if (*out == DType::F32)
      onnx::propagateElemTypeFromInputToOutput(ctx, 2, 0);
    else
      ctx.getOutputType(0)->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(*out));
    infer_blocked_conv_shape(ctx, plain, channels->i(), c0_for(*out));
  });
  onnx::RegisterSchema(std::move(s));
}

void add_fused_quant_conv(OpRegistry& r) {
  OpTraits t;
  t.integer_products = true;  // the Cube's int8 rate
  add_device_op(r, "FusedQuantConv", fused_quant_conv, /*half_via_f32=*/false, t);
}

}  // namespace geopt::ascend
