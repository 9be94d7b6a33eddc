// Image and detection kernels: depth/space rearrangements, local response and
// mean-variance normalization, max unpooling, grid sampling, RoI Align and
// non-maximum suppression. Arithmetic is in f32 or f64 (half types widened).
#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>

#include "eval/kernel.h"
#include "kernels/conv.h"
#include "kernels/dispatch.h"
#include "kernels/layout.h"

namespace geopt {
namespace {

void need_rank(const KernelContext& ctx, const HostTensor& x, size_t rank) {
  if (x.rank() != rank) ctx.fail("the input must be " + std::to_string(rank) + "-D, not " + x.shape_string());
}

// DepthToSpace: channel blocks become b x b pixel blocks (DCR: depth, column, row order; CRD: column, row,
// depth).
void depth_to_space(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  need_rank(ctx, x, 4);
  const int64_t b = ctx.attr_int("blocksize", 0);
  const int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], w = x.dims()[3];
  if (b < 1 || b > c || c % (b * b) != 0)
    ctx.fail("channels " + std::to_string(c) + " are not a multiple of blocksize^2 (blocksize " +
             std::to_string(b) + ")");
  const bool crd = ctx.attr_string("mode", "DCR") == "CRD";
  HostTensor y = crd ? transpose(x.reshaped({n, c / (b * b), b, b, h, w}), {0, 1, 4, 2, 5, 3})
                     : transpose(x.reshaped({n, b, b, c / (b * b), h, w}), {0, 3, 4, 1, 5, 2});
  ctx.outputs[0] = y.reshaped({n, c / (b * b), h * b, w * b});
}

void space_to_depth(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  need_rank(ctx, x, 4);
  const int64_t b = ctx.attr_int("blocksize", 0);
  const int64_t n = x.dims()[0], c = x.dims()[1], h = x.dims()[2], w = x.dims()[3];
  if (b < 1 || b > std::max<int64_t>(h, 1) || b > std::max<int64_t>(w, 1) || h % b != 0 || w % b != 0)
    ctx.fail("H and W must be multiples of blocksize");
  HostTensor y = transpose(x.reshaped({n, c, h / b, b, w / b, b}), {0, 3, 5, 1, 2, 4});
  ctx.outputs[0] = y.reshaped({n, c * b * b, h / b, w / b});
}

// LRN over channels: y = x / (bias + alpha / size * sum of squares in the window) ^ beta.
void lrn(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.fail("the input must be [N, C, ...]");
  const int64_t size = ctx.attr_int("size", 0);
  if (size < 1) ctx.fail("size must be positive");
  const double alpha = ctx.attr_float("alpha", 1e-4f), beta = ctx.attr_float("beta", 0.75f),
               bias = ctx.attr_float("bias", 1.0f);
  const int64_t n = x.dims()[0], c = x.dims()[1], inner = x.size() / std::max<int64_t>(n * c, 1);
  const int64_t before = (size - 1) / 2, after = size - 1 - before;
  HostTensor y(x.dtype(), x.dims());
  dispatch_float(
      x.dtype(),
      [&]<class T>() {
        const T* px = x.data<T>();
        T* py = y.mutable_data<T>();
        for (int64_t b = 0; b < n; ++b)
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t i = 0; i < inner; ++i) {
              double sq = 0;
              for (int64_t k = std::max<int64_t>(0, ch - before); k <= std::min(c - 1, ch + after); ++k) {
                const double v = px[(b * c + k) * inner + i];
                sq += v * v;
              }
              const int64_t at = (b * c + ch) * inner + i;
              py[at] = static_cast<T>(px[at] / std::pow(bias + alpha / static_cast<double>(size) * sq, beta));
            }
      },
      "LRN");
  ctx.outputs[0] = std::move(y);
}

