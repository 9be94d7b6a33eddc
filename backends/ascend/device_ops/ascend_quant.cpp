// AscendQuant: Ascend's quantization of a float NC1HWC0 tensor (C0 = 16) into 8-bit
// NC1HWC0 (C0 = 32, the int8 fractal), each channel with one scale and zero point, as
// QuantizeLinear rounds: what a QuantizeLinear of a value leaving NC1HWC0 becomes, so an
// int8 conv after it reads its input without a layout conversion. Padding channels come
// out as the zero point (the quantized 0).
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "device_ops/device_ops.h"
#include "eval/kernel.h"
#include "ir/domain.h"
#include "kernels/quantize.h"
#include "layout.h"
#include "onnx/schema_helpers.h"
#include "util/team_region.h"

namespace geopt::ascend {
namespace {

using onnx::AttributeProto;
using onnx::InferenceContext;
using onnx::OpSchema;

DType quantized_type(const KernelContext& ctx) {
  const int64_t out = ctx.attr_int("output_dtype", static_cast<int64_t>(DType::U8));
  if (out != static_cast<int64_t>(DType::U8) && out != static_cast<int64_t>(DType::I8))
    ctx.fail("output_dtype must be 2 (uint8) or 3 (int8), not " + std::to_string(out));
  return static_cast<DType>(out);
}

void ascend_quant(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t channels = ctx.attr_int("channels", 0);
  const DType out = quantized_type(ctx);
  const float scale = ctx.attr_float("scale", 1.0f);
  const int64_t zero = ctx.attr_int("zero_point", 0);
  check_quantization(ctx, x, channels, scale, zero, out);
  const int64_t c0 = c0_for(out);
  HostTensor y = ctx.new_output(0, out, {x.dim(0), (channels + c0 - 1) / c0, x.dim(2), x.dim(3), c0});
  quantize_to_nc1hwc0(x, channels, scale, zero, y);
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void check_quantization(const KernelContext& ctx, const HostTensor& x, int64_t channels, float scale,
                        int64_t zero, DType out) {
  if (x.dtype() != DType::F32) ctx.fail("the float input must be f32, not " + dtype_name(x.dtype()));
  const int64_t in_c0 = c0_for(DType::F32);
  if (x.rank() != 5 || x.dim(4) != in_c0 || channels <= (x.dim(1) - 1) * in_c0 || channels > x.dim(1) * in_c0)
    ctx.fail("the float input " + x.shape_string() + " is not NC1HWC0 holding " + std::to_string(channels) +
             " channels");
  if (!(scale > 0.0f) || !std::isfinite(scale))
    ctx.fail("the quantization scale must be positive and finite");
  if (zero < (out == DType::U8 ? 0 : -128) || zero > (out == DType::U8 ? 255 : 127))
    ctx.fail("the zero point " + std::to_string(zero) + " is outside " + dtype_name(out));
}

void quantize_to_nc1hwc0(const HostTensor& x, int64_t channels, float scale, int64_t zero, HostTensor& y) {
  const DType out = y.dtype();
  const int64_t in_c0 = c0_for(DType::F32), out_c0 = c0_for(out), batch = x.dim(0);
  const int64_t spatial = x.dim(2) * x.dim(3), in_blocks = x.dim(1),
                out_blocks = (channels + out_c0 - 1) / out_c0;
  const float* px = x.data<float>();
  std::byte* py = y.mutable_raw();
  // Per output block, its 32 lanes gathered from two input blocks into a float plane,
  // then quantized in one pass (padding lanes are 0, so they quantize to the zero point).
  team_region(batch * out_blocks * spatial * out_c0 > (1 << 16), [&] {
#pragma omp for collapse(2)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t ob = 0; ob < out_blocks; ++ob) {
        thread_local std::vector<float> plane;
        plane.assign(static_cast<size_t>(spatial * out_c0), 0.0f);
        for (int64_t half = 0; half < out_c0 / in_c0; ++half) {
          const int64_t ib = ob * (out_c0 / in_c0) + half;
          if (ib >= in_blocks) break;
          const float* from = px + (b * in_blocks + ib) * spatial * in_c0;
          for (int64_t p = 0; p < spatial; ++p)
            std::copy_n(from + p * in_c0, in_c0, plane.data() + p * out_c0 + half * in_c0);
        }
        // Lanes past `channels` in the last input block hold its zero padding already.
        quantize_floats_serial(plane.data(), spatial * out_c0, scale, static_cast<float>(zero), out,
                               py + (b * out_blocks + ob) * spatial * out_c0);
      }
  });
}

namespace {}  // namespace

void register_ascend_quant_schema() {
  OpSchema s = onnx_io::geopt_op("AscendQuant",
                                 "Y = saturate(round_half_even(X / scale) + zero_point), as QuantizeLinear "
                                 "with one scale: X float NC1HWC0 "
                                 "(C0 = 16) holding `channels` channels, Y 8-bit NC1HWC0 (C0 = 32), its "
                                 "padding channels the zero point.");
  s.TypeConstraint("T", {"tensor(float)"}, "Float input.");
  s.TypeConstraint("T2", {"tensor(uint8)", "tensor(int8)"}, "8-bit output.");
  s.Attr("scale", "The quantization scale (positive).", AttributeProto::FLOAT);
  s.Attr("zero_point", "The zero point, in the output type's range.", AttributeProto::INT, int64_t{0});
  s.Attr("output_dtype", "2 (uint8) or 3 (int8).", AttributeProto::INT, static_cast<int64_t>(DType::U8));
  s.Attr("channels", "The channels X holds.", AttributeProto::INT);
  s.Input(0, "X", "Float NC1HWC0 input.", "T").Output(0, "Y", "8-bit NC1HWC0 output.", "T2");
  s.TypeAndShapeInferenceFunction([](InferenceContext& ctx) {
    const auto* dtype = ctx.getAttribute("output_dtype");
    const int64_t out = dtype ? dtype->i() : static_cast<int64_t>(DType::U8);
    if (out != static_cast<int64_t>(DType::U8) && out != static_cast<int64_t>(DType::I8))
      fail_type_inference("output_dtype must be 2 (uint8) or 3 (int8), not ", out);
    ctx.getOutputType(0)->mutable_tensor_type()->set_elem_type(static_cast<int32_t>(out));
    const auto* channels = ctx.getAttribute("channels");
    if (!channels || channels->i() <= 0) fail_shape_inference("AscendQuant needs positive `channels`");
    if (!onnx::hasInputShape(ctx, 0)) return;
    const auto& in = ctx.getInputType(0)->tensor_type().shape();
    if (in.dim_size() != 5) fail_shape_inference("AscendQuant needs a 5-D NC1HWC0 input");
    const int64_t c0 = c0_for(static_cast<DType>(out));
    onnx::TensorShapeProto shape;
    *shape.add_dim() = in.dim(0);
    shape.add_dim()->set_dim_value((channels->i() + c0 - 1) / c0);
    *shape.add_dim() = in.dim(2);
    *shape.add_dim() = in.dim(3);
    shape.add_dim()->set_dim_value(c0);
    onnx::updateOutputShape(ctx, 0, shape);
  });
  onnx::RegisterSchema(std::move(s));
}

void add_ascend_quant(OpRegistry& r) {
  OpTraits t;
  t.elementwise = false;  // it moves lanes between blocks
  add_device_op(r, "AscendQuant", ascend_quant, /*half_via_f32=*/false, t);
}

}  // namespace geopt::ascend
