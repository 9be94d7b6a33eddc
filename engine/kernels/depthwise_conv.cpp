#include "kernels/depthwise_conv.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "eval/derived_constant.h"
#include "util/cpu_features.h"
#include "util/team_region.h"

namespace geopt {
namespace {

constexpr int64_t kLanes = 16;  // one channel block, one vector

// 16 floats: one ZMM register with AVX-512, two YMM with AVX2.
typedef float Block __attribute__((vector_size(kLanes * sizeof(float))));

#define GEOPT_DEPTHWISE_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// The weights as [C1, KH, KW, 16]: each tap one block, padding channels 0.
std::vector<float> regroup_weights(const float* w, int64_t channels, int64_t taps) {
  const int64_t blocks = ceil_div(channels, kLanes);
  std::vector<float> out(static_cast<size_t>(blocks * taps * kLanes), 0.0f);
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t t = 0; t < taps; ++t)
      out[static_cast<size_t>(((c / kLanes) * taps + t) * kLanes + c % kLanes)] = w[c * taps + t];
  return out;
}

// sums[l] = the sum of lane l over `width` positions of one output row, in four
// independent sums (one chain of adds would wait on each add's latency).
GEOPT_DEPTHWISE_CLONES
void add_lanes(const float* row, int64_t width, float* sums) {
  Block a0{}, a1{}, a2{}, a3{}, v0, v1, v2, v3;
  int64_t i = 0;
  for (; i + 4 <= width; i += 4) {
    std::memcpy(&v0, row + i * kLanes, sizeof(Block));
    std::memcpy(&v1, row + (i + 1) * kLanes, sizeof(Block));
    std::memcpy(&v2, row + (i + 2) * kLanes, sizeof(Block));
    std::memcpy(&v3, row + (i + 3) * kLanes, sizeof(Block));
    a0 += v0;
    a1 += v1;
    a2 += v2;
    a3 += v3;
  }
  for (; i < width; ++i) {
    std::memcpy(&v0, row + i * kLanes, sizeof(Block));
    a0 += v0;
  }
  const Block total = (a0 + a1) + (a2 + a3);
  std::memcpy(sums, &total, sizeof total);
}

// Outputs [ox, ox + R) of one row, each window wholly inside the row: their sums stay in
// registers across the taps. Inlined into each clone of depthwise_row (a default-target
// callee inlines into any target), so it compiles to that clone's vectors.
template <int64_t R>
__attribute__((always_inline)) inline void sum_run(const float* plane, const float* taps, const float* bias,
                                                   float* out, int64_t ox, int64_t iy0, int64_t ky_lo,
                                                   int64_t ky_hi, const DepthwiseGeometry& g) {
  Block acc[R];
#pragma GCC unroll 8
  for (int64_t j = 0; j < R; ++j) std::memcpy(&acc[j], bias, sizeof(Block));
  const int64_t step = g.stride_w * kLanes;
  for (int64_t ky = ky_lo; ky < ky_hi; ++ky) {
    const float* row = plane + (iy0 + ky * g.dilation_h) * g.in_w * kLanes;
    const float* tap = taps + ky * g.kernel_w * kLanes;
    for (int64_t kx = 0; kx < g.kernel_w; ++kx) {
      Block wv;
      std::memcpy(&wv, tap + kx * kLanes, sizeof wv);
      const float* in = row + (ox * g.stride_w - g.pad_left + kx * g.dilation_w) * kLanes;
#pragma GCC unroll 8
      for (int64_t j = 0; j < R; ++j) {
        Block xv;
        std::memcpy(&xv, in + j * step, sizeof xv);
        acc[j] += xv * wv;
      }
    }
  }
#pragma GCC unroll 8
  for (int64_t j = 0; j < R; ++j) std::memcpy(out + (ox + j) * kLanes, &acc[j], sizeof(Block));
}

// Output ox at a row's end: the sum over the taps whose column lies inside the row.
__attribute__((always_inline)) inline void sum_edge(const float* plane, const float* taps, const float* bias,
                                                    float* out, int64_t ox, int64_t iy0, int64_t ky_lo,
                                                    int64_t ky_hi, const DepthwiseGeometry& g) {
  const int64_t ix0 = ox * g.stride_w - g.pad_left;
  const int64_t kx_lo = ix0 < 0 ? ceil_div(-ix0, g.dilation_w) : 0;
  const int64_t kx_hi = std::min(g.kernel_w, ix0 >= g.in_w ? 0 : (g.in_w - 1 - ix0) / g.dilation_w + 1);
  Block acc;
  std::memcpy(&acc, bias, sizeof acc);
  for (int64_t ky = ky_lo; ky < ky_hi; ++ky) {
    const float* row = plane + (iy0 + ky * g.dilation_h) * g.in_w * kLanes;
    for (int64_t kx = kx_lo; kx < kx_hi; ++kx) {
      Block xv, wv;
      std::memcpy(&xv, row + (ix0 + kx * g.dilation_w) * kLanes, sizeof xv);
      std::memcpy(&wv, taps + (ky * g.kernel_w + kx) * kLanes, sizeof wv);
      acc += xv * wv;
    }
  }
  std::memcpy(out + ox * kLanes, &acc, sizeof acc);
}

// Outputs [ox, ox + R) of one row for a window of KW columns at stride SW (dilation 1
// across): each input column of a kernel row loaded once and multiplied into every output
// of the run whose window holds it ((R - 1) x SW + KW loads a kernel row, not R x KW), the
// row's KW weights held in registers. Columns outside the input (the padding) are
// skipped, so a row's ends need no loop of their own and a 7-wide row is one run. Each
// output sums its taps in the order sum_run does (kernel rows, then columns): the same bits.
template <int64_t R, int64_t KW, int64_t SW>
__attribute__((always_inline)) inline void sum_run_reusing(const float* plane, const float* taps,
                                                           const float* bias, float* out, int64_t ox,
                                                           int64_t iy0, int64_t ky_lo, int64_t ky_hi,
                                                           const DepthwiseGeometry& g) {
  constexpr int64_t kColumns = (R - 1) * SW + KW;
  const int64_t ix0 = ox * SW - g.pad_left;
  const int64_t first = std::max<int64_t>(0, -ix0), last = std::min<int64_t>(kColumns, g.in_w - ix0);
  Block acc[R];
#pragma GCC unroll 8
  for (int64_t j = 0; j < R; ++j) std::memcpy(&acc[j], bias, sizeof(Block));
  for (int64_t ky = ky_lo; ky < ky_hi; ++ky) {
    const float* row = plane + (iy0 + ky * g.dilation_h) * g.in_w * kLanes;
    Block wv[KW];
#pragma GCC unroll 8
    for (int64_t kx = 0; kx < KW; ++kx) std::memcpy(&wv[kx], taps + (ky * KW + kx) * kLanes, sizeof(Block));
#pragma GCC unroll 32
    for (int64_t i = 0; i < kColumns; ++i) {
      if (i < first || i >= last) continue;
      Block xv;
      std::memcpy(&xv, row + (ix0 + i) * kLanes, sizeof xv);
#pragma GCC unroll 8
      for (int64_t kx = 0; kx < KW; ++kx)
        if (i >= kx && (i - kx) % SW == 0 && (i - kx) / SW < R) acc[(i - kx) / SW] += xv * wv[kx];
    }
  }
#pragma GCC unroll 8
  for (int64_t j = 0; j < R; ++j) std::memcpy(out + (ox + j) * kLanes, &acc[j], sizeof(Block));
}

// One output row as sum_run_reusing's runs: of 8 outputs, and one of the rest.
template <int64_t KW, int64_t SW>
__attribute__((always_inline)) inline void row_reusing(const float* plane, const float* taps,
                                                       const float* bias, float* out, int64_t iy0,
                                                       int64_t ky_lo, int64_t ky_hi,
                                                       const DepthwiseGeometry& g) {
  int64_t ox = 0;
  for (; ox + 8 <= g.out_w; ox += 8)
    sum_run_reusing<8, KW, SW>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
  switch (g.out_w - ox) {
    case 7:
      return sum_run_reusing<7, KW, SW>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
    case 6:
      return sum_run_reusing<6, KW, SW>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
    case 5:
      return sum_run_reusing<5, KW, SW>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
    case 4:
      return sum_run_reusing<4, KW, SW>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
    case 3:
      return sum_run_reusing<3, KW, SW>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
    case 2:
      return sum_run_reusing<2, KW, SW>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
    case 1:
      return sum_run_reusing<1, KW, SW>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
    default:
      return;
  }
}

// The kernel rows of output row oy whose input row lies inside the plane: [ky_lo, ky_hi).
void kernel_rows(int64_t oy, const DepthwiseGeometry& g, int64_t& iy0, int64_t& ky_lo, int64_t& ky_hi) {
  iy0 = oy * g.stride_h - g.pad_top;
  ky_lo = iy0 < 0 ? ceil_div(-iy0, g.dilation_h) : 0;
  ky_hi = std::min(g.kernel_h, iy0 >= g.in_h ? 0 : (g.in_h - 1 - iy0) / g.dilation_h + 1);
}

// Whether depthwise_row_reusing covers the geometry: the windows of EfficientNet's,
// MobileNet's and ShuffleNet's depthwise convs (3 x 3 and 5 x 5 columns, stride 1 or 2).
bool reusing_covers(const DepthwiseGeometry& g) {
  return g.dilation_w == 1 && (g.stride_w == 1 || g.stride_w == 2) && (g.kernel_w == 3 || g.kernel_w == 5);
}

// depthwise_row for the geometries reusing_covers, with AVX-512 only: its runs hold up to
// 8 sums and 5 weights in registers, which AVX-512's 32 vector registers do and AVX2's 16
// (two for a block) do not. On Zen 4, one thread, against depthwise_row: 0.31-0.66x on
// EfficientNet-B0's 5 x 5 and 7 x 7 and 14 x 14 planes, 0.95-1.03x on its 112 x 112 and 56 x 56 ones.
__attribute__((target("avx512f,fma"))) void depthwise_row_reusing(const float* plane, const float* taps,
                                                                  const float* bias, float* out, int64_t oy,
                                                                  const DepthwiseGeometry& g) {
  int64_t iy0, ky_lo, ky_hi;
  kernel_rows(oy, g, iy0, ky_lo, ky_hi);
  if (g.kernel_w == 3)
    return g.stride_w == 1 ? row_reusing<3, 1>(plane, taps, bias, out, iy0, ky_lo, ky_hi, g)
                           : row_reusing<3, 2>(plane, taps, bias, out, iy0, ky_lo, ky_hi, g);
  return g.stride_w == 1 ? row_reusing<5, 1>(plane, taps, bias, out, iy0, ky_lo, ky_hi, g)
                         : row_reusing<5, 2>(plane, taps, bias, out, iy0, ky_lo, ky_hi, g);
}

// One output row of one channel block: out[ox] = bias + the sum over the taps inside
// the input of x[iy, ix] * w[ky, kx]. Outputs whose window lies inside the row go in
// runs of 8 and one of the rest; the few at the row's ends one at a time.
GEOPT_DEPTHWISE_CLONES
void depthwise_row(const float* plane, const float* taps, const float* bias, float* out, int64_t oy,
                   const DepthwiseGeometry& g) {
  int64_t iy0, ky_lo, ky_hi;
  kernel_rows(oy, g, iy0, ky_lo, ky_hi);
  // Outputs whose whole window lies in [0, W): ox * sw - pad_left >= 0 and
  // ox * sw - pad_left + (KW - 1) * dw <= W - 1.
  const int64_t last_start = g.in_w - 1 - (g.kernel_w - 1) * g.dilation_w + g.pad_left;
  const int64_t inner_lo = std::min(g.out_w, ceil_div(g.pad_left, g.stride_w));
  const int64_t inner_hi =
      std::max(inner_lo, std::min(g.out_w, last_start < 0 ? 0 : last_start / g.stride_w + 1));
  for (int64_t ox = 0; ox < inner_lo; ++ox) sum_edge(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
  int64_t ox = inner_lo;
  for (; ox + 8 <= inner_hi; ox += 8) sum_run<8>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
  // The rest in one run (a 7-wide row is one run of 7, not 4 + 2 + 1: each run reloads
  // the weights and pays the loops over the taps).
  switch (inner_hi - ox) {
    case 7:
      sum_run<7>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
      break;
    case 6:
      sum_run<6>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
      break;
    case 5:
      sum_run<5>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
      break;
    case 4:
      sum_run<4>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
      break;
    case 3:
      sum_run<3>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
      break;
    case 2:
      sum_run<2>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
      break;
    case 1:
      sum_run<1>(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
      break;
    default:
      break;
  }
  ox = inner_hi;
  for (; ox < g.out_w; ++ox) sum_edge(plane, taps, bias, out, ox, iy0, ky_lo, ky_hi, g);
}

}  // namespace

void depthwise_conv_blocked(const KernelContext& ctx, const float* x, const HostTensor& w, float* y,
                            const DepthwiseGeometry& g, const DepthwiseEpilogue& e) {
  const int64_t blocks = ceil_div(g.channels, kLanes), taps = g.kernel_h * g.kernel_w;
  auto regroup = [&] {
    return std::make_shared<const std::vector<float>>(regroup_weights(w.data<float>(), g.channels, taps));
  };
  const std::shared_ptr<const std::vector<float>> packed =
      cacheable_constant(w) ? derived_constant<std::vector<float>>(w, "depthwise blocks", regroup)
                            : regroup();
  std::vector<float> bias(static_cast<size_t>(blocks * kLanes), 0.0f);
  if (e.bias) std::copy(e.bias, e.bias + g.channels, bias.begin());
  const int64_t row = g.out_w * kLanes, planes = g.batch * blocks;
  const int64_t tail = g.channels % kLanes;  // real lanes of the last block, 0 if it is full
  // Output row r of `sums` (its plane's bias and taps summed): residual, activation, tail.
  // The residual may be y itself (planned over it), so the sums of a row with a residual
  // are in a scratch row.
  auto finish_row = [&](int64_t r, const float* sums, int64_t block) {
    float* out = y + r * row;
    if (e.residual) {
      const float* res = e.residual + r * row;
      for (int64_t i = 0; i < row; ++i) out[i] = sums[i] + res[i];
    }
    apply_activation_tail(ctx, out, row, e.activation, e.activation_params, e.post_scale, e.post_shift);
    if (tail && block == blocks - 1)  // an activation or shift may have moved padding off 0
      for (int64_t ox = 0; ox < g.out_w; ++ox)
        std::fill(out + ox * kLanes + tail, out + (ox + 1) * kLanes, 0.0f);
  };
  const auto row_sums = cpu_has_avx512f() && reusing_covers(g) ? depthwise_row_reusing : depthwise_row;
  const int64_t rows = planes * g.out_h;
  // Each finished row's lanes summed while it is in cache; the rows of a plane added up in
  // double afterwards, in row order, so the means do not depend on the thread count.
  std::vector<float> row_totals(e.channel_means ? static_cast<size_t>(rows * kLanes) : 0);
  team_region(rows * row * taps > (1 << 15), [&] {
    std::vector<float> scratch(e.residual ? static_cast<size_t>(row) : 0);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t p = r / g.out_h, block = p % blocks;
      float* sums = e.residual ? scratch.data() : y + r * row;
      row_sums(x + p * g.in_h * g.in_w * kLanes, packed->data() + block * taps * kLanes,
               bias.data() + block * kLanes, sums, r % g.out_h, g);
      finish_row(r, sums, block);
      if (e.channel_means) add_lanes(y + r * row, g.out_w, row_totals.data() + r * kLanes);
    }
  });
  if (!e.channel_means) return;
  const double positions = static_cast<double>(g.out_h * g.out_w);  // 0: NaN, as a pool of nothing
  for (int64_t p = 0; p < planes; ++p)
    for (int64_t l = 0; l < kLanes; ++l) {
      double total = 0;
      for (int64_t oy = 0; oy < g.out_h; ++oy)
        total += row_totals[static_cast<size_t>((p * g.out_h + oy) * kLanes + l)];
      e.channel_means[p * kLanes + l] = static_cast<float>(total / positions);
    }
}

}  // namespace geopt
