// geopt's int8 Cube kernels, what the QDQ fusion rules make of a quantized layer:
// QuantMatMul and QuantConv sum the products of their centred 8-bit operands exactly in
// int32 (as the Cube does), then dequantize with the activation's scale times the
// weight's per-channel scale, add the float bias and apply the activation.
//
// The products are summed by oneDNN's int8 primitives where they are exact (VNNI, AMX:
// kernels/int8_products.h), else by plain int32 loops that the compiler vectorizes:
// without VNNI oneDNN adds pairs of products in int16 and may saturate.
#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>

#include <omp.h>

#include "eval/derived_constant.h"
#include "eval/kernel.h"
#include "eval/kernel_implementation.h"
#include "kernels/activation.h"
#include "kernels/conv.h"
#include "kernels/int8_output_stage.h"
#include "kernels/int8_products.h"
#include "kernels/quantize.h"
#include "kernels/quantized_conv.h"
#include "util/team_region.h"

namespace geopt {
namespace {

// What `geopt run --profile` names where no exact oneDNN int8 primitive summed the products.
constexpr const char* kInt32Loops = "exact int32 loops";
constexpr const char* kInt64Loops = "exact int64 loops";

void require_8bit(const KernelContext& ctx, const HostTensor& t, const char* what) {
  if (t.dtype() != DType::U8 && t.dtype() != DType::I8)
    ctx.fail(std::string(what) + " must be uint8 or int8, not " + dtype_name(t.dtype()));
}

// One value per channel from a per-tensor (one element) or per-channel (`channels`) parameter.
std::vector<double> per_channel_reals(const KernelContext& ctx, const HostTensor& p, int64_t channels,
                                      const char* what) {
  if (p.size() != 1 && p.size() != channels)
    ctx.fail(std::string(what) + " holds " + std::to_string(p.size()) +
             " values: 1 or one per output channel (" + std::to_string(channels) + ")");
  std::vector<double> v(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c) v[static_cast<size_t>(c)] = p.real_at(p.size() == 1 ? 0 : c);
  return v;
}

std::vector<int32_t> per_channel_ints(const KernelContext& ctx, const HostTensor& p, int64_t channels,
                                      const char* what) {
  if (p.size() != 1 && p.size() != channels)
    ctx.fail(std::string(what) + " holds " + std::to_string(p.size()) +
             " values: 1 or one per output channel (" + std::to_string(channels) + ")");
  std::vector<int32_t> v(static_cast<size_t>(channels));
  for (int64_t c = 0; c < channels; ++c)
    v[static_cast<size_t>(c)] = static_cast<int32_t>(p.int_at(p.size() == 1 ? 0 : c));
  return v;
}

// The activation's single scale and zero point.
std::pair<double, int32_t> activation_params(const KernelContext& ctx, const HostTensor& scale,
                                             const HostTensor& zero, const HostTensor& x) {
  if (scale.size() != 1 || zero.size() != 1)
    ctx.fail("the activation's scale and zero point must hold one value each");
  if (zero.dtype() != x.dtype())
    ctx.fail("the activation's zero point is " + dtype_name(zero.dtype()) + ", the activation " +
             dtype_name(x.dtype()));
  return {scale.real_at(0), static_cast<int32_t>(zero.int_at(0))};
}

// x - zero point, widened to int16.
std::vector<int16_t> centred(const HostTensor& x, int32_t zero) {
  std::vector<int16_t> c(static_cast<size_t>(x.size()));
  if (x.dtype() == DType::U8) {
    const uint8_t* p = x.data<uint8_t>();
    for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<int16_t>(p[i] - zero);
  } else {
    const int8_t* p = x.data<int8_t>();
    for (size_t i = 0; i < c.size(); ++i) c[i] = static_cast<int16_t>(p[i] - zero);
  }
  return c;
}

// Weight element i as an integer.
int32_t weight_at(const HostTensor& w, int64_t i) {
  return w.dtype() == DType::U8 ? static_cast<int32_t>(w.data<uint8_t>()[i])
                                : static_cast<int32_t>(w.data<int8_t>()[i]);
}

// y[i, c] = float(acc[i, c] * scale[c]) + bias[c], over rows of `channels`.
template <class Acc>
void dequantize_rows(float* y, const Acc* acc, int64_t rows, int64_t channels,
                     const std::vector<double>& scale, const std::vector<float>& bias) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < channels; ++c) {
      const int64_t i = r * channels + c;
      y[i] = static_cast<float>(static_cast<double>(acc[i]) * scale[static_cast<size_t>(c)]) +
             bias[static_cast<size_t>(c)];
    }
}

