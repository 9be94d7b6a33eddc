// Conv and the fused convolutions on one oneDNN convolution (the layout oneDNN picks, converted to
// and from the caller's NCHW or channel-blocked layout around it; bias, residual and activation as
// post-ops). ConvTranspose is in conv_transpose.cpp.
#include "kernels/conv.h"
#include "ir/auto_pad.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>
#include <optional>
#include <string_view>

#include <omp.h>

#include "eval/derived_constant.h"
#include "eval/kernel_implementation.h"
#include "kernels/depthwise_conv.h"
#include "kernels/dispatch.h"
#include "kernels/onednn.h"
#include "kernels/pixel_conv.h"
#include "kernels/row_math.h"
#include "util/checked_size.h"
#include "util/team_region.h"

namespace geopt {

WindowGeometry window_geometry(const KernelContext& ctx, const std::vector<int64_t>& x_dims,
                               const std::vector<int64_t>& kernel, bool ceil_mode) {
  const size_t sp = x_dims.size() - 2;
  WindowGeometry g;
  g.in.assign(x_dims.begin() + 2, x_dims.end());
  g.kernel = kernel;
  if (g.kernel.size() != sp)
    ctx.fail("kernel has " + std::to_string(g.kernel.size()) + " spatial dims, input has " +
             std::to_string(sp));
  g.strides = ctx.attr_ints("strides", std::vector<int64_t>(sp, 1));
  g.dilations = ctx.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  if (g.strides.size() != sp || g.dilations.size() != sp || pads.size() != 2 * sp)
    ctx.fail("strides, dilations or pads have the wrong length");
  g.pad_begin.assign(pads.begin(), pads.begin() + static_cast<int64_t>(sp));
  g.pad_end.assign(pads.begin() + static_cast<int64_t>(sp), pads.end());
  const std::string auto_pad_text = ctx.attr_string("auto_pad", "NOTSET");
  const std::optional<AutoPad> auto_pad = parse_auto_pad(auto_pad_text);
  if (!auto_pad) ctx.fail("unknown auto_pad '" + auto_pad_text + "'");
  g.out.resize(sp);
  for (size_t i = 0; i < sp; ++i) {
    if (g.strides[i] <= 0 || g.dilations[i] <= 0) ctx.fail("strides and dilations must be positive");
    const int64_t span = (g.kernel[i] - 1) * g.dilations[i] + 1;
    if (is_same(*auto_pad)) {
      int64_t out = (g.in[i] + g.strides[i] - 1) / g.strides[i];
      int64_t total = std::max<int64_t>(0, (out - 1) * g.strides[i] + span - g.in[i]);
      g.pad_begin[i] = *auto_pad == AutoPad::SameUpper ? total / 2 : total - total / 2;
      g.pad_end[i] = total - g.pad_begin[i];
    } else if (*auto_pad == AutoPad::Valid) {
      g.pad_begin[i] = g.pad_end[i] = 0;
    }
    const int64_t padded = g.in[i] + g.pad_begin[i] + g.pad_end[i] - span;
    if (padded < 0) ctx.fail("the window is larger than the padded input");
    int64_t out = (ceil_mode ? (padded + g.strides[i] - 1) / g.strides[i] : padded / g.strides[i]) + 1;
    // With ceil_mode, a last window that starts in the end padding is dropped.
    if (ceil_mode && (out - 1) * g.strides[i] >= g.in[i] + g.pad_begin[i]) --out;
    g.out[i] = out;
  }
  return g;
}

namespace {

// Each call passes its thread's scratchpad (scratchpad_mode::user, thread_scratchpad): in library mode
// oneDNN shares one scratchpad between primitives, so two convs running at once on two
// streams (or in two bodies) would write over each other's.
struct ConvPlan {
  dnnl::convolution_forward::primitive_desc pd;
  dnnl::convolution_forward primitive;
  // Queried once: each query copies a descriptor of a kilobyte.
  dnnl::memory::desc src, weights, dst, scratchpad;
  std::string weights_key;     // derived_constant's key for the weights in `weights`' layout
  std::string implementation;  // "oneDNN " and the primitive's name, for the profile
};

// Blocks of 16 channels to or from the 8-channel blocks oneDNN's AVX2 kernels use: plain
// runs of 8 floats, so a loop of copies beats the generic reorder. Returns false for
// any other pair of layouts (the caller reorders with oneDNN). Padding lanes and a
// missing half block come out zero.
bool copy_channel_blocks(const dnnl::memory::desc& from, const void* src, const dnnl::memory::desc& to,
                         void* dst) {
  using dnnl::memory;
  const memory::dims dims = from.dims();
  if (dims.size() != 4 || to.dims() != dims) return false;
  auto block_of = [&](const memory::desc& d) -> int64_t {
    if (d == memory::desc(dims, memory::data_type::f32, memory::format_tag::nChw16c)) return 16;
    if (d == memory::desc(dims, memory::data_type::f32, memory::format_tag::nChw8c)) return 8;
    return 0;
  };
  const int64_t fb = block_of(from), tb = block_of(to);
  if (!fb || !tb || fb == tb) return false;
  const int64_t n = dims[0], c = dims[1], hw = dims[2] * dims[3];
  const int64_t from_blocks = (c + fb - 1) / fb, to_blocks = (c + tb - 1) / tb;
  const float* in = static_cast<const float*>(src);
  float* out = static_cast<float*>(dst);
  team_region(n * to_blocks * hw * tb > (1 << 15), [&] {
#pragma omp for collapse(2)
    for (int64_t b = 0; b < n; ++b)
      for (int64_t blk = 0; blk < to_blocks; ++blk)
        for (int64_t lane = 0; lane < tb; lane += 8) {  // runs of 8 = the smaller block
          const int64_t channel = blk * tb + lane, real = std::clamp<int64_t>(c - channel, 0, 8);
          float* o = out + (b * to_blocks + blk) * hw * tb + lane;
          const float* i = in + (b * from_blocks + channel / fb) * hw * fb + channel % fb;
          // Only real channels are copied: padding comes out 0, whatever the primitive
          // left there (an activation with f(0) != 0 computes on padding too).
          for (int64_t p = 0; p < hw; ++p) {
            if (real) std::memcpy(o + p * tb, i + p * fb, static_cast<size_t>(real) * sizeof(float));
            if (real < 8) std::memset(o + p * tb + real, 0, static_cast<size_t>(8 - real) * sizeof(float));
          }
        }
  });
  return true;
}

// Whether a tactic lets geopt's own loops run a conv they cover (a depthwise conv between
// channel-blocked tensors, a 1x1 conv over a 1x1 image) rather than oneDNN: unless it
// names oneDNN's algorithm or another layout.
bool own_loops_allowed(const HostTactic& tactic) {
  const bool algorithm =
      tactic.conv_algorithm == ConvAlgorithm::automatic || tactic.conv_algorithm == ConvAlgorithm::geopt;
  return algorithm &&
         (tactic.conv_layout == ConvLayout::automatic || tactic.conv_layout == ConvLayout::caller);
}

// The input channel that weight w[o, i] (of [M, C/group, ...]) reads: its group's first
// channel plus i.
int64_t input_channel_of(int64_t o, int64_t i, int64_t m, int64_t group, int64_t per_group) {
  return o / (m / group) * per_group + i;
}

// Conv(x * s, w) for s one scale per input channel (a squeeze-and-excitation gate): the
// same products whether the scale goes into the weights (w[o, i] * s[channel of (o, i)])
// or into a copy of x, so it goes into the smaller of the two where one scale serves
// every sample (s's dim 0 is 1), else into x. Returns nothing where constant weights take
// it (fused_convolution scales oneDNN's cached copy of them in the primitive's layout).
std::optional<HostTensor> scaled_input_convolution(const KernelContext& ctx, const HostTensor& x,
                                                   const HostTensor& w, const HostTensor* b,
                                                   const ConvFusion& fusion) {
  const HostTensor& s = *fusion.input_scale;
  ConvFusion rest = fusion;
  rest.input_scale = nullptr;
  const int64_t group = ctx.attr_int("group", 1);
  if (w.rank() < 3 || x.rank() < 3 || group <= 0 || w.dims()[0] % group != 0)
    ctx.fail("weights " + w.shape_string() + " do not match group " + std::to_string(group));
  const int64_t channels = w.dims()[1] * group, m = w.dims()[0], n = x.dims()[0];
  const int64_t lanes = fusion.x_blocked ? 16 : 1, blocks = fusion.x_blocked ? x.dims()[1] : channels;
  // s: [1 or N, C (blocks), 1...] (+ [16] blocked), f32.
  bool per_channel = s.dtype() == DType::F32 && s.rank() == x.rank() &&
                     (s.dims()[0] == 1 || s.dims()[0] == n) && s.dims()[1] == blocks &&
                     (!fusion.x_blocked || s.dims().back() == 16) && x.dims()[1] == blocks &&
                     blocks * lanes >= channels;
  for (size_t i = 2; i + (fusion.x_blocked ? 1 : 0) < s.rank() && per_channel; ++i)
    per_channel = s.dims()[i] == 1;
  if (!per_channel)
    ctx.fail("the input scale " + s.shape_string() + " must hold one f32 value per channel of the input " +
             x.shape_string() + ", for every sample or for each");
  const float* scale = s.data<float>();
  if (s.dims()[0] == 1 && w.size() <= x.size()) {
    if (cacheable_constant(w)) return std::nullopt;
    HostTensor scaled = HostTensor::uninitialized(DType::F32, w.dims());
    const float* from = w.data<float>();
    float* to = scaled.mutable_data<float>();
    const int64_t per_group = channels / group, taps = w.size() / (m * per_group);
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < per_group; ++i) {
        const float k = scale[input_channel_of(o, i, m, group, per_group)];
        const int64_t at = (o * per_group + i) * taps;
        for (int64_t t = 0; t < taps; ++t) to[at + t] = from[at + t] * k;
      }
    return fused_convolution(ctx, x, scaled, b, rest);
  }
  // x's planes (blocked: rows of 16 lanes, padding lanes left 0) times their scales, in
  // this thread's buffer (no fresh tensor to page in on every call).
  const dnnl::memory buffer = thread_operand(
      ThreadOperand::scaled_input,
      dnnl::memory::desc({x.size()}, dnnl::memory::data_type::f32, dnnl::memory::format_tag::a));
  HostTensor scaled = HostTensor::borrowed(
      DType::F32, x.dims(), static_cast<const std::byte*>(buffer.get_data_handle()), nullptr, false);
  const int64_t positions = x.size() / (n * blocks * lanes), stride = blocks * lanes;
  const float* from = x.data<float>();
  float* to = static_cast<float*>(buffer.get_data_handle());
  team_region(x.size() > (1 << 15), [&] {
#pragma omp for collapse(2)
    for (int64_t sample = 0; sample < n; ++sample)
      for (int64_t block = 0; block < blocks; ++block) {
        const float* k = scale + (s.dims()[0] == 1 ? 0 : sample * stride) + block * lanes;
        float row[16];
        for (int64_t l = 0; l < lanes; ++l) row[l] = block * lanes + l < channels ? k[l] : 0.0f;
        const int64_t at = (sample * blocks + block) * positions * lanes;
        if (lanes == 16)
          for (int64_t p = 0; p < positions; ++p)
            for (int64_t l = 0; l < 16; ++l) to[at + p * 16 + l] = from[at + p * 16 + l] * row[l];
        else
          for (int64_t p = 0; p < positions; ++p) to[at + p] = from[at + p] * row[0];
      }
  });
  return fused_convolution(ctx, scaled, w, b, rest);
}

// The input channel of each element of weights in a primitive's layout, in runs of
// `run` elements that share one (oneDNN's blocked weights keep 16 output channels of one
// input channel side by side: one number a run).
struct WeightChannels {
  std::vector<int32_t> channel;  // per run
  int64_t run = 1;
};

// Constant weights in the primitive's layout times each input channel's scale: the layout
// made once (cached with the weights) and, beside it, its elements' input channels (the
// plain weights' channel numbers put through the same conversion), so the scaling is one
// pass in whatever blocked order oneDNN chose.
dnnl::memory scaled_weights_in_layout(const HostTensor& w, const HostTensor& s, int64_t group,
                                      const std::string& key, const dnnl::memory::desc& want,
                                      const dnnl::memory::desc& user, const MemoryConvert& convert) {
  const dnnl::memory weights = weights_in_layout(w, key, want, user, convert);
  const auto channels = derived_constant<WeightChannels>(w, key + " input channels", [&] {
    const int64_t m = w.dims()[0], per_group = w.dims()[1], taps = w.size() / (m * per_group);
    // Channel + 1: the conversion's padding elements come out 0 (their weights are 0, any
    // scale keeps them 0, so they join any run).
    std::vector<float> numbers(static_cast<size_t>(w.size()));
    for (int64_t o = 0; o < m; ++o)
      for (int64_t i = 0; i < per_group; ++i)
        std::fill_n(numbers.begin() + (o * per_group + i) * taps, taps,
                    static_cast<float>(input_channel_of(o, i, m, group, per_group) + 1));  // exact below 2^24
    dnnl::memory from(user, cpu_engine(), numbers.data()), to(want, cpu_engine());
    if (want == user)
      std::memcpy(to.get_data_handle(), numbers.data(), numbers.size() * sizeof(float));
    else
      convert(from, to);
    const float* laid = static_cast<const float*>(to.get_data_handle());
    const size_t count = want.get_size() / sizeof(float);
    // Each run's channel, or nothing where a run holds two.
    auto runs_of = [&](size_t run) -> std::optional<std::vector<int32_t>> {
      std::vector<int32_t> out;
      for (size_t start = 0; start < count; start += run) {
        float number = 0;
        for (size_t e = start; e < start + run; ++e) {
          if (laid[e] == 0) continue;
          if (number != 0 && laid[e] != number) return std::nullopt;
          number = laid[e];
        }
        out.push_back(std::max(0, static_cast<int32_t>(number) - 1));
      }
      return out;
    };
    auto made = std::make_shared<WeightChannels>();
    if (count % 16 == 0)
      if (std::optional<std::vector<int32_t>> runs = runs_of(16)) {
        made->channel = std::move(*runs);
        made->run = 16;
      }
    if (made->run == 1) made->channel = *runs_of(1);
    return std::shared_ptr<const WeightChannels>(std::move(made));
  });
  dnnl::memory scaled = thread_operand(ThreadOperand::weights, want);
  const float* from = static_cast<const float*>(weights.get_data_handle());
  const float* scale = s.data<float>();
  float* to = static_cast<float*>(scaled.get_data_handle());
  const int32_t* channel = channels->channel.data();
  const int64_t runs = static_cast<int64_t>(channels->channel.size());
  team_region(runs * channels->run > (1 << 15), [&] {
    if (channels->run == 16) {
#pragma omp for
      for (int64_t r = 0; r < runs; ++r) {
        const float k = scale[channel[r]];
        for (int64_t j = 0; j < 16; ++j) to[r * 16 + j] = from[r * 16 + j] * k;
      }
    } else {
#pragma omp for
      for (int64_t e = 0; e < runs; ++e) to[e] = from[e] * scale[channel[e]];
    }
  });
  return scaled;
}

}  // namespace

