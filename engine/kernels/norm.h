#pragma once
// The normalizations the norm kernels share, for fused kernels that end in one
// (FlashAttentionLayerNorm) and a backend's norm ops.
#include "eval/kernel.h"

namespace geopt {

// LayerNorm of input 0 over axes axis..rank-1 (attributes axis, epsilon), with scale input 1
// and optional bias input 2 (f32): LayerNormalization's kernel.
void layer_norm_over_axes(KernelContext& ctx);
// LayerNorm over the channels at each position (ConvNeXt's LayerNorm2d) of input 0, an
// [N, C, spatial...] tensor or, `blocked`, a channel-blocked [N, C1, H, W, C0] one
// (oneDNN's nChw16c) holding attribute `channels` real channels; scale input 1 and
// optional bias input 2 have one value per channel.
void channel_layer_norm(KernelContext& ctx, bool blocked);

// LayerNorm of `x` over axes axis..rank-1 with scale and optional bias (f32).
HostTensor layer_norm_rows(const KernelContext& ctx, const HostTensor& x, int64_t axis, float epsilon,
                           const HostTensor& scale, const HostTensor* bias);

}  // namespace geopt
