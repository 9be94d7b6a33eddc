#pragma once
// Convolution geometry (ONNX attributes resolved to numbers) and the f32
// convolution on oneDNN, shared by Conv and ai.geopt::FusedConv.
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
HostTensor convolution(const KernelContext& ctx, const HostTensor& x, const HostTensor& w, const HostTensor* b);

}  // namespace geopt
