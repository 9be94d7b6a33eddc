// Resize (opset 10-19): nearest, linear and cubic over any set of axes, with every
// coordinate_transformation_mode (opset 19's half_pixel_symmetric too), and opset 18's
// antialias, axes and keep_aspect_ratio_policy. Each axis is reduced to a list of taps (input index,
// weight) per output coordinate; an output element sums the product of its axes' taps. f32 (what models
// resize) takes separable passes over contiguous rows; other types and extrapolated samples the general loop.
#include <algorithm>
#include <cmath>
#include <cstring>

#include <omp.h>

#include "kernels/arguments.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_util.h"
#include "kernels/layout.h"
#include "util/checked_size.h"
#include "util/memory.h"
#include "util/team_region.h"

namespace geopt {
namespace {

struct Taps {
  std::vector<int64_t> index;  // count entries: 1 (nearest), 2 (linear), 4 (cubic), more with antialias
  std::vector<double> weight;
  int count = 0;
  bool outside = false;  // tf_crop_and_resize sample outside the input: use extrapolation_value
};

struct ResizeParams {
  std::string mode, transform, nearest_mode;
  double cubic_a = -0.75;
  bool exclude_outside = false;
  double extrapolation = 0.0;
  bool antialias = false;  // linear and cubic: the filter widened by 1/scale when downscaling
};

// `out` is the resized length: the output size when sizes are given, else in * scale
// (unfloored, as ONNX's reference implementation has it).
double original_coordinate(const ResizeParams& p, double x, double scale, int64_t in, double out,
                           double roi_start, double roi_end) {
  const std::string& t = p.transform;
  if (t == "half_pixel") return (x + 0.5) / scale - 0.5;
  if (t == "half_pixel_symmetric") {  // opset 19: half_pixel, centred where the size was floored
    const double adjustment = out > 0 ? std::floor(out) / out : 1.0;
    const double offset = static_cast<double>(in) / 2.0 * (1.0 - adjustment);
    return offset + (x + 0.5) / scale - 0.5;
  }
  if (t == "pytorch_half_pixel") return out > 1 ? (x + 0.5) / scale - 0.5 : 0.0;
  if (t == "align_corners") return out == 1 ? 0.0 : x * static_cast<double>(in - 1) / (out - 1);
  if (t == "asymmetric") return x / scale;
  if (t == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (t == "tf_crop_and_resize")
    return out > 1 ? roi_start * static_cast<double>(in - 1) +
                         x * (roi_end - roi_start) * static_cast<double>(in - 1) / (out - 1)
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
    t.index = {clamp(nearest_index(p.nearest_mode, xo))};
    t.weight = {1.0};
    t.count = 1;
  } else if (p.mode == "linear") {
    double f = std::floor(xo);
    double w = xo - f;
    t.index = {clamp(static_cast<int64_t>(f)), clamp(static_cast<int64_t>(f) + 1)};
    t.weight = {1 - w, w};
    t.count = 2;
  } else if (p.mode == "cubic") {
    double f = std::floor(xo);
    double s = xo - f;
    const double A = p.cubic_a;
    double c[4] = {((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A,
                   ((A + 2) * s - (A + 3)) * s * s + 1, ((A + 2) * (1 - s) - (A + 3)) * (1 - s) * (1 - s) + 1,
                   0};
    c[3] = 1 - c[0] - c[1] - c[2];
    double total = 0;
    t.index.resize(4);
    t.weight.resize(4);
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

// Antialiased linear or cubic taps (opset 18), as ONNX Runtime computes them: the
// filter (triangle, or Keys cubic with cubic_coeff_a) is stretched by 1/scale when
// downscaling, so every input sample under it contributes; taps past the input's ends
// fold onto its edge samples (or, with exclude_outside, drop out), and the weights are
// normalized to sum to 1.
Taps antialias_taps(const ResizeParams& p, int64_t x, double scale, int64_t in, double out, double rs,
                    double re) {
  Taps t;
  const double xo = scale == 1.0 ? static_cast<double>(x)
                                 : original_coordinate(p, static_cast<double>(x), scale, in, out, rs, re);
  if (p.transform == "tf_crop_and_resize" && (xo < 0 || xo > static_cast<double>(in - 1))) {
    t.outside = true;
    return t;
  }
  const bool cubic = p.mode == "cubic";
  const double stretch = std::max(1.0 / scale, 1.0);     // the filter's width factor
  const double support = (cubic ? 2.0 : 1.0) * stretch;  // half-width in input samples
  const double center = xo + 0.5;
  const int64_t window = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  const int64_t first = static_cast<int64_t>(std::floor(center - support + 0.5));
  const int64_t last =
      first +
      std::clamp<int64_t>(static_cast<int64_t>(std::floor(center + support + 0.5)) - first, 0, window);
  const double A = p.cubic_a;
  auto filter = [cubic, A](double v) {
    v = std::fabs(v);
    if (!cubic) return v < 1.0 ? 1.0 - v : 0.0;
    if (v < 1.0) return ((A + 2) * v - (A + 3)) * v * v + 1;
    if (v < 2.0) return (((v - 5) * v + 8) * v - 4) * A;
    return 0.0;
  };
  double total = 0;
  for (int64_t i = first; i < last; ++i) {
    const bool inside = i >= 0 && i < in;
    if (!inside && p.exclude_outside) continue;
    const double w = filter((static_cast<double>(i) - center + 0.5) / stretch);
    total += w;
    const int64_t at = std::clamp<int64_t>(i, 0, in - 1);
    if (!t.index.empty() && t.index.back() == at) {
      t.weight.back() += w;  // a tap past the end folds onto the edge sample
    } else {
      t.index.push_back(at);
      t.weight.push_back(w);
    }
  }
  if (total != 0)
    for (double& w : t.weight) w /= total;
  if (t.index.empty()) {  // every tap outside the input, and excluded: nothing to blend
    t.index.push_back(std::clamp<int64_t>(static_cast<int64_t>(std::floor(center)), 0, in - 1));
    t.weight.push_back(0.0);
  }
  t.count = static_cast<int>(t.index.size());
  return t;
}

// One axis's taps as the f32 passes read them: per output coordinate, the input
// indices and weights of its nonzero taps.
struct AxisTaps {
  std::vector<int64_t> index;  // 4 per output coordinate
  std::vector<float> weight;   // 4 per output coordinate, zero past `count`
  std::vector<int> count;
  size_t width = 1;      // entries per output coordinate: the most taps any has
  bool identity = true;  // output coordinate i reads input i, weight 1
};

AxisTaps compact_taps(const std::vector<Taps>& taps, int64_t in) {
  AxisTaps a;
  for (const Taps& t : taps) a.width = std::max(a.width, static_cast<size_t>(t.count));
  const size_t width = a.width;
  a.index.assign(taps.size() * width, 0);
  a.weight.assign(taps.size() * width, 0.0f);
  a.count.assign(taps.size(), 0);
  a.identity = static_cast<int64_t>(taps.size()) == in;
  for (size_t o = 0; o < taps.size(); ++o) {
    int& count = a.count[o];
    for (int k = 0; k < taps[o].count; ++k) {
      if (taps[o].weight[k] == 0) continue;
      a.index[o * width + static_cast<size_t>(count)] = taps[o].index[k];
      a.weight[o * width + static_cast<size_t>(count)] = static_cast<float>(taps[o].weight[k]);
      ++count;
    }
    a.identity = a.identity && count == 1 && a.index[o * width] == static_cast<int64_t>(o) &&
                 a.weight[o * width] == 1.0f;
  }
  return a;
}

// Nearest: every output element copies one input element. The axes after the innermost
// resized one are copied whole (a channel-blocked tensor's lanes, or the rest of a row), so
// each output row of that axis gathers blocks of `inner` elements through its index table.
void resize_nearest_f32(const float* x, const std::vector<int64_t>& in_dims,
                        const std::vector<AxisTaps>& axes, const std::vector<int64_t>& out_dims, float* y) {
  const size_t rank = out_dims.size();
  size_t last = rank - 1;  // the innermost resized axis
  while (last > 0 && axes[last].identity) --last;
  int64_t inner = 1, rows = 1, total = 1;
  for (size_t d = last + 1; d < rank; ++d) inner *= out_dims[d];
  for (size_t d = 0; d < last; ++d) rows *= out_dims[d];
  for (int64_t d : out_dims) total *= d;
  if (axes[last].identity) {  // nothing is resized
    std::memcpy(y, x, static_cast<size_t>(total) * sizeof(float));
    return;
  }
  const std::vector<int64_t> xs = strides_of(in_dims);
  const int64_t row = out_dims[last];
  const AxisTaps& taps = axes[last];
  team_region(total > (1 << 15), [&] {
#pragma omp for
    for (int64_t r = 0; r < rows; ++r) {
      int64_t src = 0;
      for (size_t d = last, rest = static_cast<size_t>(r); d-- > 0;) {
        const int64_t o = static_cast<int64_t>(rest) % out_dims[d];
        rest /= static_cast<size_t>(out_dims[d]);
        src += axes[d].index[static_cast<size_t>(o) * axes[d].width] * xs[d];
      }
      const float* in_row = x + src;
      float* out_row = y + r * row * inner;
      for (int64_t j = 0; j < row; ++j) {
        const float* from = in_row + taps.index[static_cast<size_t>(j) * taps.width] * inner;
        float* to = out_row + j * inner;
        for (int64_t i = 0; i < inner; ++i) to[i] = from[i];
      }
    }
  });
}

// One linear or cubic pass along `axis`: out[o, j, i] = sum_k w[j][k] x[o, index[j][k], i],
// a weighted sum of a few input rows over the contiguous inner axes.
void resize_axis_f32(const float* x, const std::vector<int64_t>& dims, size_t axis, const AxisTaps& taps,
                     float* y) {
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < axis; ++d) outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) inner *= dims[d];
  const int64_t in = dims[axis], out = static_cast<int64_t>(taps.count.size());
  team_region(outer * out * inner > (1 << 15), [&] {
#pragma omp for
    for (int64_t r = 0; r < outer * out; ++r) {
      const int64_t o = r / out, j = r % out;
      const size_t t = static_cast<size_t>(j) * taps.width;
      const int count = taps.count[static_cast<size_t>(j)];
      float* out_row = y + r * inner;
      const float* base = x + o * in * inner;
      if (inner == 1) {
        float acc = 0;
        for (int k = 0; k < count; ++k)
          acc += taps.weight[t + static_cast<size_t>(k)] * base[taps.index[t + static_cast<size_t>(k)]];
        out_row[0] = acc;
        continue;
      }
      const float w0 = taps.weight[t];
      const float* r0 = base + taps.index[t] * inner;
      for (int64_t i = 0; i < inner; ++i) out_row[i] = w0 * r0[i];
      for (int k = 1; k < count; ++k) {
        const float wk = taps.weight[t + static_cast<size_t>(k)];
        const float* rk = base + taps.index[t + static_cast<size_t>(k)] * inner;
        for (int64_t i = 0; i < inner; ++i) out_row[i] += wk * rk[i];
      }
    }
  });
}

// The order of the linear/cubic passes that moves the fewest weighted elements: each pass
// costs its output's elements times its taps, three times over for the last axis (a
// gather per element; the other axes weigh whole contiguous rows, which vectorize). A
// bilinear 8x upsampling of NCHW resizes W first, at the small size, then H over rows of
// the full width: 4.3 ms the other way round, 1 ms this way (DeepLabV3's 28 -> 224).
std::vector<size_t> pass_order(const std::vector<int64_t>& in_dims, const std::vector<int64_t>& out_dims,
                               const std::vector<AxisTaps>& axes) {
  std::vector<size_t> order;
  for (size_t d = 0; d < in_dims.size(); ++d)
    if (!axes[d].identity) order.push_back(d);
  auto cost = [&](const std::vector<size_t>& passes) {
    std::vector<int64_t> dims = in_dims;
    double total = 0;
    for (size_t axis : passes) {
      dims[axis] = out_dims[axis];
      double elements = 1;
      for (int64_t d : dims) elements *= static_cast<double>(d);
      int taps = 0;
      for (int c : axes[axis].count) taps = std::max(taps, c);
      total += elements * taps * (axis + 1 == dims.size() ? 3.0 : 1.0);
    }
    return total;
  };
  std::vector<size_t> best = order;
  double best_cost = cost(order);
  std::sort(order.begin(), order.end());
  do {  // at most 5 resized axes: 120 orders
    if (const double c = cost(order); c < best_cost) {
      best_cost = c;
      best = order;
    }
  } while (std::next_permutation(order.begin(), order.end()));
  return best;
}

// Resizes f32 `x` into `y` (out_dims) one axis at a time (pass_order). The taps have no
// extrapolated sample.
void resize_f32(const HostTensor& x, const std::vector<std::vector<Taps>>& taps, bool nearest,
                HostTensor& y) {
  const size_t rank = x.rank();
  std::vector<AxisTaps> axes;
  for (size_t d = 0; d < rank; ++d) axes.push_back(compact_taps(taps[d], x.dims()[d]));
  const std::vector<int64_t>& out_dims = y.dims();
  float* py = y.mutable_data<float>();
  if (nearest) {
    resize_nearest_f32(x.data<float>(), x.dims(), axes, out_dims, py);
    return;
  }
  const std::vector<size_t> order = pass_order(x.dims(), out_dims, axes);
  if (order.empty()) {
    std::memcpy(py, x.data<float>(), static_cast<size_t>(y.size()) * sizeof(float));
    return;
  }
  std::vector<int64_t> dims = x.dims();
  const float* src = x.data<float>();
  std::vector<float> buffers[2];
  for (size_t p = 0; p < order.size(); ++p) {
    const size_t axis = order[p];
    float* dst = py;
    if (p + 1 < order.size()) {
      int64_t size = 1;
      for (size_t d = 0; d < rank; ++d) size *= d == axis ? out_dims[d] : dims[d];
      buffers[p % 2].resize(static_cast<size_t>(size));
      dst = buffers[p % 2].data();
    }
    resize_axis_f32(src, dims, axis, axes[axis], dst);
    dims[axis] = out_dims[axis];
    src = dst;
  }
}

// The node's interpolation: mode, coordinate transformation, rounding, cubic coefficient,
// outside handling and (opset 18) antialiasing.
ResizeParams resize_params(const KernelContext& ctx) {
  ResizeParams p;
  p.mode = ctx.attr_string("mode", "nearest");
  p.transform =
      ctx.opset() < 11 ? "asymmetric" : ctx.attr_string("coordinate_transformation_mode", "half_pixel");
  p.nearest_mode = ctx.opset() < 11 ? "floor" : ctx.attr_string("nearest_mode", "round_prefer_floor");
  p.cubic_a = ctx.attr_float("cubic_coeff_a", -0.75f);
  p.exclude_outside = ctx.attr_int("exclude_outside", 0) != 0;
  p.extrapolation = ctx.attr_float("extrapolation_value", 0.0f);

  p.antialias = ctx.opset() >= 18 && ctx.attr_int("antialias", 0) != 0 && p.mode != "nearest";
  return p;
}

// Each axis's output size, scale and crop region: from sizes (and opset 18's
// keep_aspect_ratio_policy) or scales, on opset 18's axes or on every axis.
struct ResizeGeometry {
  std::vector<double> scales, roi;  // roi: every axis's start, then every axis's end
  std::vector<int64_t> out_dims;
  bool have_sizes = false;
};

ResizeGeometry resize_geometry(const KernelContext& ctx, const HostTensor& x) {
  const size_t rank = x.rank();
  // Opset 18: roi, scales and sizes may name a subset of the axes; the others keep their size.
  std::vector<size_t> axes = distinct_axes(
      ctx, ctx.opset() >= 18 ? ctx.attr_ints("axes") : std::vector<int64_t>{}, static_cast<int64_t>(rank));
  if (axes.empty())
    for (size_t d = 0; d < rank; ++d) axes.push_back(d);
  const size_t given = axes.size();

  ResizeGeometry g;
  std::vector<double>& scales = g.scales;
  std::vector<double>& roi = g.roi;
  scales.assign(rank, 1.0);
  roi.assign(2 * rank, 0.0);
  for (size_t d = 0; d < rank; ++d) roi[rank + d] = 1.0;
  std::vector<int64_t>& out_dims = g.out_dims;
  out_dims = x.dims();
  const size_t scales_input = ctx.opset() < 11 ? 1 : 2;
  g.have_sizes = ctx.opset() >= 11 && ctx.has_input(3) && ctx.input(3).size() > 0;
  if (ctx.opset() >= 11 && ctx.has_input(1) && ctx.input(1).size() == static_cast<int64_t>(2 * given))
    for (size_t k = 0; k < given; ++k) {
      roi[axes[k]] = ctx.input(1).real_at(static_cast<int64_t>(k));
      roi[rank + axes[k]] = ctx.input(1).real_at(static_cast<int64_t>(given + k));
    }
  if (g.have_sizes) {
    auto sizes = ctx.input(3).ints();
    if (sizes.size() != given)
      ctx.fail("sizes must have one entry per axis" + std::string(given == rank ? "" : " in axes"));
    for (size_t k = 0; k < given; ++k) {
      const size_t d = axes[k];
      out_dims[d] = sizes[k];
      scales[d] = x.dims()[d] ? static_cast<double>(sizes[k]) / static_cast<double>(x.dims()[d]) : 1.0;
    }
    // keep_aspect_ratio_policy: one scale for every listed axis, the least (not_larger) or
    // the greatest (not_smaller) of sizes / input; each size is then that scale, rounded.
    const std::string policy =
        ctx.opset() >= 18 ? ctx.attr_string("keep_aspect_ratio_policy", "stretch") : "stretch";
    if (policy != "stretch" && policy != "not_larger" && policy != "not_smaller")
      ctx.fail("keep_aspect_ratio_policy must be stretch, not_larger or not_smaller, not '" + policy + "'");
    if (policy != "stretch") {
      double common = scales[axes[0]];
      for (size_t d : axes)
        common = policy == "not_larger" ? std::min(common, scales[d]) : std::max(common, scales[d]);
      for (size_t d : axes) {
        scales[d] = common;
        out_dims[d] = static_cast<int64_t>(std::round(common * static_cast<double>(x.dims()[d])));
      }
    }
  } else {
    // Upsample before opset 9 gives the scales as an attribute.
    const std::vector<float> attr_scales =
        ctx.has_input(scales_input) ? std::vector<float>{} : ctx.attr_floats("scales");
    if (attr_scales.empty() &&
        (!ctx.has_input(scales_input) || ctx.input(scales_input).size() != static_cast<int64_t>(given)))
      ctx.fail("needs scales or sizes with one entry per axis" +
               std::string(given == rank ? "" : " in axes"));
    if (!attr_scales.empty() && attr_scales.size() != rank) ctx.fail("scales must have one entry per axis");
    for (size_t k = 0; k < given; ++k) {
      const size_t d = axes[k];
      scales[d] = attr_scales.empty()
                      ? static_cast<float>(ctx.input(scales_input).real_at(static_cast<int64_t>(k)))
                      : attr_scales[d];
      if (!(scales[d] > 0) || !std::isfinite(scales[d])) ctx.fail("scales must be positive and finite");
      const double size = std::floor(static_cast<double>(x.dims()[d]) * scales[d]);
      if (size > 9.0e18)
        ctx.fail("scale " + std::to_string(scales[d]) + " makes axis " + std::to_string(d) +
                 " larger than a dim can be");
      out_dims[d] = static_cast<int64_t>(size);
    }
  }

  for (size_t d = 0; d < rank; ++d) {
    if (out_dims[d] < 0)
      ctx.fail("sizes gives axis " + std::to_string(d) + " the negative size " + std::to_string(out_dims[d]));
    if (x.dims()[d] == 0 && out_dims[d] > 0)
      ctx.fail("axis " + std::to_string(d) + " is empty: there is nothing to resize to " +
               std::to_string(out_dims[d]));
  }
  return g;
}

// Refuses an output no machine holds, before its taps are computed: a sizes input of 2^40
// would otherwise spend hours on them.
void check_output_fits(const KernelContext& ctx, const HostTensor& x, const std::vector<int64_t>& out_dims) {
  const size_t out_bytes =
      checked_byte_count(checked_element_count(out_dims, ctx.node().describe() + " output"),
                         dtype_size(x.dtype()), ctx.node().describe() + " output");
  if (out_bytes > physical_memory_bytes())
    ctx.fail("its output " + dims_text(out_dims) + " needs " + std::to_string(out_bytes) +
             " bytes, more than this machine's memory");
  ctx.check_planned_dims(0, out_dims);
  // The taps grow with the sum of the output's dims, which an output of few elements
  // (an axis of 2^28 beside an axis of 0 or 1) does not bound.
  size_t tap_count = 0;
  for (int64_t d : out_dims) tap_count += static_cast<size_t>(d);
  if (tap_count > physical_memory_bytes() / sizeof(Taps) / 4)
    ctx.fail("its output " + dims_text(out_dims) + " needs " + std::to_string(tap_count) +
             " sampling positions, more than this machine can hold");
}

// Any real dtype, and extrapolated samples: every output element sums the products of its
// axes' taps.
void resize_general(KernelContext& ctx, const HostTensor& x, const std::vector<std::vector<Taps>>& taps,
                    const ResizeParams& p, const std::vector<int64_t>& out_dims) {
  const size_t rank = x.rank();
  auto xs = strides_of(x.dims());
  dispatch_all(
      x.dtype(),
      [&]<class T>() {
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
            if constexpr (std::is_integral_v<T>)
              py[i] = convert_value<T>(std::nearbyint(acc));
            else
              py[i] = static_cast<T>(acc);
            for (size_t d = rank; d-- > 0;) {
              if (++c[d] < out_dims[d]) break;
              c[d] = 0;
            }
          }
          ctx.outputs[0] = std::move(y);
        }
      },
      "Resize");
}

void resize(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const size_t rank = x.rank();
  const ResizeParams p = resize_params(ctx);
  const ResizeGeometry g = resize_geometry(ctx, x);
  check_output_fits(ctx, x, g.out_dims);
  const std::vector<int64_t>& out_dims = g.out_dims;
  const std::vector<double>& scales = g.scales;
  const std::vector<double>& roi = g.roi;
  const bool have_sizes = g.have_sizes;
  std::vector<std::vector<Taps>> taps(rank);
  for (size_t d = 0; d < rank; ++d)
    for (int64_t i = 0; i < out_dims[d]; ++i)
      taps[d].push_back((p.antialias ? antialias_taps : axis_taps)(
          p, i, scales[d], x.dims()[d],
          have_sizes ? static_cast<double>(out_dims[d]) : static_cast<double>(x.dims()[d]) * scales[d],
          roi[d], roi[rank + d]));

  const bool extrapolated = std::any_of(taps.begin(), taps.end(), [](const std::vector<Taps>& axis) {
    return std::any_of(axis.begin(), axis.end(), [](const Taps& t) { return t.outside; });
  });
  if (x.dtype() == DType::F32 && !extrapolated && rank > 0) {
    HostTensor y = ctx.new_output(0, DType::F32, out_dims);
    if (y.size() > 0) resize_f32(x, taps, p.mode == "nearest", y);
    ctx.outputs[0] = std::move(y);
    return;
  }
  resize_general(ctx, x, taps, p, out_dims);
}

}  // namespace

// Upsample (deprecated since opset 10) is Resize with opset 10's semantics: scales only,
// asymmetric coordinates, nearest rounding down.
void register_resize_kernel(OpRegistry& r) {
  r.add("", "Resize", resize);
  r.add("", "Upsample", resize);
}

}  // namespace geopt
