#pragma once
// Convolution geometry (ONNX attributes resolved to numbers) and the f32
// convolution on oneDNN, shared by Conv and the fused convolutions a backend registers.
#include <optional>
#include <string>
#include <vector>

#include "eval/kernel.h"

namespace geopt {

struct WindowGeometry {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;  // spatial axes only
};

// Resolves kernel_shape, strides, dilations, pads and auto_pad for a sliding
// window over x's spatial axes (Conv and pooling). ceil_mode applies to pooling.
WindowGeometry window_geometry(const KernelContext& ctx, const std::vector<int64_t>& x_dims,
                               const std::vector<int64_t>& kernel, bool ceil_mode);

// y = Conv(x, w) + b (b may be null); x [N, C, spatial...], w [M, C/group, k...].
HostTensor convolution(const KernelContext& ctx, const HostTensor& x, const HostTensor& w,
                       const HostTensor* b);

// What a fused convolution adds to Conv, all computed by the one oneDNN primitive:
// channel-blocked tensors [N, C/16, H, W, 16] (oneDNN's nChw16c) instead of NCHW, a residual summed
// before the activation, and the activation (docs/OPS.md's list) as post-ops.
struct ConvFusion {
  bool x_blocked = false;  // x is [N, C1, H, W, 16] holding `channels_in` channels
  bool y_blocked = false;  // y (and the residual) are [N, M1, H, W, 16]
  const HostTensor* residual = nullptr;
  std::optional<size_t> residual_input;  // its index among the kernel's inputs: the output may lie over it
  std::string activation = "none";
  std::vector<float> activation_params;
  float post_scale = 1.0f, post_shift = 0.0f;  // after the activation: y * post_scale + post_shift
  // Where set, receives the kernel's output 1: the mean of y over its spatial axes, per
  // channel ([N, M, 1...], or [N, M1, 1, 1, 16] blocked), taken while y is in cache (a
  // squeeze-and-excitation squeeze, a classifier's global pool).
  HostTensor* channel_means = nullptr;
  // Where set, x is read times one scale per input channel (a squeeze-and-excitation
  // gate): [S, C, 1...] or blocked [S, C1, 1, 1, 16], S 1 (every sample) or N.
  const HostTensor* input_scale = nullptr;
};

// y = act(Conv(x [* input_scale], w) + b + residual) * post_scale + post_shift. Blocked outputs keep their
// padding channels 0 (so their means are 0 too).
HostTensor fused_convolution(const KernelContext& ctx, const HostTensor& x, const HostTensor& w,
                             const HostTensor* b, const ConvFusion& fusion);

}  // namespace geopt
