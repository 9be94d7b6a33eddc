#include "kernels/int8_products.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <optional>
#include <string_view>

#include <omp.h>

#include "eval/derived_constant.h"
#include "eval/kernel_implementation.h"
#include "kernels/onednn.h"
#include "util/team_region.h"

namespace geopt {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// oneDNN is asked only for the plain sums of a uint8 source by int8 weights: no zero
// point, no scale, no s8-source compensation. Any of those makes its kernels convert the
// int32 sums to float on the way out (they apply them in float), which rounds sums past
// 2^24 (a 3x3 conv over 512 channels reaches 1.5e8). Plain sums its brgemm kernels store
// as they are; other kernels are used only where no sum can pass 2^24. So an int8 source
// is shifted into uint8 (+128, its zero point with it), the zero point is taken off
// afterwards through each output channel's weight sum, and padding that must read the
// zero point is written out around the source.
constexpr int64_t kExactInFloat = int64_t{1} << 24;

bool exact_kernel(const char* impl, int64_t depth) {
  return std::string_view(impl).starts_with("brg") || depth * 255 * 128 < kExactInFloat;
}

// The weights centred on their zero points, as int8 in the primitive's layout, and each
// output channel's sum of them; none where a centred value leaves int8.
struct CentredWeights {
  memory laid_out;
  std::vector<int32_t> sums;
};

// Element i of w belongs to channel i / channel_stride % channels (conv: its output
// channel; matmul's B [K, N]: its column, stride 1). Made once while a constant weight lives.
std::shared_ptr<const std::optional<CentredWeights>> centred_weights(const HostTensor& w,
                                                                     const std::vector<int32_t>& zero,
                                                                     int64_t channels, int64_t channel_stride,
                                                                     const memory::desc& user,
                                                                     const memory::desc& want) {
  auto make = [&] {
    std::vector<int8_t> centred(static_cast<size_t>(w.size()));
    CentredWeights c;
    c.sums.assign(static_cast<size_t>(channels), 0);
    for (int64_t i = 0; i < w.size(); ++i) {
      const size_t channel = static_cast<size_t>(i / channel_stride % channels);
      const int32_t v = (w.dtype() == DType::U8 ? static_cast<int32_t>(w.data<uint8_t>()[i])
                                                : static_cast<int32_t>(w.data<int8_t>()[i])) -
                        zero[zero.size() == 1 ? 0 : channel];
      if (v < INT8_MIN || v > INT8_MAX) return std::make_shared<const std::optional<CentredWeights>>();
      centred[static_cast<size_t>(i)] = static_cast<int8_t>(v);
      c.sums[channel] += v;
    }
    memory given(user, cpu_engine(), centred.data());
    c.laid_out = memory(want, cpu_engine());
    reorder_memory(given, c.laid_out);
    return std::make_shared<const std::optional<CentredWeights>>(std::move(c));
  };
  if (!cacheable_constant(w)) return make();
  std::string key = "int8 centred " + desc_bytes(want) + " by";
  for (int32_t z : zero) key += ' ' + std::to_string(z);
  return derived_constant<std::optional<CentredWeights>>(w, key, make);
}

// A primitive and what a call needs of it, made once per shape (cached_plan); null where
// oneDNN has no kernel that stores these sums exactly.
template <class Primitive>
struct Int8Plan {
  Primitive primitive;
  memory::desc src, weights, dst, scratchpad;
  std::string implementation;  // "oneDNN int8 " and the primitive's name
};

dnnl::primitive_attr plain_sums() {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the calling thread's
  return attr;
}

// A uint8 copy of the source kept per thread (valid until this thread's next call).
uint8_t* thread_source(size_t bytes) {
  thread_local std::vector<uint8_t> buffer;
  if (buffer.size() < bytes) buffer.resize(bytes);
  return buffer.data();
}

// Runs a primitive on the caller's operands: the source converted into the layout it
// wants, the int32 sums converted back into the caller's row-major acc, unless `left`
// (the primitive's own layout, `dst_want`, is what the caller takes): then they stay in
// this thread's buffer, which is returned.
const int32_t* execute(const dnnl::primitive& p, const memory::desc& src_want, const memory::desc& src_user,
                       const void* src, const memory& weights, const memory::desc& dst_want,
                       const memory::desc& dst_user, int32_t* acc, const memory::desc& scratchpad,
                       bool left = false) {
  memory source = input_in_layout(src_want, src_user, src);
  memory user_dst(dst_user, cpu_engine(), acc);
  memory dst = dst_want == dst_user ? user_dst : thread_operand(ThreadOperand::destination, dst_want);
  p.execute(cpu_stream(), {{DNNL_ARG_SRC, source},
                           {DNNL_ARG_WEIGHTS, weights},
                           {DNNL_ARG_DST, dst},
                           {DNNL_ARG_SCRATCHPAD, thread_scratchpad(scratchpad)}});
  cpu_stream().wait();
  if (dst == user_dst) return acc;
  if (left) return static_cast<const int32_t*>(dst.get_data_handle());
  reorder_memory(dst, user_dst);
  return acc;
}

// x channel-blocked [N, ceil(C/lanes), H, W, lanes] 8-bit, as the uint8 channels-last
// source [N, ih, iw, C] an int8 primitive reads: shifted into uint8 (int8 ^ 0x80), and,
// where `padded`, placed at (top, left) inside a border of `fill` (the zero point the
// padding must read). One pass, in place of a copy (shifted and padded where it must be)
// and oneDNN's reorder.
void blocked_to_channels_last(const uint8_t* x, int64_t n, int64_t c, int64_t lanes, int64_t h, int64_t w,
                              bool shifted, bool padded, uint8_t fill, int64_t top, int64_t left, int64_t ih,
                              int64_t iw, uint8_t* out) {
  const int64_t blocks = (c + lanes - 1) / lanes, row = iw * c;
  if (padded)
    for (int64_t b = 0; b < n; ++b) {
      uint8_t* image = out + b * ih * row;
      std::fill(image, image + top * row, fill);
      std::fill(image + (top + h) * row, image + ih * row, fill);
      for (int64_t y = top; y < top + h; ++y) {
        std::fill(image + y * row, image + y * row + left * c, fill);
        std::fill(image + y * row + (left + w) * c, image + (y + 1) * row, fill);
      }
    }
  const uint8_t flip = shifted ? 0x80 : 0x00;
  team_region(n * h * w * c > (1 << 16), [&] {
#pragma omp for
    for (int64_t r = 0; r < n * h; ++r) {
      const int64_t b = r / h, y = r % h;
      uint8_t* to = out + ((b * ih + y + top) * iw + left) * c;
      for (int64_t cb = 0; cb < blocks; ++cb) {
        const uint8_t* from = x + ((b * blocks + cb) * h + y) * w * lanes;
        const int64_t run = std::min(lanes, c - cb * lanes);
        if (run == 32) {  // int8's C0: a run of a size the compiler knows (one vector)
          for (int64_t i = 0; i < w; ++i)
            for (int64_t l = 0; l < 32; ++l) to[i * c + cb * 32 + l] = from[i * 32 + l] ^ flip;
        } else {
          for (int64_t i = 0; i < w; ++i)
            for (int64_t l = 0; l < run; ++l) to[i * c + cb * lanes + l] = from[i * lanes + l] ^ flip;
        }
      }
    }
  });
}

}  // namespace

