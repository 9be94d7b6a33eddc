// geopt's 8-bit elementwise kernels (ai.geopt), each bit for bit what the ops it replaces
// compute: QuantAdd and QuantMul, an Add or Mul between two DequantizeLinears and a
// QuantizeLinear (quantize.h's rounding), and QuantLookup, any function of one 8-bit
// tensor as a table of its 256 results (made at compile time by the ops themselves).
#include <algorithm>
#include <cstdint>
#include <string>
#include <type_traits>

#include "eval/kernel.h"
#include "kernels/arguments.h"
#include "kernels/elementwise_util.h"
#include "kernels/quantize.h"

namespace geopt {
namespace {

// An int8 byte b holds v = (int8_t)b, and b ^ 0x80 is v + 128 as uint8: each input is
// read as bytes, flipped by its mask, less its zero point plus 128 for int8 (exact: small
// integers in float), so one loop serves uint8 and int8.
struct QuantBinaryParams {
  float a_scale, a_zero, b_scale, b_zero, c_scale, c_zero;
  uint8_t a_mask, b_mask;
  bool relu, mul;
};

// One run: out[j] from a[j * sa] and b[j * sb]. Dequantized, added or multiplied and
// requantized in float as DequantizeLinear, Add or Mul, Relu and QuantizeLinear do.
// The parameters are copied out first: the output is bytes, which may alias anything, so
// a read through `p` after each store would keep the loop scalar. The operation is a
// template argument: a run-time choice between x * y and x + y also keeps GCC 12 scalar.
template <class C, bool kMul>
inline void quant_binary_run(const uint8_t* a, int64_t sa, const uint8_t* b, int64_t sb, C* out, int64_t n,
                             const QuantBinaryParams& p) {
  const float a_zero = p.a_zero, a_scale = p.a_scale, b_zero = p.b_zero, b_scale = p.b_scale,
              c_scale = p.c_scale, c_zero = p.c_zero;
  const uint8_t a_mask = p.a_mask, b_mask = p.b_mask;
  const bool relu = p.relu;
#pragma omp simd
  for (int64_t j = 0; j < n; ++j) {
    const float x = (static_cast<float>(a[j * sa] ^ a_mask) - a_zero) * a_scale;
    const float y = (static_cast<float>(b[j * sb] ^ b_mask) - b_zero) * b_scale;
    float sum = kMul ? x * y : x + y;
    if (relu) sum = sum < 0.0f ? 0.0f : sum;  // NaN stays NaN, as Relu keeps it
    out[j] = quantize_value<C>(sum, c_scale, c_zero);
  }
}

// The contiguous case (equal shapes: a residual block's two branches), vectorized for the
// widest vectors the CPU has (one function per operation and output type: clones take no
// templates).
#define GEOPT_QUANT_BINARY_CLONE(name, C, kMul)                                            \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void name( \
      const uint8_t* a, const uint8_t* b, C* out, int64_t n, const QuantBinaryParams& p) { \
    quant_binary_run<C, kMul>(a, 1, b, 1, out, n, p);                                      \
  }
GEOPT_QUANT_BINARY_CLONE(quant_add_to_u8, uint8_t, false)
GEOPT_QUANT_BINARY_CLONE(quant_add_to_i8, int8_t, false)
GEOPT_QUANT_BINARY_CLONE(quant_mul_to_u8, uint8_t, true)
GEOPT_QUANT_BINARY_CLONE(quant_mul_to_i8, int8_t, true)
#undef GEOPT_QUANT_BINARY_CLONE

template <class C>
void quant_add_typed(KernelContext& ctx, const QuantBinaryParams& p) {
  const HostTensor& ta = ctx.input(0);
  const HostTensor& tb = ctx.input(3);
  const BroadcastPlan<2> plan = plan_broadcast<2>(ctx, {&ta, &tb});
  HostTensor tc = ctx.new_output(0, std::is_same_v<C, uint8_t> ? DType::U8 : DType::I8, plan.dims);
  const auto* a = reinterpret_cast<const uint8_t*>(ta.raw());
  const auto* b = reinterpret_cast<const uint8_t*>(tb.raw());
  C* out = tc.mutable_data<C>();
  if (ta.dims() == tb.dims()) {
    for_each_run(tc.size(), [&](int64_t at, int64_t end) {
      if constexpr (std::is_same_v<C, uint8_t>)
        (p.mul ? quant_mul_to_u8 : quant_add_to_u8)(a + at, b + at, out + at, end - at, p);
      else
        (p.mul ? quant_mul_to_i8 : quant_add_to_i8)(a + at, b + at, out + at, end - at, p);
    });
  } else {
    apply_broadcast_tiles(plan, [&](int64_t i, const int64_t* base, const int64_t* steps, int64_t count,
                                    int64_t rows, const int64_t* row_steps) {
      for (int64_t r = 0; r < rows; ++r) {
        const uint8_t* ra = a + base[0] + r * row_steps[0];
        const uint8_t* rb = b + base[1] + r * row_steps[1];
        if (p.mul)
          quant_binary_run<C, true>(ra, steps[0], rb, steps[1], out + i + r * count, count, p);
        else
          quant_binary_run<C, false>(ra, steps[0], rb, steps[1], out + i + r * count, count, p);
      }
    });
  }
  ctx.outputs[0] = std::move(tc);
}

// QuantAdd (mul false) and QuantMul.
void quant_binary(KernelContext& ctx, bool mul) {
  const std::string activation = ctx.attr_string("activation", "none");
  if (activation != "none" && activation != "Relu")
    ctx.fail("activation '" + activation + "' is none of none, Relu");
  QuantBinaryParams p{};
  p.a_scale = static_cast<float>(single_real_input(ctx, 1, "A_scale"));
  p.a_zero = static_cast<float>(single_real_input(ctx, 2, "A_zero_point"));
  p.b_scale = static_cast<float>(single_real_input(ctx, 4, "B_scale"));
  p.b_zero = static_cast<float>(single_real_input(ctx, 5, "B_zero_point"));
  p.c_scale = static_cast<float>(single_real_input(ctx, 6, "C_scale"));
  p.c_zero = static_cast<float>(single_real_input(ctx, 7, "C_zero_point"));
  p.relu = activation == "Relu";
  p.mul = mul;
  const DType ta = ctx.input(0).dtype(), tb = ctx.input(3).dtype(), tc = ctx.input(7).dtype();
  auto is8 = [](DType t) { return t == DType::U8 || t == DType::I8; };
  if (!is8(ta) || !is8(tb) || !is8(tc) || ctx.input(2).dtype() != ta || ctx.input(5).dtype() != tb)
    ctx.fail("A, B and C must be 8-bit, each zero point of its tensor's type");
  p.a_mask = ta == DType::I8 ? 0x80 : 0;
  p.b_mask = tb == DType::I8 ? 0x80 : 0;
  p.a_zero += ta == DType::I8 ? 128.0f : 0.0f;
  p.b_zero += tb == DType::I8 ? 128.0f : 0.0f;
  if (tc == DType::U8)
    quant_add_typed<uint8_t>(ctx, p);
  else
    quant_add_typed<int8_t>(ctx, p);
}

// Y = Table[X - lowest value of X's type]: 256 entries of Y's type.
void quant_lookup(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& table = ctx.input(1);
  auto is8 = [](DType t) { return t == DType::U8 || t == DType::I8; };
  if (!is8(x.dtype()) || !is8(table.dtype()) || table.size() != 256)
    ctx.fail("X must be 8-bit and Table 256 8-bit entries, not " + x.shape_string() + " and " +
             table.shape_string());
  HostTensor y = ctx.new_output(0, table.dtype(), x.dims());
  const auto* in = reinterpret_cast<const uint8_t*>(x.raw());
  const auto* t = reinterpret_cast<const uint8_t*>(table.raw());
  auto* out = reinterpret_cast<uint8_t*>(y.mutable_raw());
  const uint8_t mask = x.dtype() == DType::I8 ? 0x80 : 0;  // int8 v at v + 128
  for_each_run(x.size(), [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) out[i] = t[in[i] ^ mask];
  });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_quant_elementwise_kernels(OpRegistry& r) {
  r.add(
      kGeoptDomain, "QuantAdd", [](KernelContext& ctx) { quant_binary(ctx, false); }, false);
  r.add(
      kGeoptDomain, "QuantMul", [](KernelContext& ctx) { quant_binary(ctx, true); }, false);
  r.add(kGeoptDomain, "QuantLookup", quant_lookup, false);
}

}  // namespace geopt