// The float bias, one per output channel (zeros without one).
std::vector<float> float_bias(const KernelContext& ctx, size_t index, int64_t channels) {
  std::vector<float> v(static_cast<size_t>(channels), 0.0f);
  if (!ctx.has_input(index)) return v;
  const HostTensor& b = ctx.input(index);
  if (b.size() != channels)
    ctx.fail("the bias holds " + std::to_string(b.size()) + " values, one per output channel (" +
             std::to_string(channels) + ")");
  for (int64_t c = 0; c < channels; ++c) v[static_cast<size_t>(c)] = static_cast<float>(b.real_at(c));
  return v;
}

// acc [m, n] = (a - a_zero) [m, k] x (b - b_zero) [k, n], in loops (Acc int32, or int64
// past kMaxInt8Depth), acc zeroed by the caller.
template <class Acc>
void sum_products(const HostTensor& a, int32_t a_zero, const HostTensor& b,
                  const std::vector<int32_t>& b_zero, int64_t m, int64_t k, int64_t n, Acc* acc_data) {
  const std::vector<int16_t> ac = centred(a, a_zero);
  // B - zb as int16 rows the inner loop reads contiguously: once per weight while it
  // lives (keyed by the zero points too), once per call for a B computed at run time.
  auto centre_b = [&] {
    auto c = std::make_shared<std::vector<int16_t>>(static_cast<size_t>(k * n));
    for (int64_t i = 0; i < k * n; ++i)
      (*c)[static_cast<size_t>(i)] =
          static_cast<int16_t>(weight_at(b, i) - b_zero[static_cast<size_t>(i % n)]);
    return std::shared_ptr<const std::vector<int16_t>>(std::move(c));
  };
  std::shared_ptr<const std::vector<int16_t>> centred_b;
  if (cacheable_constant(b)) {
    std::string key = "int16 centred " + std::to_string(k) + 'x' + std::to_string(n) + " by";
    for (int32_t z : b_zero) key += ' ' + std::to_string(z);
    centred_b = derived_constant<std::vector<int16_t>>(b, key, centre_b);
  } else {
    centred_b = centre_b();
  }
  const std::vector<int16_t>& bc = *centred_b;
  team_region(m * n * k > (1 << 16), [&] {
#pragma omp for
    for (int64_t r = 0; r < m; ++r) {
      Acc* row = acc_data + r * n;
      for (int64_t kk = 0; kk < k; ++kk) {
        const int32_t av = ac[static_cast<size_t>(r * k + kk)];
        if (av == 0) continue;
        const int16_t* brow = bc.data() + kk * n;
        for (int64_t c = 0; c < n; ++c) row[c] += av * brow[c];
      }
    }
  });
}

// The output an int8 kernel requantizes to (output_dtype 2 or 3: the next layer's
// QuantizeLinear taken in), or none (float).
struct Requantization {
  DType dtype = DType::F32;
  float scale = 1.0f, zero = 0.0f;
  bool on() const { return dtype != DType::F32; }
};

