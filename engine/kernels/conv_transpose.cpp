// ConvTranspose: f32 on oneDNN's deconvolution primitive, every ONNX attribute included
// (group, dilations, pads, output_padding, output_shape, auto_pad); other element types,
// and outputs no input pixel reaches, on a direct scatter loop.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <cstring>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <omp.h>

#include "ir/auto_pad.h"
#include "kernels/dispatch.h"
#include "kernels/onednn.h"

namespace geopt {
namespace {

// ONNX's output geometry. output_padding is folded into pad_end, so both pads may be
// negative (output_shape may ask for more than the kernel reaches): the positions they
// add receive no input, only the bias.
struct TransposedGeometry {
  std::vector<int64_t> in, kernel, strides, dilations, pad_begin, pad_end, out;  // spatial axes only
};

TransposedGeometry transposed_geometry(const KernelContext& ctx, const HostTensor& x, const HostTensor& w) {
  const size_t sp = x.rank() - 2;
  TransposedGeometry g;
  g.in.assign(x.dims().begin() + 2, x.dims().end());
  g.kernel = ctx.attr_ints("kernel_shape", std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()));
  g.strides = ctx.attr_ints("strides", std::vector<int64_t>(sp, 1));
  g.dilations = ctx.attr_ints("dilations", std::vector<int64_t>(sp, 1));
  std::vector<int64_t> out_pad = ctx.attr_ints("output_padding", std::vector<int64_t>(sp, 0));
  std::vector<int64_t> pads = ctx.attr_ints("pads", std::vector<int64_t>(2 * sp, 0));
  const std::vector<int64_t> output_shape = ctx.attr_ints("output_shape");
  const std::string auto_pad_text = ctx.attr_string("auto_pad", "NOTSET");
  const std::optional<AutoPad> auto_pad = parse_auto_pad(auto_pad_text);
  if (g.kernel.size() != sp || g.strides.size() != sp || g.dilations.size() != sp || out_pad.size() != sp ||
      pads.size() != 2 * sp)
    ctx.fail("kernel_shape, strides, dilations, output_padding or pads have the wrong length for " +
             std::to_string(sp) + " spatial axes");
  if (!output_shape.empty() && output_shape.size() < sp)
    ctx.fail("output_shape has fewer than " + std::to_string(sp) + " entries");
  if (!auto_pad) ctx.fail("unknown auto_pad '" + auto_pad_text + "'");
  if (static_cast<size_t>(w.rank()) != sp + 2)
    ctx.fail("weights " + w.shape_string() + " do not match the input's rank");
  g.pad_begin.resize(sp);
  g.pad_end.resize(sp);
  g.out.resize(sp);
  for (size_t i = 0; i < sp; ++i) {
    if (g.strides[i] <= 0 || g.dilations[i] <= 0 || g.kernel[i] <= 0)
      ctx.fail("strides, dilations and kernel_shape must be positive");
    if (g.kernel[i] != w.dims()[2 + i]) ctx.fail("kernel_shape differs from the weights " + w.shape_string());
    const int64_t full = g.strides[i] * (g.in[i] - 1) + out_pad[i] + (g.kernel[i] - 1) * g.dilations[i] + 1;
    const bool same = is_same(*auto_pad);
    if (!output_shape.empty() || same) {
      // ONNX: total padding makes the output the requested (or input * stride) size;
      // SAME_UPPER puts the smaller half first, everything else the larger half.
      const int64_t want =
          output_shape.empty() ? g.in[i] * g.strides[i] : output_shape[output_shape.size() - sp + i];
      const int64_t total = full - want;
      const int64_t half =
          total >= 0 ? total / 2 : -((-total + 1) / 2);  // floor division: total may be negative
      pads[i] = *auto_pad == AutoPad::SameUpper ? half : total - half;
      pads[sp + i] = total - pads[i];
    } else if (*auto_pad == AutoPad::Valid) {
      pads[i] = pads[sp + i] = 0;
    }
    g.pad_begin[i] = pads[i];
    g.pad_end[i] = pads[sp + i] - out_pad[i];
    g.out[i] = full - pads[i] - pads[sp + i];
    if (g.out[i] < 0) ctx.fail("output would have a negative size");
  }
  return g;
}

// Every input pixel scatters its kernel-weighted contribution.
template <class T>
void scatter(const KernelContext& ctx, const HostTensor& x, const HostTensor& w, const TransposedGeometry& g,
             int64_t group, HostTensor& y) {
  const size_t sp = g.in.size();
  const int64_t n = x.dims()[0], c = x.dims()[1], c_per_group = c / group, m_per_group = w.dims()[1],
                m = m_per_group * group;
  int64_t in_px = 1, out_px = 1, k_px = 1;
  for (size_t i = 0; i < sp; ++i) {
    in_px *= g.in[i];
    out_px *= g.out[i];
    k_px *= g.kernel[i];
  }
  const T* px = x.data<T>();
  const T* pw = w.data<T>();
  T* py = y.mutable_data<T>();
  std::fill(py, py + y.size(), T(0));
  std::vector<int64_t> ic(sp), kc(sp);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch) {
      const int64_t grp = ch / c_per_group;
      for (int64_t p = 0; p < in_px; ++p) {
        for (size_t i = sp, r = static_cast<size_t>(p); i-- > 0;) {
          ic[i] = static_cast<int64_t>(r) % g.in[i];
          r /= static_cast<size_t>(g.in[i]);
        }
        const T v = px[(b * c + ch) * in_px + p];
        for (int64_t kp = 0; kp < k_px; ++kp) {
          int64_t r = kp, o = 0;
          bool inside = true;
          for (size_t i = sp; i-- > 0;) {
            kc[i] = r % g.kernel[i];
            r /= g.kernel[i];
          }
          for (size_t i = 0; i < sp && inside; ++i) {
            const int64_t pos = ic[i] * g.strides[i] + kc[i] * g.dilations[i] - g.pad_begin[i];
            inside = pos >= 0 && pos < g.out[i];
            o = o * g.out[i] + pos;
          }
          if (!inside) continue;
          for (int64_t oc = 0; oc < m_per_group; ++oc)
            py[(b * m + grp * m_per_group + oc) * out_px + o] += v * pw[(ch * m_per_group + oc) * k_px + kp];
        }
      }
    }
  if (ctx.has_input(2)) {
    const T* pb = ctx.input(2).data<T>();
    for (int64_t b = 0; b < n; ++b)
      for (int64_t oc = 0; oc < m; ++oc)
        for (int64_t o = 0; o < out_px; ++o) py[(b * m + oc) * out_px + o] += pb[oc];
  }
}

