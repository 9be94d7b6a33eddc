#include "kernels/row_math.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>

#include <immintrin.h>

#include "util/cpu_features.h"
#include "util/team_region.h"

namespace geopt {
namespace {

// AVX-512 (x86-64-v4) halves the instructions of AVX2 + FMA (x86-64-v3): SiLU's row took
// 0.61 ns a float on v3, 0.29 on v4 (Zen 4).
#define GEOPT_VECTOR_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))

// e^x = 2^k e^r with k = round(x log2 e), |r| <= ln2 / 2, e^r by its degree-6 Taylor
// polynomial (error below float's half ulp there); 2^k is built in the exponent bits.
// Branch-free, so loops of it vectorize. x must lie in [-87.3, 88.3].
inline float exp_in_range(float x) {
  // Round to nearest by adding and taking away 1.5 * 2^23 (plain arithmetic, which
  // vectorizes without a rounding instruction).
  const float k = (x * 1.44269504f + 12582912.0f) - 12582912.0f;
  const float r = (x - k * 0.693145751953125f) - k * 1.428606765330187e-06f;
  float p = 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  return p * std::bit_cast<float>((static_cast<int32_t>(k) + 127) << 23);
}

inline float exp_inline(float x) {
  const float clamped =
      x > -87.3f ? (x < 88.3f ? x : 88.3f) : -87.3f;  // NaN to a finite value, selected away below
  const float e = x < -87.3f ? 0.0f : exp_in_range(clamped);
  return x != x ? x : e;  // NaN stays NaN
}

// e^x for x <= 0 (or NaN, which the caller selects away): exp_inline without the upper
// clamp and the NaN select, a quarter fewer instructions in the sigmoid rows.
inline float exp_nonpositive(float x) { return x < -87.3f ? 0.0f : exp_in_range(x > -87.3f ? x : -87.3f); }

// erfc(z) for z >= 0: e^{-z^2} times a rational in t = 1 / (1 + z/2), Numerical
// Recipes' erfcc (fractional error below 1.2e-7 everywhere), so 1 + erf(x) keeps its
// relative accuracy for negative x too.
inline float erfc_nonnegative(float z) {
  const float t = 1.0f / (1.0f + 0.5f * z);
  float poly = 0.17087277f;
  poly = poly * t - 0.82215223f;
  poly = poly * t + 1.48851587f;
  poly = poly * t - 1.13520398f;
  poly = poly * t + 0.27886807f;
  poly = poly * t - 0.18628806f;
  poly = poly * t + 0.09678418f;
  poly = poly * t + 0.37409196f;
  poly = poly * t + 1.00002368f;
  poly = poly * t - 1.26551223f;
  return t * exp_inline(-z * z + poly);
}

}  // namespace

float fast_exp(float x) { return exp_inline(x); }

GEOPT_VECTOR_CLONES
void row_moments(const float* x, int64_t n, float& mean, float& variance) {
  constexpr int64_t kLanes = 8;
  float lane_mean[kLanes] = {}, lane_m2[kLanes] = {};
  const int64_t steps = n / kLanes;
  for (int64_t i = 0; i < steps; ++i) {
    const float inv = 1.0f / static_cast<float>(i + 1);
#pragma omp simd
    for (int64_t l = 0; l < kLanes; ++l) {
      const float v = x[i * kLanes + l];
      const float d = v - lane_mean[l];
      lane_mean[l] += d * inv;
      lane_m2[l] += d * (v - lane_mean[l]);
    }
  }
  // Lanes of equal counts: the mean of means, and M2 plus the spread of the means.
  float m = 0, m2 = 0;
  for (int64_t l = 0; l < kLanes; ++l) m += lane_mean[l];
  m = steps ? m / kLanes : 0.0f;
  for (int64_t l = 0; l < kLanes; ++l) {
    const float d = lane_mean[l] - m;
    m2 += lane_m2[l] + static_cast<float>(steps) * d * d;
  }
  int64_t count = steps * kLanes;
  for (int64_t i = count; i < n; ++i) {
    ++count;
    const float d = x[i] - m;
    m += d / static_cast<float>(count);
    m2 += d * (x[i] - m);
  }
  mean = m;
  variance = n ? m2 / static_cast<float>(n) : 0.0f;
}

GEOPT_VECTOR_CLONES
float row_mean_square(const float* x, int64_t n) {
  float s = 0;
#pragma omp simd reduction(+ : s)
  for (int64_t i = 0; i < n; ++i) s += x[i] * x[i];
  return n ? s / static_cast<float>(n) : 0.0f;
}

GEOPT_VECTOR_CLONES
void strided_means(const float* x, int64_t count, int64_t lanes, float* mean) {
  // Blocks of 4096 positions sum in float vectors; the blocks add up in double, so a long
  // row (a mean over a whole tensor) keeps its precision and does not stop growing.
  constexpr int64_t kBlock = 4096;
  const double n = static_cast<double>(count);  // an empty plane: 0 / 0, NaN, as before
  if (lanes == 16) {
    // Four positions a step: four independent sums per lane, so the adds overlap.
    constexpr int64_t kLanes = 16, kSums = 4;
    double total[kLanes] = {};
    for (int64_t from = 0; from < count; from += kBlock) {
      const int64_t to = std::min(count, from + kBlock);
      float sum[kSums][kLanes] = {};
      int64_t i = from;
      for (; i + kSums <= to; i += kSums)
        for (int64_t a = 0; a < kSums; ++a)
#pragma omp simd
          for (int64_t l = 0; l < kLanes; ++l) sum[a][l] += x[(i + a) * kLanes + l];
      for (; i < to; ++i)
#pragma omp simd
        for (int64_t l = 0; l < kLanes; ++l) sum[0][l] += x[i * kLanes + l];
      for (int64_t l = 0; l < kLanes; ++l) total[l] += (sum[0][l] + sum[1][l]) + (sum[2][l] + sum[3][l]);
    }
    for (int64_t l = 0; l < kLanes; ++l) mean[l] = static_cast<float>(total[l] / n);
    return;
  }
  for (int64_t l = 0; l < lanes; ++l) {
    double total = 0;
    for (int64_t from = 0; from < count; from += kBlock) {
      const int64_t to = std::min(count, from + kBlock);
      float s = 0;
#pragma omp simd reduction(+ : s)
      for (int64_t i = from; i < to; ++i) s += x[i * lanes + l];
      total += s;
    }
    mean[l] = static_cast<float>(total / n);
  }
}

// Not cloned: it only shares the planes out; strided_means is.
void mean_planes(const float* x, float* mean, int64_t planes, int64_t count, int64_t lanes) {
  team_region(planes * count * lanes > (1 << 15), [&] {
#pragma omp for
    for (int64_t plane = 0; plane < planes; ++plane)
      strided_means(x + plane * count * lanes, count, lanes, mean + plane * lanes);
  });
}

// Four sums of 16 lanes, so that the multiply-adds of a long row overlap (one sum waits
// on each add's latency, and GCC's `omp simd` reduction kept its sum on the stack between
// iterations). EfficientNet-B0's largest squeeze-and-excitation product (1152 channels to
// 48, its 221 KB of weights read from memory) took 36 us a call as the loop inside the
// matrix-vector kernel (which GCC left scalar), 19 us with an `omp simd` reduction here,
// 16 us with the four sums (one thread, Zen 4).
GEOPT_VECTOR_CLONES
float dot_row(const float* a, const float* b, int64_t n) {
  typedef float Lanes __attribute__((vector_size(16 * sizeof(float))));
  constexpr int64_t kLanes = 16;
  Lanes s0{}, s1{}, s2{}, s3{}, a0, a1, a2, a3, b0, b1, b2, b3;
  int64_t i = 0;
  for (; i + 4 * kLanes <= n; i += 4 * kLanes) {
    std::memcpy(&a0, a + i, sizeof(Lanes));
    std::memcpy(&a1, a + i + kLanes, sizeof(Lanes));
    std::memcpy(&a2, a + i + 2 * kLanes, sizeof(Lanes));
    std::memcpy(&a3, a + i + 3 * kLanes, sizeof(Lanes));
    std::memcpy(&b0, b + i, sizeof(Lanes));
    std::memcpy(&b1, b + i + kLanes, sizeof(Lanes));
    std::memcpy(&b2, b + i + 2 * kLanes, sizeof(Lanes));
    std::memcpy(&b3, b + i + 3 * kLanes, sizeof(Lanes));
    s0 += a0 * b0;
    s1 += a1 * b1;
    s2 += a2 * b2;
    s3 += a3 * b3;
  }
  for (; i + kLanes <= n; i += kLanes) {
    std::memcpy(&a0, a + i, sizeof(Lanes));
    std::memcpy(&b0, b + i, sizeof(Lanes));
    s0 += a0 * b0;
  }
  const Lanes total = (s0 + s1) + (s2 + s3);
  float s = 0;
  for (int64_t l = 0; l < kLanes; ++l) s += total[l];
  for (; i < n; ++i) s += a[i] * b[i];
  return s;
}

GEOPT_VECTOR_CLONES
void channel_block_norm(const float* x, float* y, int64_t blocks, int64_t block_stride, int64_t count,
                        int64_t channels, const float* scale, const float* bias, float epsilon) {
  constexpr int64_t kLanes = 16, kMost = kChannelNormPositions;
  // Each position's 16 lanes summed over the blocks lane by lane (adds that vectorize, in
  // double as the unblocked loop sums), the lanes added last.
  double lanes[kMost][kLanes], mean[kMost], inv[kMost];
  const int64_t real_last = channels - (blocks - 1) * kLanes;  // real lanes of the last block
  float last_mask[kLanes];
  for (int64_t l = 0; l < kLanes; ++l) last_mask[l] = l < real_last ? 1.0f : 0.0f;
  auto lane_totals = [&](double* out) {
    for (int64_t s = 0; s < count; ++s) {
      double t = 0;
      for (int64_t l = 0; l < kLanes; ++l) t += lanes[s][l];
      out[s] = t / static_cast<double>(channels);
    }
  };
  for (int64_t s = 0; s < count; ++s)
    for (int64_t l = 0; l < kLanes; ++l) lanes[s][l] = 0;
  for (int64_t b = 0; b < blocks; ++b) {  // padding lanes hold 0 and add nothing
    const float* in = x + b * block_stride;
    for (int64_t s = 0; s < count; ++s)
      for (int64_t l = 0; l < kLanes; ++l) lanes[s][l] += in[s * kLanes + l];
  }
  lane_totals(mean);
  for (int64_t s = 0; s < count; ++s)
    for (int64_t l = 0; l < kLanes; ++l) lanes[s][l] = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const float* in = x + b * block_stride;
    const bool last = b == blocks - 1;
    for (int64_t s = 0; s < count; ++s)
      for (int64_t l = 0; l < kLanes; ++l) {
        const double d = (in[s * kLanes + l] - mean[s]) * (last ? last_mask[l] : 1.0f);
        lanes[s][l] += d * d;
      }
  }
  lane_totals(inv);
  for (int64_t s = 0; s < count; ++s) inv[s] = 1.0 / std::sqrt(inv[s] + epsilon);
  for (int64_t b = 0; b < blocks; ++b) {
    const float* in = x + b * block_stride;
    float* out = y + b * block_stride;
    const float* g = scale + b * kLanes;
    const float* t = bias + b * kLanes;
    const bool last = b == blocks - 1;
    for (int64_t s = 0; s < count; ++s)
      for (int64_t l = 0; l < kLanes; ++l) {
        const float v = static_cast<float>((in[s * kLanes + l] - mean[s]) * inv[s]) * g[l] + t[l];
        out[s * kLanes + l] = !last || last_mask[l] != 0.0f ? v : 0.0f;  // padding stays 0
      }
  }
}

