// Normalizations: BatchNormalization (inference), InstanceNormalization,
// LayerNormalization, and the ai.geopt RMSNorm and AddLayerNorm (a backend's LayerNorm
// calls layer_norm_over_axes and channel_layer_norm, norm.h).
#include <algorithm>
#include <cmath>

#include "kernels/broadcast.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_util.h"
#include "kernels/layout.h"
#include "kernels/norm.h"
#include "kernels/row_math.h"
#include "util/team_region.h"

namespace geopt {
namespace {

// Scale/bias broadcast over the normalized dims, as one value per normalized element.
std::vector<float> expand_param(const KernelContext& ctx, const HostTensor* p,
                                const std::vector<int64_t>& norm_dims, int64_t cols, float fallback) {
  std::vector<float> out(static_cast<size_t>(cols), fallback);
  if (!p) return out;
  std::vector<int64_t> dims;
  if (!broadcast_shape({p->dims(), norm_dims}, dims) || dims != norm_dims)
    ctx.fail("scale/bias " + p->shape_string() + " does not broadcast to the normalized shape");
  std::vector<int64_t> strides[1] = {broadcast_strides(p->dims(), norm_dims)};
  for_each_broadcast(norm_dims, strides, [&](int64_t i, const int64_t* o) {
    out[static_cast<size_t>(i)] = static_cast<float>(p->real_at(o[0]));
  });
  return out;
}

struct RowNorm {
  int64_t rows = 0, cols = 0;
  std::vector<int64_t> stat_dims;  // dims[:axis] + 1s
  std::vector<int64_t> norm_dims;
};

RowNorm split_rows(const KernelContext& ctx, const HostTensor& x, int64_t axis_attr) {
  RowNorm r;
  int64_t axis = normalize_axis(axis_attr, static_cast<int64_t>(x.rank()));
  r.rows = 1;
  r.cols = 1;
  for (size_t d = 0; d < x.rank(); ++d) {
    if (static_cast<int64_t>(d) < axis) {
      r.rows *= x.dims()[d];
      r.stat_dims.push_back(x.dims()[d]);
    } else {
      r.cols *= x.dims()[d];
      r.stat_dims.push_back(1);
      r.norm_dims.push_back(x.dims()[d]);
    }
  }
  (void)ctx;
  return r;
}

// y = (x - mean) * invstd * scale + bias per row; rms: no mean subtraction. x and y may
// be the same rows. Single pass over memory: the statistics (Welford, row_math.h) and
// the normalization read each row while it is in cache.
void normalize_rows(const float* x, float* y, const RowNorm& r, const std::vector<float>& scale,
                    const std::vector<float>& bias, float eps, bool rms, float* mean_out, float* invstd_out) {
  team_region(r.rows * r.cols > (1 << 15), [&] {
#pragma omp for
    for (int64_t row = 0; row < r.rows; ++row) {
      const float* in = x + row * r.cols;
      float mean = 0, variance = 0;
      if (rms)
        variance = row_mean_square(in, r.cols);
      else
        row_moments(in, r.cols, mean, variance);
      const float inv = 1.0f / std::sqrt(variance + eps);
      normalize_row(in, y + row * r.cols, r.cols, mean, inv, scale.data(),
                    bias.empty() ? nullptr : bias.data());
      if (mean_out) mean_out[row] = mean;
      if (invstd_out) invstd_out[row] = inv;
    }
  });
}

void require_f32(const KernelContext& ctx, const HostTensor& x) {
  if (x.dtype() != DType::F32) ctx.fail("runs on f32 (got " + dtype_name(x.dtype()) + ")");
}

void layer_norm(KernelContext& ctx, const HostTensor& x, const HostTensor* scale, const HostTensor* bias,
                bool rms, bool in_place = false) {
  require_f32(ctx, x);
  RowNorm r = split_rows(ctx, x, ctx.attr_int("axis", -1));
  float eps = ctx.attr_float("epsilon", rms ? 1e-6f : 1e-5f);
  auto s = expand_param(ctx, scale, r.norm_dims, r.cols, 1.0f);
  auto b = expand_param(ctx, bias, r.norm_dims, r.cols, 0.0f);
  if (!bias) b.clear();  // normalize_row skips a null bias
  // LayerNormalization's Mean and InvStdDev, when asked for.
  const bool stats = !rms && ctx.node().domain.empty();
  HostTensor mean =
      stats && ctx.wants_output(1) ? HostTensor::uninitialized(DType::F32, r.stat_dims) : HostTensor{};
  HostTensor inv =
      stats && ctx.wants_output(2) ? HostTensor::uninitialized(DType::F32, r.stat_dims) : HostTensor{};
  // x's own storage when the kernel owns it (AddLayerNorm's sum): normalized in place.
  HostTensor y = in_place ? x : ctx.new_output(0, DType::F32, x.dims());
  normalize_rows(x.data<float>(), y.mutable_data<float>(), r, s, b, eps, rms,
                 mean.defined() ? mean.mutable_data<float>() : nullptr,
                 inv.defined() ? inv.mutable_data<float>() : nullptr);
  ctx.outputs[0] = std::move(y);
  if (mean.defined()) ctx.set_output(1, std::move(mean));
  if (inv.defined()) ctx.set_output(2, std::move(inv));
}

void batch_norm(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (ctx.attr_int("training_mode", 0) != 0)
    ctx.fail("training-mode BatchNormalization is not supported (inference only)");
  if (x.rank() < 2) ctx.fail("input needs a channel axis");
  const int64_t n = x.dims()[0], c = x.dims()[1];
  const int64_t inner = c ? x.size() / (n * c) : 0;
  const double eps = ctx.attr_float("epsilon", 1e-5f);
  dispatch_float(
      x.dtype(),
      [&]<class T>() {
        HostTensor y(x.dtype(), x.dims());
        const T* px = x.data<T>();
        T* py = y.mutable_data<T>();
        for (int64_t ch = 0; ch < c; ++ch) {
          double scale = ctx.input(1).real_at(ch) / std::sqrt(ctx.input(4).real_at(ch) + eps);
          double shift = ctx.input(2).real_at(ch) - ctx.input(3).real_at(ch) * scale;
          for (int64_t b = 0; b < n; ++b) {
            const int64_t base = (b * c + ch) * inner;
            for (int64_t i = 0; i < inner; ++i) py[base + i] = static_cast<T>(px[base + i] * scale + shift);
          }
        }
        ctx.outputs[0] = std::move(y);
      },
      "BatchNormalization");
}

void instance_norm(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  require_f32(ctx, x);
  if (x.rank() < 3) ctx.fail("input needs spatial axes");
  const int64_t n = x.dims()[0], c = x.dims()[1];
  RowNorm r;
  r.rows = n * c;
  r.cols = c ? x.size() / (n * c) : 0;
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  HostTensor y(DType::F32, x.dims());
  for (int64_t ch = 0; ch < c; ++ch) {
    std::vector<float> s(static_cast<size_t>(r.cols), static_cast<float>(ctx.input(1).real_at(ch)));
    std::vector<float> b(static_cast<size_t>(r.cols), static_cast<float>(ctx.input(2).real_at(ch)));
    RowNorm one = r;
    one.rows = 1;
    for (int64_t bi = 0; bi < n; ++bi) {
      const int64_t off = (bi * c + ch) * r.cols;
      normalize_rows(x.data<float>() + off, y.mutable_data<float>() + off, one, s, b, eps, false, nullptr,
                     nullptr);
    }
  }
  ctx.outputs[0] = std::move(y);
}

// GroupNormalization: each of num_groups groups of channels normalized over its channels
// and spatial positions; scale and bias are per group at opset 18, per channel since 21.
void group_norm(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  require_f32(ctx, x);
  if (x.rank() < 2) ctx.fail("input needs a channel axis");
  const int64_t n = x.dims()[0], c = x.dims()[1], groups = ctx.attr_int("num_groups", 0);
  if (groups <= 0 || c % groups != 0)
    ctx.fail("num_groups " + std::to_string(groups) + " must be positive and divide the " +
             std::to_string(c) + " channels");
  const bool per_channel = ctx.opset() >= 21;
  const int64_t params = per_channel ? c : groups;
  for (size_t k : {size_t{1}, size_t{2}})
    if (ctx.input(k).size() != params)
      ctx.fail(std::string(k == 1 ? "scale" : "bias") + " must have " + std::to_string(params) +
               (per_channel ? " values (one per channel)" : " values (one per group)"));
  const int64_t per_group = c / groups, spatial = n > 0 && c > 0 ? x.size() / (n * c) : 0;
  RowNorm one;
  one.rows = 1;
  one.cols = per_group * spatial;
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  HostTensor y(DType::F32, x.dims());
  for (int64_t g = 0; g < groups; ++g) {
    std::vector<float> s(static_cast<size_t>(one.cols)), b(static_cast<size_t>(one.cols));
    for (int64_t i = 0; i < one.cols; ++i) {
      const int64_t p = per_channel ? g * per_group + i / spatial : g;
      s[static_cast<size_t>(i)] = static_cast<float>(ctx.input(1).real_at(p));
      b[static_cast<size_t>(i)] = static_cast<float>(ctx.input(2).real_at(p));
    }
    for (int64_t bi = 0; bi < n; ++bi) {
      const int64_t off = (bi * c + g * per_group) * spatial;
      normalize_rows(x.data<float>() + off, y.mutable_data<float>() + off, one, s, b, eps, false, nullptr,
                     nullptr);
    }
  }
  ctx.outputs[0] = std::move(y);
}

void add_layer_norm(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& res = ctx.input(1);
  require_f32(ctx, x);
  // The residual is X's shape, or its trailing dims (a position table added to every batch row).
  const bool trailing =
      res.rank() <= x.rank() && std::equal(res.dims().begin(), res.dims().end(),
                                           x.dims().end() - static_cast<std::ptrdiff_t>(res.rank()));
  if (!trailing || res.dtype() != x.dtype() || (res.size() == 0 && x.size() > 0))
    ctx.fail("Residual " + res.shape_string() + " must match X " + x.shape_string() +
             " or its trailing dims");
  const bool keep_sum = ctx.wants_output(1);
  // Without the sum as an output, it is summed where Y goes and normalized in place.
  HostTensor sum =
      keep_sum ? ctx.new_output(1, DType::F32, x.dims()) : ctx.new_output(0, DType::F32, x.dims());
  const float* a = x.data<float>();
  const float* b = res.data<float>();
  float* s = sum.mutable_data<float>();
  const int64_t period = res.size(), cols = x.rank() ? x.dim(-1) : 1;
  if (cols > 0 && period % cols == 0) {  // whole rows: one vector add per row
    team_region(x.size() > (1 << 15), [&] {
#pragma omp for
      for (int64_t row = 0; row < x.size() / cols; ++row)
        add_rows(a + row * cols, b + (row * cols) % period, s + row * cols, cols);
    });
  } else {
    for (int64_t i = 0; i < x.size(); ++i) s[i] = a[i] + b[i % period];  // period > 0 whenever x has elements
  }
  layer_norm(ctx, sum, &ctx.input(2), ctx.has_input(3) ? &ctx.input(3) : nullptr, false,
             /*in_place=*/!keep_sum);
  if (keep_sum) ctx.set_output(1, std::move(sum));
}

}  // namespace

HostTensor layer_norm_rows(const KernelContext& ctx, const HostTensor& x, int64_t axis, float epsilon,
                           const HostTensor& scale, const HostTensor* bias) {
  require_f32(ctx, x);
  RowNorm r = split_rows(ctx, x, axis);
  auto s = expand_param(ctx, &scale, r.norm_dims, r.cols, 1.0f);
  auto b = expand_param(ctx, bias, r.norm_dims, r.cols, 0.0f);
  if (!bias) b.clear();
  HostTensor y = HostTensor::uninitialized(DType::F32, x.dims());
  normalize_rows(x.data<float>(), y.mutable_data<float>(), r, s, b, epsilon, false, nullptr, nullptr);
  return y;
}

// Statistics cover the real channels only; a blocked tensor's padding channels come out
// 0. Sums run along the positions (contiguous in both layouts) so the inner loops vectorize.
void channel_layer_norm(KernelContext& ctx, bool blocked) {
  const HostTensor& x = ctx.input(0);
  require_f32(ctx, x);
  const HostTensor& scale = ctx.input(1);
  const HostTensor* bias = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (blocked ? x.rank() != 5 : x.rank() < 2)
    ctx.fail("X " + x.shape_string() +
             (blocked ? " is not channel-blocked (rank 5)" : " has no channel axis"));
  const int64_t n = x.dims()[0], blocks = blocked ? x.dims()[1] : 1, c0 = blocked ? x.dims()[4] : 1;
  const int64_t channels = blocked ? ctx.attr_int("channels", -1) : x.dims()[1];
  if (blocked && (channels <= (blocks - 1) * c0 || channels > blocks * c0))
    ctx.fail("channels = " + std::to_string(channels) + " does not fit " + std::to_string(blocks) +
             " blocks of " + std::to_string(c0));
  const int64_t positions =
      blocked ? x.dims()[2] * x.dims()[3] : (channels ? x.size() / std::max<int64_t>(n * channels, 1) : 0);
  for (const HostTensor* p : {&scale, bias})
    if (p && p->size() != channels)
      ctx.fail("scale/bias " + p->shape_string() + " needs one value per channel (" +
               std::to_string(channels) + ")");
  const float eps = ctx.attr_float("epsilon", 1e-5f);
  // Channel c at position s of batch b: blocked [b][c / C0][s][c % C0], else [b][c][s].
  const int64_t block_stride = positions * c0;
  auto at = [&](int64_t b, int64_t c) {
    return blocked ? (b * blocks + c / c0) * block_stride + c % c0 : (b * channels + c) * positions;
  };
  const int64_t step = c0;  // distance between positions
  const float* px = x.data<float>();
  // Parallel over blocks of positions (a batch of one still uses every thread); within
  // a block, each channel's row of positions is read contiguously.
  constexpr int64_t kBlock = kChannelNormPositions;
  const int64_t blocks_per_image = (positions + kBlock - 1) / kBlock;
  if (blocked && c0 == 16) {
    // Blocks of 16 lanes: a position's lanes side by side, the loops over them vectorized
    // (channel_block_norm, which writes every lane); scale and bias padded to whole
    // blocks with 0.
    HostTensor y = HostTensor::uninitialized(DType::F32, x.dims());
    float* py = y.mutable_data<float>();
    std::vector<float> g(static_cast<size_t>(blocks * c0), 0.0f), t(static_cast<size_t>(blocks * c0), 0.0f);
    for (int64_t c = 0; c < channels; ++c) {
      g[static_cast<size_t>(c)] = static_cast<float>(scale.real_at(c));
      if (bias) t[static_cast<size_t>(c)] = static_cast<float>(bias->real_at(c));
    }
    team_region(x.size() > (1 << 15), [&] {
#pragma omp for
      for (int64_t task = 0; task < n * blocks_per_image; ++task) {
        const int64_t b = task / blocks_per_image, first = (task % blocks_per_image) * kBlock;
        const int64_t offset = b * blocks * block_stride + first * c0;
        channel_block_norm(px + offset, py + offset, blocks, block_stride,
                           std::min(kBlock, positions - first), channels, g.data(), t.data(), eps);
      }
    });
    ctx.outputs[0] = std::move(y);
    return;
  }
  HostTensor y(DType::F32, x.dims());  // zero-filled: the padding channels stay 0
  float* py = y.mutable_data<float>();
  team_region(x.size() > (1 << 15), [&] {
#pragma omp for
    for (int64_t task = 0; task < n * blocks_per_image; ++task) {
      const int64_t b = task / blocks_per_image, first = (task % blocks_per_image) * kBlock;
      const int64_t count = std::min(kBlock, positions - first);
      double mean[kBlock] = {}, var[kBlock] = {};
      for (int64_t c = 0; c < channels; ++c) {
        const float* in = px + at(b, c) + first * step;
        for (int64_t s = 0; s < count; ++s) mean[s] += in[s * step];
      }
      for (int64_t s = 0; s < count; ++s) mean[s] /= static_cast<double>(channels);
      for (int64_t c = 0; c < channels; ++c) {
        const float* in = px + at(b, c) + first * step;
        for (int64_t s = 0; s < count; ++s) {
          const double d = in[s * step] - mean[s];
          var[s] += d * d;
        }
      }
      for (int64_t s = 0; s < count; ++s)
        var[s] = 1.0 / std::sqrt(var[s] / static_cast<double>(channels) + eps);
      for (int64_t c = 0; c < channels; ++c) {
        const float* in = px + at(b, c) + first * step;
        float* out = py + at(b, c) + first * step;
        const float g = static_cast<float>(scale.real_at(c)),
                    t = bias ? static_cast<float>(bias->real_at(c)) : 0.0f;
        for (int64_t s = 0; s < count; ++s)
          out[s * step] = static_cast<float>((in[s * step] - mean[s]) * var[s]) * g + t;
      }
    }
  });
  ctx.outputs[0] = std::move(y);
}

void layer_norm_over_axes(KernelContext& ctx) {
  layer_norm(ctx, ctx.input(0), &ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr, false);
}

void register_norm_kernels(OpRegistry& r) {
  r.add("", "BatchNormalization", batch_norm);
  r.add("", "InstanceNormalization", instance_norm);
  r.add("", "GroupNormalization", group_norm);
  r.add("", "LayerNormalization", layer_norm_over_axes);
  r.add(kGeoptDomain, "RMSNorm",
        [](KernelContext& ctx) { layer_norm(ctx, ctx.input(0), &ctx.input(1), nullptr, true); });
  r.add(kGeoptDomain, "AddLayerNorm", add_layer_norm);
}

}  // namespace geopt
