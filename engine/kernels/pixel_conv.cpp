#include "kernels/pixel_conv.h"

#include <algorithm>

#include "kernels/row_math.h"
#include "util/team_region.h"

namespace geopt {

void pixel_conv(const KernelContext& ctx, const float* x, const float* w, float* y, const PixelConv& p) {
  std::vector<float> sums(static_cast<size_t>(p.outputs));
  for (int64_t n = 0; n < p.batch; ++n) {
    const float* xn = x + n * p.x_stride;
    float* yn = y + n * p.y_stride;
    // Products of more than 32 KiB of weights share the rows out: in a plan the weights
    // come from memory (EfficientNet's gate convs read up to 216 KiB), which two cores
    // read faster than one.
    team_region(p.outputs * p.channels > (1 << 13), [&] {
#pragma omp for
      for (int64_t m = 0; m < p.outputs; ++m)
        sums[static_cast<size_t>(m)] =
            (p.bias ? p.bias[m] : 0.0f) + dot_row(w + m * p.channels, xn, p.channels);
    });
    if (p.residual)  // read before y is written: y may lie over it
      for (int64_t m = 0; m < p.outputs; ++m) sums[static_cast<size_t>(m)] += p.residual[n * p.y_stride + m];
    apply_activation_tail(ctx, sums.data(), p.outputs, p.activation, p.activation_params, p.post_scale,
                          p.post_shift);
    std::copy(sums.begin(), sums.end(), yn);
    std::fill(yn + p.outputs, yn + p.y_stride, 0.0f);
  }
}

}  // namespace geopt
