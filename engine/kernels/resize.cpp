// Resize (opset 10-17): nearest, linear and cubic over any set of axes, with
// every coordinate_transformation_mode. Each axis is reduced to a list of taps
// (input index, weight) per output coordinate; an output element sums the
// product of its axes' taps.
#include <cmath>
#include <cstring>

#include "kernels/dispatch.h"
#include "kernels/elementwise_util.h"
#include "kernels/layout.h"

namespace geopt {
namespace {

struct Taps {
  int64_t index[4] = {};
  double weight[4] = {};
  int count = 0;
  bool outside = false;  // tf_crop_and_resize sample outside the input: use extrapolation_value
};

struct ResizeParams {
  std::string mode, transform, nearest_mode;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
};

// `out` is the resized length: the output size when sizes are given, else in * scale
// (unfloored, as ONNX's reference implementation has it).
double original_coordinate(const ResizeParams& p, double x, double scale, int64_t in, double out, double roi_start,
                           double roi_end) {
  const std::string& t = p.transform;
  if (t == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (t == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (t == "align_corners") return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out - 1);
  if (t == "asymmetric") return x / scale;
  if (t == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (t == "tf_crop_and_resize")
    return out > 1 ? roi_start * static_cast<double>(in - 1) + x * (roi_end - roi_start) * static_cast<double>(in - 1) / (out - 1)
                   : 0.5 * (roi_start + roi_end) * static_cast<double>(in - 1);
  throw Error("unknown coordinate_transformation_mode '" + t + "'");
}

int64_t nearest_index(const std::string& mode, double x) {
  if (mode == "floor") return static_cast<int64_t>(std::floor(x));
  if (mode == "ceil") return static_cast<int64_t>(std::ceil(x));
  double f = std::floor(x);
  bool half = x - f == 0.5;
  if (mode == "round_prefer_ceil") return static_cast<int64_t>(half ? f + 1 : std::round(x));
  if (mode == "round_prefer_floor") return static_cast<int64_t>(half ? f : std::round(x));
  throw Error("unknown nearest_mode '" + mode + "'");
}

Taps axis_taps(const ResizeParams& p, int64_t x, double scale, int64_t in, double out, double rs, double re) {
  Taps t;
  double xo = original_coordinate(p, static_cast<double>(x), scale, in, out, rs, re);
  if (p.transform == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1))) {
    t.outside = true;
    return t;
  }
  auto clamp = [in](int64_t i) { return std::clamp<int64_t>(i, 0, in - 1); };
  if (p.mode == "nearest") {
    t.index[0] = clamp(nearest_index(p.nearest_mode, xo));
    t.weight[0] = 1;
    t.count = 1;
  } else if (p.mode == "linear") {
    double f = std::floor(xo);
    double w = xo - f;
    t.index[0] = clamp(static_cast<int64_t>(f));
    t.index[1] = clamp(static_cast<int64_t>(f) + 1);
    t.weight[0] = 1 - w;
    t.weight[1] = w;
    t.count = 2;
  } else if (p.mode == "cubic") {
    double f = std::floor(xo);
    double s = xo - f;
    const double A = p.cubic_a;
    double c[4] = {((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A, ((A + 2) * s - (A + 3)) * s * s + 1,
                   ((A + 2) * (1 - s) - (A + 3)) * (1 - s) * (1 - s) + 1, 0};
    c[3] = 1 - c[0] - c[1] - c[2];
    double total = 0;
    for (int k = 0; k < 4; ++k) {
      int64_t i = static_cast<int64_t>(f) - 1 + k;
      if (p.exclude_outside && (i < 0 || i >= in)) c[k] = 0;
      t.index[k] = clamp(i);
      total += c[k];
    }
    for (int k = 0; k < 4; ++k) t.weight[k] = p.exclude_outside && total != 0 ? c[k] / total : c[k];
    t.count = 4;
  } else {
    throw Error("unknown resize mode '" + p.mode + "'");
  }
  return t;
}

void resize(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const size_t rank = x.rank();
  ResizeParams p;
  p.mode = ctx.attr_string("mode", "nearest");
  p.transform = ctx.opset() < 11 ? "asymmetric" : ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  p.nearest_mode = ctx.opset() < 11 ? "floor" : ctx.attr_string("nearest_mode", "round_prefer_floor");
  p.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = ctx.attr_float("extrapolation_value", 0.0f);

  std::vector<double> scales(rank, 1.0), roi(2 * rank, 0.0);
  for (size_t d = 0; d < rank; ++d) roi[rank + d] = 1.0;
  std::vector<int64_t> out_dims(rank);
  const size_t scales_input = ctx.opset() < 11 ? 1 : 2;
  bool have_sizes = ctx.opset() >= 11 && ctx.has_input(3) && ctx.input(3).size() > 0;
  if (ctx.opset() >= 11 && ctx.has_input(1) && ctx.input(1).size() == static_cast<int64_t>(2 * rank))
    for (size_t i = 0; i < 2 * rank; ++i) roi[i] = ctx.input(1).real_at(static_cast<int64_t>(i));
  if (have_sizes) {
    auto sizes = ctx.input(3).ints();
    if (sizes.size() != rank) ctx.fail("sizes must have one entry per axis");
    for (size_t d = 0; d < rank; ++d) {
      out_dims[d] = sizes[d];
      scales[d] = x.dims()[d] ? static_cast<double>(sizes[d]) / static_cast<double>(x.dims()[d]) : 1.0;
    }
  } else {
    // Upsample before opset 9 gives the scales as an attribute.
    const std::vector<float> attr_scales = ctx.has_input(scales_input) ? std::vector<float>{} : ctx.attr_floats("scales");
    if (attr_scales.empty() && (!ctx.has_input(scales_input) || ctx.input(scales_input).size() != static_cast<int64_t>(rank)))
      ctx.fail("needs scales or sizes with one entry per axis");
    if (!attr_scales.empty() && attr_scales.size() != rank) ctx.fail("scales must have one entry per axis");
    for (size_t d = 0; d < rank; ++d) {
      scales[d] = attr_scales.empty() ? static_cast<float>(ctx.input(scales_input).real_at(static_cast<int64_t>(d))) : attr_scales[d];
      if (scales[d] <= 0) ctx.fail("scales must be positive");
      out_dims[d] = static_cast<int64_t>(std::floor(static_cast<double>(x.dims()[d]) * scales[d]));
    }
  }

  std::vector<std::vector<Taps>> taps(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < out_dims[d]; ++i)
      taps[d].push_back(axis_taps(p, i, scales[d], x.dims()[d],
                                  have_sizes ? static_cast<double>(out_dims[d]) : static_cast<double>(x.dims()[d]) * scales[d],
                                  roi[d], roi[rank + d]));

  auto xs = strides_of(x.dims());
  dispatch_all(x.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, bool> || is_half_v<T>) {
      ctx.fail("Resize supports real dtypes only");
    } else {
      HostTensor y(x.dtype(), out_dims);
      const T* px = x.data<T>();
      T* py = y.mutable_data<T>();
      std::vector<int64_t> c(rank, 0), k(rank, 0);
      const int64_t total = y.size();
      for (int64_t i = 0; i < total; ++i) {
        bool outside = false;
        for (size_t d = 0; d < rank; ++d) outside = outside || taps[d][static_cast<size_t>(c[d])].outside;
        double acc = 0;
        if (outside) {
          acc = p.extrapolation;
        } else {
          std::fill(k.begin(), k.end(), 0);
          while (true) {  // every combination of taps across axes
            double w = 1;
            int64_t src = 0;
            for (size_t d = 0; d < rank; ++d) {
              const Taps& t = taps[d][static_cast<size_t>(c[d])];
              w *= t.weight[k[d]];
              src += t.index[k[d]] * xs[d];
            }
            if (w != 0) acc += w * static_cast<double>(px[src]);
            size_t d = rank;
            while (d-- > 0) {
              if (++k[d] < taps[d][static_cast<size_t>(c[d])].count) break;
              k[d] = 0;
            }
            if (d == SIZE_MAX) break;
          }
        }
        if constexpr (std::is_integral_v<T>) py[i] = convert_value<T>(std::nearbyint(acc));
        else py[i] = static_cast<T>(acc);
        for (size_t d = rank; d-- > 0;) {
          if (++c[d] < out_dims[d]) break;
          c[d] = 0;
        }
      }
      ctx.outputs[0] = std::move(y);
    }
  }, "Resize");
}

}  // namespace

// Upsample (deprecated since opset 10) is Resize with opset 10's semantics: scales only,
// asymmetric coordinates, nearest rounding down.
void register_resize_kernel(KernelRegistry& r) {
  r.add("", "Resize", resize);
  r.add("", "Upsample", resize);
}

}  // namespace geopt
