#pragma once
// The row loops of the Vector kernels (LayerNorm, AddLayerNorm, RMSNorm, Softmax, GELU,
// attention's online softmax, the logistic activations), written so that the compiler
// vectorizes them (checked with -fopt-info-vec) and compiled three times, for AVX-512,
// for AVX2 + FMA and for the baseline: GCC's target_clones picks one when the program
// loads. The logistic rows also have a path in AVX-512's own instructions.
#include <cstdint>

namespace geopt {

// Mean and (biased) variance of x[0, n) in one pass: Welford's update on 8 lanes at
// once, the lanes merged by Chan's formula, as the Vector unit's single-pass norm.
void row_moments(const float* x, int64_t n, float& mean, float& variance);
// Mean of squares (RMSNorm's statistic).
float row_mean_square(const float* x, int64_t n);
// The mean of each of `lanes` values side by side over `count` positions: mean[l] = (x[l]
// + x[lanes + l] + ...) / count. Lanes 1 is a plain run (an NCHW plane); 16, a channel
// block's plane. Sums blocks of 4096 positions in float vectors, the blocks in double.
void strided_means(const float* x, int64_t count, int64_t lanes, float* mean);
// strided_means of each of `planes` planes of count x lanes values, one after another (a
// global average pool, a mean over trailing axes), the planes shared among the threads.
void mean_planes(const float* x, float* mean, int64_t planes, int64_t count, int64_t lanes);
// The sum of a[i] * b[i] over [0, n), in vector lanes (the lanes' partial sums added last).
float dot_row(const float* a, const float* b, int64_t n);
// LayerNorm over the channels of up to kChannelNormPositions positions of a channel-blocked
// image ([N, C / 16, H, W, 16]): x and y point at the first position of block 0, block b
// lies block_stride floats further, a position's 16 lanes are side by side; `channels` of
// the blocks' lanes are real (the rest of the last block is 0 in x and comes out 0). scale
// and bias hold 16 values per block, 0 in the padding lanes. Statistics in double; mean and
// variance over the real channels only.
inline constexpr int64_t kChannelNormPositions = 256;
void channel_block_norm(const float* x, float* y, int64_t blocks, int64_t block_stride, int64_t count,
                        int64_t channels, const float* scale, const float* bias, float epsilon);
// y = (x - mean) * inv * scale + bias; bias may be null.
void normalize_row(const float* x, float* y, int64_t n, float mean, float inv, const float* scale,
                   const float* bias);
// out = a + b; out = a * b.
void add_rows(const float* a, const float* b, float* out, int64_t n);
void mul_rows(const float* a, const float* b, float* out, int64_t n);
// RotaryEmbedding of one row of d values: y = x * cos + rotate(x) * sin, with
// rotate(x) = concat(-x[split:], x[:split]).
void rotary_row(const float* x, const float* cos, const float* sin, float* y, int64_t d, int64_t split);
// The largest value; NaN if any is.
float row_max(const float* x, int64_t n);
// y = exp(x - shift), returning the sum of y (x and y may alias).
float exp_row(const float* x, float* y, int64_t n, float shift);
void scale_row(float* x, int64_t n, float factor);
// GELU, exact (erf) or tanh-approximated, in place.
void gelu_row(float* x, int64_t n, bool tanh_approximation);
// Which instructions the logistic rows use: `best` takes AVX-512's own (vrndscaleps,
// vscalefps) where the CPU has them, `portable` the compiler-vectorized loop every CPU
// runs (a test compares the two).
enum class RowInstructions { best, portable };
// y = 1 / (1 + e^-x) (x and y may alias); NaN stays NaN.
void sigmoid_row(const float* x, float* y, int64_t n, RowInstructions instructions = RowInstructions::best);
// y = x * sigmoid(alpha x): SiLU (alpha 1) and QuickGelu (x and y may alias); NaN stays NaN.
void swish_row(const float* x, float* y, int64_t n, float alpha,
               RowInstructions instructions = RowInstructions::best);

// e^x for one value, as exp_row computes it: relative error under 2.5e-7 on [-87.3,
// 88.3]; 0 below, e^88.3 above (the callers pass x <= 0); NaN stays NaN.
float fast_exp(float x);

}  // namespace geopt
