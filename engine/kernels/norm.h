#pragma once
// The row normalization the norm kernels share, for fused kernels that end in one
// (FlashAttentionLayerNorm).
#include "eval/kernel.h"

namespace geopt {

// LayerNorm of `x` over axes axis..rank-1 with scale and optional bias (f32).
HostTensor layer_norm_rows(const KernelContext& ctx, const HostTensor& x, int64_t axis, float epsilon,
                           const HostTensor& scale, const HostTensor* bias);

}  // namespace geopt
