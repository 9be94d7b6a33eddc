// Quantization kernels: ONNX's linear (de)quantization, dynamic quantization and the
// integer products (MatMulInteger, ConvInteger, QLinearMatMul, QLinearConv). Integer
// products accumulate exactly in int64 and round half to even, as ONNX specifies.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>
#include <vector>

#include "eval/kernel.h"
#include "kernels/arguments.h"
#include "kernels/conv.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_util.h"
#include "kernels/int8_products.h"
#include "kernels/layout.h"
#include "kernels/linalg.h"
#include "kernels/quantize.h"
#include "util/team_region.h"

namespace geopt {
namespace {

// Rounds half to even and saturates into [lo, hi].
int64_t saturate_round(double v, int64_t lo, int64_t hi) {
  if (std::isnan(v)) return 0;
  const double r = std::nearbyint(v);
  if (r <= static_cast<double>(lo)) return lo;
  if (r >= static_cast<double>(hi)) return hi;
  return static_cast<int64_t>(r);
}

std::pair<int64_t, int64_t> int_range(const KernelContext& ctx, DType t) {
  switch (t) {
    case DType::U8:
      return {0, 255};
    case DType::I8:
      return {-128, 127};
    case DType::U16:
      return {0, 65535};
    case DType::I16:
      return {-32768, 32767};
    case DType::I32:
      return {std::numeric_limits<int32_t>::min(), std::numeric_limits<int32_t>::max()};
    default:
      ctx.fail("quantized type must be uint8, int8, uint16, int16 or int32, not " + dtype_name(t));
  }
}

HostTensor integer_tensor(DType t, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
  HostTensor y(t, dims);
  dispatch_real(
      t,
      [&]<class T>() {
        for (size_t i = 0; i < values.size(); ++i) y.mutable_data<T>()[i] = static_cast<T>(values[i]);
      },
      "quantized output");
  return y;
}

// Which scale / zero point element applies to element i: per tensor (scalar or [1]), per
// slice along `axis` (a 1-D parameter as long as that axis), or (opset 21, block_size > 0)
// per block of block_size along `axis` (a parameter of x's rank, ceil(len / block_size)
// long on axis and as long as x elsewhere).
struct QuantParams {
  const HostTensor* scale;
  const HostTensor* zero;  // may be null (zero point 0)
  int64_t axis = 0, axis_len = 1, inner = 1, block = 0, blocks = 1;
  bool per_axis = false;