// MeanVarianceNormalization: (x - mean) / (sqrt(E[x^2] - mean^2) + 1e-9) over `axes`, as ONNX's function
// body.
void mean_variance_normalization(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (rank < 1) ctx.fail("the input must have rank >= 1");
  std::vector<bool> reduced(x.rank(), false);
  for (int64_t a : ctx.attr_ints("axes", {0, 2, 3}))
    reduced[static_cast<size_t>(normalize_axis(a, rank))] = true;
  const auto strides = strides_of(x.dims());
  // Group key: the coordinates of the kept axes.
  auto group_of = [&](int64_t i) {
    int64_t key = 0;
    for (size_t a = 0; a < x.rank(); ++a)
      if (!reduced[a]) key = key * x.dims()[a] + i / strides[a] % x.dims()[a];
    return key;
  };
  int64_t groups = 1;
  for (size_t a = 0; a < x.rank(); ++a)
    if (!reduced[a]) groups *= x.dims()[a];
  const int64_t per_group = groups ? x.size() / groups : 0;
  HostTensor y(x.dtype(), x.dims());
  dispatch_float(
      x.dtype(),
      [&]<class T>() {
        const T* px = x.data<T>();
        std::vector<T> sum(static_cast<size_t>(groups), 0), sq(static_cast<size_t>(groups), 0);
        for (int64_t i = 0; i < x.size(); ++i) {
          const size_t g = static_cast<size_t>(group_of(i));
          sum[g] += px[i];
          sq[g] += px[i] * px[i];
        }
        T* py = y.mutable_data<T>();
        for (int64_t i = 0; i < x.size(); ++i) {
          const size_t g = static_cast<size_t>(group_of(i));
          const T mean = sum[g] / static_cast<T>(per_group);
          const T var = sq[g] / static_cast<T>(per_group) - mean * mean;
          py[i] = (px[i] - mean) / (std::sqrt(var) + static_cast<T>(1e-9));
        }
      },
      "MeanVarianceNormalization");
  ctx.outputs[0] = std::move(y);
}

// MaxUnpool: the values of X scattered to the flat positions MaxPool recorded in I. The
// indices address the unpooled shape the attributes give; an explicit output_shape (a
// larger canvas) keeps each value at the same coordinates.
void max_unpool(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& indices = ctx.input(1);
  if (x.rank() < 3 || indices.dims() != x.dims()) ctx.fail("X [N, C, spatial...] and I must have one shape");
  const auto kernel = ctx.attr_ints("kernel_shape");
  const size_t sp = x.rank() - 2;
  if (kernel.size() != sp) ctx.fail("kernel_shape needs one entry per spatial axis");
  const auto strides = ctx.attr_ints("strides", std::vector<int64_t>(sp, 1));
  const auto pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (strides.size() != sp || pads.size() != 2 * sp)
    ctx.fail("strides and pads need one (two) entries per spatial axis");
  std::vector<int64_t> natural = {x.dims()[0], x.dims()[1]};
  for (size_t d = 0; d < sp; ++d) {
    if (kernel[d] < 1 || kernel[d] > 4096 || strides[d] < 1 || strides[d] > 4096 || pads[d] < 0 ||
        pads[sp + d] < 0)
      ctx.fail("kernel_shape and strides must be in 1..4096 and pads not negative");
    natural.push_back((x.dims()[2 + d] - 1) * strides[d] + kernel[d] - pads[d] - pads[sp + d]);
    if (natural.back() < 1) ctx.fail("the pads leave no output along spatial axis " + std::to_string(d));
  }
  std::vector<int64_t> out = natural;
  if (ctx.has_input(2) && ctx.input(2).size() > 0) {
    out = ctx.input(2).ints();
    if (out.size() != x.rank() || out[0] != natural[0] || out[1] != natural[1])
      ctx.fail("output_shape must be [N, C, spatial...] of X's N and C");
    for (size_t d = 0; d < sp; ++d)
      if (out[2 + d] < natural[2 + d]) ctx.fail("output_shape is smaller than the unpooled shape");
  }
  HostTensor y(x.dtype(), out);
  const auto natural_strides = strides_of(natural), out_strides = strides_of(out);
  int64_t natural_size = 1;
  for (int64_t d : natural) natural_size *= d;
  const int64_t esz = static_cast<int64_t>(dtype_size(x.dtype()));
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t at = indices.int_at(i);
    if (at < 0 || at >= natural_size)
      ctx.fail("index " + std::to_string(at) + " is outside the unpooled shape");
    int64_t dst = 0;
    for (size_t a = 0; a < natural.size(); ++a) dst += at / natural_strides[a] % natural[a] * out_strides[a];
    std::copy_n(x.raw() + i * esz, esz, y.mutable_raw() + dst * esz);
  }
  ctx.outputs[0] = std::move(y);
}

