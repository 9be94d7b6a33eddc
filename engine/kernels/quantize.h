#pragma once
// Quantization shared by QuantizeLinear and the int8 kernels that requantize their output
// (QuantConv, QuantMatMul with output_dtype), so both round alike.
#include <cstddef>
#include <cstdint>

#include "ir/dtype.h"

namespace geopt {

// y[i] = saturate(round_half_even(x[i] / scale) + zero) as uint8 or int8 (`out`), the
// division in float as ONNX's QuantizeLinear does it; NaN gives 0.
void quantize_floats(const float* x, int64_t n, float scale, float zero, DType out, std::byte* y);
// quantize_floats in the calling thread: for short runs inside a caller's parallel loop
// (an OpenMP region costs more than a run of 32 lanes).
void quantize_floats_serial(const float* x, int64_t n, float scale, float zero, DType out, std::byte* y);

}  // namespace geopt