struct DeconvPlan {
  dnnl::deconvolution_forward primitive;
  dnnl::memory::desc src, weights, dst, scratchpad;  // queried once (each query copies a kilobyte)
  std::string weights_key;  // derived_constant's key for the weights in `weights`' layout
};

// The part of the output some input pixel reaches: a negative pad adds positions the
// primitive cannot express, which hold only the bias.
struct Reached {
  std::vector<int64_t> begin, dims;  // per spatial axis
  bool whole = true;
};

Reached reached_region(const TransposedGeometry& g) {
  Reached r;
  for (size_t i = 0; i < g.out.size(); ++i) {
    const int64_t lo = std::max<int64_t>(0, -g.pad_begin[i]), hi = std::max<int64_t>(0, -g.pad_end[i]);
    r.begin.push_back(lo);
    r.dims.push_back(g.out[i] - lo - hi);
    r.whole = r.whole && lo == 0 && hi == 0;
  }
  return r;
}

// y = ConvTranspose(x, w) + b on oneDNN. The primitive writes the reached region through a
// strided view of y; the rest is filled with the bias first. False where oneDNN has no
// primitive for these attributes (the caller's loop computes them).
bool deconvolution(const HostTensor& x, const HostTensor& w, const HostTensor* b, const TransposedGeometry& g,
                   int64_t group, const Reached& reached, HostTensor& y) {
  using namespace dnnl;
  using dt = memory::data_type;
  using tag = memory::format_tag;
  const size_t sp = g.in.size(), rank = sp + 2;
  const int64_t n = x.dims()[0], c = x.dims()[1], m = y.dims()[1], mg = m / group, cg = c / group;
  int64_t k_px = 1;
  for (int64_t k : g.kernel) k_px *= k;

  memory::dims src_dims{n, c}, out_dims{n, m}, inner_dims{n, m}, offsets{0, 0};
  src_dims.insert(src_dims.end(), g.in.begin(), g.in.end());
  out_dims.insert(out_dims.end(), g.out.begin(), g.out.end());
  inner_dims.insert(inner_dims.end(), reached.dims.begin(), reached.dims.end());
  offsets.insert(offsets.end(), reached.begin.begin(), reached.begin.end());
  // ONNX's weights are [C, M/group, k...]: the input channel outermost. oneDNN names
  // the logical axes (g,) out, in, k...; strides say where ONNX keeps each.
  memory::dims wei_dims, wei_strides;
  if (group > 1) {
    wei_dims = {group, mg, cg};
    wei_strides = {cg * mg * k_px, k_px, mg * k_px};
  } else {
    wei_dims = {m, c};
    wei_strides = {k_px, m * k_px};
  }
  wei_dims.insert(wei_dims.end(), g.kernel.begin(), g.kernel.end());
  for (size_t i = 0, stride = static_cast<size_t>(k_px); i < sp; ++i) {
    stride /= static_cast<size_t>(g.kernel[i]);
    wei_strides.push_back(static_cast<int64_t>(stride));
  }
  memory::dims strides(g.strides.begin(), g.strides.end()), dil, pl, pr;
  for (size_t i = 0; i < sp; ++i) {
    dil.push_back(g.dilations[i] - 1);  // oneDNN counts the gaps
    pl.push_back(std::max<int64_t>(0, g.pad_begin[i]));
    pr.push_back(std::max<int64_t>(0, g.pad_end[i]));
  }
  const memory::desc src_user_md(src_dims, dt::f32, row_major_tag(rank));
  const memory::desc wei_user_md(wei_dims, dt::f32, wei_strides);
  const memory::desc out_md(out_dims, dt::f32, row_major_tag(rank));
  const memory::desc dst_user_md = reached.whole ? out_md : out_md.submemory_desc(inner_dims, offsets);
  const memory::desc bias_md = b ? memory::desc({m}, dt::f32, tag::a) : memory::desc();

  std::string key;
  for (const auto* v : {&src_dims, &wei_dims, &inner_dims, &strides, &dil, &pl, &pr}) {
    for (auto d : *v) key += std::to_string(d) + ',';
    key += ';';
  }
  key += b ? "bias;" : ";";
  key += "threads " +
         std::to_string(omp_get_max_threads());  // a primitive runs the thread count it was made for
  std::shared_ptr<const DeconvPlan> plan = cached_plan<DeconvPlan>(key, [&] {
    primitive_attr attr;
    attr.set_scratchpad_mode(scratchpad_mode::user);
    auto any = [](const memory::dims& d) { return memory::desc(d, dt::f32, tag::any); };
    auto make = [&](const memory::desc& src_md, const memory::desc& dst_md) {
      deconvolution_forward::desc desc(prop_kind::forward_inference, algorithm::deconvolution_direct, src_md,
                                       any(wei_dims), bias_md, dst_md, strides, dil, pl, pr);
      return deconvolution_forward::primitive_desc(desc, attr, cpu_engine());
    };
    // Left to choose, oneDNN blocks the channels by 16. With 8 output channels or fewer
    // (a detector's one-channel map) most of that output is padding, and its GEMM on the
    // plain layout is 1.4 to 2.5x faster before counting the conversions it saves
    // (24 -> 1 channels at 320x320: 0.73 against 1.76 ms on AVX-512).
    std::optional<deconvolution_forward::primitive_desc> made;
    if (m <= 8) try {
        auto plain = make(src_user_md, memory::desc(inner_dims, dt::f32, row_major_tag(rank)));
        if (!std::string_view(plain.impl_info_str()).starts_with("ref")) made = plain;
      } catch (const dnnl::error&) {  // no plain-layout primitive: the one oneDNN picks
      }
    if (!made) try {
        made = make(any(src_dims), any(inner_dims));
      } catch (const dnnl::error&) {
        return std::shared_ptr<const DeconvPlan>();  // kept: no primitive for these attributes
      }
    const deconvolution_forward::primitive_desc& pd = *made;
    return std::make_shared<const DeconvPlan>(
        DeconvPlan{deconvolution_forward(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc(),
                   pd.scratchpad_desc(), "deconv " + desc_bytes(pd.weights_desc())});
  });

  if (!plan) return false;
  engine& eng = cpu_engine();
  stream& s = cpu_stream();
  if (!reached.whole) {  // positions no input reaches hold the bias
    float* py = y.mutable_data<float>();
    const int64_t per_channel = y.size() / (n * m);
    for (int64_t i = 0; i < n * m; ++i)
      std::fill_n(py + i * per_channel, per_channel, b ? b->data<float>()[i % m] : 0.0f);
  }
  memory src = input_in_layout(plan->src, src_user_md, x.raw());
  memory wei = weights_in_layout(w, plan->weights_key, plan->weights, wei_user_md);
  memory dst_user(dst_user_md, eng, y.mutable_raw());
  memory dst = plan->dst == dst_user_md ? dst_user : thread_operand(ThreadOperand::destination, plan->dst);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, src},
                                       {DNNL_ARG_WEIGHTS, wei},
                                       {DNNL_ARG_DST, dst},
                                       {DNNL_ARG_SCRATCHPAD, thread_scratchpad(plan->scratchpad)}};
  if (b) args[DNNL_ARG_BIAS] = memory(bias_md, eng, const_cast<std::byte*>(b->raw()));
  plan->primitive.execute(s, args);
  if (dst != dst_user) reorder(dst, dst_user).execute(s, dst, dst_user);
  s.wait();
  return true;
}