// GridSample: samples X (N x C x D1 x ... x Dr) at the normalized grid points (grid[..., 0]
// indexes the last axis), as ONNX's reference does. Opset 16 is 2-D with modes bilinear,
// nearest and bicubic; opset 20 is N-D with linear, nearest and cubic.
struct GridSampler {
  std::vector<int64_t> dims;  // spatial dims of X
  bool align;
  std::string padding;
  double denormalize(double v, int64_t len) const {
    return align ? (v + 1) / 2.0 * static_cast<double>(len - 1)
                 : ((v + 1) * static_cast<double>(len) - 1) / 2.0;
  }
  double lo() const { return align ? 0.0 : -0.5; }
  double hi(int64_t len) const {
    return align ? static_cast<double>(len - 1) : static_cast<double>(len) - 0.5;
  }
  static double reflect(double x, double x_min, double x_max) {
    const double range = x_max - x_min;
    if (range <= 0) return x_min;
    if (x < x_min) {
      const double dx = x_min - x;
      const int64_t n = static_cast<int64_t>(dx / range);
      const double r = dx - static_cast<double>(n) * range;
      return n % 2 == 0 ? x_min + r : x_max - r;
    }
    if (x > x_max) {
      const double dx = x - x_max;
      const int64_t n = static_cast<int64_t>(dx / range);
      const double r = dx - static_cast<double>(n) * range;
      return n % 2 == 0 ? x_max - r : x_min + r;
    }
    return x;
  }
  // The value at integer position `at` (one index per spatial axis), padded as asked.
  double pixel(const float* img, const int64_t* at) const {
    int64_t offset = 0;
    for (size_t k = 0; k < dims.size(); ++k) {
      int64_t i = at[k];
      if (padding == "zeros") {
        if (i < 0 || i >= dims[k]) return 0.0;
      } else {
        if (padding == "reflection")
          i = static_cast<int64_t>(reflect(static_cast<double>(i), lo(), hi(dims[k])));
        i = std::clamp<int64_t>(i, 0, dims[k] - 1);
      }
      offset = offset * dims[k] + i;
    }
    return img[offset];
  }
};

