// DeformConv (opset 19): a 2-D convolution whose every tap is moved by a learned offset
// (and weighted by an optional mask), as torchvision's deform_conv2d and ONNX Runtime
// compute it. Each image is unrolled into columns of bilinear samples (im2col at the moved
// positions), then each group is one matrix product with its weights.
#include <cmath>

#include "eval/kernel.h"
#include "kernels/conv.h"
#include "kernels/linalg.h"
#include "util/team_region.h"

namespace geopt {
namespace {

// x at the real position (h, w), bilinear between the four samples around it; samples past
// the plane count 0, and so does a position a whole pixel or more outside it.
float bilinear_at(const float* plane, int64_t height, int64_t width, double h, double w) {
  // (A NaN offset samples nothing too.)
  if (!(h > -1 && h < static_cast<double>(height) && w > -1 && w < static_cast<double>(width))) return 0.0f;
  const int64_t h0 = static_cast<int64_t>(std::floor(h)), w0 = static_cast<int64_t>(std::floor(w));
  const double dh = h - static_cast<double>(h0), dw = w - static_cast<double>(w0);
  auto at = [&](int64_t r, int64_t c) {
    return r >= 0 && r < height && c >= 0 && c < width ? static_cast<double>(plane[r * width + c]) : 0.0;
  };
  return static_cast<float>((1 - dh) * ((1 - dw) * at(h0, w0) + dw * at(h0, w0 + 1)) +
                            dh * ((1 - dw) * at(h0 + 1, w0) + dw * at(h0 + 1, w0 + 1)));
}

void deform_conv(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& w = ctx.input(1);
  const HostTensor& offset = ctx.input(2);
  const HostTensor* bias = ctx.has_input(3) && ctx.input(3).size() > 0 ? &ctx.input(3) : nullptr;
  const HostTensor* mask = ctx.has_input(4) && ctx.input(4).size() > 0 ? &ctx.input(4) : nullptr;
  if (x.rank() != 4 || w.rank() != 4)
    ctx.fail("runs on 2-D images: X [N, C, H, W] and W [oC, C/group, kH, kW]");
  for (const HostTensor* t : {&x, &w, &offset, bias, mask})
    if (t && t->dtype() != DType::F32) ctx.fail("runs on f32");
  const int64_t n = x.dims()[0], c = x.dims()[1], height = x.dims()[2], width = x.dims()[3];
  const int64_t oc = w.dims()[0], group = ctx.attr_int("group", 1),
                offset_group = ctx.attr_int("offset_group", 1);
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape", {w.dims()[2], w.dims()[3]});
  if (kernel != std::vector<int64_t>{w.dims()[2], w.dims()[3]})
    ctx.fail("kernel_shape differs from W's spatial dims");
  if (group < 1 || offset_group < 1 || c % group != 0 || oc % group != 0 || c % offset_group != 0)
    ctx.fail("group and offset_group must be positive and divide the channels");
  if (w.dims()[1] * group != c)
    ctx.fail("W has " + std::to_string(w.dims()[1]) + " input channels per group; X has " +
             std::to_string(c) + " in " + std::to_string(group) + " groups");
  const WindowGeometry g = window_geometry(ctx, x.dims(), kernel, false);
  const int64_t kh = kernel[0], kw = kernel[1], taps = kh * kw, oh = g.out[0], ow = g.out[1],
                positions = oh * ow;
  if (offset.dims() != std::vector<int64_t>{n, offset_group * 2 * taps, oh, ow})
    ctx.fail("offset must be [N, offset_group x 2 x kH x kW, oH, oW] = [" + std::to_string(n) + ", " +
             std::to_string(offset_group * 2 * taps) + ", " + std::to_string(oh) + ", " + std::to_string(ow) +
             "], not " + offset.shape_string());
  if (mask && mask->dims() != std::vector<int64_t>{n, offset_group * taps, oh, ow})
    ctx.fail("mask must be [N, offset_group x kH x kW, oH, oW], not " + mask->shape_string());
  if (bias && bias->size() != oc) ctx.fail("B must have one value per output channel");
  const std::vector<int64_t> out_dims = {n, oc, oh, ow};
  ctx.check_planned_dims(0, out_dims);
  HostTensor y(DType::F32, out_dims);
  const int64_t per_group = c / group, per_offset_group = c / offset_group, rows = per_group * taps;
  std::vector<float> columns(static_cast<size_t>(c * taps * positions));  // [C x kH x kW, oH x oW]
  for (int64_t b = 0; b < n; ++b) {
    team_region(c * taps * positions > (1 << 16), [&] {
#pragma omp for
      for (int64_t ch = 0; ch < c; ++ch) {
        const int64_t og = ch / per_offset_group;
        const float* plane = x.data<float>() + (b * c + ch) * height * width;
        for (int64_t t = 0; t < taps; ++t) {
          const int64_t i = t / kw, j = t % kw;
          const float* dy = offset.data<float>() + ((b * offset_group + og) * 2 * taps + 2 * t) * positions;
          const float* dx = dy + positions;
          const float* m =
              mask ? mask->data<float>() + ((b * offset_group + og) * taps + t) * positions : nullptr;
          float* column = columns.data() + (ch * taps + t) * positions;
          for (int64_t p = 0; p < positions; ++p) {
            const int64_t r = p / ow, q = p % ow;
            const double h =
                static_cast<double>(r * g.strides[0] - g.pad_begin[0] + i * g.dilations[0]) + dy[p];
            const double v =
                static_cast<double>(q * g.strides[1] - g.pad_begin[1] + j * g.dilations[1]) + dx[p];
            column[p] = bilinear_at(plane, height, width, h, v) * (m ? m[p] : 1.0f);
          }
        }
      }
    });
    for (int64_t gi = 0; gi < group; ++gi) {
      const int64_t out_per_group = oc / group;
      float* out = y.mutable_data<float>() + (b * oc + gi * out_per_group) * positions;
      gemm_f32(false, false, out_per_group, positions, rows, 1.0f,
               w.data<float>() + gi * out_per_group * rows, columns.data() + gi * rows * positions, 0.0f,
               out);
    }
    if (bias)
      for (int64_t o = 0; o < oc; ++o) {
        float* out = y.mutable_data<float>() + (b * oc + o) * positions;
        const float add = static_cast<float>(bias->real_at(o));
        for (int64_t p = 0; p < positions; ++p) out[p] += add;
      }
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_deform_conv_kernel(OpRegistry& r) { r.add("", "DeformConv", deform_conv); }

}  // namespace geopt