bool int8_primitives_exact() {
  static const bool exact = [] {
    switch (dnnl::get_effective_cpu_isa()) {
      case dnnl::cpu_isa::avx512_core_vnni:
      case dnnl::cpu_isa::avx512_core_bf16:
      case dnnl::cpu_isa::avx512_core_amx:
      case dnnl::cpu_isa::avx2_vnni:
        return true;
      default:
        return false;
    }
  }();
  return exact;
}

bool int8_convolution(const HostTensor& x, int32_t x_zero, const HostTensor& w,
                      const std::vector<int32_t>& w_zero, const WindowGeometry& g, int64_t group,
                      int32_t* acc, ChannelsLastSums* channels_last, int64_t x_block) {
  if (!int8_primitives_exact() || x.rank() != (x_block ? 5 : 4) || w.rank() != 4 || group <= 0) return false;
  if (x_block != 0 && x_block != 16 && x_block != 32) return false;  // oneDNN's aBcd16b and aBcd32b
  const int64_t depth = w.dim(1) * w.dim(2) * w.dim(3);
  if (depth > kMaxInt8Depth) return false;
  const int64_t n = x.dim(0), c = x_block ? w.dim(1) * group : x.dim(1), m = w.dim(0),
                spatial = g.out[0] * g.out[1];
  // Each (image, channel or channel block) plane holds `lanes` bytes per position.
  const int64_t lanes = x_block ? x_block : 1, planes = n * (x_block ? x.dim(1) : c);
  if (x_block && x.dim(1) != (c + x_block - 1) / x_block) return false;
  if (n * m * spatial == 0) return false;
  // The source as uint8, and the zero point to take off; padded here where the padding
  // must read a zero point that is not 0.
  const bool shifted = x.dtype() == DType::I8;
  const int32_t zero = x_zero + (shifted ? 128 : 0);
  auto positive = [](const std::vector<int64_t>& v) {
    return std::any_of(v.begin(), v.end(), [](int64_t p) { return p > 0; });
  };
  const bool padded = zero != 0 && (positive(g.pad_begin) || positive(g.pad_end));
  const int64_t ih = g.in[0] + (padded ? g.pad_begin[0] + g.pad_end[0] : 0),
                iw = g.in[1] + (padded ? g.pad_begin[1] + g.pad_end[1] : 0);
  const memory::dims src_dims{n, c, ih, iw}, dst_dims{n, m, g.out[0], g.out[1]};
  const memory::dims wei_dims = group > 1 ? memory::dims{group, m / group, c / group, w.dim(2), w.dim(3)}
                                          : memory::dims{m, c, w.dim(2), w.dim(3)};
  const memory::dims strides(g.strides.begin(), g.strides.end());
  const memory::dims pl = padded ? memory::dims{0, 0} : memory::dims(g.pad_begin.begin(), g.pad_begin.end());
  const memory::dims pr = padded ? memory::dims{0, 0} : memory::dims(g.pad_end.begin(), g.pad_end.end());
  memory::dims dil;
  for (int64_t d : g.dilations) dil.push_back(d - 1);  // oneDNN counts the gaps
  const std::string key = dims_key(src_dims) + dims_key(wei_dims) + dims_key(strides) + dims_key(dil) +
                          dims_key(pl) + dims_key(pr) + "threads " + std::to_string(omp_get_max_threads());
  using Plan = Int8Plan<dnnl::convolution_forward>;
  std::shared_ptr<const Plan> plan = cached_plan<Plan>(key, [&]() -> std::shared_ptr<const Plan> {
    try {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          memory::desc(src_dims, dt::u8, tag::any), memory::desc(wei_dims, dt::s8, tag::any), memory::desc(),
          memory::desc(dst_dims, dt::s32, tag::any), strides, dil, pl, pr);
      dnnl::convolution_forward::primitive_desc pd(desc, plain_sums(), cpu_engine());
      if (!exact_kernel(pd.impl_info_str(), depth)) return nullptr;
      return std::make_shared<const Plan>(Plan{dnnl::convolution_forward(pd), pd.src_desc(),
                                               pd.weights_desc(), pd.dst_desc(), pd.scratchpad_desc(),
                                               std::string("oneDNN int8 ") + pd.impl_info_str()});
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
  if (!plan) return false;
  const memory::desc wei_user(wei_dims, dt::s8, group > 1 ? tag::goihw : tag::oihw);
  auto weights = centred_weights(w, w_zero, m, depth, wei_user, plan->weights);
  if (!weights->has_value()) return false;
  note_implementation(plan->implementation);
  const void* src = x.raw();
  const memory::desc channels_last_source(src_dims, dt::u8, tag::nhwc);
  const bool direct = x_block != 0 && plan->src == channels_last_source;
  if (direct) {
    memory converted = thread_operand(ThreadOperand::source, channels_last_source);
    const int64_t top = padded ? g.pad_begin[0] : 0, left = padded ? g.pad_begin[1] : 0;
    blocked_to_channels_last(reinterpret_cast<const uint8_t*>(x.raw()), n, c, lanes, g.in[0], g.in[1],
                             shifted, padded, static_cast<uint8_t>(zero), top, left, ih, iw,
                             static_cast<uint8_t*>(converted.get_data_handle()));
    src = converted.get_data_handle();
  } else if (shifted || padded) {
    const int64_t rows = planes * g.in[0], row_bytes = g.in[1] * lanes;
    uint8_t* copy = thread_source(static_cast<size_t>(planes * ih * iw * lanes));
    if (padded) std::fill(copy, copy + planes * ih * iw * lanes, static_cast<uint8_t>(zero));
    const int64_t top = padded ? g.pad_begin[0] : 0, left = padded ? g.pad_begin[1] : 0;
    team_region(rows * row_bytes > (1 << 16), [&] {
#pragma omp for
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t plane = r / g.in[0], y = r % g.in[0];
        const uint8_t* in = reinterpret_cast<const uint8_t*>(x.raw()) + r * row_bytes;
        uint8_t* out = copy + ((plane * ih + y + top) * iw + left) * lanes;
        for (int64_t i = 0; i < row_bytes; ++i) out[i] = shifted ? static_cast<uint8_t>(in[i] ^ 0x80) : in[i];
      }
    });
    src = copy;
  }
  const tag src_tag = x_block == 32 ? tag::aBcd32b : x_block == 16 ? tag::aBcd16b : tag::nchw;
  const memory::desc src_user = direct ? channels_last_source : memory::desc(src_dims, dt::u8, src_tag);
  const bool leave = channels_last && plan->dst == memory::desc(dst_dims, dt::s32, tag::nhwc);
  const int32_t* sums_at = execute(plan->primitive, plan->src, src_user, src, (*weights)->laid_out, plan->dst,
                                   memory::desc(dst_dims, dt::s32, tag::nchw), acc, plan->scratchpad, leave);
  if (sums_at != acc) {
    channels_last->sums = sums_at;
    channels_last->offsets.clear();
    if (zero != 0)
      for (int32_t s : (*weights)->sums) channels_last->offsets.push_back(zero * s);
    return true;
  }
  if (zero != 0) {
    const std::vector<int32_t>& sums = (*weights)->sums;
    team_region(n * m * spatial > (1 << 16), [&] {
#pragma omp for collapse(2)
      for (int64_t b = 0; b < n; ++b)
        for (int64_t oc = 0; oc < m; ++oc) {
          const int32_t off = zero * sums[static_cast<size_t>(oc)];
          int32_t* row = acc + (b * m + oc) * spatial;
          for (int64_t i = 0; i < spatial; ++i) row[i] -= off;
        }
    });
  }
  return true;
}

bool int8_matmul(const std::byte* a, DType a_type, int64_t rows, int64_t k, int32_t a_zero,
                 const HostTensor& b, const std::vector<int32_t>& b_zero, int32_t* acc) {
  if (!int8_primitives_exact() || b.rank() != 2 || b.dim(0) != k || k > kMaxInt8Depth) return false;
  const int64_t n = b.dim(1);
  if (rows * n == 0) return false;
  const memory::dims src_dims{rows, k}, wei_dims{k, n}, dst_dims{rows, n};
  const std::string key = "matmul " + dims_key(src_dims) + dims_key(wei_dims) + "threads " +
                          std::to_string(omp_get_max_threads());
  using Plan = Int8Plan<dnnl::matmul>;
  std::shared_ptr<const Plan> plan = cached_plan<Plan>(key, [&]() -> std::shared_ptr<const Plan> {
    try {
      dnnl::matmul::desc desc(memory::desc(src_dims, dt::u8, tag::ab),
                              memory::desc(wei_dims, dt::s8, tag::any),
                              memory::desc(dst_dims, dt::s32, tag::ab));
      dnnl::matmul::primitive_desc pd(desc, plain_sums(), cpu_engine());
      if (!exact_kernel(pd.impl_info_str(), k)) return nullptr;
      return std::make_shared<const Plan>(Plan{dnnl::matmul(pd), pd.src_desc(), pd.weights_desc(),
                                               pd.dst_desc(), pd.scratchpad_desc(),
                                               std::string("oneDNN int8 ") + pd.impl_info_str()});
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
  if (!plan) return false;
  // Column j's zero point for element (kk, j): channel i % n.
  auto weights = centred_weights(b, b_zero, n, 1, memory::desc(wei_dims, dt::s8, tag::ab), plan->weights);
  if (!weights->has_value()) return false;
  note_implementation(plan->implementation);
  const bool shifted = a_type == DType::I8;
  const int32_t zero = a_zero + (shifted ? 128 : 0);
  const void* src = a;
  if (shifted) {
    uint8_t* copy = thread_source(static_cast<size_t>(rows * k));
    const uint8_t* in = reinterpret_cast<const uint8_t*>(a);
    team_region(rows * k > (1 << 16), [&] {
#pragma omp for
      for (int64_t i = 0; i < rows * k; ++i) copy[i] = static_cast<uint8_t>(in[i] ^ 0x80);
    });
    src = copy;
  }
  execute(plan->primitive, plan->src, memory::desc(src_dims, dt::u8, tag::ab), src, (*weights)->laid_out,
          plan->dst, memory::desc(dst_dims, dt::s32, tag::ab), acc, plan->scratchpad);
  if (zero != 0) {
    const std::vector<int32_t>& sums = (*weights)->sums;
    team_region(rows * n > (1 << 16), [&] {
#pragma omp for
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t j = 0; j < n; ++j) acc[r * n + j] -= zero * sums[static_cast<size_t>(j)];
    });
  }
  return true;
}

}  // namespace geopt