void cubic_coefficients(double t, double c[4]) {
  const double A = -0.75;
  c[0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
  c[1] = ((A + 2) * t - (A + 3)) * t * t + 1;
  c[2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
  c[3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
}

void grid_sample(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& grid = ctx.input(1);
  const bool opset20 = ctx.opset() >= 20;
  if (opset20 ? x.rank() < 3 : x.rank() != 4)
    ctx.fail(std::string("the input must be ") + (opset20 ? "at least 3-D" : "4-D") + ", not " +
             x.shape_string());
  if (x.dtype() != DType::F32 || grid.dtype() != DType::F32) ctx.fail("runs on f32");
  const size_t r = x.rank() - 2;
  // Every sample blends taps^r input values: past 5 spatial axes (ONNX Runtime takes 2 and 3)
  // a cubic sample alone would be a million.
  if (r > 5) ctx.fail("samples at most 5 spatial axes, not " + std::to_string(r));
  const int64_t n = x.dims()[0], c = x.dims()[1];
  if (grid.rank() != x.rank() || grid.dims()[0] != n || grid.dims().back() != static_cast<int64_t>(r))
    ctx.fail("grid must be [N, out spatial..., " + std::to_string(r) + "], not " + grid.shape_string());
  const std::string linear = opset20 ? "linear" : "bilinear", cubic = opset20 ? "cubic" : "bicubic";
  const std::string mode = ctx.attr_string("mode", linear);
  GridSampler s{{x.dims().begin() + 2, x.dims().end()},
                ctx.attr_int("align_corners", 0) != 0,
                ctx.attr_string("padding_mode", "zeros")};
  if (mode != linear && mode != "nearest" && mode != cubic)
    ctx.fail("unknown mode '" + mode + "' (this opset has " + linear + ", nearest and " + cubic + ")");
  if (s.padding != "zeros" && s.padding != "border" && s.padding != "reflection")
    ctx.fail("unknown padding_mode '" + s.padding + "'");
  int64_t in_points = 1, out_points = 1;
  std::vector<int64_t> out_dims = {n, c};
  for (size_t k = 0; k < r; ++k) {
    if (s.dims[k] < 1) ctx.fail("the input has no pixels to sample");
    in_points *= s.dims[k];
    out_points *= grid.dims()[k + 1];
    out_dims.push_back(grid.dims()[k + 1]);
  }
  const int taps = mode == "nearest" ? 1 : mode == linear ? 2 : 4;
  int64_t tap_count = 1;
  for (size_t k = 0; k < r; ++k) tap_count *= taps;
  HostTensor y(DType::F32, out_dims);
  const float* pg = grid.data<float>();
  float* py = y.mutable_data<float>();
  std::vector<double> f(r);
  std::vector<int64_t> base(r), at(r);
  std::vector<std::array<double, 4>> weights(r);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < out_points; ++p) {
      const float* g = pg + (b * out_points + p) * static_cast<int64_t>(r);
      bool finite = true, outside = false;
      for (size_t k = 0; k < r; ++k) {
        f[k] = s.denormalize(g[r - 1 - k], s.dims[k]);
        finite = finite && std::isfinite(f[k]);
        if (mode == "nearest") f[k] = std::nearbyint(f[k]);
        outside = outside || f[k] < s.lo() || f[k] > s.hi(s.dims[k]);
      }
      if (!finite) {  // sampled nowhere: zeros, as outside the image
        for (int64_t ch = 0; ch < c; ++ch) py[(b * c + ch) * out_points + p] = 0.0f;
        continue;
      }
      // A sample outside the input moves inside (border, reflection) for nearest and linear;
      // cubic keeps its position and pads each of its taps instead, as ONNX Runtime does.
      for (size_t k = 0; k < r && outside && mode != cubic; ++k) {
        if (s.padding == "border")
          f[k] = std::clamp(f[k], 0.0, static_cast<double>(s.dims[k] - 1));
        else if (s.padding == "reflection")
          f[k] = GridSampler::reflect(f[k], s.lo(), s.hi(s.dims[k]));
      }
      for (size_t k = 0; k < r; ++k) {
        if (mode == "nearest") {
          base[k] = static_cast<int64_t>(f[k]);
          weights[k] = {1.0, 0, 0, 0};
        } else if (mode == linear) {
          base[k] = static_cast<int64_t>(std::floor(f[k]));
          const double t = f[k] - static_cast<double>(base[k]);
          weights[k] = {1 - t, t, 0, 0};
        } else {
          base[k] = static_cast<int64_t>(std::floor(f[k])) - 1;
          cubic_coefficients(f[k] - static_cast<double>(base[k] + 1), weights[k].data());
        }
      }
      for (int64_t ch = 0; ch < c; ++ch) {
        const float* img = x.data<float>() + (b * c + ch) * in_points;
        double v = 0;
        for (int64_t t = 0; t < tap_count; ++t) {  // every corner of the taps' box
          double w = 1;
          int64_t rest = t;
          for (size_t k = r; k-- > 0;) {
            const int64_t j = rest % taps;
            rest /= taps;
            at[k] = base[k] + j;
            w *= weights[k][static_cast<size_t>(j)];
          }
          if (w != 0) v += w * s.pixel(img, at.data());
        }
        py[(b * c + ch) * out_points + p] = static_cast<float>(v);
      }
    }
  ctx.outputs[0] = std::move(y);
}

// Col2Im (opset 18): column blocks [N, C x prod(block), L] back into an image
// [N, C, image...]: each block element added at its place (overlaps sum), as the inverse
// of the im2col a convolution of that block shape, strides, pads and dilations does.
void col2im(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const std::vector<int64_t> image = ctx.input(1).ints(), block = ctx.input(2).ints();
  const size_t r = image.size();
  if (r == 0 || block.size() != r)
    ctx.fail("image_shape and block_shape must be non-empty and of one length");
  if (x.rank() != 3) ctx.fail("the input must be [N, C x prod(block_shape), L], not " + x.shape_string());
  if (x.dtype() != DType::F32 && x.dtype() != DType::F64) ctx.fail("runs on f32 and f64");
  const std::vector<int64_t> strides = ctx.attr_ints("strides", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> dilations = ctx.attr_ints("dilations", std::vector<int64_t>(r, 1));
  const std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * r, 0));
  if (strides.size() != r || dilations.size() != r || pads.size() != 2 * r)
    ctx.fail("strides, dilations and pads must match image_shape's length");
  int64_t block_size = 1, blocks = 1, image_size = 1;
  std::vector<int64_t> grid(r);  // sliding positions along each axis
  for (size_t k = 0; k < r; ++k) {
    if (image[k] < 1 || block[k] < 1 || strides[k] < 1 || dilations[k] < 1)
      ctx.fail("image_shape, block_shape, strides and dilations must be positive");
    int64_t span = 0, padded = 0;
    bool overflow = __builtin_mul_overflow(dilations[k], block[k] - 1, &span) ||
                    __builtin_add_overflow(span, 1, &span) ||
                    __builtin_add_overflow(image[k], pads[k], &padded) ||
                    __builtin_add_overflow(padded, pads[k + r], &padded);
    if (!overflow && padded < span)
      ctx.fail("a block is larger than the padded image on axis " + std::to_string(k));
    grid[k] = overflow ? 0 : (padded - span) / strides[k] + 1;
    overflow = overflow || __builtin_mul_overflow(block_size, block[k], &block_size) ||
               __builtin_mul_overflow(blocks, grid[k], &blocks) ||
               __builtin_mul_overflow(image_size, image[k], &image_size);
    if (overflow)
      ctx.fail("image_shape, block_shape, pads and dilations on axis " + std::to_string(k) +
               " overflow 64 bits");
  }
  const int64_t n = x.dims()[0];
  if (x.dims()[1] % block_size != 0)
    ctx.fail("dim 1 (" + std::to_string(x.dims()[1]) +
             ") is not a multiple of prod(block_shape) = " + std::to_string(block_size));
  if (x.dims()[2] != blocks)
    ctx.fail("dim 2 (" + std::to_string(x.dims()[2]) + ") is not the " + std::to_string(blocks) +
             " blocks the image, block, strides, pads and dilations make");
  const int64_t c = x.dims()[1] / block_size;
  std::vector<int64_t> out_dims = {n, c};
  out_dims.insert(out_dims.end(), image.begin(), image.end());
  HostTensor y(x.dtype(), out_dims);
  // The index along each axis of a flat position in a box of `extents`.
  auto unravel = [r](int64_t flat, const std::vector<int64_t>& extents, std::vector<int64_t>& at) {
    for (size_t a = r; a-- > 0;) {
      at[a] = flat % extents[a];
      flat /= extents[a];
    }
  };
  dispatch_float(
      x.dtype(),
      [&]<class T>() {
        const T* px = x.data<T>();
        T* py = y.mutable_data<T>();
        std::vector<int64_t> kpos(r), lpos(r);
        for (int64_t b = 0; b < n; ++b)
          for (int64_t ch = 0; ch < c; ++ch)
            for (int64_t k = 0; k < block_size; ++k) {
              unravel(k, block, kpos);
              const T* row = px + ((b * c + ch) * block_size + k) * blocks;
              T* img = py + (b * c + ch) * image_size;
              for (int64_t l = 0; l < blocks; ++l) {
                unravel(l, grid, lpos);
                int64_t offset = 0;
                bool inside = true;
                for (size_t a = 0; a < r && inside; ++a) {
                  const int64_t at = lpos[a] * strides[a] - pads[a] + kpos[a] * dilations[a];
                  inside = at >= 0 && at < image[a];
                  offset = offset * image[a] + at;
                }
                if (inside) img[offset] += row[l];
              }
            }
      },
      "Col2Im");
  ctx.outputs[0] = std::move(y);
}

// AffineGrid (opset 20): the normalized coordinates of each output pixel moved by theta,
// [N, H, W, 2] for 2-D (theta N x 2 x 3) or [N, D, H, W, 3] for 3-D (theta N x 3 x 4).
void affine_grid(KernelContext& ctx) {
  const HostTensor& theta = ctx.input(0);
  const std::vector<int64_t> size = ctx.input(1).ints();
  if (size.size() != 4 && size.size() != 5) ctx.fail("size must be [N, C, H, W] or [N, C, D, H, W]");
  const int64_t r = static_cast<int64_t>(size.size()) - 2, n = size[0];
  if (theta.dtype() != DType::F32) ctx.fail("runs on f32");
  if (theta.rank() != 3 || theta.dims()[0] != n || theta.dims()[1] != r || theta.dims()[2] != r + 1)
    ctx.fail("theta must be [" + std::to_string(n) + ", " + std::to_string(r) + ", " + std::to_string(r + 1) +
             "], not " + theta.shape_string());
  const bool align = ctx.attr_int("align_corners", 0) != 0;
  std::vector<int64_t> out_dims = {n};
  int64_t points = 1;
  for (int64_t k = 0; k < r; ++k) {
    if (size[static_cast<size_t>(k + 2)] < 0) ctx.fail("size must not be negative");
    out_dims.push_back(size[static_cast<size_t>(k + 2)]);
    points *= size[static_cast<size_t>(k + 2)];
  }
  out_dims.push_back(r);
  ctx.check_planned_dims(0, out_dims);
  // Coordinate i of an axis of length len: -1..1 through the pixel centers (or corners). An
  // aligned axis of one pixel is at 1, as ONNX Runtime has it (Eigen's LinSpaced; ONNX's
  // numpy reference says -1).
  auto coordinate = [align](int64_t i, int64_t len) {
    if (align) return len > 1 ? -1.0 + 2.0 * static_cast<double>(i) / static_cast<double>(len - 1) : 1.0;
    return (2.0 * static_cast<double>(i) + 1.0) / static_cast<double>(len) - 1.0;
  };
  HostTensor y(DType::F32, out_dims);
  float* py = y.mutable_data<float>();
  const float* t = theta.data<float>();
  std::vector<double> source(static_cast<size_t>(r + 1), 1.0);  // (x, y[, z], 1)
  for (int64_t b = 0; b < n; ++b)
    for (int64_t p = 0; p < points; ++p) {
      int64_t rest = p;
      for (int64_t k = r; k-- > 0;) {  // spatial axis k (outermost first) is coordinate r-1-k
        const int64_t len = out_dims[static_cast<size_t>(k + 1)];
        source[static_cast<size_t>(r - 1 - k)] = coordinate(rest % len, len);
        rest /= len;
      }
      for (int64_t row = 0; row < r; ++row) {
        double v = 0;
        for (int64_t col = 0; col <= r; ++col)
          v += static_cast<double>(t[(b * r + row) * (r + 1) + col]) * source[static_cast<size_t>(col)];
        py[(b * points + p) * r + row] = static_cast<float>(v);
      }
    }
  ctx.outputs[0] = std::move(y);
}

// RoiAlign: average (or max) of bilinear samples over each output bin of each region.
void roi_align(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& rois = ctx.input(1);
  const HostTensor& batch_index = ctx.input(2);
  need_rank(ctx, x, 4);
  if (x.dtype() != DType::F32) ctx.fail("runs on f32");
  if (rois.rank() != 2 || rois.dims()[1] != 4 || batch_index.size() != rois.dims()[0])
    ctx.fail("rois must be [R, 4] with one batch index each");
  const int64_t c = x.dims()[1], h = x.dims()[2], w = x.dims()[3], r_count = rois.dims()[0];
  const int64_t out_h = ctx.attr_int("output_height", 1), out_w = ctx.attr_int("output_width", 1);
  if (h < 1 || w < 1) ctx.fail("the input has no pixels to sample");
  if (out_h < 1 || out_w < 1 || out_h > 4096 || out_w > 4096)
    ctx.fail("output_height and output_width must be in 1..4096");
  if (ctx.attr_int("sampling_ratio", 0) < 0 || ctx.attr_int("sampling_ratio", 0) > 64)
    ctx.fail("sampling_ratio must be in 0..64");
  const int64_t ratio = ctx.attr_int("sampling_ratio", 0);
  const double scale = ctx.attr_float("spatial_scale", 1.0f);
  const bool max_mode = ctx.attr_string("mode", "avg") == "max";
  const bool half_pixel =
      ctx.opset() >= 16 && ctx.attr_string("coordinate_transformation_mode", "half_pixel") == "half_pixel";
  const double offset = half_pixel ? 0.5 : 0.0;
  HostTensor y(DType::F32, {r_count, c, out_h, out_w});
  float* py = y.mutable_data<float>();
  for (int64_t r = 0; r < r_count; ++r) {
    const int64_t b = batch_index.int_at(r);
    if (b < 0 || b >= x.dims()[0]) ctx.fail("batch index " + std::to_string(b) + " is out of range");
    const double x1 = rois.real_at(r * 4) * scale - offset, y1 = rois.real_at(r * 4 + 1) * scale - offset;
    const double x2 = rois.real_at(r * 4 + 2) * scale - offset, y2 = rois.real_at(r * 4 + 3) * scale - offset;
    double roi_w = x2 - x1, roi_h = y2 - y1;
    if (!half_pixel) {
      roi_w = std::max(roi_w, 1.0);
      roi_h = std::max(roi_h, 1.0);
    }
    const double bin_h = roi_h / static_cast<double>(out_h), bin_w = roi_w / static_cast<double>(out_w);
    if (!std::isfinite(roi_h) || !std::isfinite(roi_w) || roi_h > 1e6 || roi_w > 1e6)
      ctx.fail("region " + std::to_string(r) + " is not a finite box of at most 1e6 pixels");
    const int64_t grid_h =
        ratio > 0 ? ratio
                  : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(roi_h / static_cast<double>(out_h))));
    const int64_t grid_w =
        ratio > 0 ? ratio
                  : std::max<int64_t>(0, static_cast<int64_t>(std::ceil(roi_w / static_cast<double>(out_w))));
    const double count = static_cast<double>(std::max<int64_t>(grid_h * grid_w, 1));
    for (int64_t ch = 0; ch < c; ++ch) {
      const float* img = x.data<float>() + (b * c + ch) * h * w;
      for (int64_t ph = 0; ph < out_h; ++ph)
        for (int64_t pw = 0; pw < out_w; ++pw) {
          double acc = 0;
          bool first = true;
          for (int64_t iy = 0; iy < grid_h; ++iy)
            for (int64_t ix = 0; ix < grid_w; ++ix) {
              double sy = y1 + static_cast<double>(ph) * bin_h +
                          (static_cast<double>(iy) + 0.5) * bin_h / static_cast<double>(grid_h);
              double sx = x1 + static_cast<double>(pw) * bin_w +
                          (static_cast<double>(ix) + 0.5) * bin_w / static_cast<double>(grid_w);
              double v[4] = {0, 0, 0, 0}, wt[4] = {0, 0, 0, 0};
              if (!(sy < -1.0 || sy > static_cast<double>(h) || sx < -1.0 || sx > static_cast<double>(w))) {
                sy = std::max(sy, 0.0);
                sx = std::max(sx, 0.0);
                int64_t y_lo = static_cast<int64_t>(sy), x_lo = static_cast<int64_t>(sx), y_hi, x_hi;
                if (y_lo >= h - 1) {
                  y_hi = y_lo = h - 1;
                  sy = static_cast<double>(y_lo);
                } else {
                  y_hi = y_lo + 1;
                }
                if (x_lo >= w - 1) {
                  x_hi = x_lo = w - 1;
                  sx = static_cast<double>(x_lo);
                } else {
                  x_hi = x_lo + 1;
                }
                const double ly = sy - static_cast<double>(y_lo), lx = sx - static_cast<double>(x_lo);
                const double hy = 1 - ly, hx = 1 - lx;
                v[0] = img[y_lo * w + x_lo];
                v[1] = img[y_lo * w + x_hi];
                v[2] = img[y_hi * w + x_lo];
                v[3] = img[y_hi * w + x_hi];
                wt[0] = hy * hx;
                wt[1] = hy * lx;
                wt[2] = ly * hx;
                wt[3] = ly * lx;
              }
              if (max_mode) {  // ONNX Runtime's max: the largest weighted corner of each sample
                double m = std::max({wt[0] * v[0], wt[1] * v[1], wt[2] * v[2], wt[3] * v[3]});
                acc = first ? m : std::max(acc, m);
                first = false;
              } else {
                acc += wt[0] * v[0] + wt[1] * v[1] + wt[2] * v[2] + wt[3] * v[3];
              }
            }
          py[((r * c + ch) * out_h + ph) * out_w + pw] = static_cast<float>(max_mode ? acc : acc / count);
        }
    }
  }
  ctx.outputs[0] = std::move(y);
}

