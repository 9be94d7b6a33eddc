#pragma once
// Quantization shared by QuantizeLinear and the int8 kernels that requantize their output
// (QuantConv, QuantMatMul with output_dtype), so both round alike.
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "ir/dtype.h"

namespace geopt {

// Rounds v half to even as float arithmetic does by default, for |v| < 2^22: adding and
// taking away 1.5 x 2^23 leaves no fraction bits. A loop of it vectorizes (nearbyint is a
// library call on x86-64's baseline).
inline float round_half_even(float v) {
  constexpr float kShift = 12582912.0f;  // 1.5 x 2^23
  return (v + kShift) - kShift;
}

// One value of quantize_floats (T uint8_t or int8_t): inline, for the loops of kernels
// that requantize as they compute, so that they round as QuantizeLinear does.
template <class T>
inline T quantize_value(float x, float scale, float zero) {
  static_assert(std::is_same_v<T, uint8_t> || std::is_same_v<T, int8_t>);
  constexpr float lo = std::is_same_v<T, uint8_t> ? 0.0f : -128.0f,
                  hi = std::is_same_v<T, uint8_t> ? 255.0f : 127.0f;
  // Past +-1024 every value saturates, so the clamp changes nothing and keeps the
  // rounding exact (NaN stays NaN through it).
  float v = x / scale;
  v = v < -1024.0f ? -1024.0f : (v > 1024.0f ? 1024.0f : v);
  const float r = round_half_even(v) + zero;
  // Saturated, NaN to 0, in selects a loop vectorizes.
  return static_cast<T>(r >= lo ? (r <= hi ? r : hi) : (r < lo ? lo : 0.0f));
}

// y[i] = saturate(round_half_even(x[i] / scale) + zero) as uint8 or int8 (`out`), the
// division in float as ONNX's QuantizeLinear does it; NaN gives 0.
void quantize_floats(const float* x, int64_t n, float scale, float zero, DType out, std::byte* y);
// quantize_floats in the calling thread: for short runs inside a caller's parallel loop
// (an OpenMP region costs more than a run of 32 lanes).
void quantize_floats_serial(const float* x, int64_t n, float scale, float zero, DType out, std::byte* y);

// y[i] = (x[i] - zero) x scale of an 8-bit tensor (`in` U8 or I8): the difference in
// integers, the product in float, as DequantizeLinear computes it with one scale.
void dequantize_bytes(const std::byte* x, DType in, int64_t n, int32_t zero, float scale, float* y);

}  // namespace geopt