  QuantParams(const KernelContext& ctx, const HostTensor& x, const HostTensor& s, const HostTensor* z)
      : scale(&s), zero(z) {
    block = ctx.opset() >= 21 ? ctx.attr_int("block_size", 0) : 0;
    if (block < 0) ctx.fail("block_size must not be negative");
    if (s.size() != 1 || block > 0) {
      axis = tensor_axis(ctx, ctx.attr_int("axis", 1), x);
      axis_len = x.dims()[static_cast<size_t>(axis)];
      for (size_t a = static_cast<size_t>(axis) + 1; a < x.rank(); ++a) inner *= x.dims()[a];
      per_axis = true;
      if (block > 0) {
        blocks = (axis_len + block - 1) / block;
        std::vector<int64_t> want = x.dims();
        want[static_cast<size_t>(axis)] = blocks;
        if (s.dims() != want)
          ctx.fail("a blocked scale must be " + HostTensor(s.dtype(), want).shape_string() + " (block_size " +
                   std::to_string(block) + " on axis " + std::to_string(axis) + "), not " + s.shape_string());
      } else {
        if (s.rank() != 1) ctx.fail("a per-axis scale must be 1-D (or set block_size for a blocked one)");
        if (s.size() != axis_len)
          ctx.fail("the scale has " + std::to_string(s.size()) + " entries for an axis of " +
                   std::to_string(axis_len));
      }
    }
    if (s.size() < 1 && x.size() > 0) ctx.fail("the scale is empty");
    if (z && z->dims() != s.dims() && z->size() != s.size())
      ctx.fail("the zero point and the scale differ in shape");
  }
  int64_t slot(int64_t i) const {
    if (!per_axis) return 0;
    if (block == 0) return i / inner % axis_len;
    const int64_t outer = i / (axis_len * inner), at = i / inner % axis_len, in = i % inner;
    return (outer * blocks + at / block) * inner + in;
  }
  double scale_at(int64_t i) const { return scale->real_at(slot(i)); }
  int64_t zero_at(int64_t i) const { return zero ? zero->int_at(slot(i)) : 0; }
};

// QuantizeLinear's common case (a float activation, one scale, an 8-bit output) as one
// vectorized pass.
bool quantize_per_tensor(KernelContext& ctx, const HostTensor& x, const QuantParams& q, DType out) {
  if (x.dtype() != DType::F32 || q.per_axis || (out != DType::U8 && out != DType::I8)) return false;
  HostTensor y = ctx.new_output(0, out, x.dims());
  quantize_floats(x.data<float>(), x.size(), static_cast<float>(q.scale_at(0)),
                  static_cast<float>(q.zero_at(0)), out, y.mutable_raw());
  ctx.outputs[0] = std::move(y);
  return true;
}

}  // namespace

namespace {

// quantize_floats of elements [begin, end), in one thread.
template <class T>
void quantize_range(const float* x, int64_t begin, int64_t end, float scale, float zero, T* y) {
#pragma omp simd
  for (int64_t i = begin; i < end; ++i) y[i] = quantize_value<T>(x[i], scale, zero);
}

}  // namespace

void quantize_floats(const float* x, int64_t n, float scale, float zero, DType out, std::byte* y) {
  for_each_run(n, [&](int64_t begin, int64_t end) {
    quantize_floats_serial(x + begin, end - begin, scale, zero, out, y + begin);
  });
}

// Wider vectors where the CPU has them (chosen when the program loads).
__attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default"))) void quantize_floats_serial(
    const float* x, int64_t n, float scale, float zero, DType out, std::byte* y) {
  if (out == DType::U8)
    quantize_range(x, 0, n, scale, zero, reinterpret_cast<uint8_t*>(y));
  else
    quantize_range(x, 0, n, scale, zero, reinterpret_cast<int8_t*>(y));
}

namespace {

void quantize_linear(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor* zero = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  QuantParams q(ctx, x, ctx.input(1), zero);
  const int64_t output_dtype = ctx.opset() >= 21 ? ctx.attr_int("output_dtype", 0) : 0;
  const DType out = zero ? zero->dtype() : output_dtype != 0 ? static_cast<DType>(output_dtype) : DType::U8;
  if (zero && output_dtype != 0 && static_cast<DType>(output_dtype) != zero->dtype())
    ctx.fail("output_dtype differs from the zero point's type");
  if (output_dtype != 0 && out != DType::U8 && out != DType::I8 && out != DType::U16 && out != DType::I16)
    ctx.fail("output_dtype must be uint8, int8, uint16 or int16, not " + dtype_name(out));
  if (quantize_per_tensor(ctx, x, q, out)) return;
  const auto [lo, hi] = int_range(ctx, out);
  std::vector<int64_t> v(static_cast<size_t>(x.size()));
  for (int64_t i = 0; i < x.size(); ++i) {
    // ONNX divides by the scale in the scale's precision before rounding.
    const float scaled = static_cast<float>(x.real_at(i)) / static_cast<float>(q.scale_at(i));
    v[static_cast<size_t>(i)] = saturate_round(
        static_cast<double>(std::nearbyint(scaled)) + static_cast<double>(q.zero_at(i)), lo, hi);
  }
  ctx.outputs[0] = integer_tensor(out, x.dims(), v);
}

// DequantizeLinear's common case (an 8-bit tensor, one float scale) in one vectorized pass:
// (x - zero) in integers, then times the scale in float, as the general loop computes it.
template <class T>
void dequantize_bytes(const T* x, int64_t n, int32_t zero, float scale, float* y) {
  for_each_run(n, [&](int64_t begin, int64_t end) {
#pragma omp simd
    for (int64_t i = begin; i < end; ++i)
      y[i] = static_cast<float>(static_cast<int32_t>(x[i]) - zero) * scale;
  });
}

}  // namespace

void dequantize_bytes(const std::byte* x, DType in, int64_t n, int32_t zero, float scale, float* y) {
  if (in == DType::U8)
    dequantize_bytes(reinterpret_cast<const uint8_t*>(x), n, zero, scale, y);
  else
    dequantize_bytes(reinterpret_cast<const int8_t*>(x), n, zero, scale, y);
}