Requantization requantization(const KernelContext& ctx) {
  Requantization r;
  const int64_t out = ctx.attr_int("output_dtype", 1);
  if (out == 1) return r;
  if (out != static_cast<int64_t>(DType::U8) && out != static_cast<int64_t>(DType::I8))
    ctx.fail("output_dtype must be 1 (float), 2 (uint8) or 3 (int8), not " + std::to_string(out));
  r.dtype = static_cast<DType>(out);
  r.scale = ctx.attr_float("output_scale", 1.0f);
  const int64_t zero = ctx.attr_int("output_zero_point", 0);
  if (zero < (r.dtype == DType::U8 ? 0 : -128) || zero > (r.dtype == DType::U8 ? 255 : 127))
    ctx.fail("output_zero_point " + std::to_string(zero) + " is outside " + dtype_name(r.dtype));
  r.zero = static_cast<float>(zero);
  return r;
}

// Float storage for a kernel's output: its planned output, or a scratch tensor where the
// kernel requantizes it (then requantized into the planned 8-bit output by `finish`).
HostTensor float_result(const KernelContext& ctx, const Requantization& r, const std::vector<int64_t>& dims) {
  return r.on() ? HostTensor::uninitialized(DType::F32, dims) : ctx.new_output(0, DType::F32, dims);
}

// Sets output 0: y, or y requantized.
void finish(KernelContext& ctx, const Requantization& r, HostTensor y) {
  if (!r.on()) {
    ctx.outputs[0] = std::move(y);
    return;
  }
  HostTensor q = ctx.new_output(0, r.dtype, y.dims());
  quantize_floats(y.data<float>(), y.size(), r.scale, r.zero, r.dtype, q.mutable_raw());
  ctx.outputs[0] = std::move(q);
}

// Y = activation((A - za) sa x (B - zb) sb + Bias): A [..., K] 8-bit, B [K, N] 8-bit.
void quant_matmul(KernelContext& ctx) {
  const HostTensor& a = ctx.input(0);
  const HostTensor& b = ctx.input(1);
  require_8bit(ctx, a, "A");
  require_8bit(ctx, b, "B");
  if (a.rank() < 1 || b.rank() != 2)
    ctx.fail("needs A of rank >= 1 and a 2-D B, not " + a.shape_string() + " and " + b.shape_string());
  const int64_t k = a.dims().back(), n = b.dim(1);
  if (b.dim(0) != k) ctx.fail("A " + a.shape_string() + " and B " + b.shape_string() + " differ in K");
  const int64_t m = k == 0 ? 0 : a.size() / k;
  const auto [a_scale, a_zero] = activation_params(ctx, ctx.input(2), ctx.input(3), a);
  std::vector<double> scale = per_channel_reals(ctx, ctx.input(4), n, "B's scale");
  for (double& s : scale) s *= a_scale;
  const std::vector<int32_t> b_zero = per_channel_ints(ctx, ctx.input(5), n, "B's zero point");
  const std::vector<float> bias = float_bias(ctx, 6, n);
  std::vector<int64_t> dims = a.dims();
  dims.back() = n;
  const Requantization requant = requantization(ctx);
  HostTensor y = float_result(ctx, requant, dims);
  if (k <= kMaxInt8Depth) {
    std::vector<int32_t> acc(static_cast<size_t>(m * n), 0);
    if (!int8_matmul(a.raw(), a.dtype(), m, k, a_zero, b, b_zero, acc.data())) {
      sum_products(a, a_zero, b, b_zero, m, k, n, acc.data());
      note_implementation(kInt32Loops);
    }
    dequantize_rows(y.mutable_data<float>(), acc.data(), m, n, scale, bias);
  } else {  // sums int32 may not hold (a depth no model seen has)
    std::vector<int64_t> acc(static_cast<size_t>(m * n), 0);
    sum_products(a, a_zero, b, b_zero, m, k, n, acc.data());
    note_implementation(kInt64Loops);
    dequantize_rows(y.mutable_data<float>(), acc.data(), m, n, scale, bias);
  }
  apply_activation(ctx, y, ctx.attr_string("activation", "none"), ctx.attr_floats("activation_params"));
  finish(ctx, requant, std::move(y));
}

