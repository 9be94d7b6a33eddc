#include "kernels/int8_products.h"

#include <oneapi/dnnl/dnnl.hpp>

#include <optional>
#include <string_view>

#include <omp.h>

#include "eval/derived_constant.h"
#include "kernels/onednn.h"

namespace geopt {
namespace {

using dnnl::memory;
using dt = memory::data_type;
using tag = memory::format_tag;

// A primitive and what a call needs of it, made once per shape (cached_plan); null where
// oneDNN has only its reference loop for the shape (the callers' loops are faster).
template <class Primitive>
struct Int8Plan {
  Primitive primitive;
  memory::desc src, weights, dst, scratchpad;
};

dt int8_type(DType t) { return t == DType::U8 ? dt::u8 : dt::s8; }

std::string dims_key(const memory::dims& d) {
  std::string s;
  for (auto v : d) s += std::to_string(v) + ',';
  return s + ';';
}

// The weights centred on their zero points (channel i's zero point for element i's
// channel), as int8, in the primitive's layout; none where a centred value leaves int8.
// Made once while a constant weight lives.
std::shared_ptr<const std::optional<memory>> centred_weights(const HostTensor& w,
                                                             const std::vector<int32_t>& zero,
                                                             int64_t channel_stride, const memory::desc& user,
                                                             const memory::desc& want) {
  auto make = [&] {
    const int64_t channels = static_cast<int64_t>(zero.size());
    std::vector<int8_t> centred(static_cast<size_t>(w.size()));
    for (int64_t i = 0; i < w.size(); ++i) {
      const int32_t z = zero[static_cast<size_t>(channels == 1 ? 0 : i / channel_stride % channels)];
      const int32_t v = (w.dtype() == DType::U8 ? static_cast<int32_t>(w.data<uint8_t>()[i])
                                                : static_cast<int32_t>(w.data<int8_t>()[i])) -
                        z;
      if (v < INT8_MIN || v > INT8_MAX) return std::make_shared<const std::optional<memory>>();
      centred[static_cast<size_t>(i)] = static_cast<int8_t>(v);
    }
    memory given(user, cpu_engine(), centred.data());
    memory laid_out(want, cpu_engine());
    reorder_memory(given, laid_out);
    return std::make_shared<const std::optional<memory>>(laid_out);
  };
  if (!cacheable_constant(w)) return make();
  std::string key = "int8 centred " + desc_bytes(want) + " by";
  for (int32_t z : zero) key += ' ' + std::to_string(z);
  return derived_constant<std::optional<memory>>(w, key, make);
}

bool is_reference(const char* impl) { return std::string_view(impl).starts_with("ref"); }

// Runs a primitive on the caller's operands: the source converted into the layout it
// wants, the int32 sums converted back into the caller's row-major acc.
void execute(const dnnl::primitive& p, const memory::desc& src_want, const memory::desc& src_user,
             const void* src, const memory& weights, const memory::desc& dst_want,
             const memory::desc& dst_user, int32_t* acc, const memory::desc& scratchpad, int32_t src_zero) {
  memory source = input_in_layout(src_want, src_user, src);
  memory user_dst(dst_user, cpu_engine(), acc);
  memory dst = dst_want == dst_user ? user_dst : thread_operand(ThreadOperand::destination, dst_want);
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, source},
                                       {DNNL_ARG_WEIGHTS, weights},
                                       {DNNL_ARG_DST, dst},
                                       {DNNL_ARG_SCRATCHPAD, thread_scratchpad(scratchpad)}};
  memory zero({{1}, dt::s32, tag::x}, cpu_engine(), &src_zero);
  if (src_zero != 0) args[DNNL_ARG_ATTR_ZERO_POINTS | DNNL_ARG_SRC] = zero;
  p.execute(cpu_stream(), args);
  cpu_stream().wait();
  if (dst != user_dst) reorder_memory(dst, user_dst);
}