namespace {

void dequantize_linear(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& scale = ctx.input(1);
  const HostTensor* zero = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  QuantParams q(ctx, x, scale, zero);
  if (!q.per_axis && scale.dtype() == DType::F32 && (x.dtype() == DType::U8 || x.dtype() == DType::I8)) {
    HostTensor y = ctx.new_output(0, DType::F32, x.dims());
    const auto z = static_cast<int32_t>(q.zero_at(0));
    const auto s = static_cast<float>(q.scale_at(0));
    dequantize_bytes(x.raw(), x.dtype(), x.size(), z, s, y.mutable_data<float>());
    ctx.outputs[0] = std::move(y);
    return;
  }
  HostTensor y(scale.dtype() == DType::F16 ? DType::F32 : scale.dtype(), x.dims());
  dispatch_float(
      y.dtype(),
      [&]<class T>() {
        T* py = y.mutable_data<T>();
        for (int64_t i = 0; i < x.size(); ++i)
          py[i] = static_cast<T>(static_cast<T>(x.int_at(i) - q.zero_at(i)) * static_cast<T>(q.scale_at(i)));
      },
      "DequantizeLinear");
  ctx.outputs[0] = std::move(y);
}

// y = saturate(round(x / scale) + zero point) with the range of x (widened to hold 0).
void dynamic_quantize_linear(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.dtype() != DType::F32) ctx.fail("x must be float, not " + dtype_name(x.dtype()));
  const float* px = x.data<float>();
  const int64_t size = x.size();
  // The range of each run of 16K values, then of the runs (an OpenMP reduction cannot name
  // the caller's variables from team_region's lambda). NaN is passed over, as std::min and
  // std::max do; 0 is in every run's range.
  constexpr int64_t kRun = 1 << 14;
  const int64_t runs = (size + kRun - 1) / kRun;
  std::vector<float> run_lo(static_cast<size_t>(runs), 0.0f), run_hi(static_cast<size_t>(runs), 0.0f);
  team_region(size > (1 << 16), [&] {
#pragma omp for
    for (int64_t r = 0; r < runs; ++r) {
      float l = 0.0f, h = 0.0f;
      for (int64_t i = r * kRun; i < std::min(size, (r + 1) * kRun); ++i) {
        l = std::min(l, px[i]);
        h = std::max(h, px[i]);
      }
      run_lo[static_cast<size_t>(r)] = l;
      run_hi[static_cast<size_t>(r)] = h;
    }
  });
  float lo = 0.0f, hi = 0.0f;
  for (int64_t r = 0; r < runs; ++r) {
    lo = std::min(lo, run_lo[static_cast<size_t>(r)]);
    hi = std::max(hi, run_hi[static_cast<size_t>(r)]);
  }
  const float scale = (hi - lo) / 255.0f;
  const int64_t zero = scale == 0.0f ? 0 : saturate_round(std::nearbyint(-lo / scale), 0, 255);
  HostTensor y = ctx.new_output(0, DType::U8, x.dims());
  uint8_t* py = y.mutable_data<uint8_t>();
  const float z = static_cast<float>(zero);
  team_region(size > (1 << 16), [&] {
#pragma omp for
    for (int64_t i = 0; i < size; ++i) {
      // Past +-512 every value saturates, so the clamp changes nothing and keeps the
      // rounding exact; NaN stays NaN through it and comes out 0, as saturate_round's.
      const float v = scale == 0.0f ? 0.0f : std::min(std::max(px[i] / scale, -512.0f), 512.0f);
      const float r = round_half_even(v) + z;
      py[i] = r >= 255.0f ? uint8_t{255} : r > 0.0f ? static_cast<uint8_t>(r) : uint8_t{0};
    }
  });
  ctx.outputs[0] = std::move(y);
  ctx.set_output(1, HostTensor::scalar<float>(DType::F32, scale));
  ctx.set_output(2, HostTensor::scalar<uint8_t>(DType::U8, static_cast<uint8_t>(zero)));
}