GEOPT_VECTOR_CLONES
void normalize_row(const float* x, float* y, int64_t n, float mean, float inv, const float* scale,
                   const float* bias) {
  if (bias) {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i] + bias[i];
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) y[i] = (x[i] - mean) * inv * scale[i];
  }
}

GEOPT_VECTOR_CLONES
void add_rows(const float* a, const float* b, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
}

GEOPT_VECTOR_CLONES
void mul_rows(const float* a, const float* b, float* out, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
}

GEOPT_VECTOR_CLONES
void rotary_row(const float* x, const float* cos, const float* sin, float* y, int64_t d, int64_t split) {
  const int64_t tail = d - split;  // rotate(x)[j] = -x[split + j] for j < tail, x[j - tail] after
#pragma omp simd
  for (int64_t j = 0; j < tail; ++j) y[j] = x[j] * cos[j] - x[split + j] * sin[j];
#pragma omp simd
  for (int64_t j = tail; j < d; ++j) y[j] = x[j] * cos[j] + x[j - tail] * sin[j];
}

GEOPT_VECTOR_CLONES
float row_max(const float* x, int64_t n) {
  float m = -INFINITY;
  int nan = 0;
#pragma omp simd reduction(max : m) reduction(| : nan)
  for (int64_t i = 0; i < n; ++i) {
    m = x[i] > m ? x[i] : m;
    nan |= x[i] != x[i];
  }
  return nan ? NAN : m;  // a NaN score makes its softmax row NaN, as the unfused ops do
}