dnnl::primitive_attr int8_attr(int32_t src_zero) {
  dnnl::primitive_attr attr;
  attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the calling thread's
  // The zero point is read at run time (DynamicQuantizeLinear computes it): one plan
  // serves every value.
  if (src_zero != 0) attr.set_zero_points(DNNL_ARG_SRC, 0, {DNNL_RUNTIME_S32_VAL});
  return attr;
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
                      int32_t* acc) {
  if (!int8_primitives_exact() || x.rank() != 4 || w.rank() != 4 || group <= 0) return false;
  if (w.dim(1) * w.dim(2) * w.dim(3) > kMaxInt8Depth) return false;
  const int64_t n = x.dim(0), c = x.dim(1), m = w.dim(0);
  if (n * m * g.out[0] * g.out[1] == 0) return false;
  const memory::dims src_dims{n, c, g.in[0], g.in[1]}, dst_dims{n, m, g.out[0], g.out[1]};
  const memory::dims wei_dims = group > 1 ? memory::dims{group, m / group, c / group, w.dim(2), w.dim(3)}
                                          : memory::dims{m, c, w.dim(2), w.dim(3)};
  const memory::dims strides(g.strides.begin(), g.strides.end()), pl(g.pad_begin.begin(), g.pad_begin.end()),
      pr(g.pad_end.begin(), g.pad_end.end());
  memory::dims dil;
  for (int64_t d : g.dilations) dil.push_back(d - 1);  // oneDNN counts the gaps
  const dt src_type = int8_type(x.dtype());
  const std::string key = dims_key(src_dims) + dims_key(wei_dims) + dims_key(strides) + dims_key(dil) +
                          dims_key(pl) + dims_key(pr) + (src_type == dt::u8 ? "u8" : "s8") +
                          (x_zero != 0 ? " zero point" : "") + ";threads " +
                          std::to_string(omp_get_max_threads());
  using Plan = Int8Plan<dnnl::convolution_forward>;
  std::shared_ptr<const Plan> plan = cached_plan<Plan>(key, [&]() -> std::shared_ptr<const Plan> {
    try {
      dnnl::convolution_forward::desc desc(
          dnnl::prop_kind::forward_inference, dnnl::algorithm::convolution_direct,
          memory::desc(src_dims, src_type, tag::any), memory::desc(wei_dims, dt::s8, tag::any),
          memory::desc(), memory::desc(dst_dims, dt::s32, tag::any), strides, dil, pl, pr);
      dnnl::convolution_forward::primitive_desc pd(desc, int8_attr(x_zero), cpu_engine());
      if (is_reference(pd.impl_info_str())) return nullptr;
      return std::make_shared<const Plan>(Plan{dnnl::convolution_forward(pd), pd.src_desc(),
                                               pd.weights_desc(), pd.dst_desc(), pd.scratchpad_desc()});
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
  if (!plan) return false;
  const memory::desc wei_user(wei_dims, dt::s8, group > 1 ? tag::goihw : tag::oihw);
  auto weights = centred_weights(w, w_zero, w.dim(1) * w.dim(2) * w.dim(3), wei_user, plan->weights);
  if (!weights->has_value()) return false;
  execute(plan->primitive, plan->src, memory::desc(src_dims, src_type, tag::nchw), x.raw(), **weights,
          plan->dst, memory::desc(dst_dims, dt::s32, tag::nchw), acc, plan->scratchpad, x_zero);
  return true;
}

bool int8_matmul(const std::byte* a, DType a_type, int64_t rows, int64_t k, int32_t a_zero,
                 const HostTensor& b, const std::vector<int32_t>& b_zero, int32_t* acc) {
  if (!int8_primitives_exact() || b.rank() != 2 || b.dim(0) != k || k > kMaxInt8Depth) return false;
  const int64_t n = b.dim(1);
  if (rows * n == 0) return false;
  const memory::dims src_dims{rows, k}, wei_dims{k, n}, dst_dims{rows, n};
  const dt src_type = int8_type(a_type);
  const std::string key = "matmul " + dims_key(src_dims) + dims_key(wei_dims) +
                          (src_type == dt::u8 ? "u8" : "s8") + (a_zero != 0 ? " zero point" : "") +
                          ";threads " + std::to_string(omp_get_max_threads());
  using Plan = Int8Plan<dnnl::matmul>;
  std::shared_ptr<const Plan> plan = cached_plan<Plan>(key, [&]() -> std::shared_ptr<const Plan> {
    try {
      dnnl::matmul::desc desc(memory::desc(src_dims, src_type, tag::ab),
                              memory::desc(wei_dims, dt::s8, tag::any),
                              memory::desc(dst_dims, dt::s32, tag::ab));
      dnnl::matmul::primitive_desc pd(desc, int8_attr(a_zero), cpu_engine());
      if (is_reference(pd.impl_info_str())) return nullptr;
      return std::make_shared<const Plan>(
          Plan{dnnl::matmul(pd), pd.src_desc(), pd.weights_desc(), pd.dst_desc(), pd.scratchpad_desc()});
    } catch (const dnnl::error&) {
      return nullptr;
    }
  });
  if (!plan) return false;
  // Column j's zero point for element i = (kk, j): channel i % n.
  auto weights = centred_weights(b, b_zero, 1, memory::desc(wei_dims, dt::s8, tag::ab), plan->weights);
  if (!weights->has_value()) return false;
  execute(plan->primitive, plan->src, memory::desc(src_dims, src_type, tag::ab), a, **weights, plan->dst,
          memory::desc(dst_dims, dt::s32, tag::ab), acc, plan->scratchpad, a_zero);
  return true;
}

}  // namespace geopt