// x - zero point as int32, the zero point per tensor or per slice of `axis` (a 1-D
// zero point as long as that axis; rows of A, columns of B, output channels of W).
HostTensor centered(const KernelContext& ctx, const HostTensor& x, const HostTensor* zero, int64_t axis) {
  HostTensor y(DType::I32, x.dims());
  int32_t* py = y.mutable_data<int32_t>();
  int64_t inner = 1, len = 1;
  const bool per_axis = zero && zero->size() > 1;
  if (per_axis) {
    axis = tensor_axis(ctx, axis, x);
    len = x.dims()[static_cast<size_t>(axis)];
    if (zero->size() != len)
      ctx.fail("a zero point has " + std::to_string(zero->size()) + " entries for an axis of " +
               std::to_string(len));
    for (size_t a = static_cast<size_t>(axis) + 1; a < x.rank(); ++a) inner *= x.dims()[a];
  }
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t z = zero ? zero->int_at(per_axis ? i / inner % len : 0) : 0;
    py[i] = static_cast<int32_t>(x.int_at(i) - z);
  }
  return y;
}

const HostTensor* optional_input(const KernelContext& ctx, size_t i) {
  return ctx.has_input(i) ? &ctx.input(i) : nullptr;
}

HostTensor cast_to_i64(const HostTensor& x) {
  HostTensor y(DType::I64, x.dims());
  for (int64_t i = 0; i < x.size(); ++i) y.mutable_data<int64_t>()[i] = x.int_at(i);
  return y;
}

// The integer product of the centred operands, each output element summed in int64.
HostTensor integer_matmul(const KernelContext& ctx, const HostTensor& a, const HostTensor& b) {
  // int64 operands: matmul's plain loop sums their products exactly while |sum| < 2^53,
  // which int8/uint8 operands (at most 2^16 per product) keep for any K below 2^37.
  return matmul(ctx, cast_to_i64(a), cast_to_i64(b));
}

bool is_8bit(const HostTensor& t) { return t.dtype() == DType::U8 || t.dtype() == DType::I8; }

// A zero point given one value per slice (or one for all) as int32s; empty where it is
// neither (the loops check and name it).
std::vector<int32_t> zero_points(const HostTensor* zero, int64_t slices) {
  if (!zero) return {0};
  if (zero->size() != 1 && zero->size() != slices) return {};
  std::vector<int32_t> v(static_cast<size_t>(zero->size()));
  for (int64_t i = 0; i < zero->size(); ++i)
    v[static_cast<size_t>(i)] = static_cast<int32_t>(zero->int_at(i));
  return v;
}

// The int32 sums of (A - a_zero) x (B - b_zero) for an 8-bit A with one zero point and a
// 2-D 8-bit B, on oneDNN's exact int8 product (kernels/int8_products.h); nullopt where it
// does not apply. `is_output`: the tensor is the kernel's output 0 (planned storage).
std::optional<HostTensor> matmul_sums_on_primitive(KernelContext& ctx, const HostTensor& a,
                                                   const HostTensor* a_zero, const HostTensor& b,
                                                   const HostTensor* b_zero, bool is_output) {
  if (!is_8bit(a) || !is_8bit(b) || b.rank() != 2 || a.rank() < 1 || a.dims().back() != b.dim(0))
    return std::nullopt;
  if ((a_zero && (a_zero->size() != 1 || a_zero->dtype() != a.dtype())) ||
      (b_zero && b_zero->dtype() != b.dtype()))
    return std::nullopt;
  const std::vector<int32_t> bz = zero_points(b_zero, b.dim(1));
  if (bz.empty()) return std::nullopt;
  const int64_t k = b.dim(0), rows = k == 0 ? 0 : a.size() / k;
  std::vector<int64_t> dims = a.dims();
  if (a.rank() == 1)
    dims = {b.dim(1)};
  else
    dims.back() = b.dim(1);
  HostTensor y =
      is_output ? ctx.new_output(0, DType::I32, dims) : HostTensor::uninitialized(DType::I32, dims);
  if (!int8_matmul(a.raw(), a.dtype(), rows, k, a_zero ? static_cast<int32_t>(a_zero->int_at(0)) : 0, b, bz,
                   y.mutable_data<int32_t>()))
    return std::nullopt;
  return y;
}

