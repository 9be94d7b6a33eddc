// A fused matmul's body (fused_matmul_output, kernels/fused.h) on oneDNN matmul primitives: the bias and the
// activation are post-ops, applied while each tile of the product is still in cache. A constant B (a weight)
// is reordered once into the layout the primitive prefers and kept while the weight lives, as ONNX Runtime
// prepacks its MatMul weights: a plain B is repacked by the primitive on every call (BERT-base's FFN product
// took twice as long). The packing waits for a weight's second use, so a run made once costs no more than
// before. The tactic `packing=plain` (geopt tune --job_type 2 measures it) keeps B plain.
#include <atomic>
#include <cstring>
#include <optional>

#include <omp.h>

#include "eval/derived_constant.h"
#include "eval/kernel_implementation.h"
#include "kernels/broadcast.h"
#include "kernels/linalg.h"
#include "kernels/onednn.h"

namespace geopt {
namespace {

using dnnl::memory;
using dt = memory::data_type;

struct MatMulPlan {
  dnnl::matmul::primitive_desc pd;
  dnnl::matmul primitive;
  // Queried once: each query copies a descriptor of a kilobyte.
  memory::desc weights, scratchpad;
  std::string packed_key;      // derived_constant's key for a weight packed into `weights`' layout
  std::string implementation;  // for `geopt run --profile`: oneDNN's kernel, and whether B is packed
};

// One product's operands: dims as oneDNN takes them (equal ranks, batch dims broadcast),
// and the bytes. `weight_owner` is set when B is a constant (it may be packed).
struct Product {
  memory::dims src, wei, dst, bias;  // bias empty: none
  const std::byte* a = nullptr;
  const std::byte* b = nullptr;
  const std::byte* bias_data = nullptr;
  std::byte* y = nullptr;
  std::shared_ptr<const void> weight_owner;
};

std::shared_ptr<const MatMulPlan> plan_for(const KernelContext& ctx, const Product& p,
                                           const std::string& activation, const std::vector<float>& params) {
  const size_t rank = p.dst.size();
  const bool packed = p.weight_owner != nullptr;
  const std::string key = dims_key(p.src) + dims_key(p.wei) + dims_key(p.dst) + dims_key(p.bias) +
                          (packed ? "packed;" : ";") + activation_key(activation, params) + ";threads " +
                          std::to_string(omp_get_max_threads());
  return cached_plan<MatMulPlan>(key, [&] {
    dnnl::post_ops ops;
    append_activation(ctx, ops, activation, params);
    dnnl::primitive_attr attr;
    attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);  // the calling thread's: streams run at once
    attr.set_post_ops(ops);
    const memory::desc wei_md(p.wei, dt::f32, packed ? memory::format_tag::any : row_major_tag(rank));
    const memory::desc bias_md =
        p.bias.empty() ? memory::desc() : memory::desc(p.bias, dt::f32, row_major_tag(rank));
    dnnl::matmul::desc desc(memory::desc(p.src, dt::f32, row_major_tag(rank)), wei_md, bias_md,
                            memory::desc(p.dst, dt::f32, row_major_tag(rank)));
    dnnl::matmul::primitive_desc pd(desc, attr, cpu_engine());
    return std::make_shared<const MatMulPlan>(MatMulPlan{
        pd, dnnl::matmul(pd), pd.weights_desc(), pd.scratchpad_desc(),
        "matmul " + dims_key(p.wei) + desc_bytes(pd.weights_desc()),
        std::string("oneDNN ") + pd.impl_info_str() +
            (packed && pd.weights_desc() != memory::desc(p.wei, dt::f32, row_major_tag(rank)) ? ", B packed"
                                                                                              : "")});
  });
}

// How often a weight has been multiplied by.
struct UseCount {
  mutable std::atomic<int64_t> uses{0};
};

void run(const KernelContext& ctx, const Product& p, const std::string& activation,
         const std::vector<float>& params) {
  if (p.weight_owner) {
    // A weight is packed from its second product on: a run made once (optimize's and
    // compile's check) would pay for the packing and not get it back (BERT-base's
    // first run: about 200 ms more).
    auto count =
        std::static_pointer_cast<const UseCount>(derived_constant(p.b, p.weight_owner, "matmul uses", [] {
          return std::shared_ptr<const void>(std::make_shared<const UseCount>());
        }));
    if (count->uses.fetch_add(1) == 0) {
      Product plain = p;
      plain.weight_owner = nullptr;
      run(ctx, plain, activation, params);
      return;
    }
  }
  const size_t rank = p.dst.size();
  std::shared_ptr<const MatMulPlan> plan = plan_for(ctx, p, activation, params);
  dnnl::engine& eng = cpu_engine();
  dnnl::stream& s = cpu_stream();
  const memory::desc plain_wei(p.wei, dt::f32, row_major_tag(rank));
  memory wei(plain_wei, eng, const_cast<std::byte*>(p.b));
  std::shared_ptr<const memory> packed;
  if (p.weight_owner && plan->weights != plain_wei) {
    // One packed copy per weight and layout, shared by every row count that wants it.
    packed =
        std::static_pointer_cast<const memory>(derived_constant(p.b, p.weight_owner, plan->packed_key, [&] {
          auto to = std::make_shared<memory>(plan->weights, eng);
          dnnl::reorder(wei, *to).execute(s, wei, *to);
          s.wait();
          return std::shared_ptr<const void>(to);
        }));
    wei = *packed;
  }
  std::unordered_map<int, memory> args{
      {DNNL_ARG_SRC, memory({p.src, dt::f32, row_major_tag(rank)}, eng, const_cast<std::byte*>(p.a))},
      {DNNL_ARG_WEIGHTS, wei},
      {DNNL_ARG_DST, memory({p.dst, dt::f32, row_major_tag(rank)}, eng, p.y)},
      {DNNL_ARG_SCRATCHPAD, thread_scratchpad(plan->scratchpad)}};
  if (!p.bias.empty())
    args[DNNL_ARG_BIAS] =
        memory({p.bias, dt::f32, row_major_tag(rank)}, eng, const_cast<std::byte*>(p.bias_data));
  note_implementation(plan->implementation);
  plan->primitive.execute(s, args);
  s.wait();
}

}  // namespace

