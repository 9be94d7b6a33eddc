#pragma once
// A 1x1 convolution over a 1x1 image, which is a matrix-vector product per batch item:
// the two convs of a squeeze-and-excitation gate (EfficientNet, MobileNetV3, RegNet-Y),
// a few thousand multiply-adds each. oneDNN's convolution took 10-15 us a call for them
// in a plan, its setup and thread team far above the sums; this loop takes a microsecond.
#include <cstdint>
#include <vector>

#include "kernels/activation.h"

namespace geopt {

struct PixelConv {
  int64_t batch = 0, channels = 0, outputs = 0;
  int64_t x_stride = 0, y_stride = 0;  // floats per batch item: C (NCHW) or its 16-channel blocks
  const float* bias = nullptr;         // [M], or null
  const float* residual = nullptr;     // laid out as y, or null (it may be y itself)
  Activation activation = Activation::None;
  std::vector<float> activation_params;
  float post_scale = 1.0f, post_shift = 0.0f;
};

// y[n, m] = act(bias[m] + sum_c w[m, c] x[n, c] + residual[n, m]) * post_scale + post_shift
// for w [M, C] row-major; y's lanes from M to y_stride come out 0 (a blocked layout's
// padding channels). The caller checks the activation's params.
void pixel_conv(const KernelContext& ctx, const float* x, const float* w, float* y, const PixelConv& p);

}  // namespace geopt