GEOPT_VECTOR_CLONES
float exp_row(const float* x, float* y, int64_t n, float shift) {
  float sum = 0;
#pragma omp simd reduction(+ : sum)
  for (int64_t i = 0; i < n; ++i) {
    y[i] = exp_inline(x[i] - shift);
    sum += y[i];
  }
  return sum;
}

namespace {

GEOPT_VECTOR_CLONES
void sigmoid_row_portable(const float* x, float* y, int64_t n) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i];
    const float e = exp_nonpositive(-std::fabs(v));  // in (0, 1]: 1 + e never overflows
    const float s = (v >= 0 ? 1.0f : e) / (1.0f + e);
    y[i] = v != v ? v : s;
  }
}

GEOPT_VECTOR_CLONES
void swish_row_portable(const float* x, float* y, int64_t n, float alpha) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    const float v = x[i], a = alpha * v;
    const float e = exp_nonpositive(-std::fabs(a));
    const float s = (a >= 0 ? 1.0f : e) / (1.0f + e);
    y[i] = a != a ? a : v * s;
  }
}

// The logistic rows with AVX-512's own instructions: numerator / (1 + e^-(alpha x)), the
// numerator 1 (Sigmoid) or x (SiLU, QuickGelu). e^-a is 2^k e^r with k rounded by
// vrndscaleps and 2^k applied by vscalefps, which overflows to infinity and underflows
// through the subnormals to 0 by itself: no clamps, integer conversion or selects, and
// 1 / (1 + e^-a) needs no e^-|a| fold because 1 + infinity is infinity and x / infinity
// is 0 (x / infinity at x = -infinity is NaN, as -infinity x 0 is). e^r is a degree-6
// polynomial fitted for least maximal relative error on |r| <= ln 2 / 2 (1.9e-9, against
// the Taylor polynomial's 1.2e-7). 15 instructions a vector where the portable loop
// compiles to 22: SiLU took 0.157 ns a float against 0.248 on Zen 4, one thread.
// a is clamped to [-110, 110] only so that k stays finite (r = a - k ln 2 of an infinite
// a would be NaN); e^110 is already infinite in float. The masked (maskz) forms keep
// GCC from reading the undefined pass-through register of the plain intrinsics.
__attribute__((target("avx512f"))) void logistic_row_avx512(const float* x, float* y, int64_t n, float alpha,
                                                            bool times_x) {
  constexpr __mmask16 kAll = 0xFFFF;
  const __m512 lowest = _mm512_set1_ps(-110.0f), highest = _mm512_set1_ps(110.0f);
  const __m512 minus_log2e = _mm512_set1_ps(-1.44269504f), scale = _mm512_set1_ps(alpha);
  // ln 2 in two parts: k ln2_hi is exact for |k| < 2^8, so r carries no rounding of k ln 2.
  const __m512 ln2_hi = _mm512_set1_ps(0.693145751953125f), ln2_lo = _mm512_set1_ps(1.428606765330187e-06f);
  const __m512 one = _mm512_set1_ps(1.0f);
  const __m512 c6 = _mm512_set1_ps(0.0013836826f), c5 = _mm512_set1_ps(0.0083748158f),
               c4 = _mm512_set1_ps(0.041668225f), c3 = _mm512_set1_ps(0.16666420f),
               c2 = _mm512_set1_ps(0.49999991f);
  for (int64_t i = 0; i < n; i += 16) {
    const __mmask16 lanes = n - i >= 16 ? kAll : static_cast<__mmask16>((1u << (n - i)) - 1);
    const __m512 v = _mm512_maskz_loadu_ps(lanes, x + i);
    // a = alpha x within [-110, 110]; the operand order keeps a NaN (min and max return
    // their second operand when either is NaN).
    const __m512 a =
        _mm512_maskz_max_ps(kAll, lowest, _mm512_maskz_min_ps(kAll, highest, _mm512_mul_ps(v, scale)));
    // e^-a = 2^k e^r: k = round(-a log2 e), r = -a - k ln 2.
    const __m512 k = _mm512_maskz_roundscale_ps(kAll, _mm512_mul_ps(a, minus_log2e),
                                                _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 r = _mm512_fnmsub_ps(k, ln2_hi, a);
    r = _mm512_fnmadd_ps(k, ln2_lo, r);
    __m512 p = _mm512_fmadd_ps(c6, r, c5);
    p = _mm512_fmadd_ps(p, r, c4);
    p = _mm512_fmadd_ps(p, r, c3);
    p = _mm512_fmadd_ps(p, r, c2);
    p = _mm512_fmadd_ps(p, r, one);
    p = _mm512_fmadd_ps(p, r, one);
    const __m512 e = _mm512_maskz_scalef_ps(kAll, p, k);
    const __m512 out = _mm512_div_ps(times_x ? v : one, _mm512_add_ps(one, e));
    _mm512_mask_storeu_ps(y + i, lanes, out);
  }
}

}  // namespace