std::optional<HostTensor> fused_matmul_f32(const KernelContext& ctx, const HostTensor& a, const HostTensor& b,
                                           const HostTensor* bias, const std::string& activation,
                                           const std::vector<float>& params, bool is_output) {
  if (a.dtype() != DType::F32 || b.dtype() != DType::F32 || (bias && bias->dtype() != DType::F32))
    return std::nullopt;
  if (a.rank() < 2 || b.rank() < 2 || a.rank() > 6 || b.rank() > 6)
    return std::nullopt;  // vectors: numpy's promotion
  const int64_t m = a.dim(-2), k = a.dim(-1), n = b.dim(-1);
  if (b.dim(-2) != k) ctx.fail("MatMul inner dims differ: " + a.shape_string() + " x " + b.shape_string());
  std::vector<int64_t> batch;
  if (!broadcast_shape({{a.dims().begin(), a.dims().end() - 2}, {b.dims().begin(), b.dims().end() - 2}},
                       batch))
    ctx.fail("MatMul batch dims do not broadcast");
  std::vector<int64_t> out = batch;
  out.push_back(m);
  out.push_back(n);
  const size_t rank = out.size();
  auto padded = [&](const std::vector<int64_t>& d) {
    memory::dims p(rank - d.size(), 1);
    p.insert(p.end(), d.begin(), d.end());
    return p;
  };
  // The bias: one row of n values, shared by every batch or one per batch (Q/K/V
  // products stacked along a leading axis carry their three biases that way).
  memory::dims bias_dims;
  bool bias_per_batch = false;
  if (bias) {
    if (bias->rank() == 0 || bias->rank() > rank || bias->dim(-1) != n) return std::nullopt;
    bias_dims = padded(bias->dims());
    if (bias_dims[rank - 2] != 1) return std::nullopt;
    bool shared = true, full = true;
    for (size_t d = 0; d + 2 < rank; ++d) {
      shared = shared && bias_dims[d] == 1;
      full = full && bias_dims[d] == out[d];
    }
    if (!shared && !full) return std::nullopt;
    bias_per_batch = !shared;
  }
  HostTensor y = is_output ? ctx.new_output(0, DType::F32, out) : HostTensor::uninitialized(DType::F32, out);
  if (y.size() == 0) return y;
  if (k == 0) return std::nullopt;  // nothing to multiply: the plain path writes the bias alone

  int64_t batches = 1;
  for (int64_t d : batch) batches *= d;
  const int64_t a_batches = a.size() / (m * k), b_batches = b.size() / (k * n);
  // A tactic may leave the weight where it lies (`packing=plain`): where the rows are few
  // (a classifier's one image), packing may not pay for the layout it reads in.
  const bool pack = ctx.tactic().packing != WeightPacking::plain;
  const std::shared_ptr<const void> owner = pack && cacheable_constant(b) ? b.storage() : nullptr;
  Product p;
  p.a = a.raw();
  p.b = b.raw();
  p.bias_data = bias ? bias->raw() : nullptr;
  p.y = y.mutable_raw();
  p.weight_owner = owner;
  if (b_batches == 1 || (a_batches == 1 && b_batches == batches)) {
    // One weight for every batch (one tall product of A's rows), or one input times a
    // stack of weights (one product per weight, each packed on its own).
    const int64_t rows = a_batches == 1 && b_batches > 1 ? m : a.size() / k;
    p.src = {rows, k};
    p.wei = {k, n};
    p.dst = {rows, n};
    if (bias) p.bias = {1, n};
    const int64_t slices = b_batches == 1 ? 1 : b_batches;
    if (b_batches == 1 && bias_per_batch && batches > 1)
      return std::nullopt;  // a bias per batch over one tall product: the plain path
    for (int64_t i = 0; i < slices; ++i) {
      p.b = b.raw() + i * k * n * static_cast<int64_t>(sizeof(float));
      p.bias_data =
          bias ? bias->raw() + (bias_per_batch ? i * n * static_cast<int64_t>(sizeof(float)) : 0) : nullptr;
      p.y = y.mutable_raw() + i * rows * n * static_cast<int64_t>(sizeof(float));
      run(ctx, p, activation, params);
    }
    return y;
  }
  // Batched products (attention's scores): one primitive over the broadcast batch.
  if (bias_per_batch) return std::nullopt;
  p.src = padded(a.dims());
  p.wei = padded(b.dims());
  p.dst = memory::dims(out.begin(), out.end());
  if (bias) {
    p.bias = memory::dims(rank, 1);
    p.bias.back() = n;
  }
  run(ctx, p, activation, params);
  return y;
}

}  // namespace geopt
