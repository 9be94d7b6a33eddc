#pragma once
// The depthwise 2-D convolution (one filter per channel) between channel-blocked
// tensors, [N, C/16, H, W, 16] both sides, as geopt's own vector loop: a block of 16
// channels is one vector, each output one multiply-add per tap, read straight from the
// caller's layout, and the activation applied to each row while it is in cache. With
// AVX-512, 3 x 3 and 5 x 5 windows at stride 1 or 2 load each input column of a kernel
// row once for every output of a run that reads it. One thread, SiLU after it (`geopt
// tune --job_type 2`'s figures): 78.8 us for 672 channels of 14 x 14 under a 5 x 5 window
// and 52.3 us for 1152 of 7 x 7, where oneDNN's jit_dw takes 89.1 and 49.5 and the loop
// took 123.9 and 94.5 before it read columns once.
#include <cstdint>
#include <vector>

#include "kernels/activation.h"

namespace geopt {

struct DepthwiseGeometry {
  int64_t batch = 0, channels = 0, in_h = 0, in_w = 0, out_h = 0, out_w = 0;
  int64_t kernel_h = 0, kernel_w = 0, stride_h = 1, stride_w = 1, dilation_h = 1, dilation_w = 1;
  int64_t pad_top = 0, pad_left = 0;
};

// What the convolution adds before and after its sum, as FusedConv fuses them:
// y = act(conv + bias + residual) * post_scale + post_shift.
struct DepthwiseEpilogue {
  const float* bias = nullptr;      // [C], or null
  const float* residual = nullptr;  // blocked like y, or null (it may be y itself)
  Activation activation = Activation::None;
  std::vector<float> activation_params;
  float post_scale = 1.0f, post_shift = 0.0f;
  // Where set, [N * C1 * 16]: each channel's mean over the output plane, summed row by
  // row as the rows are written (padding channels 0).
  float* channel_means = nullptr;
};

// x [N, C1, H, W, 16], w [C, 1, KH, KW] f32, y [N, C1, OH, OW, 16] with C1 = ceil(C / 16).
// Padding channels come out 0. The caller checks the geometry (positive strides and
// dilations, pads of 0 or more, the window inside the padded input) and the activation's
// params; the
// weights, regrouped in blocks of 16 channels, are kept while a constant `w` lives.
void depthwise_conv_blocked(const KernelContext& ctx, const float* x, const HostTensor& w, float* y,
                            const DepthwiseGeometry& g, const DepthwiseEpilogue& e);

}  // namespace geopt