// acc [N, M, OH, OW] = Conv(x - x_zero, w - w_zero), in loops over the columns of each
// group's input (Acc int32, or int64 past kMaxInt8Depth).
template <class Acc>
void sum_conv_products(const HostTensor& x, int32_t x_zero, const HostTensor& w,
                       const std::vector<int32_t>& w_zero, const WindowGeometry& g, int64_t group, Acc* acc) {
  const int64_t batch = x.dim(0), c = x.dim(1), m = w.dim(0), cg = c / group, mg = m / group;
  const std::vector<int64_t> kernel = {w.dim(2), w.dim(3)};
  const int64_t depth = cg * kernel[0] * kernel[1];
  const int64_t oh = g.out[0], ow = g.out[1], spatial = oh * ow, ih = g.in[0], iw = g.in[1];
  const std::vector<int16_t> xc = centred(x, x_zero);
  std::vector<int16_t> cols(static_cast<size_t>(depth * spatial));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t gi = 0; gi < group; ++gi) {
      // The group's input as columns [C/group x kH x kW, OH x OW]; padding reads the
      // zero point, 0 once centred.
      team_region(depth * spatial > (1 << 16), [&] {
#pragma omp for
        for (int64_t row = 0; row < depth; ++row) {
          const int64_t ic = row / (kernel[0] * kernel[1]), ky = row / kernel[1] % kernel[0],
                        kx = row % kernel[1];
          const int16_t* plane = xc.data() + (b * c + gi * cg + ic) * ih * iw;
          int16_t* out = cols.data() + row * spatial;
          for (int64_t oy = 0; oy < oh; ++oy) {
            const int64_t iy = oy * g.strides[0] - g.pad_begin[0] + ky * g.dilations[0];
            for (int64_t ox = 0; ox < ow; ++ox) {
              const int64_t ix = ox * g.strides[1] - g.pad_begin[1] + kx * g.dilations[1];
              out[oy * ow + ox] = iy >= 0 && iy < ih && ix >= 0 && ix < iw ? plane[iy * iw + ix] : int16_t{0};
            }
          }
        }
      });
      team_region(mg * depth * spatial > (1 << 16), [&] {
#pragma omp for
        for (int64_t oc = 0; oc < mg; ++oc) {
          const int64_t channel = gi * mg + oc;
          Acc* a = acc + (b * m + channel) * spatial;
          std::fill(a, a + spatial, Acc{0});
          for (int64_t row = 0; row < depth; ++row) {
            const int32_t wv = weight_at(w, channel * depth + row) - w_zero[static_cast<size_t>(channel)];
            if (wv == 0) continue;
            const int16_t* col = cols.data() + row * spatial;
            for (int64_t s = 0; s < spatial; ++s) a[s] += wv * col[s];
          }
        }
      });
    }
}

// A tensor of `channels` channels [N, C, spatial] (block 0) or channel-blocked [N,
// ceil(C/block), spatial, block] (padding channels past C): where channel c of image b
// lies at position p.
struct ChannelLayout {
  int64_t channels = 0, block = 0, spatial = 0;
  int64_t blocks() const { return block ? (channels + block - 1) / block : channels; }
  int64_t at(int64_t b, int64_t c, int64_t p) const {
    return block ? ((b * blocks() + c / block) * spatial + p) * block + c % block
                 : (b * channels + c) * spatial + p;
  }
  std::vector<int64_t> dims(int64_t batch, int64_t h, int64_t w) const {
    return block ? std::vector<int64_t>{batch, blocks(), h, w, block}
                 : std::vector<int64_t>{batch, channels, h, w};
  }
};