// NonMaxSuppression: per batch and class, boxes above score_threshold in score order, each
// kept unless its IoU with a kept box exceeds iou_threshold; [selected, 3] (batch, class, box).
void non_max_suppression(KernelContext& ctx) {
  const HostTensor& boxes = ctx.input(0);
  const HostTensor& scores = ctx.input(1);
  if (boxes.rank() != 3 || boxes.dims()[2] != 4 || scores.rank() != 3 ||
      scores.dims()[0] != boxes.dims()[0] || scores.dims()[2] != boxes.dims()[1])
    ctx.fail("boxes must be [B, N, 4] and scores [B, C, N]");
  const int64_t max_out = ctx.has_input(2) && ctx.input(2).size() ? ctx.input(2).int_at(0) : 0;
  const double iou_threshold = ctx.has_input(3) && ctx.input(3).size() ? ctx.input(3).real_at(0) : 0.0;
  const bool has_score_threshold = ctx.has_input(4) && ctx.input(4).size();
  const double score_threshold = has_score_threshold ? ctx.input(4).real_at(0) : 0.0;
  const bool center = ctx.attr_int("center_point_box", 0) != 0;
  const int64_t batches = boxes.dims()[0], n = boxes.dims()[1], classes = scores.dims()[1];
  struct Box {
    double y1, x1, y2, x2;
  };
  auto box_at = [&](int64_t b, int64_t i) {
    const int64_t o = (b * n + i) * 4;
    double a = boxes.real_at(o), bb = boxes.real_at(o + 1), c = boxes.real_at(o + 2),
           d = boxes.real_at(o + 3);
    if (center) return Box{bb - d / 2, a - c / 2, bb + d / 2, a + c / 2};
    return Box{std::min(a, c), std::min(bb, d), std::max(a, c), std::max(bb, d)};
  };
  auto iou = [](const Box& p, const Box& q) {
    const double ih = std::max(0.0, std::min(p.y2, q.y2) - std::max(p.y1, q.y1));
    const double iw = std::max(0.0, std::min(p.x2, q.x2) - std::max(p.x1, q.x1));
    const double inter = ih * iw;
    const double uni = (p.y2 - p.y1) * (p.x2 - p.x1) + (q.y2 - q.y1) * (q.x2 - q.x1) - inter;
    return uni > 0 ? inter / uni : 0.0;
  };
  std::vector<int64_t> selected;
  for (int64_t b = 0; b < batches && max_out > 0; ++b)
    for (int64_t cl = 0; cl < classes; ++cl) {
      std::vector<int64_t> order;
      for (int64_t i = 0; i < n; ++i)
        if (!has_score_threshold || scores.real_at((b * classes + cl) * n + i) > score_threshold)
          order.push_back(i);
      std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
        return scores.real_at((b * classes + cl) * n + p) > scores.real_at((b * classes + cl) * n + q);
      });
      std::vector<Box> kept;
      for (int64_t i : order) {
        if (static_cast<int64_t>(kept.size()) >= max_out) break;
        const Box candidate = box_at(b, i);
        bool suppressed = false;
        for (const Box& k : kept) suppressed = suppressed || iou(candidate, k) > iou_threshold;
        if (suppressed) continue;
        kept.push_back(candidate);
        selected.insert(selected.end(), {b, cl, i});
      }
    }
  ctx.outputs[0] =
      HostTensor::from_vector(DType::I64, {static_cast<int64_t>(selected.size() / 3), 3}, selected);
}

}  // namespace

void register_spatial_kernels(OpRegistry& r) {
  r.add("", "DepthToSpace", depth_to_space, /*half_via_f32=*/false);
  r.add("", "SpaceToDepth", space_to_depth, /*half_via_f32=*/false);
  r.add("", "MaxUnpool", max_unpool, /*half_via_f32=*/false);
  r.add("", "LRN", lrn);
  r.add("", "MeanVarianceNormalization", mean_variance_normalization);
  r.add("", "GridSample", grid_sample);
  r.add("", "AffineGrid", affine_grid);
  r.add("", "Col2Im", col2im);
  r.add("", "RoiAlign", roi_align);
  r.add("", "NonMaxSuppression", non_max_suppression);
}

}  // namespace geopt