HostTensor fused_convolution(const KernelContext& ctx, const HostTensor& x, const HostTensor& w,
                             const HostTensor* b, const ConvFusion& fusion) {
  if (fusion.input_scale)
    if (std::optional<HostTensor> y = scaled_input_convolution(ctx, x, w, b, fusion)) return std::move(*y);
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  const size_t rank = fusion.x_blocked ? x.rank() - 1 : x.rank();
  if (rank < 3 || rank > 5) ctx.fail("Conv supports 1-D, 2-D and 3-D inputs");
  if (w.rank() != rank) ctx.fail("weights rank differs from input rank");
  if (x.dtype() != DType::F32 || w.dtype() != DType::F32)
    ctx.fail("Conv runs on f32 (got " + dtype_name(x.dtype()) + ")");
  if ((fusion.x_blocked || fusion.y_blocked) && rank != 4)
    ctx.fail("channel-blocked tensors need a 2-D convolution");
  const int64_t group = ctx.attr_int("group", 1);
  const int64_t m = w.dims()[0];
  if (group <= 0 || m % group != 0)
    ctx.fail("weights " + w.shape_string() + " do not match group " + std::to_string(group));
  const int64_t n = x.dims()[0], c = fusion.x_blocked ? w.dims()[1] * group : x.dims()[1];
  if (fusion.x_blocked && (x.dims()[4] != 16 || (c + 15) / 16 != x.dims()[1]))
    ctx.fail("input " + x.shape_string() + " is not channel-blocked (blocks of 16) for the weights' " +
             std::to_string(c) + " channels");
  if (c % group != 0 || w.dims()[1] * group != c)
    ctx.fail("channels " + std::to_string(c) + " and weights " + w.shape_string() + " do not match group " +
             std::to_string(group));
  std::vector<int64_t> plain_x(x.dims().begin(), x.dims().begin() + static_cast<int64_t>(rank));
  plain_x[1] = c;
  std::vector<int64_t> kernel =
      ctx.attr_ints("kernel_shape", std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()));
  WindowGeometry g = window_geometry(ctx, plain_x, kernel, false);

  memory::dims src_dims{n, c}, dst_dims{n, m}, wei_dims, dil, strides(g.strides.begin(), g.strides.end());
  src_dims.insert(src_dims.end(), g.in.begin(), g.in.end());
  dst_dims.insert(dst_dims.end(), g.out.begin(), g.out.end());
  if (group > 1)
    wei_dims = {group, m / group, c / group};
  else
    wei_dims = {m, c};
  wei_dims.insert(wei_dims.end(), w.dims().begin() + 2, w.dims().end());
  for (int64_t d : g.dilations) dil.push_back(d - 1);  // oneDNN counts the gaps
  memory::dims pl(g.pad_begin.begin(), g.pad_begin.end()), pr(g.pad_end.begin(), g.pad_end.end());

  std::vector<int64_t> out_dims(dst_dims.begin(), dst_dims.end());
  if (fusion.y_blocked) {
    out_dims[1] = (m + 15) / 16;
    out_dims.push_back(16);
  }
  if (fusion.residual) {
    if (fusion.residual->dtype() != DType::F32 || fusion.residual->dims() != out_dims)
      ctx.fail("the residual " + fusion.residual->shape_string() + " must match the output, f32" +
               dims_text(out_dims));
  }
  // The primitive (or its reorder) writes every byte. The sum post-op reads the residual
  // where it writes, so the output may be planned over it (no copy of it into dst).
  HostTensor y = ctx.new_output(0, DType::F32, out_dims, fusion.residual_input);
  // The channel means: planes of `count` positions of `lanes` channels side by side.
  const int64_t lanes = fusion.y_blocked ? 16 : 1, planes = fusion.y_blocked ? n * out_dims[1] : n * m;
  const int64_t count = std::accumulate(g.out.begin(), g.out.end(), int64_t{1}, std::multiplies<>());
  float* means = nullptr;
  if (fusion.channel_means) {
    std::vector<int64_t> mean_dims = out_dims;
    std::fill(mean_dims.begin() + 2, mean_dims.begin() + 2 + static_cast<int64_t>(g.out.size()), 1);
    *fusion.channel_means = ctx.new_output(1, DType::F32, mean_dims);
    means = fusion.channel_means->mutable_data<float>();
  }
  auto with_means = [&](HostTensor& out) -> HostTensor& {
    if (means) mean_planes(out.data<float>(), means, planes, count, lanes);
    return out;
  };
  if (y.size() == 0) return with_means(y);
  if (b && (b->dtype() != DType::F32 || b->size() != m))
    ctx.fail("bias " + b->shape_string() + " must hold " + std::to_string(m) +
             " f32 values, one per channel");
  const HostTactic& tactic = ctx.tactic();
  const bool padded_outward =
      std::all_of(g.pad_begin.begin(), g.pad_begin.end(), [](int64_t p) { return p >= 0; }) &&
      std::all_of(g.pad_end.begin(), g.pad_end.end(), [](int64_t p) { return p >= 0; });
  // (An input scale left to here goes into oneDNN's copy of the weights.)
  const bool own = own_loops_allowed(tactic) && rank == 4 && !fusion.input_scale;
  const Activation activation = parse_activation(ctx, fusion.activation);
  if (activation == Activation::Clip && fusion.activation_params.size() != 2)
    ctx.fail("Clip activation needs 2 params (min, max)");
  // The depthwise loop by default where its activation is one of the row loops' (the sums
  // cost about what oneDNN's jit_dw pays, the activation less) and the window has more
  // than one tap: `geopt tune` switched a 1x1 depthwise conv (a per-channel scale) back
  // to oneDNN's on 60 of DenseNet-121's 62, and 11 of MobileNetV3's ReLU and HardSwish
  // ones. Negative pads stay on oneDNN.
  const bool depthwise_by_default =
      activation_rows_beat_post_ops(activation) && kernel.size() == 2 && kernel[0] * kernel[1] > 1;
  if (own && fusion.x_blocked && fusion.y_blocked && group == c && m == c && padded_outward &&
      (tactic.conv_algorithm == ConvAlgorithm::geopt || depthwise_by_default)) {
    if (std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()) != kernel)
      ctx.fail("kernel_shape " + dims_text(kernel) + " differs from the weights' " + w.shape_string());
    const DepthwiseGeometry geometry{.batch = n,
                                     .channels = c,
                                     .in_h = g.in[0],
                                     .in_w = g.in[1],
                                     .out_h = g.out[0],
                                     .out_w = g.out[1],
                                     .kernel_h = kernel[0],
                                     .kernel_w = kernel[1],
                                     .stride_h = g.strides[0],
                                     .stride_w = g.strides[1],
                                     .dilation_h = g.dilations[0],
                                     .dilation_w = g.dilations[1],
                                     .pad_top = g.pad_begin[0],
                                     .pad_left = g.pad_begin[1]};
    const DepthwiseEpilogue epilogue{.bias = b ? b->data<float>() : nullptr,
                                     .residual = fusion.residual ? fusion.residual->data<float>() : nullptr,
                                     .activation = activation,
                                     .activation_params = fusion.activation_params,
                                     .post_scale = fusion.post_scale,
                                     .post_shift = fusion.post_shift,
                                     .channel_means = means};
    note_implementation("geopt depthwise");
    depthwise_conv_blocked(ctx, x.data<float>(), w, y.mutable_data<float>(), geometry, epilogue);
    return y;
  }
  if (own && group == 1 && kernel == std::vector<int64_t>{1, 1} && g.in == std::vector<int64_t>{1, 1} &&
      g.out == std::vector<int64_t>{1, 1} && w.dims()[2] == 1 && w.dims()[3] == 1) {
    const PixelConv product{.batch = n,
                            .channels = c,
                            .outputs = m,
                            .x_stride = x.size() / n,
                            .y_stride = y.size() / n,
                            .bias = b ? b->data<float>() : nullptr,
                            .residual = fusion.residual ? fusion.residual->data<float>() : nullptr,
                            .activation = activation,
                            .activation_params = fusion.activation_params,
                            .post_scale = fusion.post_scale,
                            .post_shift = fusion.post_shift};
    note_implementation("geopt matrix-vector");
    pixel_conv(ctx, x.data<float>(), w.data<float>(), y.mutable_data<float>(), product);
    return with_means(y);
  }
  engine& eng = cpu_engine();
  stream& s = cpu_stream();
  memory::desc src_user_md(src_dims, dt::f32, fusion.x_blocked ? tag::nChw16c : row_major_tag(rank));
  memory::desc wei_user_md(wei_dims, dt::f32, row_major_tag(group > 1 ? rank + 1 : rank));
  memory::desc dst_user_md(dst_dims, dt::f32, fusion.y_blocked ? tag::nChw16c : row_major_tag(rank));
  memory::desc bias_md = b ? memory::desc({m}, dt::f32, tag::a) : memory::desc();
  auto any = [](const memory::dims& d) { return memory::desc(d, dt::f32, tag::any); };
  // On a team of one thread, Sigmoid, SiLU and QuickGelu (and the affine after them) go on
  // the row loops after the primitive: the primitive's swish post-op costs 0.24-0.27 ns an
  // element, the row loop 0.16, and the output it re-reads is in this core's cache (a whole
  // EfficientNet-B0 plan on one thread: 0.969-0.976). On two threads the post-op stays: the row
  // loop's share of the output is not the share each thread of the primitive wrote, and the
  // plan ran 1.003-1.038x (docs/BENCHMARKS.md).
  const bool rows_after = omp_get_max_threads() == 1 && activation_rows_beat_post_ops(activation);
  post_ops ops;
  if (fusion.residual) ops.append_sum(1.0f);
  const bool affine = fusion.post_scale != 1.0f || fusion.post_shift != 0.0f;
  if (!rows_after) {
    append_activation(ctx, ops, fusion.activation, fusion.activation_params);
    if (affine) ops.append_eltwise(1.0f, algorithm::eltwise_linear, fusion.post_scale, fusion.post_shift);
  }
  std::string key;
  for (const auto* v : {&src_dims, &wei_dims, &dst_dims, &strides, &dil, &pl, &pr}) {
    for (auto d : *v) key += std::to_string(d) + ',';
    key += ';';
  }
  key += fusion.x_blocked ? "x16;" : ";";
  key += fusion.y_blocked ? "y16;" : ";";
  key += b ? "bias;" : ";";
  key += fusion.residual ? "sum;" : ";";
  if (rows_after) {
    key += ";activation after";
  } else {
    key += activation_key(fusion.activation, fusion.activation_params);
    if (affine) key += ";affine " + activation_key("", {fusion.post_scale, fusion.post_shift});
  }
  key += ";threads " +
         std::to_string(omp_get_max_threads());  // a primitive runs the thread count it was made for
  key += ";tactic " +
         tactic_text(HostTactic{.conv_algorithm = tactic.conv_algorithm, .conv_layout = tactic.conv_layout});
  std::shared_ptr<const ConvPlan> plan = cached_plan<ConvPlan>(key, [&] {
    primitive_attr attr;
    attr.set_scratchpad_mode(scratchpad_mode::user);
    attr.set_post_ops(ops);
    // Winograd F(2x2, 3x3) for a dense 3x3 conv of stride 1 with enough channels: half
    // the direct conv's time from 48 channels on (ResNet's 3x3 convs), slower below
    // (its transforms dominate). Its error is that of a reordered fp32 sum (about 1e-6
    // of an output of magnitude 1). Where the machine has no Winograd kernel (AVX2),
    // creating it throws and the direct conv is used. A tactic may ask for either.
    const bool dense_3x3 = rank == 4 && group == 1 && wei_dims[2] == 3 && wei_dims[3] == 3 &&
                           strides == memory::dims{1, 1} && dil == memory::dims{0, 0};
    const bool winograd = tactic.conv_algorithm == ConvAlgorithm::automatic
                              ? dense_3x3 && std::min(c, m) >= 48
                              : dense_3x3 && tactic.conv_algorithm == ConvAlgorithm::winograd;
    auto is_reference = [](const convolution_forward::primitive_desc& pd) {
      return std::string_view(pd.impl_info_str()).starts_with("ref");
    };
    auto make = [&](const memory::desc& src_md, const memory::desc& dst_md) {
      auto with = [&](algorithm alg) {
        convolution_forward::desc desc(prop_kind::forward_inference, alg, src_md, any(wei_dims), bias_md,
                                       dst_md, strides, dil, pl, pr);
        return convolution_forward::primitive_desc(desc, attr, eng);
      };
      if (winograd) try {
          auto pd = with(algorithm::convolution_winograd);
          if (!is_reference(pd)) return pd;
        } catch (const dnnl::error&) {
        }
      return with(algorithm::convolution_direct);
    };
    // Both operands in one named layout (2-D convolutions; for others a tactic's layout
    // leaves the choice to oneDNN).
    auto both_in = [&](tag t) {
      return rank == 4 ? make(memory::desc(src_dims, dt::f32, t), memory::desc(dst_dims, dt::f32, t))
                       : make(any(src_dims), any(dst_dims));
    };
    std::optional<convolution_forward::primitive_desc> made;
    switch (tactic.conv_layout) {
      case ConvLayout::automatic:
        // The channel-blocked layout is oneDNN's nChw16c: where the machine has a jit kernel for it
        // (AVX-512), the conv reads and writes the caller's bytes with no conversion around it. Left
        // to choose, oneDNN would pick NHWC and cost two reorders per conv. Elsewhere (AVX2
        // has no nChw16c kernel, only the reference loop) oneDNN picks.
        // A first conv (GE's C04: an NCHW input of at most 4 channels, a blocked output)
        // reads its NCHW input where it lies too. Left to choose that input's layout,
        // oneDNN reordered it first, and `geopt tune` chose the caller's layout for 5 of 11
        // held-out models' first convs (DenseNet-121's 7x7: 3.10 -> 0.79 ms), for none the other.
        if (fusion.x_blocked || fusion.y_blocked) {
          auto in_place = make(src_user_md, fusion.y_blocked ? dst_user_md : any(dst_dims));
          if (!is_reference(in_place)) made = in_place;
        }
        if (!made) made = make(any(src_dims), any(dst_dims));
        break;
      case ConvLayout::caller:
        made = make(src_user_md, dst_user_md);
        break;
      case ConvLayout::onednn:
        made = make(any(src_dims), any(dst_dims));
        break;
      case ConvLayout::nhwc:
        made = both_in(tag::acdb);
        break;
      case ConvLayout::blocked:
        made = both_in(tag::nChw16c);
        break;
    }
    return std::make_shared<const ConvPlan>(
        ConvPlan{*made, convolution_forward(*made), made->src_desc(), made->weights_desc(), made->dst_desc(),
                 made->scratchpad_desc(), "conv " + desc_bytes(made->weights_desc()),
                 std::string("oneDNN ") + made->impl_info_str()});
  });

  auto convert = [&](memory from, memory to) {
    if (!copy_channel_blocks(from.get_desc(), from.get_data_handle(), to.get_desc(), to.get_data_handle()))
      reorder_memory(from, to);
  };
  memory src = input_in_layout(plan->src, src_user_md, x.raw(), convert);
  memory wei = fusion.input_scale
                   ? scaled_weights_in_layout(w, *fusion.input_scale, group, plan->weights_key, plan->weights,
                                              wei_user_md, convert)
                   : weights_in_layout(w, plan->weights_key, plan->weights, wei_user_md, convert);
  memory dst_user(dst_user_md, eng, y.mutable_raw());
  memory dst = plan->dst == dst_user_md ? dst_user : thread_operand(ThreadOperand::destination, plan->dst);
  if (fusion.residual) {  // the sum post-op adds what dst holds
    memory r(dst_user_md, eng, const_cast<std::byte*>(fusion.residual->raw()));
    if (dst != dst_user)
      convert(r, dst);
    else if (y.raw() != fusion.residual->raw())
      std::memcpy(y.mutable_raw(), fusion.residual->raw(), y.nbytes());
  }
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src}, {DNNL_ARG_WEIGHTS, wei}, {DNNL_ARG_DST, dst}};
  if (b) {
    args[DNNL_ARG_BIAS] = memory(bias_md, eng, const_cast<std::byte*>(b->raw()));
  }
  memory scratchpad = thread_scratchpad(plan->scratchpad);
  args[DNNL_ARG_SCRATCHPAD] = scratchpad;
  note_implementation(plan->implementation);
  plan->primitive.execute(s, args);
  if (dst != dst_user) {
    s.wait();
    convert(dst, dst_user);
  }
  s.wait();
  if (rows_after) {
    float* out = y.mutable_data<float>();
    apply_activation_tail(ctx, out, y.size(), activation, fusion.activation_params, fusion.post_scale,
                          fusion.post_shift);
    // A blocked output's padding lanes back to 0: Sigmoid(0) is not (oneDNN's blocked
    // kernels write them 0 after their post-ops).
    const int64_t real = m % 16;
    if (fusion.y_blocked && real)
      for (int64_t image = 0; image < n; ++image) {
        float* last = out + ((image + 1) * out_dims[1] - 1) * count * 16;
        for (int64_t p = 0; p < count; ++p) std::fill(last + p * 16 + real, last + (p + 1) * 16, 0.0f);
      }
  }
  return with_means(y);
}

HostTensor convolution(const KernelContext& ctx, const HostTensor& x, const HostTensor& w,
                       const HostTensor* b) {
  return fused_convolution(ctx, x, w, b, ConvFusion{});
}

void register_pool_kernels(OpRegistry& r);
void register_conv_transpose_kernel(OpRegistry& r);

void register_conv_pool_kernels(OpRegistry& r) {
  r.add("", "Conv", [](KernelContext& ctx) {
    ctx.outputs[0] = convolution(ctx, ctx.input(0), ctx.input(1), ctx.has_input(2) ? &ctx.input(2) : nullptr);
  });
  r.set_tactic_knobs("", "Conv", kTacticConv);
  register_conv_transpose_kernel(r);
  register_pool_kernels(r);
}

}  // namespace geopt