void sigmoid_row(const float* x, float* y, int64_t n, RowInstructions instructions) {
  if (instructions == RowInstructions::best && cpu_has_avx512f())
    return logistic_row_avx512(x, y, n, 1.0f, false);
  sigmoid_row_portable(x, y, n);
}

void swish_row(const float* x, float* y, int64_t n, float alpha, RowInstructions instructions) {
  if (instructions == RowInstructions::best && cpu_has_avx512f())
    return logistic_row_avx512(x, y, n, alpha, true);
  swish_row_portable(x, y, n, alpha);
}

GEOPT_VECTOR_CLONES
void scale_row(float* x, int64_t n, float factor) {
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) x[i] *= factor;
}

GEOPT_VECTOR_CLONES
void gelu_row(float* x, int64_t n, bool tanh_approximation) {
  if (tanh_approximation) {
    // 0.5 x (1 + tanh(u)) = x / (1 + e^{-2u}), u = sqrt(2/pi) (x + 0.044715 x^3)
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i];
      const float u = 0.7978845608f * (v + 0.044715f * v * v * v);
      x[i] = v / (1.0f + exp_inline(-2.0f * u));
    }
  } else {
    // 1 + erf(v / sqrt 2) is erfc(|v| / sqrt 2) below 0 and 2 - that above.
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) {
      const float v = x[i];
      const float c = erfc_nonnegative(std::fabs(v) * 0.70710678f);
      x[i] = 0.5f * v * (v < 0 ? c : 2.0f - c);
    }
  }
}

}  // namespace geopt
