// FusedMatMul's body on one oneDNN matmul primitive: the bias and the activation are
// post-ops, applied while each tile of the product is still in cache.
#include <map>
#include <optional>
#include <mutex>
#include <sstream>

#include <omp.h>

#include "kernels/broadcast.h"
#include "kernels/linalg.h"
#include "kernels/onednn.h"

namespace geopt {
namespace {

struct MatMulPlan {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
};

}  // namespace

std::optional<HostTensor> fused_matmul_f32(const KernelContext& ctx, const HostTensor& a, const HostTensor& b, const HostTensor* bias,
                                           const std::string& activation, const std::vector<float>& params, bool is_output) {
  using namespace dnnl;
  using dt = memory::data_type;
  if (a.dtype() != DType::F32 || b.dtype() != DType::F32 || (bias && bias->dtype() != DType::F32)) return std::nullopt;
  if (a.rank() < 2 || b.rank() < 2 || a.rank() > 6 || b.rank() > 6) return std::nullopt;  // vectors: numpy's promotion
  const int64_t m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
  if (b.dim(-2) != k) ctx.fail("MatMul inner dims differ: " + a.shape_string() + " x " + b.shape_string());
  std::vector<int64_t> batch;
  if (!broadcast_shape({{a.dims().begin(), a.dims().end() - 2}, {b.dims().begin(), b.dims().end() - 2}}, batch))
    ctx.fail("MatMul batch dims do not broadcast");
  if (bias) {  // one value per column, however many unit dims lead
    for (size_t d = 0; d + 1 < bias->rank(); ++d)
      if (bias->dims()[d] != 1) return std::nullopt;
    if (bias->rank() == 0 || bias->dim(-1) != n || bias->rank() > batch.size() + 2) return std::nullopt;
  }
  std::vector<int64_t> out = batch;
  out.push_back(m);
  out.push_back(n);
  HostTensor y = is_output ? ctx.new_output(0, DType::F32, out) : HostTensor::uninitialized(DType::F32, out);
  if (y.size() == 0) return y;
  if (k == 0) return std::nullopt;  // nothing to multiply: the plain path writes the bias alone

  // One weight for every batch: one tall product of A's rows.
  memory::dims src_dims, wei_dims, dst_dims;
  if (b.rank() == 2) {
    src_dims = {a.size() / k, k};
    wei_dims = {k, n};
    dst_dims = {a.size() / k, n};
  } else {
    const size_t r = out.size();
    auto padded = [&](const std::vector<int64_t>& d) {
      memory::dims p(r - d.size(), 1);
      p.insert(p.end(), d.begin(), d.end());
      return p;
    };
    src_dims = padded(a.dims());
    wei_dims = padded(b.dims());
    dst_dims = memory::dims(out.begin(), out.end());
  }
  const size_t rank = dst_dims.size();
  memory::dims bias_dims(rank, 1);
  bias_dims.back() = n;
  memory::desc src_md(src_dims, dt::f32, row_major_tag(rank)), wei_md(wei_dims, dt::f32, row_major_tag(rank));
  memory::desc dst_md(dst_dims, dt::f32, row_major_tag(rank));
  memory::desc bias_md = bias ? memory::desc(bias_dims, dt::f32, row_major_tag(rank)) : memory::desc();

  std::ostringstream key_stream;
  for (const auto* v : {&src_dims, &wei_dims, &dst_dims}) {
    for (auto d : *v) key_stream << d << ',';
    key_stream << ';';
  }
  key_stream << (bias ? "bias;" : ";") << activation_key(activation, params) << ";threads " << omp_get_max_threads();
  static std::mutex mutex;
  static std::map<std::string, std::shared_ptr<MatMulPlan>> plans;
  std::shared_ptr<MatMulPlan> plan;
  {
    std::lock_guard lock(mutex);
    auto& slot = plans[key_stream.str()];
    if (!slot) {
      post_ops ops;
      append_activation(ctx, ops, activation, params);
      primitive_attr attr;
      attr.set_scratchpad_mode(scratchpad_mode::user);  // each run its own: streams run at once
      attr.set_post_ops(ops);
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src_md, wei_md, bias_md, dst_md), attr, cpu_engine());
      slot = std::make_shared<MatMulPlan>(MatMulPlan{pd, dnnl::matmul(pd)});
    }
    plan = slot;
  }
  engine& eng = cpu_engine();
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, memory(src_md, eng, const_cast<std::byte*>(a.raw()))},
                                       {DNNL_ARG_WEIGHTS, memory(wei_md, eng, const_cast<std::byte*>(b.raw()))},
                                       {DNNL_ARG_DST, memory(dst_md, eng, y.mutable_raw())},
                                       {DNNL_ARG_SCRATCHPAD, memory(plan->pd.scratchpad_desc(), eng)}};
  if (bias) args[DNNL_ARG_BIAS] = memory(bias_md, eng, const_cast<std::byte*>(bias->raw()));
  stream& s = cpu_stream();
  plan->primitive.execute(s, args);
  s.wait();
  return y;
}

}  // namespace geopt