// x [N, C, H, W] from a channel-blocked x (any element type): the exact fallback's input.
HostTensor unblocked(const HostTensor& x, int64_t channels) {
  const ChannelLayout from{channels, x.dim(4), x.dim(2) * x.dim(3)};
  HostTensor y = HostTensor::uninitialized(x.dtype(), {x.dim(0), channels, x.dim(2), x.dim(3)});
  const size_t size = dtype_size(x.dtype());
  for (int64_t b = 0; b < x.dim(0); ++b)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t p = 0; p < from.spatial; ++p)
        std::memcpy(y.mutable_raw() + static_cast<size_t>((b * channels + c) * from.spatial + p) * size,
                    x.raw() + static_cast<size_t>(from.at(b, c, p)) * size, size);
  return y;
}

}  // namespace

// Y = activation(Conv((X - zx) sx, (W - zw) sw) + B [+ Z]): X 8-bit, W [M, C/group, kH, kW]
// 8-bit; X, Y and Z in NCHW or channel-blocked as `blocks` says.
void quantized_convolution(KernelContext& ctx, const QuantConvBlocks& blocks, const HostTensor* quantized_x) {
  const HostTensor& x = quantized_x ? *quantized_x : ctx.input(0);
  const HostTensor& w = ctx.input(1);
  require_8bit(ctx, x, "X");
  require_8bit(ctx, w, "W");
  if (x.rank() != (blocks.x ? 5 : 4) || w.rank() != 4)
    ctx.fail("needs a " + std::string(blocks.x ? "channel-blocked 5-D" : "4-D") + " X and 4-D W, not " +
             x.shape_string() + " and " + w.shape_string());
  const int64_t group = ctx.attr_int("group", 1);
  if (group <= 0) ctx.fail("group must be positive");
  const int64_t batch = x.dim(0), c = blocks.x ? w.dim(1) * group : x.dim(1), m = w.dim(0);
  if (c % group != 0 || m % group != 0 || w.dim(1) * group != c)
    ctx.fail("channels do not match the weights and group");
  if (blocks.x && (x.dim(4) != blocks.x || x.dim(1) != (c + blocks.x - 1) / blocks.x))
    ctx.fail("X " + x.shape_string() + " is not " + std::to_string(c) + " channels in blocks of " +
             std::to_string(blocks.x));
  const std::vector<int64_t> kernel = {w.dim(2), w.dim(3)};
  if (ctx.attr_ints("kernel_shape", kernel) != kernel)
    ctx.fail("kernel_shape does not match the weights " + w.shape_string());
  const WindowGeometry g = window_geometry(ctx, {batch, c, x.dim(2), x.dim(3)}, kernel, false);
  const int64_t depth = c / group * kernel[0] * kernel[1];
  const int64_t oh = g.out[0], ow = g.out[1], spatial = oh * ow;
  const auto [x_scale, x_zero] = activation_params(ctx, ctx.input(2), ctx.input(3), x);
  std::vector<double> scale = per_channel_reals(ctx, ctx.input(4), m, "W's scale");
  for (double& s : scale) s *= x_scale;
  const std::vector<int32_t> w_zero = per_channel_ints(ctx, ctx.input(5), m, "W's zero point");
  const std::vector<float> bias = float_bias(ctx, 6, m);
  const Requantization requant = requantization(ctx);
  const ChannelLayout out{m, blocks.y, spatial}, res{m, blocks.z, spatial};
  const HostTensor* residual = ctx.has_input(7) ? &ctx.input(7) : nullptr;
  if (residual && (residual->dtype() != DType::F32 || residual->dims() != res.dims(batch, oh, ow)))
    ctx.fail("the residual Z is " + residual->shape_string() + ", not f32" +
             HostTensor(DType::F32, res.dims(batch, oh, ow)).shape_string());
  // Blocked: the padding channels come out 0 (float) or the zero point (8-bit), as
  // converting a zero-padded float tensor would give.
  ChannelsLastSums channels_last;
  const bool fast = depth <= kMaxInt8Depth && x.size() > 0;
  // The sums in NCHW where no oneDNN primitive left them channels last.
  // (Kept per thread and grown as needed: every element is written before it is read.)
  // (The loops below run on other threads too: they read it through `acc`, this thread's.)
  thread_local std::vector<int32_t> this_thread_sums;
  if (fast && this_thread_sums.size() < static_cast<size_t>(batch * m * spatial))
    this_thread_sums.resize(static_cast<size_t>(batch * m * spatial));
  int32_t* const acc = this_thread_sums.data();
  std::vector<int64_t> wide;
  if (fast) {
    if (!int8_convolution(x, x_zero, w, w_zero, g, group, acc, &channels_last, blocks.x)) {
      const HostTensor plain = blocks.x ? unblocked(x, c) : HostTensor();
      sum_conv_products(blocks.x ? plain : x, x_zero, w, w_zero, g, group, acc);
      note_implementation(kInt32Loops);
    }
  } else {  // sums int32 may not hold (a depth no model seen has)
    wide.resize(static_cast<size_t>(batch * m * spatial));
    const HostTensor plain = blocks.x ? unblocked(x, c) : HostTensor();
    sum_conv_products(blocks.x ? plain : x, x_zero, w, w_zero, g, group, wide.data());
    note_implementation(kInt64Loops);
  }
  const float* z = residual ? residual->data<float>() : nullptr;
  const std::string activation = ctx.attr_string("activation", "none");
  const Activation act = parse_activation(ctx, activation);
  const PostAffine affine{ctx.attr_float("post_scale", 1.0f), ctx.attr_float("post_shift", 0.0f)};
  if (channels_last.sums && blocks.y) {
    const bool clamps = act == Activation::Relu || act == Activation::Clip;
    const std::vector<float> activation_params = ctx.attr_floats("activation_params");
    BlockedStage stage;
    stage.lo = -std::numeric_limits<float>::infinity(), stage.hi = std::numeric_limits<float>::infinity();
    if (act == Activation::Relu) stage.lo = 0.0f;
    if (act == Activation::Clip) {
      if (activation_params.size() != 2) ctx.fail("Clip activation needs 2 params (min, max)");
      stage.lo = activation_params[0], stage.hi = activation_params[1];
    }
    const std::function<void(float*, int64_t)> activate = [&](float* v, int64_t n) {
      apply_activation(ctx, v, n, act, activation_params);
    };
    if (!clamps && act != Activation::None) stage.activate = &activate;
    stage.sums = channels_last.sums;
    stage.offsets = channels_last.offsets.empty() ? nullptr : channels_last.offsets.data();
    stage.m = m, stage.spatial = spatial, stage.block = blocks.y, stage.blocks = out.blocks();
    stage.scale = scale.data(), stage.bias = bias.data();
    stage.z = z, stage.z_block = res.block, stage.z_blocks = res.block ? res.blocks() : 0;
    stage.affine = affine;
    stage.q_scale = requant.scale, stage.q_zero = requant.zero;
    HostTensor y = ctx.new_output(0, requant.dtype, out.dims(batch, oh, ow));
    stage.y = y.mutable_raw();
    // What a padding lane holds: 0, or 0 quantized (the zero point).
    const size_t element = dtype_size(requant.dtype);
    std::vector<std::byte> padding(static_cast<size_t>(blocks.y) * element, std::byte{0});
    if (requant.on()) {
      const std::vector<float> zeros(static_cast<size_t>(blocks.y), 0.0f);
      quantize_floats_serial(zeros.data(), blocks.y, requant.scale, requant.zero, requant.dtype,
                             padding.data());
    }
    stage.padding = padding.data();
    // Positions shared among the threads in equal runs.
    const int64_t positions = batch * spatial;
    team_region(batch * m * spatial > (1 << 16), [&] {
      const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
      write_blocked_positions(stage, requant.dtype, positions * t / threads, positions * (t + 1) / threads);
    });
    ctx.outputs[0] = std::move(y);
    return;
  }
  HostTensor y = float_result(ctx, requant, out.dims(batch, oh, ow));
  float* py = y.mutable_data<float>();
  if (blocks.y && m % blocks.y) std::fill(py, py + y.size(), 0.0f);
  // ReLU (what most int8 convs carry) is applied as each value is written, not in a pass
  // of its own over the output; other activations after.
  const bool relu = act == Activation::Relu;
  auto value = [&](double sum, int64_t b, int64_t channel, int64_t p) {
    const size_t ch = static_cast<size_t>(channel);
    float v = static_cast<float>(sum * scale[ch]) + bias[ch];
    if (z) v += z[res.at(b, channel, p)];
    return relu && v < 0 ? 0.0f : v;  // NaN stays NaN, as apply_activation's
  };
  auto done = [&] {
    if (!relu && act != Activation::None)
      apply_activation(ctx, y, activation, ctx.attr_floats("activation_params"));
    if (affine.on()) {
      const int64_t n = y.size();
      team_region(n > (1 << 16), [&] {
#pragma omp for
        for (int64_t i = 0; i < n; ++i) py[i] = std::fma(py[i], affine.scale, affine.shift);
      });  // as the blocked stage
    }
    // The activation or the shift of 0 need not be 0: the padding stays 0.
    if (blocks.y && m % blocks.y && ((!relu && act != Activation::None) || affine.on()))
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t channel = m; channel < out.blocks() * out.block; ++channel)
          for (int64_t p = 0; p < spatial; ++p) py[out.at(b, channel, p)] = 0.0f;
    finish(ctx, requant, std::move(y));
  };
  if (channels_last.sums) {
    // The sums as oneDNN leaves them, [N, OH, OW, M]: dequantized as they are read into
    // the output's layout, a run of channels at a time (in NCHW, 16 channels are a cache
    // line of sums).
    const int32_t* sums = channels_last.sums;
    const std::vector<int32_t>& offsets = channels_last.offsets;
    const int64_t run = blocks.y ? blocks.y : 16, runs = (m + run - 1) / run;
    team_region(batch * m * spatial > (1 << 16), [&] {
#pragma omp for collapse(2)
      for (int64_t b = 0; b < batch; ++b)
        for (int64_t r = 0; r < runs; ++r) {
          const int64_t first = r * run, last = std::min(m, first + run);
          for (int64_t p = 0; p < spatial; ++p) {
            const int32_t* row = sums + (b * spatial + p) * m;
            for (int64_t channel = first; channel < last; ++channel)
              py[out.at(b, channel, p)] =
                  value(row[channel] - (offsets.empty() ? 0 : offsets[static_cast<size_t>(channel)]), b,
                        channel, p);
          }
        }
    });
    done();
    return;
  }
  team_region(batch * m * spatial > (1 << 16), [&] {
#pragma omp for collapse(2)
    for (int64_t b = 0; b < batch; ++b)
      for (int64_t channel = 0; channel < m; ++channel) {
        const int64_t at = (b * m + channel) * spatial;
        for (int64_t p = 0; p < spatial; ++p)
          py[out.at(b, channel, p)] = value(fast ? static_cast<double>(acc[at + p])
                                                 : static_cast<double>(wide[static_cast<size_t>(at + p)]),
                                            b, channel, p);
      }
  });
  done();
}

namespace {

void quant_conv(KernelContext& ctx) { quantized_convolution(ctx, {}); }

}  // namespace

void register_quantized_cube_kernels(OpRegistry& r) {
  r.add(kGeoptDomain, "QuantMatMul", quant_matmul);
  r.add(kGeoptDomain, "QuantConv", quant_conv);
}

}  // namespace geopt
