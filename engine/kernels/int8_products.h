#pragma once
// Exact int8 products on oneDNN's int8 primitives, shared by ONNX's integer ops
// (ConvInteger, MatMulInteger) and geopt's int8 Cube kernels (QuantConv, QuantMatMul):
// 8-bit activations with one zero point, 8-bit weights centred on their zero points,
// every product summed in int32.
//
// oneDNN is asked only where its sums are exact: on CPUs that add u8 x s8 products in
// int32 (VNNI, AMX; without VNNI its int8 kernels add pairs of products in int16 and may
// saturate), and only for plain sums its kernels store as int32 (a zero point or an int8
// source would make them pass the sums through float: int8_products.cpp). Elsewhere these
// functions return false and the callers keep their exact loops.
// ONEDNN_MAX_CPU_ISA=AVX512_CORE (or AVX2) selects the loops on any machine.
#include <climits>
#include <cstdint>
#include <vector>

#include "eval/kernel.h"
#include "kernels/conv.h"

namespace geopt {

// Sums of this many products of 8-bit centred values (each at most 255 x 255 in size)
// fit int32 exactly.
constexpr int64_t kMaxInt8Depth = INT32_MAX / (255 * 255);

// Whether this CPU (as oneDNN sees it) sums int8 products exactly.
bool int8_primitives_exact();

// Sums as an int8 convolution primitive leaves them, channels last ([N, OH, OW, M]), for
// a caller that reads them once: sum - offsets[channel] is the centred sum.
struct ChannelsLastSums {
  const int32_t* sums = nullptr;  // null where the sums are in the caller's acc
  // The source's zero point times each output channel's weight sum, which the caller's
  // pass over the sums takes off (one pass fewer); empty where it is 0.
  std::vector<int32_t> offsets;
};

// acc [N, M, OH, OW] (NCHW, int32) = Conv(x - x_zero, w - w_zero) over x [N, C, H, W]
// (uint8 or int8) and w [M, C/group, kH, kW] (uint8 or int8, one zero point or one per
// output channel), padding reading the zero point. False, with acc untouched, where no
// exact primitive applies: another CPU, a weight whose centred values leave int8, a depth
// past kMaxInt8Depth. With `channels_last`, a caller that reads the sums once may take
// them as the primitive leaves them: channels_last->sums points to them in the buffer
// this thread's oneDNN kernels convert outputs in (read them before the next oneDNN
// call), and acc is untouched; it stays null where they are in acc.
// `x_block` > 0: x is channel-blocked, [N, ceil(C/x_block), H, W, x_block] (C = the weights'
// C/group x group), its padding channels read by zero weights (so never summed).
bool int8_convolution(const HostTensor& x, int32_t x_zero, const HostTensor& w,
                      const std::vector<int32_t>& w_zero, const WindowGeometry& g, int64_t group,
                      int32_t* acc, ChannelsLastSums* channels_last = nullptr, int64_t x_block = 0);

// acc [rows, N] (int32) = (a - a_zero) [rows, K] x (b - b_zero) [K, N]: a's bytes (uint8
// or int8, rows x K row-major), b a 2-D uint8 or int8 tensor with one zero point or one
// per column. False where no exact primitive applies, as above.
bool int8_matmul(const std::byte* a, DType a_type, int64_t rows, int64_t k, int32_t a_zero,
                 const HostTensor& b, const std::vector<int32_t>& b_zero, int32_t* acc);

}  // namespace geopt
