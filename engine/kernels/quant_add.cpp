// QuantAdd (ai.geopt): an Add between two DequantizeLinears and a QuantizeLinear in one
// pass over 8-bit tensors, bit for bit what the three ops compute (quantize.h's rounding).
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "eval/kernel.h"
#include "kernels/elementwise_util.h"
#include "kernels/quantize.h"

namespace geopt {
namespace {

struct QuantAddParams {
  float a_scale, a_zero, b_scale, b_zero, c_scale, c_zero;
  bool relu;
};

// One run: out[j] from a[j * sa] and b[j * sb]. Dequantized, added and requantized in
// float as DequantizeLinear, Add, Relu and QuantizeLinear do.
template <class A, class B, class C>
inline void quant_add_run(const A* a, int64_t sa, const B* b, int64_t sb, C* out, int64_t n,
                          const QuantAddParams& p) {
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const float x = (static_cast<float>(a[j * sa]) - p.a_zero) * p.a_scale;
    const float y = (static_cast<float>(b[j * sb]) - p.b_zero) * p.b_scale;
    float sum = x + y;
    if (p.relu) sum = sum > 0.0f ? sum : 0.0f;
    out[j] = quantize_value<C>(sum, p.c_scale, p.c_zero);
  }
}

// The contiguous case (equal shapes: a residual block's two branches), vectorized for the
// widest vectors the CPU has.
template <class A, class B, class C>
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void quant_add_contiguous(
    const A* a, const B* b, C* out, int64_t n, const QuantAddParams& p) {
  quant_add_run(a, 1, b, 1, out, n, p);
}

template <class A, class B, class C>
void quant_add_typed(KernelContext& ctx, const QuantAddParams& p) {
  const HostTensor& ta = ctx.input(0);
  const HostTensor& tb = ctx.input(3);
  const BroadcastPlan<2> plan = plan_broadcast<2>(ctx, {&ta, &tb});
  HostTensor tc = ctx.new_output(0, std::is_same_v<C, uint8_t> ? DType::U8 : DType::I8, plan.dims);
  const A* a = ta.data<A>();
  const B* b = tb.data<B>();
  C* out = tc.mutable_data<C>();
  if (ta.dims() == tb.dims()) {
    constexpr int64_t kChunk = 1 << 14;
    const int64_t n = tc.size(), chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > (1 << 16))
    for (int64_t c = 0; c < chunks; ++c)
      quant_add_contiguous(a + c * kChunk, b + c * kChunk, out + c * kChunk, std::min(kChunk, n - c * kChunk),
                           p);
  } else {
    apply_broadcast_tiles(plan, [&](int64_t i, const int64_t* base, const int64_t* steps, int64_t count,
                                    int64_t rows, const int64_t* row_steps) {
      for (int64_t r = 0; r < rows; ++r)
        quant_add_run(a + base[0] + r * row_steps[0], steps[0], b + base[1] + r * row_steps[1], steps[1],
                      out + i + r * count, count, p);
    });
  }
  ctx.outputs[0] = std::move(tc);
}

// A scalar scale or zero point (QuantAdd's are per tensor).
double scalar(const KernelContext& ctx, size_t i, const char* what) {
  const HostTensor& t = ctx.input(i);
  if (t.size() != 1) ctx.fail(std::string(what) + " must be a scalar, not " + t.shape_string());
  return t.real_at(0);
}

void quant_add(KernelContext& ctx) {
  const std::string activation = ctx.attr_string("activation", "none");
  if (activation != "none" && activation != "Relu")
    ctx.fail("activation '" + activation + "' is none of none, Relu");
  QuantAddParams p{};
  p.a_scale = static_cast<float>(scalar(ctx, 1, "A_scale"));
  p.a_zero = static_cast<float>(scalar(ctx, 2, "A_zero_point"));
  p.b_scale = static_cast<float>(scalar(ctx, 4, "B_scale"));
  p.b_zero = static_cast<float>(scalar(ctx, 5, "B_zero_point"));
  p.c_scale = static_cast<float>(scalar(ctx, 6, "C_scale"));
  p.c_zero = static_cast<float>(scalar(ctx, 7, "C_zero_point"));
  p.relu = activation == "Relu";
  const DType ta = ctx.input(0).dtype(), tb = ctx.input(3).dtype(), tc = ctx.input(7).dtype();
  auto is8 = [](DType t) { return t == DType::U8 || t == DType::I8; };
  if (!is8(ta) || !is8(tb) || !is8(tc) || ctx.input(2).dtype() != ta || ctx.input(5).dtype() != tb)
    ctx.fail("A, B and C must be 8-bit, each zero point of its tensor's type");
  // Eight combinations of uint8 and int8.
  auto with_c = [&]<class A, class B>() {
    if (tc == DType::U8)
      quant_add_typed<A, B, uint8_t>(ctx, p);
    else
      quant_add_typed<A, B, int8_t>(ctx, p);
  };
  auto with_b = [&]<class A>() {
    if (tb == DType::U8)
      with_c.template operator()<A, uint8_t>();
    else
      with_c.template operator()<A, int8_t>();
  };
  if (ta == DType::U8)
    with_b.template operator()<uint8_t>();
  else
    with_b.template operator()<int8_t>();
}

}  // namespace

void register_quant_add_kernel(OpRegistry& r) { r.add(kGeoptDomain, "QuantAdd", quant_add, false); }

}  // namespace geopt