void matmul_integer(KernelContext& ctx) {
  const HostTensor& a = ctx.input(0);
  const HostTensor& b = ctx.input(1);
  if (a.rank() < 1 || b.rank() < 1) ctx.fail("operands must have rank >= 1");
  if (auto y = matmul_sums_on_primitive(ctx, a, optional_input(ctx, 2), b, optional_input(ctx, 3), true)) {
    ctx.outputs[0] = std::move(*y);
    return;
  }
  HostTensor ac =
      centered(ctx, a, optional_input(ctx, 2), std::max<int64_t>(static_cast<int64_t>(a.rank()) - 2, 0));
  HostTensor bc = centered(ctx, b, optional_input(ctx, 3), -1);
  HostTensor acc = integer_matmul(ctx, ac, bc);
  HostTensor y(DType::I32, acc.dims());
  for (int64_t i = 0; i < acc.size(); ++i)  // int32 arithmetic wraps; so does this, without UB
    y.mutable_data<int32_t>()[i] =
        static_cast<int32_t>(static_cast<uint32_t>(static_cast<uint64_t>(acc.data<int64_t>()[i])));
  ctx.outputs[0] = std::move(y);
}

// An integer convolution's window over x [N, C, spatial...] by w [M, C/group, k...], its
// group and its output dims, checked.
WindowGeometry integer_conv_geometry(const KernelContext& ctx, const HostTensor& x, const HostTensor& w,
                                     int64_t& group, std::vector<int64_t>& out_dims) {
  if (x.rank() < 3 || w.rank() != x.rank())
    ctx.fail("needs x [N, C, spatial...] and weights of the same rank");
  group = ctx.attr_int("group", 1);
  const int64_t n = x.dims()[0], c = x.dims()[1], m = w.dims()[0];
  if (group <= 0 || c % group != 0 || m % group != 0 || w.dims()[1] * group != c)
    ctx.fail("channels do not match the weights and group");
  std::vector<int64_t> kernel =
      ctx.attr_ints("kernel_shape", std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()));
  if (kernel != std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()))
    ctx.fail("kernel_shape does not match the weights " + w.shape_string());
  WindowGeometry g = window_geometry(ctx, x.dims(), kernel, false);
  out_dims = {n, m};
  out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
  return g;
}

// Direct integer convolution: x [N, C, spatial...] and w [M, C/group, k...], both already
// centred, accumulated in int64.
std::vector<int64_t> conv_integer(const KernelContext& ctx, const HostTensor& x, const HostTensor& w,
                                  std::vector<int64_t>& out_dims) {
  int64_t group = 1;
  const WindowGeometry g = integer_conv_geometry(ctx, x, w, group, out_dims);
  const int64_t n = x.dims()[0], c = x.dims()[1], m = w.dims()[0];
  const std::vector<int64_t>& kernel = g.kernel;
  const size_t sp = g.in.size();
  int64_t out_spatial = 1, in_spatial = 1, k_spatial = 1;
  for (size_t d = 0; d < sp; ++d) {
    out_spatial *= g.out[d];
    in_spatial *= g.in[d];
    k_spatial *= kernel[d];
  }
  const int64_t cg = c / group, mg = m / group;
  const int32_t* px = x.data<int32_t>();
  const int32_t* pw = w.data<int32_t>();
  std::vector<int64_t> acc(static_cast<size_t>(n * m * out_spatial), 0);
  std::vector<int64_t> o(sp), k(sp);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t oc = 0; oc < m; ++oc) {
      const int64_t gi = oc / mg;
      for (int64_t os = 0; os < out_spatial; ++os) {
        for (size_t d = sp, rest = static_cast<size_t>(os); d-- > 0;) {
          o[d] = static_cast<int64_t>(rest) % g.out[d];
          rest /= static_cast<size_t>(g.out[d]);
        }
        int64_t sum = 0;
        for (int64_t ks = 0; ks < k_spatial; ++ks) {
          int64_t in_off = 0;
          bool inside = true;
          for (size_t d = sp, rest = static_cast<size_t>(ks); d-- > 0;) {
            k[d] = static_cast<int64_t>(rest) % kernel[d];
            rest /= static_cast<size_t>(kernel[d]);
          }
          for (size_t d = 0; d < sp && inside; ++d) {
            const int64_t at = o[d] * g.strides[d] - g.pad_begin[d] + k[d] * g.dilations[d];
            inside = at >= 0 && at < g.in[d];
            in_off = in_off * g.in[d] + at;
          }
          if (!inside) continue;
          for (int64_t ic = 0; ic < cg; ++ic)
            sum += static_cast<int64_t>(px[(b * c + gi * cg + ic) * in_spatial + in_off]) *
                   pw[(oc * cg + ic) * k_spatial + ks];
        }
        acc[static_cast<size_t>((b * m + oc) * out_spatial + os)] = sum;
      }
    }
  return acc;
}