void conv_transpose(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& w = ctx.input(1);
  if (x.rank() < 3) ctx.fail("ConvTranspose needs a spatial input");
  const int64_t group = ctx.attr_int("group", 1);
  const int64_t n = x.dims()[0], c = x.dims()[1];
  if (group <= 0 || c % group != 0 || w.rank() < 3 || w.dims()[0] != c)
    ctx.fail("weights " + w.shape_string() + " do not match " + std::to_string(c) + " channels in " +
             std::to_string(group) + " groups");
  if (w.dtype() != x.dtype())
    ctx.fail("weights are " + dtype_name(w.dtype()) + ", the input " + dtype_name(x.dtype()));
  const TransposedGeometry g = transposed_geometry(ctx, x, w);
  const int64_t m = w.dims()[1] * group;
  const HostTensor* b = ctx.has_input(2) ? &ctx.input(2) : nullptr;
  if (b && (b->dtype() != x.dtype() || b->size() != m))
    ctx.fail("bias " + b->shape_string() + " must hold " + std::to_string(m) + " values of the input's type");
  std::vector<int64_t> ydims{n, m};
  ydims.insert(ydims.end(), g.out.begin(), g.out.end());
  const Reached reached = reached_region(g);
  const bool some_reached =
      std::all_of(reached.dims.begin(), reached.dims.end(), [](int64_t d) { return d > 0; });
  if (x.dtype() == DType::F32 && x.rank() <= 5 && some_reached && x.size() > 0 && w.size() > 0) {
    HostTensor y = ctx.new_output(0, DType::F32, ydims);
    if (deconvolution(x, w, b, g, group, reached, y)) {
      ctx.outputs[0] = std::move(y);
      return;
    }
  }
  HostTensor y(x.dtype(), ydims);
  dispatch_float(
      x.dtype(), [&]<class T>() { scatter<T>(ctx, x, w, g, group, y); }, "ConvTranspose");
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_conv_transpose_kernel(OpRegistry& r) { r.add("", "ConvTranspose", conv_transpose); }

}  // namespace geopt
