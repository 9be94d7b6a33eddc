#include "kernels/int8_output_stage.h"

#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

#include "kernels/quantize.h"
#include "util/cpu_features.h"

namespace geopt {
namespace {

constexpr int64_t kRun = 16;  // lanes computed together: one AVX-512 vector of floats

// The stage over n <= kRun lanes from channel c, clamped to [lo, hi] and then a x v + b,
// in one loop the compiler vectorizes. The reference: the AVX-512 form below gives the
// same bits.
template <class T, bool kOffsets, bool kResidual>
__attribute__((always_inline)) inline void stage_lanes(const BlockedStage& s, const int32_t* sum, int64_t c,
                                                       const float* z, float lo, float hi, float a, float b,
                                                       T* to, int64_t n) {
  const int32_t* off = kOffsets ? s.offsets + c : nullptr;  // (no arithmetic on a null pointer)
  const double* scale = s.scale + c;
  const float* bias = s.bias + c;
  const float qs = s.q_scale, qz = s.q_zero;
  const bool affine = a != 1.0f || b != 0.0f;  // (-0 stays -0 without it)
#pragma omp simd
  for (int64_t i = 0; i < n; ++i) {
    int32_t centred = sum[i];
    if constexpr (kOffsets) centred -= off[i];
    // In double: a sum past 2^24 is exact there, and the product rounds once.
    float v = static_cast<float>(static_cast<double>(centred) * scale[i]) + bias[i];
    if constexpr (kResidual) v += z[i];
    v = v < lo ? lo : (v > hi ? hi : v);  // NaN stays NaN
    if (affine) v = std::fma(v, a, b);    // fused, as the AVX-512 form: the same bits on every path
    if constexpr (std::is_same_v<T, float>)
      to[i] = v;
    else
      to[i] = quantize_value<T>(v, qs, qz);
  }
}

// v < lo ? lo : (v > hi ? hi : v), NaN kept, as the loops select (both compares of v
// itself: with lo > hi, a Clip's degenerate bounds, lo wins as in apply_activation).
__attribute__((target("avx512f"), always_inline)) inline __m512 clamp16(__m512 v, __m512 lo, __m512 hi) {
  const __mmask16 below = _mm512_cmp_ps_mask(v, lo, _CMP_LT_OQ),
                  above = _mm512_cmp_ps_mask(v, hi, _CMP_GT_OQ);
  return _mm512_mask_mov_ps(_mm512_mask_mov_ps(v, above, hi), below, lo);
}

// stage_lanes of 16 lanes in AVX-512 instructions, step for step (the compiler's own
// vectors of the loop above spend 3-4 times the instructions on the 8-bit conversion).
template <class T, bool kOffsets, bool kResidual>
__attribute__((target("avx512f"), always_inline)) inline void stage_lanes16(const BlockedStage& s,
                                                                            const int32_t* sum, int64_t c,
                                                                            const float* z, T* to) {
  // (The maskz forms with a full mask: GCC 12 warns of the plain forms' undefined
  // pass-through operand.)
  constexpr __mmask8 k8 = 0xFF;
  constexpr __mmask16 k16 = 0xFFFF;
  __m512i centred = _mm512_loadu_si512(sum);
  if constexpr (kOffsets) centred = _mm512_sub_epi32(centred, _mm512_loadu_si512(s.offsets + c));
  const __m512d low =
      _mm512_mul_pd(_mm512_maskz_cvtepi32_pd(k8, _mm512_maskz_extracti64x4_epi64(0xF, centred, 0)),
                    _mm512_loadu_pd(s.scale + c));
  const __m512d high =
      _mm512_mul_pd(_mm512_maskz_cvtepi32_pd(k8, _mm512_maskz_extracti64x4_epi64(0xF, centred, 1)),
                    _mm512_loadu_pd(s.scale + c + 8));
  __m512d both =
      _mm512_maskz_insertf64x4(k8, _mm512_setzero_pd(), _mm256_castps_pd(_mm512_maskz_cvtpd_ps(k8, low)), 0);
  both = _mm512_maskz_insertf64x4(k8, both, _mm256_castps_pd(_mm512_maskz_cvtpd_ps(k8, high)), 1);
  __m512 v = _mm512_castpd_ps(both);
  v = _mm512_add_ps(v, _mm512_loadu_ps(s.bias + c));
  if constexpr (kResidual) v = _mm512_add_ps(v, _mm512_loadu_ps(z));
  v = clamp16(v, _mm512_set1_ps(s.lo), _mm512_set1_ps(s.hi));
  if (s.affine.on()) v = _mm512_fmadd_ps(v, _mm512_set1_ps(s.affine.scale), _mm512_set1_ps(s.affine.shift));
  if constexpr (std::is_same_v<T, float>) {
    _mm512_storeu_ps(to, v);
  } else {
    // quantize_value: divided, held in +-1024, rounded half to even by 1.5 x 2^23, the
    // zero point added, saturated, NaN to 0.
    constexpr float lo = std::is_same_v<T, uint8_t> ? 0.0f : -128.0f,
                    hi = std::is_same_v<T, uint8_t> ? 255.0f : 127.0f;
    __m512 q = clamp16(_mm512_div_ps(v, _mm512_set1_ps(s.q_scale)), _mm512_set1_ps(-1024.0f),
                       _mm512_set1_ps(1024.0f));
    const __m512 shift = _mm512_set1_ps(12582912.0f);
    q = _mm512_add_ps(_mm512_sub_ps(_mm512_add_ps(q, shift), shift), _mm512_set1_ps(s.q_zero));
    const __mmask16 nan = _mm512_cmp_ps_mask(q, q, _CMP_UNORD_Q);
    q = _mm512_maskz_min_ps(k16, _mm512_maskz_max_ps(k16, q, _mm512_set1_ps(lo)), _mm512_set1_ps(hi));
    q = _mm512_mask_mov_ps(q, nan, _mm512_setzero_ps());
    _mm_storeu_si128(reinterpret_cast<__m128i*>(to),
                     _mm512_maskz_cvtepi32_epi8(k16, _mm512_maskz_cvtps_epi32(k16, q)));
  }
}

// Where one run's residual lanes lie: at z + ((b x z_blocks + block) x spatial + p) x
// z_block + lane for image b, position p, when the run is one contiguous piece of a
// residual block; else gathered lane by lane.
struct ResidualRun {
  bool contiguous = false;
  int64_t block = 0, lane = 0;
  ResidualRun(const BlockedStage& s, int64_t c, int64_t n)
      : contiguous(s.z_block && c % s.z_block + n <= s.z_block),
        block(s.z_block ? c / s.z_block : 0),
        lane(s.z_block ? c % s.z_block : 0) {}
  const float* at(const BlockedStage& s, int64_t b, int64_t p, int64_t c, int64_t n, float* gathered) const {
    if (contiguous) return s.z + ((b * s.z_blocks + block) * s.spatial + p) * s.z_block + lane;
    for (int64_t i = 0; i < n; ++i) {
      const int64_t ch = c + i;
      gathered[i] =
          s.z_block ? s.z[((b * s.z_blocks + ch / s.z_block) * s.spatial + p) * s.z_block + ch % s.z_block]
                    : s.z[(b * s.m + ch) * s.spatial + p];
    }
    return gathered;
  }
};

// One run of n <= kRun lanes from channel c in the loops' form.
template <class T, bool kOffsets, bool kResidual>
__attribute__((always_inline)) inline void stage_run(const BlockedStage& s, const int32_t* sum, int64_t c,
                                                     const float* z, T* to, int64_t n) {
  if (n == kRun)  // a constant trip count, once inlined
    stage_lanes<T, kOffsets, kResidual>(s, sum, c, z, s.lo, s.hi, s.affine.scale, s.affine.shift, to, kRun);
  else
    stage_lanes<T, kOffsets, kResidual>(s, sum, c, z, s.lo, s.hi, s.affine.scale, s.affine.shift, to, n);
}

// The padding lanes of the last output block, past m, for positions [begin, end).
template <class T>
__attribute__((always_inline)) inline void pad_last_block(const BlockedStage& s, int64_t begin, int64_t end) {
  const int64_t ob = s.blocks - 1, lanes = s.m - ob * s.block;
  if (lanes >= s.block) return;
  T* y = reinterpret_cast<T*>(s.y);
  for (int64_t bp = begin; bp < end; ++bp) {
    const int64_t b = bp / s.spatial, p = bp % s.spatial;
    std::memcpy(y + ((b * s.blocks + ob) * s.spatial + p) * s.block + lanes, s.padding,
                static_cast<size_t>(s.block - lanes) * sizeof(T));
  }
}

// Positions [begin, end), a run of lanes at a time over all of them: each output block's
// plane is written in order, and the residual's read in order. Image b and position p
// are stepped along (a division per position costs as much as the lanes' arithmetic).
// Loops vectorizes by the compiler for the target it is inlined into; Avx512 computes
// each whole run of 16 lanes in AVX-512 instructions. (The walk is written out in both:
// GCC inlines AVX-512 code only into a function compiled for AVX-512, and a template or a
// lambda shared by the two would be compiled for neither.)
struct Loops {
  template <class T, bool kOffsets, bool kResidual>
  __attribute__((always_inline)) static inline void positions(const BlockedStage& s, int64_t begin,
                                                              int64_t end) {
    T* y = reinterpret_cast<T*>(s.y);
    alignas(64) float gathered[kRun];
    for (int64_t c = 0, n = 0; c < s.m; c += n) {  // runs of up to 16 lanes inside a block
      const int64_t ob = c / s.block, i0 = c % s.block;
      n = std::min({kRun, s.block - i0, s.m - c});
      const ResidualRun zr(s, c, n);
      int64_t b = begin / s.spatial, p = begin % s.spatial;
      for (int64_t bp = begin; bp < end; ++bp, ++p) {
        if (p == s.spatial) p = 0, ++b;
        const float* z = kResidual ? zr.at(s, b, p, c, n, gathered) : nullptr;
        stage_run<T, kOffsets, kResidual>(s, s.sums + bp * s.m + c, c, z,
                                          y + ((b * s.blocks + ob) * s.spatial + p) * s.block + i0, n);
      }
    }
    pad_last_block<T>(s, begin, end);
  }
};

struct Avx512 {
  template <class T, bool kOffsets, bool kResidual>
  __attribute__((target("avx512f"))) static void positions(const BlockedStage& s, int64_t begin,
                                                           int64_t end) {
    T* y = reinterpret_cast<T*>(s.y);
    alignas(64) float gathered[kRun];
    for (int64_t c = 0, n = 0; c < s.m; c += n) {  // runs of up to 16 lanes inside a block
      const int64_t ob = c / s.block, i0 = c % s.block;
      n = std::min({kRun, s.block - i0, s.m - c});
      const ResidualRun zr(s, c, n);
      const bool wide = n == kRun;
      int64_t b = begin / s.spatial, p = begin % s.spatial;
      for (int64_t bp = begin; bp < end; ++bp, ++p) {
        if (p == s.spatial) p = 0, ++b;
        const float* z = kResidual ? zr.at(s, b, p, c, n, gathered) : nullptr;
        T* to = y + ((b * s.blocks + ob) * s.spatial + p) * s.block + i0;
        if (wide)
          stage_lanes16<T, kOffsets, kResidual>(s, s.sums + bp * s.m + c, c, z, to);
        else
          stage_run<T, kOffsets, kResidual>(s, s.sums + bp * s.m + c, c, z, to, n);
      }
    }
    pad_last_block<T>(s, begin, end);
  }
};

// Positions [begin, end) under another activation (HardSwish, Sigmoid, ...): for each run
// of lanes, the dequantized values of up to 32 positions, activated in one call (a call a
// run would cost as much as HardSwish's arithmetic), then the post affine and the
// requantization.
struct Activated {
  static constexpr int64_t kBatch = 32;
  template <class T, bool kOffsets, bool kResidual>
  __attribute__((always_inline)) static inline void positions(const BlockedStage& s, int64_t begin,
                                                              int64_t end) {
    T* y = reinterpret_cast<T*>(s.y);
    const float inf = std::numeric_limits<float>::infinity();
    alignas(64) float gathered[kRun], v[kBatch * kRun];
    int64_t at[kBatch];  // where each position's run goes in y
    for (int64_t c = 0, n = 0; c < s.m; c += n) {
      const int64_t ob = c / s.block, i0 = c % s.block;
      n = std::min({kRun, s.block - i0, s.m - c});
      const ResidualRun zr(s, c, n);
      int64_t b = begin / s.spatial, p = begin % s.spatial;
      for (int64_t first = begin; first < end; first += kBatch) {
        const int64_t count = std::min(kBatch, end - first);
        for (int64_t k = 0; k < count; ++k, ++p) {
          if (p == s.spatial) p = 0, ++b;
          const float* z = kResidual ? zr.at(s, b, p, c, n, gathered) : nullptr;
          stage_lanes<float, kOffsets, kResidual>(s, s.sums + (first + k) * s.m + c, c, z, -inf, inf, 1.0f,
                                                  0.0f, v + k * n, n);
          at[k] = ((b * s.blocks + ob) * s.spatial + p) * s.block + i0;
        }
        (*s.activate)(v, count * n);
        for (int64_t k = 0; k < count; ++k)
          for (int64_t i = 0; i < n; ++i) {
            const float x = v[k * n + i];
            const float w = s.affine.on() ? std::fma(x, s.affine.scale, s.affine.shift) : x;
            if constexpr (std::is_same_v<T, float>)
              y[at[k] + i] = w;
            else
              y[at[k] + i] = quantize_value<T>(w, s.q_scale, s.q_zero);
          }
      }
    }
    pad_last_block<T>(s, begin, end);
  }
};

template <class Impl, class T>
__attribute__((always_inline)) inline void stage_of(const BlockedStage& s, int64_t begin, int64_t end) {
  if constexpr (std::is_same_v<Impl, Loops>)
    if (s.activate) return stage_of<Activated, T>(s, begin, end);
  if (s.offsets)
    s.z ? Impl::template positions<T, true, true>(s, begin, end)
        : Impl::template positions<T, true, false>(s, begin, end);
  else
    s.z ? Impl::template positions<T, false, true>(s, begin, end)
        : Impl::template positions<T, false, false>(s, begin, end);
}

template <class Impl>
__attribute__((always_inline)) inline void stage_all(const BlockedStage& s, DType out, int64_t begin,
                                                     int64_t end) {
  if (out == DType::U8)
    stage_of<Impl, uint8_t>(s, begin, end);
  else if (out == DType::I8)
    stage_of<Impl, int8_t>(s, begin, end);
  else
    stage_of<Impl, float>(s, begin, end);
}

__attribute__((target_clones("arch=x86-64-v3", "default"))) void write_vectorized(const BlockedStage& s,
                                                                                  DType out, int64_t begin,
                                                                                  int64_t end) {
  stage_all<Loops>(s, out, begin, end);
}

}  // namespace

void write_blocked_positions(const BlockedStage& s, DType out, int64_t begin, int64_t end,
                             StageInstructions instructions) {
  if (begin >= end) return;
  // (Another activation's walk runs where it is vectorized: in the loops' clones.)
  if (cpu_has_avx512f() && instructions == StageInstructions::best && !s.activate)
    stage_all<Avx512>(s, out, begin, end);
  else
    write_vectorized(s, out, begin, end);
}

}  // namespace geopt
