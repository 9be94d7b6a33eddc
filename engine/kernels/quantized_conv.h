#pragma once
// The int8 convolution of geopt's QuantConv (kernels/quantized_cube.cpp), shared with a
// backend's channel-blocked form of it: products of the centred 8-bit operands summed
// exactly in int32, dequantized with the activation's scale times the weight's per-channel
// scale, the float bias and residual added, the activation applied, and, with output_dtype
// 2 or 3, requantized to 8-bit.
#include <cstdint>

#include "eval/kernel.h"

namespace geopt {

// Each tensor's channel block: 0 for NCHW, else channel-blocked [N, ceil(C/block), H, W,
// block] with its padding channels past C.
struct QuantConvBlocks {
  int64_t x = 0;  // the 8-bit input (16 or 32 reach oneDNN's int8 primitives directly)
  int64_t y = 0;  // the output; its padding channels come out 0, or the zero point when 8-bit
  int64_t z = 0;  // the float residual
};

// The kernel of an op with QuantConv's inputs (X, W, X_scale, X_zero_point, W_scale,
// W_zero_point, B, Z) and attributes (Conv's, activation, post_scale, post_shift,
// output_dtype, output_scale, output_zero_point): sets ctx.outputs[0]. `quantized_x`,
// where given, is the 8-bit X in its place (a kernel that quantizes its float input first).
void quantized_convolution(KernelContext& ctx, const QuantConvBlocks& blocks,
                           const HostTensor* quantized_x = nullptr);

}  // namespace geopt
