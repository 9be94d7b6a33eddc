#pragma once
// How the Cube's work spreads over the AI cores. A matrix product is cut into output
// tiles (whole fractals, their fp32 accumulators double-buffered in L0C), and the tiles
// are dealt to the cores in waves; each tile runs its K loop at the sustained rate, while
// its operand panels stream into L1, plus a fixed overhead (pipeline fill and drain, the
// write-out of its accumulators). Small or oddly shaped products leave cores idle and
// pad fractals: that is why a batch-1 network runs far below the Cube's peak, and why
// throughput saturates as the batch grows. FlashAttention's blocked loop is costed the
// same way: per head, blocks of queries (one per core at a time) against blocks of keys,
// each block pair a Cube product and a Vector softmax that pipeline, plus a handoff.
// docs/COSTMODEL.md gives the formulas; the profile holds every constant.
#include <cstdint>

#include "hardware_profile.h"

namespace geopt::ascend {

// `count` independent products [m, k] x [k, n]. A convolution is its implicit GEMM: m
// output positions (N x Ho x Wo), n output channels per group, k = C/group (padded to
// C0) x kernel size.
struct CubeProduct {
  double count = 0;
  int64_t m = 0, n = 0, k = 0;
};

// softmax(Q K^T) V per head: S queries, T keys, head dims D (Q, K) and Dv (V).
struct AttentionShape {
  double heads = 0;
  int64_t s = 0, t = 0, d = 0, dv = 0;
};

struct CubeTime {
  double us = 0;
  int64_t tile_m = 0, tile_n = 0;
  double tiles = 0, waves = 0;
};

// `rate` is the Cube's throughput for the operand type relative to fp16 (int8 2, fp32 1/4);
// `operand_bytes` the size of one operand element.
CubeTime cube_time(const CubeProduct& product, const HardwareProfile& profile, double rate,
                   double operand_bytes);
CubeTime attention_time(const AttentionShape& attention, const HardwareProfile& profile, double rate);

}  // namespace geopt::ascend
