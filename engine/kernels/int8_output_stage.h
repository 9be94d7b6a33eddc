#pragma once
// The output stage of geopt's int8 conv (QuantConv, FusedQuantConv) into a
// channel-blocked output, from the int32 sums an int8 primitive left channels last: each
// value dequantized, (sum - offset) x scale + bias, the float residual added, clamped
// (ReLU, ReLU6) or activated, the post affine applied and, requantizing, rounded into 8
// bits as QuantizeLinear rounds, a block's run of lanes at a time. It runs once per output
// value of every int8 conv, so it is written for the vectors the CPU has: AVX-512
// instructions where the CPU has them, loops the compiler vectorizes elsewhere; both
// give the same bits.
#include <cstddef>
#include <cstdint>
#include <functional>

#include "ir/dtype.h"

namespace geopt {

// post_scale and post_shift: y * scale + shift after the activation.
struct PostAffine {
  float scale = 1.0f, shift = 0.0f;
  bool on() const { return scale != 1.0f || shift != 0.0f; }
};

// Where the stage reads and writes, for one conv call.
struct BlockedStage {
  const int32_t* sums = nullptr;     // [N x spatial, m]
  const int32_t* offsets = nullptr;  // per channel, taken off each sum; or null
  int64_t m = 0, spatial = 0;
  int64_t block = 0, blocks = 0;  // the output: [N, blocks, spatial, block]
  const double* scale = nullptr;  // per channel: the activation's scale x the weight's
  const float* bias = nullptr;    // per channel
  const float* z = nullptr;       // the residual, channel-blocked by z_block lanes (NCHW for 0), or null
  int64_t z_block = 0, z_blocks = 0;
  float lo = 0, hi = 0;  // the clamp (-inf, +inf where there is none); NaN stays NaN
  PostAffine affine;
  // Another activation, applied to a run of floats before the post affine; or null.
  const std::function<void(float*, int64_t)>* activate = nullptr;
  float q_scale = 1, q_zero = 0;       // the requantization, when `out` is 8-bit
  std::byte* y = nullptr;              // the output, `out` elements
  const std::byte* padding = nullptr;  // a block of what padding lanes hold (past m)
};

// Which instructions the stage may use: the best this CPU has, or only the compiler's
// vectorized loops (what a CPU without AVX-512 runs; the tests compare the two).
enum class StageInstructions { best, loops };

// The stage over positions [begin, end) of the N x spatial, in the calling thread. `out`
// is DType::U8 or I8 (requantized) or F32.
void write_blocked_positions(const BlockedStage& s, DType out, int64_t begin, int64_t end,
                             StageInstructions instructions = StageInstructions::best);

}  // namespace geopt