// The int32 sums of Conv(x - x_zero, w - w_zero) for 2-D 8-bit operands with one zero
// point for x, on oneDNN's exact int8 convolution (kernels/int8_products.h); nullopt where
// it does not apply. `is_output`: the tensor is the kernel's output 0 (planned storage).
std::optional<HostTensor> conv_sums_on_primitive(KernelContext& ctx, const HostTensor& x,
                                                 const HostTensor* x_zero, const HostTensor& w,
                                                 const HostTensor* w_zero, bool is_output) {
  if (!is_8bit(x) || !is_8bit(w) || x.rank() != 4 || w.rank() != 4) return std::nullopt;
  if ((x_zero && (x_zero->size() != 1 || x_zero->dtype() != x.dtype())) ||
      (w_zero && w_zero->dtype() != w.dtype()))
    return std::nullopt;
  const std::vector<int32_t> wz = zero_points(w_zero, w.dim(0));
  if (wz.empty()) return std::nullopt;
  int64_t group = 1;
  std::vector<int64_t> dims;
  const WindowGeometry g = integer_conv_geometry(ctx, x, w, group, dims);
  HostTensor y =
      is_output ? ctx.new_output(0, DType::I32, dims) : HostTensor::uninitialized(DType::I32, dims);
  if (!int8_convolution(x, x_zero ? static_cast<int32_t>(x_zero->int_at(0)) : 0, w, wz, g, group,
                        y.mutable_data<int32_t>()))
    return std::nullopt;
  return y;
}

void conv_integer_kernel(KernelContext& ctx) {
  if (auto y = conv_sums_on_primitive(ctx, ctx.input(0), optional_input(ctx, 2), ctx.input(1),
                                      optional_input(ctx, 3), true)) {
    ctx.outputs[0] = std::move(*y);
    return;
  }
  HostTensor xc = centered(ctx, ctx.input(0), optional_input(ctx, 2), 1);
  HostTensor wc = centered(ctx, ctx.input(1), optional_input(ctx, 3), 0);
  std::vector<int64_t> dims;
  std::vector<int64_t> acc = conv_integer(ctx, xc, wc, dims);
  ctx.outputs[0] = integer_tensor(DType::I32, dims, acc);
}

// Requantizes int accumulators: y = saturate(round(acc * real_scale(i) / y_scale) + y_zero).
HostTensor requantize(const KernelContext& ctx, const std::vector<int64_t>& acc,
                      const std::vector<int64_t>& dims, const std::function<double(int64_t)>& real_scale,
                      const HostTensor& y_scale, const HostTensor& y_zero) {
  const auto [lo, hi] = int_range(ctx, y_zero.dtype());
  if (y_scale.size() != 1 || y_zero.size() != 1)
    ctx.fail("y_scale and y_zero_point must hold one value each");
  const double ys = y_scale.real_at(0);
  const int64_t yz = y_zero.int_at(0);
  std::vector<int64_t> v(acc.size());
  for (size_t i = 0; i < acc.size(); ++i)
    v[i] = saturate_round(
        std::nearbyint(static_cast<double>(acc[i]) * real_scale(static_cast<int64_t>(i)) / ys) +
            static_cast<double>(yz),
        lo, hi);
  return integer_tensor(y_zero.dtype(), dims, v);
}

