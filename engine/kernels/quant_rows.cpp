// QuantSoftmax and QuantLayerNorm (ai.geopt): a Softmax or LayerNormalization between a
// DequantizeLinear and a QuantizeLinear as one kernel (attention's probabilities and a
// transformer's norms, as ONNX Runtime's static quantizer leaves them). Each row is
// dequantized, normalized by the float kernels' own code and quantized, so the kernel
// gives the three ops' bits while reading and writing 8-bit tensors.
#include <cstdint>
#include <string>
#include <vector>

#include "eval/kernel.h"
#include "kernels/arguments.h"
#include "kernels/norm.h"
#include "kernels/quantize.h"
#include "kernels/softmax.h"

namespace geopt {
namespace {

// Input i, an 8-bit tensor.
const HostTensor& eight_bit_input(const KernelContext& ctx, size_t i, const char* what) {
  const HostTensor& t = ctx.input(i);
  if (t.dtype() != DType::U8 && t.dtype() != DType::I8)
    ctx.fail(std::string(what) + " must be uint8 or int8, not " + dtype_name(t.dtype()));
  return t;
}

// X (input 0) dequantized with its scale and zero point (inputs 1 and 2).
HostTensor dequantized_input(const KernelContext& ctx) {
  const HostTensor& x = eight_bit_input(ctx, 0, "X");
  if (ctx.input(2).dtype() != x.dtype()) ctx.fail("X_zero_point's type must be X's");
  const auto scale = static_cast<float>(single_real_input(ctx, 1, "X_scale"));
  const auto zero = static_cast<int32_t>(single_real_input(ctx, 2, "X_zero_point"));
  HostTensor f = HostTensor::uninitialized(DType::F32, x.dims());
  dequantize_bytes(x.raw(), x.dtype(), x.size(), zero, scale, f.mutable_data<float>());
  return f;
}

// The float result quantized with the output's scale and zero point (inputs `at` and
// `at` + 1; the zero point's type is the output's).
void quantize_output(KernelContext& ctx, const HostTensor& f, size_t at) {
  const HostTensor& zero_point = eight_bit_input(ctx, at + 1, "Y_zero_point");
  const auto scale = static_cast<float>(single_real_input(ctx, at, "Y_scale"));
  const auto zero = static_cast<float>(single_real_input(ctx, at + 1, "Y_zero_point"));
  HostTensor y = ctx.new_output(0, zero_point.dtype(), f.dims());  // every value is written
  quantize_floats(f.data<float>(), f.size(), scale, zero, zero_point.dtype(), y.mutable_raw());
  ctx.outputs[0] = std::move(y);
}

void quant_softmax(KernelContext& ctx) {
  HostTensor f = dequantized_input(ctx);
  const int64_t axis = tensor_axis(ctx, ctx.attr_int("axis", -1), f);
  softmax_along(f.dims(), axis, f.data<float>(), f.mutable_data<float>());  // lane by lane, in place
  quantize_output(ctx, f, 3);
}

void quant_layer_norm(KernelContext& ctx) {
  const HostTensor f = dequantized_input(ctx);
  const HostTensor normalized =
      layer_norm_rows(ctx, f, ctx.attr_int("axis", -1), ctx.attr_float("epsilon", 1e-5f), ctx.input(3),
                      ctx.has_input(4) ? &ctx.input(4) : nullptr);
  quantize_output(ctx, normalized, 5);
}

}  // namespace

void register_quant_row_kernels(OpRegistry& r) {
  r.add(kGeoptDomain, "QuantSoftmax", quant_softmax, false);
  r.add(kGeoptDomain, "QuantLayerNorm", quant_layer_norm, false);
}

}  // namespace geopt
