// QuantGlobalAveragePool (ai.geopt): the mean of each channel's plane of an 8-bit tensor,
// requantized: a GlobalAveragePool between a DequantizeLinear and a QuantizeLinear as one
// 8-bit kernel (squeeze-and-excitation squeezes and classifier heads of ONNX Runtime's
// static QDQ models). Channels first, or channel-blocked lane by lane.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "eval/kernel.h"
#include "kernels/arguments.h"
#include "kernels/quantize.h"
#include "util/team_region.h"

namespace geopt {
namespace {

// The input as [outer, plane, lanes]: channels first [N, C, ...] reduces every dim after C
// (lanes 1); channel-blocked [N, C / block, ..., block] every dim between the two (lanes
// the block).
struct PoolShape {
  int64_t outer = 1, plane = 1, lanes = 1;
  std::vector<int64_t> out_dims;
};

PoolShape pool_shape(const KernelContext& ctx, const HostTensor& x, bool blocked) {
  if (x.rank() < 3 || (blocked && x.rank() != 5))
    ctx.fail("X must be " + std::string(blocked ? "channel-blocked (rank 5)" : "of rank 3 or more") +
             ", not " + x.shape_string());
  PoolShape s;
  s.out_dims = x.dims();
  const size_t last = blocked ? x.rank() - 1 : x.rank();
  for (size_t d = 0; d < x.rank(); ++d) {
    if (d < 2)
      s.outer *= x.dim(d);
    else if (d < last) {
      s.plane *= x.dim(d);
      s.out_dims[d] = 1;
    } else
      s.lanes *= x.dim(d);
  }
  return s;  // an empty plane averages to NaN (0 / 0), which quantizes to 0, as the ops give
}

// Each (outer, lane)'s values summed exactly (int64), less the zero point once per value,
// then scaled: mean = sum x X_scale / plane in double, rounded to float, and quantized as
// QuantizeLinear quantizes it. The three ops sum the dequantized floats instead, so the two
// agree to within one step (exactly, unless that float sum's rounding crosses a half step).
template <class C>
void pool_typed(const uint8_t* in, C* out, const PoolShape& s, uint8_t mask, double zero, double x_scale,
                float y_scale, float y_zero) {
  const int64_t plane = s.plane, lanes = s.lanes;
  const double offset = zero * static_cast<double>(plane);
  // Shared among the threads when the input is large (for a small one an OpenMP region
  // costs more than the pass).
  team_region(s.outer * plane * lanes > (1 << 16), [&] {
    std::vector<int64_t> sums(static_cast<size_t>(lanes));
#pragma omp for schedule(static)
    for (int64_t o = 0; o < s.outer; ++o) {
      const uint8_t* base = in + o * plane * lanes;
      std::fill(sums.begin(), sums.end(), 0);
      for (int64_t p = 0; p < plane; ++p) {
        const uint8_t* row = base + p * lanes;
        for (int64_t l = 0; l < lanes; ++l) sums[static_cast<size_t>(l)] += row[l] ^ mask;
      }
      for (int64_t l = 0; l < lanes; ++l) {
        const double centred = static_cast<double>(sums[static_cast<size_t>(l)]) - offset;
        const float mean = static_cast<float>(centred * x_scale / static_cast<double>(plane));
        out[o * lanes + l] = quantize_value<C>(mean, y_scale, y_zero);
      }
    }
  });
}

void quant_global_average_pool(KernelContext& ctx) {
  const int64_t blocked = ctx.attr_int("channel_blocked", 0);
  if (blocked != 0 && blocked != 1)
    ctx.fail("channel_blocked must be 0 or 1, not " + std::to_string(blocked));
  const HostTensor& x = ctx.input(0);
  const DType tx = x.dtype(), ty = ctx.input(4).dtype();
  auto is8 = [](DType t) { return t == DType::U8 || t == DType::I8; };
  if (!is8(tx) || !is8(ty) || ctx.input(2).dtype() != tx)
    ctx.fail("X and Y must be 8-bit, each zero point of its tensor's type");
  const PoolShape s = pool_shape(ctx, x, blocked == 1);
  const double x_scale = single_real_input(ctx, 1, "X_scale");
  // int8 v is read as the byte v + 128 (b ^ 0x80), so its zero point moves up by 128 too.
  const uint8_t mask = tx == DType::I8 ? 0x80 : 0;
  const double zero = single_real_input(ctx, 2, "X_zero_point") + (tx == DType::I8 ? 128.0 : 0.0);
  const auto y_scale = static_cast<float>(single_real_input(ctx, 3, "Y_scale"));
  const auto y_zero = static_cast<float>(single_real_input(ctx, 4, "Y_zero_point"));
  HostTensor y = ctx.new_output(0, ty, s.out_dims);
  const auto* in = reinterpret_cast<const uint8_t*>(x.raw());
  if (ty == DType::U8)
    pool_typed(in, y.mutable_data<uint8_t>(), s, mask, zero, x_scale, y_scale, y_zero);
  else
    pool_typed(in, y.mutable_data<int8_t>(), s, mask, zero, x_scale, y_scale, y_zero);
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_quant_pool_kernels(OpRegistry& r) {
  r.add(kGeoptDomain, "QuantGlobalAveragePool", quant_global_average_pool, false);
}

}  // namespace geopt
