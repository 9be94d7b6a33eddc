// TransData: Ascend's layout conversions, NCHW <-> NC1HWC0, NCHW -> FRACTAL_Z and
// ND -> FRACTAL_NZ (layout.h has their shapes; layout_conversions.h copies them).
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <optional>
#include <string>

#include "device_ops/device_ops.h"
#include "device_ops/layout_conversions.h"
#include "eval/kernel.h"
#include "ir/domain.h"
#include "layout.h"
#include "onnx/schema_helpers.h"

namespace geopt::ascend {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The conversions TransData makes: (from, to).
bool supported(Format src, Format dst) {
  return (src == Format::NCHW && dst == Format::NC1HWC0) || (src == Format::NC1HWC0 && dst == Format::NCHW) ||
         (src == Format::NCHW && dst == Format::FRACTAL_Z) ||
         (src == Format::ND && dst == Format::FRACTAL_NZ);
}

const char* const kSupported = "TransData supports NCHW <-> NC1HWC0, NCHW -> FRACTAL_Z and ND -> FRACTAL_NZ";

// An output dim of ceil(in / divisor) where the input's dim is known, else unknown.
void add_blocks(onnx::TensorShapeProto& out, const onnx::TensorShapeProto_Dimension& in, int64_t divisor) {
  if (in.has_dim_value())
    out.add_dim()->set_dim_value(ceil_div(in.dim_value(), divisor));
  else
    out.add_dim();
}

void infer_trans_data(InferenceContext& ctx) {
  onnx::propagateElemTypeFromInputToOutput(ctx, 0, 0);
  const auto* src_attr = ctx.getAttribute("src_format");
  const auto* dst_attr = ctx.getAttribute("dst_format");
  if (!src_attr || !dst_attr) fail_shape_inference("TransData needs src_format and dst_format");
  const std::optional<Format> src = parse_format(src_attr->s()), dst = parse_format(dst_attr->s());
  if (!src || !dst || !supported(*src, *dst)) fail_shape_inference(kSupported);
  if (!onnx::hasInputShape(ctx, 0)) return;
  const auto& in = ctx.getInputType(0)->tensor_type().shape();
  const int64_t c0 = c0_for(static_cast<DType>(ctx.getInputType(0)->tensor_type().elem_type()));
  onnx::TensorShapeProto out;
  switch (*dst) {
    case Format::NC1HWC0:  // [N, C, H, W] -> [N, ceil(C/C0), H, W, C0]
      if (in.dim_size() != 4) fail_shape_inference("NCHW -> NC1HWC0 needs a 4-D input");
      *out.add_dim() = in.dim(0);
      add_blocks(out, in.dim(1), c0);
      *out.add_dim() = in.dim(2);
      *out.add_dim() = in.dim(3);
      out.add_dim()->set_dim_value(c0);
      break;
    case Format::NCHW: {  // [N, C1, H, W, C0] -> [N, channels, H, W]
      if (in.dim_size() != 5) fail_shape_inference("NC1HWC0 -> NCHW needs a 5-D input");
      const auto* channels = ctx.getAttribute("channels");
      if (!channels || channels->i() <= 0) fail_shape_inference("NC1HWC0 -> NCHW needs `channels`");
      *out.add_dim() = in.dim(0);
      out.add_dim()->set_dim_value(channels->i());
      *out.add_dim() = in.dim(2);
      *out.add_dim() = in.dim(3);
      break;
    }
    case Format::FRACTAL_Z: {  // conv weights [N, C, H, W] -> [ceil(C/C0) * H * W, ceil(N/16), 16, C0]
      if (in.dim_size() != 4) fail_shape_inference("NCHW -> FRACTAL_Z needs 4-D weights");
      bool known = true;
      for (int i = 0; i < 4; ++i) known = known && in.dim(i).has_dim_value();
      if (known) {
        out.add_dim()->set_dim_value(ceil_div(in.dim(1).dim_value(), c0) * in.dim(2).dim_value() *
                                     in.dim(3).dim_value());
        out.add_dim()->set_dim_value(ceil_div(in.dim(0).dim_value(), 16));
      } else {
        out.add_dim();
        out.add_dim();
      }
      out.add_dim()->set_dim_value(16);
      out.add_dim()->set_dim_value(c0);
      break;
    }
    case Format::FRACTAL_NZ:  // [..., H, W] -> [..., ceil(W/C0), ceil(H/16), 16, C0]
      if (in.dim_size() < 2) fail_shape_inference("ND -> FRACTAL_NZ needs rank >= 2");
      for (int i = 0; i + 2 < in.dim_size(); ++i) *out.add_dim() = in.dim(i);
      add_blocks(out, in.dim(in.dim_size() - 1), c0);
      add_blocks(out, in.dim(in.dim_size() - 2), 16);
      out.add_dim()->set_dim_value(16);
      out.add_dim()->set_dim_value(c0);
      break;
    case Format::ND:
      break;  // not a destination (supported() refused it)
  }
  onnx::updateOutputShape(ctx, 0, out);
}

void trans_data(KernelContext& ctx) {
  const std::optional<Format> src = parse_format(ctx.attr_string("src_format", "")),
                              dst = parse_format(ctx.attr_string("dst_format", ""));
  if (!src || !dst || !supported(*src, *dst)) {
    // Appended in place: GCC 12 warns (-Warray-bounds, a false positive fixed in 13) on
    // this chain of operator+ once <string> comes from a precompiled header.
    std::string message = kSupported;
    message.append(", not ").append(ctx.attr_string("src_format", "")).append(" -> ");
    ctx.fail(message.append(ctx.attr_string("dst_format", "")));
  }
  const HostTensor& x = ctx.input(0);
  switch (*dst) {
    case Format::NC1HWC0:
      ctx.outputs[0] = to_nc1hwc0(x);
      break;
    case Format::NCHW:
      ctx.outputs[0] = from_nc1hwc0(x, ctx.attr_int("channels", 0));
      break;
    case Format::FRACTAL_Z:
      ctx.outputs[0] = to_fractal_z(x);
      remember_plain(ctx.outputs[0], x);
      break;
    case Format::FRACTAL_NZ:
      ctx.outputs[0] = to_fractal_nz(x);
      remember_plain(ctx.outputs[0], x);
      break;
    case Format::ND:
      break;
  }
}

}  // namespace

void register_trans_data_schema() {
  OpSchema s = onnx_io::geopt_op(
      "TransData",
      "Converts between layouts: NCHW <-> NC1HWC0 ([N, ceil(C/C0), H, W, C0], zero-padded; C0 = 16, or 32 "
      "for 8-bit types); "
      "weights NCHW -> FRACTAL_Z and ND -> FRACTAL_NZ (the Cube's operand layouts).");
  s.TypeConstraint("T", onnx_io::kNumericTypes, "Any numeric tensor.");
  s.Attr("src_format", "NCHW, NC1HWC0 or ND.", AttributeProto::STRING);
  s.Attr("dst_format", "NCHW, NC1HWC0, FRACTAL_Z or FRACTAL_NZ.", AttributeProto::STRING);
  s.Attr("channels", "C of the NCHW side, needed when converting back from NC1HWC0.", AttributeProto::INT,
         int64_t{0});
  s.Input(0, "X", "Input.", "T").Output(0, "Y", "Output.", "T");
  s.TypeAndShapeInferenceFunction(infer_trans_data);
  onnx::RegisterSchema(std::move(s));
}

void add_trans_data(OpRegistry& r) { add_device_op(r, "TransData", trans_data, /*half_via_f32=*/false); }

}  // namespace geopt::ascend
