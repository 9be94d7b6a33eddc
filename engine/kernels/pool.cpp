// MaxPool (with Indices), AveragePool, LpPool and their Global forms over any number of
// spatial axes, with pads, auto_pad, dilations and ceil_mode.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <sstream>
#include <string_view>
#include <type_traits>

#include <omp.h>

#include "kernels/conv.h"
#include "kernels/dispatch.h"
#include "kernels/onednn.h"
#include "kernels/row_math.h"
#include "util/team_region.h"

namespace geopt {
namespace {

enum class Pool { Max, Average, Lp };

// The common case, 2-D row-major, without the generic coordinate decoding. `lanes`
// contiguous values pool side by side: 1 for NCHW; 16 for a channel-blocked tensor, which comes as a
// 3-D pool with a kernel of 1 over its last axis. `pi` may be null (no Indices).
template <Pool kind, class T>
void pool_2d(const T* px, T* py, int64_t* pi, int64_t planes, int64_t lanes, const WindowGeometry& g,
             bool include_pad) {
  const int64_t ih = g.in[0], iw = g.in[1], oh = g.out[0], ow = g.out[1];
  const int64_t kh = g.kernel[0], kw = g.kernel[1], sh = g.strides[0], sw = g.strides[1];
  const int64_t dh = g.dilations[0], dw = g.dilations[1], ph = g.pad_begin[0], pw = g.pad_begin[1];
  const int64_t limit_h = ih + g.pad_end[0], limit_w = iw + g.pad_end[1];
  if constexpr (kind == Pool::Max) {
    if (lanes == 1 && !pi) {
      // A plain NCHW max pool without Indices (an int8 CNN's stem, where oneDNN's float
      // pooling does not apply): one running maximum per output, no per-row buffers.
      // The first tap read is kept unless a later one is greater, as below (NaN included).
      team_region(planes * oh * ow > (1 << 14), [&] {
#pragma omp for collapse(2)
        for (int64_t plane = 0; plane < planes; ++plane)
          for (int64_t y = 0; y < oh; ++y) {
            const T* in = px + plane * ih * iw;
            T* out = py + (plane * oh + y) * ow;
            for (int64_t x = 0; x < ow; ++x) {
              T best = std::numeric_limits<T>::lowest();
              bool any = false;
              for (int64_t a = 0; a < kh; ++a) {
                const int64_t r = y * sh + a * dh - ph;
                if (r >= limit_h) break;
                if (r < 0 || r >= ih) continue;
                for (int64_t b = 0; b < kw; ++b) {
                  const int64_t c = x * sw + b * dw - pw;
                  if (c >= limit_w) break;
                  if (c < 0 || c >= iw) continue;
                  const T v = in[r * iw + c];
                  if (!any || v > best) best = v;
                  any = true;
                }
              }
              out[x] = best;
            }
          }
      });
      return;
    }
  }
  team_region(planes * oh * ow * lanes > (1 << 14), [&] {
#pragma omp for collapse(2)
    for (int64_t plane = 0; plane < planes; ++plane)
      for (int64_t y = 0; y < oh; ++y) {
        const T* in = px + plane * ih * iw * lanes;
        std::vector<T> best(static_cast<size_t>(lanes));
        std::vector<double> sum(static_cast<size_t>(lanes));
        std::vector<int64_t> best_at(static_cast<size_t>(lanes));
        for (int64_t x = 0; x < ow; ++x) {
          std::fill(best.begin(), best.end(), std::numeric_limits<T>::lowest());
          std::fill(sum.begin(), sum.end(), 0.0);
          std::fill(best_at.begin(), best_at.end(), -1);
          int64_t valid = 0, padded = 0;
          for (int64_t a = 0; a < kh; ++a) {
            const int64_t r = y * sh + a * dh - ph;
            if (r >= limit_h) break;
            for (int64_t b = 0; b < kw; ++b) {
              const int64_t c = x * sw + b * dw - pw;
              if (c >= limit_w) break;
              ++padded;
              if (r < 0 || c < 0 || r >= ih || c >= iw) continue;
              ++valid;
              const int64_t at = (r * iw + c) * lanes;
              for (int64_t l = 0; l < lanes; ++l) {
                const T v = in[at + l];
                if constexpr (kind == Pool::Max) {
                  if (best_at[l] < 0 || v > best[l]) {
                    best[l] = v;
                    best_at[l] = at + l;
                  }
                } else {
                  sum[l] += static_cast<double>(v);
                }
              }
            }
          }
          const int64_t o = ((plane * oh + y) * ow + x) * lanes;
          const int64_t divisor = include_pad ? padded : valid;
          for (int64_t l = 0; l < lanes; ++l) {
            if constexpr (kind == Pool::Max) {
              py[o + l] = best[l];
              if (pi) pi[o + l] = plane * ih * iw * lanes + best_at[l];
            } else {
              py[o + l] = static_cast<T>(divisor ? sum[l] / static_cast<double>(divisor) : 0.0);
            }
          }
        }
      }
  });
}

// Pooling over two spatial axes, plain NCHW (lanes 1) or channel-blocked ([N, C, H, W,
// lanes]: oneDNN's NHWC of N x C images of `lanes` channels, whose padding channels pool
// on their own), on one oneDNN pooling primitive: f32, and the max of uint8 or int8 (an
// int8 CNN's stem; a max is exact in any type, an 8-bit average would round). Returns
// false where oneDNN's semantics differ from ONNX's or it has no such pooling: dilations,
// and an average that counts padding with ceil_mode windows that run past the end
// padding (ONNX leaves those positions out of the divisor).
template <class T>
bool onednn_pool(Pool kind, const T* px, T* py, int64_t n, int64_t c, int64_t lanes, const WindowGeometry& g,
                 bool include_pad) {
  using namespace dnnl;
  constexpr bool is_float = std::is_same_v<T, float>;
  if constexpr (!is_float && !std::is_same_v<T, uint8_t> && !std::is_same_v<T, int8_t>) return false;
  if (!is_float && kind != Pool::Max) return false;
  const memory::data_type type = is_float                     ? memory::data_type::f32
                                 : std::is_same_v<T, uint8_t> ? memory::data_type::u8
                                                              : memory::data_type::s8;
  memory::dims strides, kernel, pad_l, pad_r;
  for (size_t i = 0; i < 2; ++i) {
    if (g.dilations[i] != 1) return false;
    // ceil_mode's last window may reach past the end padding: oneDNN takes it as padding.
    const int64_t reach = (g.out[i] - 1) * g.strides[i] + g.kernel[i] - g.in[i] - g.pad_begin[i];
    if (kind == Pool::Average && include_pad && reach != g.pad_end[i]) return false;
    strides.push_back(g.strides[i]);
    kernel.push_back(g.kernel[i]);
    pad_l.push_back(g.pad_begin[i]);
    pad_r.push_back(std::max<int64_t>(reach, 0));
  }
  const auto tag = lanes == 1 ? memory::format_tag::nchw : memory::format_tag::nhwc;
  const int64_t images = lanes == 1 ? n : n * c, channels = lanes == 1 ? c : lanes;
  memory::desc src_md({images, channels, g.in[0], g.in[1]}, type, tag);
  memory::desc dst_md({images, channels, g.out[0], g.out[1]}, type, tag);
  const algorithm alg = kind == Pool::Max ? algorithm::pooling_max
                        : include_pad     ? algorithm::pooling_avg_include_padding
                                          : algorithm::pooling_avg_exclude_padding;
  std::ostringstream key;
  key << images << ',' << channels << ',' << g.in[0] << ',' << g.in[1] << ',' << lanes << ','
      << static_cast<int>(alg) << ',' << static_cast<int>(type);
  for (const auto* v : {&strides, &kernel, &pad_l, &pad_r})
    for (auto d : *v) key << ',' << d;
  key << ";threads " << omp_get_max_threads();
  struct Plan {
    pooling_forward::primitive_desc pd;
    pooling_forward primitive;
  };
  std::shared_ptr<const Plan> plan = cached_plan<Plan>(key.str(), [&]() -> std::shared_ptr<const Plan> {
    primitive_attr attr;
    attr.set_scratchpad_mode(scratchpad_mode::user);
    pooling_forward::desc desc(prop_kind::forward_inference, alg, src_md, dst_md, strides, kernel, pad_l,
                               pad_r);
    pooling_forward::primitive_desc pd(desc, attr, cpu_engine());
    // oneDNN's reference pooling is no faster than the caller's loop.
    if (std::string_view(pd.impl_info_str()).starts_with("ref")) return nullptr;
    return std::make_shared<const Plan>(Plan{pd, pooling_forward(pd)});
  });
  if (!plan) return false;
  engine& eng = cpu_engine();
  stream& s = cpu_stream();
  memory src(src_md, eng, const_cast<T*>(px)), dst(dst_md, eng, py),
      scratchpad = thread_scratchpad(plan->pd.scratchpad_desc());
  plan->primitive.execute(s, {{DNNL_ARG_SRC, src}, {DNNL_ARG_DST, dst}, {DNNL_ARG_SCRATCHPAD, scratchpad}});
  s.wait();
  return true;
}

void pool(KernelContext& ctx, Pool kind) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.fail("pooling needs an input of rank >= 3");
  const size_t sp = x.rank() - 2;
  std::vector<int64_t> kernel = ctx.attr_ints("kernel_shape");
  if (kernel.size() != sp) ctx.fail("kernel_shape must have one entry per spatial axis");
  for (int64_t k : kernel)
    if (k < 1) ctx.fail("kernel_shape entry " + std::to_string(k) + " is not a window size (at least 1)");
  WindowGeometry g = window_geometry(ctx, x.dims(), kernel, ctx.attr_int("ceil_mode", 0) != 0);
  const bool include_pad = ctx.attr_int("count_include_pad", 0) != 0;
  const double p = static_cast<double>(ctx.attr_int("p", 2));  // LpPool: (sum |x|^p)^(1/p), pads count 0
  if (kind == Pool::Lp && p <= 0) ctx.fail("p must be positive");
  const bool column_major = ctx.attr_int("storage_order", 0) != 0;
  const int64_t n = x.dims()[0], c = x.dims()[1];
  std::vector<int64_t> ydims{n, c};
  ydims.insert(ydims.end(), g.out.begin(), g.out.end());
  const bool want_indices = kind == Pool::Max && ctx.wants_output(1);
  HostTensor y = ctx.new_output(0, x.dtype(), ydims);  // every element is written
  HostTensor indices = want_indices ? HostTensor::uninitialized(DType::I64, ydims) : HostTensor{};
  int64_t in_px = 1, out_px = 1, k_px = 1;
  for (size_t i = 0; i < sp; ++i) {
    in_px *= g.in[i];
    out_px *= g.out[i];
    k_px *= g.kernel[i];
  }
  dispatch_real(
      x.dtype(),
      [&]<class T>() {
        const T* px = x.data<T>();
        T* py = y.mutable_data<T>();
        int64_t* pi = want_indices ? indices.mutable_data<int64_t>() : nullptr;
        // The last of three spatial axes with a window of 1 that moves by 1: a channel block's lanes.
        const bool lanes_axis = sp == 3 && g.kernel[2] == 1 && g.strides[2] == 1 && g.dilations[2] == 1 &&
                                g.pad_begin[2] == 0 && g.pad_end[2] == 0;
        if ((sp == 2 || lanes_axis) && !column_major && kind != Pool::Lp) {
          WindowGeometry g2 = g;
          for (auto* v :
               {&g2.in, &g2.kernel, &g2.strides, &g2.dilations, &g2.pad_begin, &g2.pad_end, &g2.out})
            v->resize(2);
          const int64_t lanes = sp == 3 ? g.in[2] : 1;
          if constexpr (std::is_same_v<T, float>) {
            const bool whole_plane = g2.kernel == g2.in && g2.out == std::vector<int64_t>{1, 1} &&
                                     g2.pad_begin == std::vector<int64_t>{0, 0} &&
                                     g2.pad_end == std::vector<int64_t>{0, 0};
            // oneDNN's pooling took about 20 us for a 7x7 plane of 1152 channels, where the
            // sums are 56K adds (EfficientNet-B0's squeeze-and-excitation pools).
            if (kind == Pool::Average && whole_plane) {
              mean_planes(px, py, n * c, g2.in[0] * g2.in[1], lanes);
              return;
            }
          }
          if (!pi && onednn_pool<T>(kind, px, py, n, c, lanes, g2, include_pad)) return;
          if (kind == Pool::Max)
            pool_2d<Pool::Max>(px, py, pi, n * c, lanes, g2, include_pad);
          else
            pool_2d<Pool::Average>(px, py, pi, n * c, lanes, g2, include_pad);
          return;
        }
        team_region(n * c * out_px > (1 << 14), [&] {
#pragma omp for
          for (int64_t plane = 0; plane < n * c; ++plane) {
            std::vector<int64_t> oc(sp), kc(sp), pos(sp);
            for (int64_t o = 0; o < out_px; ++o) {
              for (size_t i = sp, r = static_cast<size_t>(o); i-- > 0;) {
                oc[i] = static_cast<int64_t>(r) % g.out[i];
                r /= static_cast<size_t>(g.out[i]);
              }
              double sum = 0;
              T best = std::numeric_limits<T>::lowest();
              int64_t best_at = -1, valid = 0, padded_count = 0;
              for (int64_t kp = 0; kp < k_px; ++kp) {
                int64_t r = kp;
                for (size_t i = sp; i-- > 0;) {
                  kc[i] = r % g.kernel[i];
                  r /= g.kernel[i];
                }
                bool inside = true, within_pads = true;
                for (size_t i = 0; i < sp; ++i) {
                  pos[i] = oc[i] * g.strides[i] + kc[i] * g.dilations[i] - g.pad_begin[i];
                  inside = inside && pos[i] >= 0 && pos[i] < g.in[i];
                  within_pads = within_pads && pos[i] < g.in[i] + g.pad_end[i];
                }
                if (within_pads) ++padded_count;
                if (!inside) continue;
                int64_t flat = 0;
                for (size_t i = 0; i < sp; ++i) flat = flat * g.in[i] + pos[i];
                T v = px[plane * in_px + flat];
                ++valid;
                sum += kind == Pool::Lp ? std::pow(std::fabs(static_cast<double>(v)), p)
                                        : static_cast<double>(v);
                if (best_at < 0 || v > best) {
                  best = v;
                  if (column_major) {  // index in column-major spatial order
                    int64_t cm = 0;
                    for (size_t i = sp; i-- > 0;) cm = cm * g.in[i] + pos[i];
                    best_at = plane * in_px + cm;
                  } else {
                    best_at = plane * in_px + flat;
                  }
                }
              }
              if (kind == Pool::Max) {
                py[plane * out_px + o] = best;
                if (pi) pi[plane * out_px + o] = best_at;
              } else if (kind == Pool::Lp) {
                py[plane * out_px + o] = static_cast<T>(std::pow(sum, 1.0 / p));
              } else {
                int64_t divisor = include_pad ? padded_count : valid;
                py[plane * out_px + o] = static_cast<T>(divisor ? sum / static_cast<double>(divisor) : 0.0);
              }
            }
          }
        });
      },
      kind == Pool::Max  ? "MaxPool"
      : kind == Pool::Lp ? "LpPool"
                         : "AveragePool");
  ctx.outputs[0] = std::move(y);
  if (kind == Pool::Max && ctx.wants_output(1)) ctx.outputs[1] = std::move(indices);
}

void global_pool(KernelContext& ctx, Pool kind) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() < 3) ctx.fail("global pooling needs an input of rank >= 3");
  std::vector<int64_t> ydims(x.rank(), 1);
  ydims[0] = x.dims()[0];
  ydims[1] = x.dims()[1];
  HostTensor y(x.dtype(), ydims);
  const int64_t planes = ydims[0] * ydims[1];
  const int64_t px_count = planes ? x.size() / planes : 0;
  const double p = static_cast<double>(ctx.attr_int("p", 2));
  if (kind == Pool::Lp && p <= 0) ctx.fail("p must be positive");
  dispatch_float(
      x.dtype(),
      [&]<class T>() {
        const T* px = x.data<T>();
        T* py = y.mutable_data<T>();
        if constexpr (std::is_same_v<T, float>) {
          if (kind == Pool::Average) {
            mean_planes(px, py, planes, px_count, 1);
            return;
          }
        }
        for (int64_t plane = 0; plane < planes; ++plane) {
          double acc = kind == Pool::Max ? -std::numeric_limits<double>::infinity() : 0.0;
          for (int64_t i = 0; i < px_count; ++i) {
            double v = static_cast<double>(px[plane * px_count + i]);
            acc = kind == Pool::Max  ? std::max(acc, v)
                  : kind == Pool::Lp ? acc + std::pow(std::fabs(v), p)
                                     : acc + v;
          }
          py[plane] = static_cast<T>(kind == Pool::Max  ? acc
                                     : kind == Pool::Lp ? std::pow(acc, 1.0 / p)
                                                        : acc / static_cast<double>(px_count));
        }
      },
      "GlobalPool");
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_pool_kernels(OpRegistry& r) {
  r.add("", "MaxPool", [](KernelContext& ctx) { pool(ctx, Pool::Max); });
  r.add("", "AveragePool", [](KernelContext& ctx) { pool(ctx, Pool::Average); });
  r.add("", "GlobalAveragePool", [](KernelContext& ctx) { global_pool(ctx, Pool::Average); });
  r.add("", "GlobalMaxPool", [](KernelContext& ctx) { global_pool(ctx, Pool::Max); });
  r.add("", "LpPool", [](KernelContext& ctx) { pool(ctx, Pool::Lp); });
  r.add("", "GlobalLpPool", [](KernelContext& ctx) { global_pool(ctx, Pool::Lp); });
}

}  // namespace geopt