void qlinear_matmul(KernelContext& ctx) {
  const HostTensor& a = ctx.input(0);
  const HostTensor& b = ctx.input(3);
  if (a.rank() < 1 || b.rank() < 1) ctx.fail("operands must have rank >= 1");
  HostTensor acc;
  if (auto sums = matmul_sums_on_primitive(ctx, a, &ctx.input(2), b, &ctx.input(5), false)) {
    acc = HostTensor(DType::I64, sums->dims());
    for (int64_t i = 0; i < acc.size(); ++i) acc.mutable_data<int64_t>()[i] = sums->data<int32_t>()[i];
  } else {
    HostTensor ac = centered(ctx, a, &ctx.input(2), std::max<int64_t>(static_cast<int64_t>(a.rank()) - 2, 0));
    HostTensor bc = centered(ctx, b, &ctx.input(5), -1);
    acc = integer_matmul(ctx, ac, bc);
  }
  const HostTensor& a_scale = ctx.input(1);
  const HostTensor& b_scale = ctx.input(4);
  const int64_t n = acc.rank() >= 1 ? acc.dims().back() : 1;
  const int64_t m = acc.rank() >= 2 ? acc.dim(-2) : 1;
  if (a_scale.size() < 1 || b_scale.size() < 1) ctx.fail("a_scale and b_scale must not be empty");
  if ((a_scale.size() != 1 && a_scale.size() != m) || (b_scale.size() != 1 && b_scale.size() != n))
    ctx.fail("a_scale must hold 1 or M values and b_scale 1 or N values");
  std::vector<int64_t> values(static_cast<size_t>(acc.size()));
  for (int64_t i = 0; i < acc.size(); ++i) values[static_cast<size_t>(i)] = acc.data<int64_t>()[i];
  auto scale = [&](int64_t i) {
    const double sa = a_scale.size() > 1 ? a_scale.real_at(i / n % m) : a_scale.real_at(0);
    const double sb = b_scale.size() > 1 ? b_scale.real_at(i % n) : b_scale.real_at(0);
    return sa * sb;
  };
  ctx.outputs[0] = requantize(ctx, values, acc.dims(), scale, ctx.input(6), ctx.input(7));
}

void qlinear_conv(KernelContext& ctx) {
  std::vector<int64_t> dims, acc;
  if (auto sums =
          conv_sums_on_primitive(ctx, ctx.input(0), &ctx.input(2), ctx.input(3), &ctx.input(5), false)) {
    dims = sums->dims();
    acc.assign(sums->data<int32_t>(), sums->data<int32_t>() + sums->size());
  } else {
    HostTensor xc = centered(ctx, ctx.input(0), &ctx.input(2), 1);
    HostTensor wc = centered(ctx, ctx.input(3), &ctx.input(5), 0);
    acc = conv_integer(ctx, xc, wc, dims);
  }
  int64_t spatial = 1;
  for (size_t d = 2; d < dims.size(); ++d) spatial *= dims[d];
  const int64_t m = dims[1];
  if (ctx.has_input(8)) {
    const HostTensor& bias = ctx.input(8);
    if (bias.size() != m) ctx.fail("the bias needs one int32 per output channel");
    for (size_t i = 0; i < acc.size(); ++i) acc[i] += bias.int_at(static_cast<int64_t>(i) / spatial % m);
  }
  const HostTensor& x_scale = ctx.input(1);
  const HostTensor& w_scale = ctx.input(4);
  if (x_scale.size() != 1) ctx.fail("x_scale must hold one value");
  if (w_scale.size() != 1 && w_scale.size() != m)
    ctx.fail("w_scale must hold 1 or one value per output channel");
  auto scale = [&](int64_t i) {
    return x_scale.real_at(0) * (w_scale.size() > 1 ? w_scale.real_at(i / spatial % m) : w_scale.real_at(0));
  };
  ctx.outputs[0] = requantize(ctx, acc, dims, scale, ctx.input(6), ctx.input(7));
}

}  // namespace

void register_quantize_kernels(OpRegistry& r) {
  r.add("", "QuantizeLinear", quantize_linear);
  r.add("", "DequantizeLinear", dequantize_linear);
  r.add("", "DynamicQuantizeLinear", dynamic_quantize_linear);
  r.add("", "MatMulInteger", matmul_integer, /*half_via_f32=*/false);
  r.add("", "ConvInteger", conv_integer_kernel, /*half_via_f32=*/false);
  r.add("", "QLinearMatMul", qlinear_matmul);
  r.add("", "QLinearConv", qlinear_conv);
}

}  // namespace geopt
