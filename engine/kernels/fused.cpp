// Reference kernels of the ai.geopt fused ops (docs/OPS.md). Each must equal
// its unfused definition; tests/test_fused_kernels.cpp checks that.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "kernels/activation.h"
#include "kernels/broadcast.h"
#include "kernels/elementwise_util.h"
#include "kernels/fused.h"
#include "kernels/linalg.h"
#include "kernels/norm.h"
#include "kernels/row_math.h"
#include "util/team_region.h"

namespace geopt {
namespace {

void require_f32(const KernelContext& ctx, const HostTensor& t) {
  if (t.dtype() != DType::F32) ctx.fail("runs on f32 (got " + dtype_name(t.dtype()) + ")");
}

void gelu(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  require_f32(ctx, x);
  const std::string mode = ctx.attr_string("approximate", "none");
  if (mode != "none" && mode != "tanh") ctx.fail("approximate must be 'none' or 'tanh'");
  HostTensor y = ctx.new_output(0, DType::F32, x.dims());
  if (x.nbytes()) std::memcpy(y.mutable_raw(), x.raw(), x.nbytes());
  gelu_in_place(y, mode == "tanh");
  ctx.outputs[0] = std::move(y);
}

void rsqrt(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  require_f32(ctx, x);
  ctx.outputs[0] = map_unary<float>(x, DType::F32, [](float v) { return 1.0f / std::sqrt(v); });
}

// Adds `bias` (broadcast to y's shape) to y in place.
void add_broadcast(const KernelContext& ctx, HostTensor& y, const HostTensor& bias) {
  require_f32(ctx, bias);
  auto plan = plan_broadcast<2>(ctx, {&y, &bias});
  if (plan.dims != y.dims())
    ctx.fail("bias " + bias.shape_string() + " does not broadcast to " + y.shape_string());
  float* py = y.mutable_data<float>();
  const float* pb = bias.data<float>();
  apply_broadcast(plan, [&](int64_t, const int64_t* o) { py[o[0]] += pb[o[1]]; });
}

// Where each (batch, head) matrix of an attention operand lies: BNSD [..., S, D] holds
// them whole; BSND [..., S, N, D] interleaves the heads, a row every N * D elements.
// `lead` are the batch dims ([...] or [..., N]), `strides` their element strides.
struct AttentionMatrices {
  std::vector<int64_t> lead, strides;
  int64_t rows = 0, cols = 0, row_stride = 0;
};

AttentionMatrices matrices_of(const std::vector<int64_t>& dims, bool bsnd) {
  AttentionMatrices m;
  const size_t r = dims.size();
  m.cols = dims[r - 1];
  if (bsnd) {
    m.rows = dims[r - 3];
    m.row_stride = dims[r - 2] * m.cols;
    m.lead.assign(dims.begin(), dims.end() - 3);
    m.lead.push_back(dims[r - 2]);
    m.strides.assign(m.lead.size(), 0);
    m.strides.back() = m.cols;
    int64_t outer = m.rows * m.row_stride;
    for (size_t i = m.lead.size() - 1; i-- > 0;) {
      m.strides[i] = outer;
      outer *= m.lead[i];
    }
  } else {
    m.rows = dims[r - 2];
    m.row_stride = m.cols;
    m.lead.assign(dims.begin(), dims.end() - 2);
    m.strides.assign(m.lead.size(), 0);
    int64_t outer = m.rows * m.cols;
    for (size_t i = m.lead.size(); i-- > 0;) {
      m.strides[i] = outer;
      outer *= m.lead[i];
    }
  }
  return m;
}

// Element strides of m's lead dims over `batch` (right-aligned; a dim of 1 repeats).
std::vector<int64_t> batch_strides(const AttentionMatrices& m, const std::vector<int64_t>& batch) {
  std::vector<int64_t> out(batch.size(), 0);
  const size_t skip = batch.size() - m.lead.size();
  for (size_t i = 0; i < m.lead.size(); ++i)
    if (m.lead[i] != 1) out[skip + i] = m.strides[i];
  return out;
}

// softmax(Q K^T * scale + mask [causal]) V for each (batch, head), in the layout given.
// FlashAttention's loop: blocks of queries against tiles of keys, the softmax kept
// online (running max and sum per query row, the output rescaled when the max grows),
// so no score matrix larger than one tile exists, and BSND is read where it lies.
HostTensor attention(const KernelContext& ctx, const HostTensor& q, const HostTensor& k, const HostTensor& v,
                     const HostTensor* mask, bool bsnd, bool is_output) {
  for (const HostTensor* t : {&q, &k, &v}) {
    require_f32(ctx, *t);
    if (t->rank() < (bsnd ? 3u : 2u))
      ctx.fail(bsnd ? "input_layout BSND needs Q, K and V of rank >= 3" : "Q, K and V need rank >= 2");
  }
  const AttentionMatrices mq = matrices_of(q.dims(), bsnd), mk = matrices_of(k.dims(), bsnd),
                          mv = matrices_of(v.dims(), bsnd);
  const int64_t s = mq.rows, d = mq.cols, t = mk.rows, dv = mv.cols;
  if (mk.cols != d || mv.rows != t)
    ctx.fail("Q " + q.shape_string() + ", K " + k.shape_string() + ", V " + v.shape_string() + " do not fit");
  std::vector<int64_t> batch;
  if (!broadcast_shape({mq.lead, mk.lead, mv.lead}, batch))
    ctx.fail("batch dims of Q, K, V do not broadcast");
  float scale = ctx.attr_float("scale", 0.0f);
  if (scale == 0.0f) scale = 1.0f / std::sqrt(static_cast<float>(d));
  const bool causal = ctx.attr_int("causal", 0) != 0;

  std::vector<int64_t> mask_strides;
  std::vector<int64_t> score_dims = batch;
  score_dims.push_back(s);
  score_dims.push_back(t);
  if (mask) {
    require_f32(ctx, *mask);
    std::vector<int64_t> md;
    if (!broadcast_shape({mask->dims(), score_dims}, md) || md != score_dims)
      ctx.fail("mask " + mask->shape_string() + " does not broadcast to the scores");
    mask_strides = broadcast_strides(mask->dims(), score_dims);
  }
  std::vector<int64_t> out_dims = batch;
  if (bsnd)
    out_dims.insert(out_dims.end() - 1, s);
  else
    out_dims.push_back(s);
  out_dims.push_back(dv);
  // Each block fills its rows.
  HostTensor y =
      is_output ? ctx.new_output(0, DType::F32, out_dims) : HostTensor::uninitialized(DType::F32, out_dims);
  const AttentionMatrices my = matrices_of(out_dims, bsnd);
  int64_t batches = 1;
  for (int64_t b : batch) batches *= b;
  const auto sq = batch_strides(mq, batch), sk = batch_strides(mk, batch), sv = batch_strides(mv, batch),
             sy = batch_strides(my, batch);
  const size_t nb = batch.size();
  constexpr int64_t kQueryBlock = 128, kKeyTile = 256;
  const int64_t query_blocks = (s + kQueryBlock - 1) / kQueryBlock;
  const float* pq = q.data<float>();
  const float* pk = k.data<float>();
  const float* pv = v.data<float>();
  float* py = y.mutable_data<float>();
  team_region(batches * query_blocks > 1, [&] {
#pragma omp for
    for (int64_t task = 0; task < batches * query_blocks; ++task) {
      const int64_t bi = task / query_blocks, q0 = (task % query_blocks) * kQueryBlock,
                    rows = std::min(kQueryBlock, s - q0);
      int64_t oq = 0, ok = 0, ov = 0, oy = 0, om = 0, r = bi;
      for (size_t i = nb; i-- > 0;) {
        const int64_t c = r % batch[i];
        r /= batch[i];
        oq += c * sq[i];
        ok += c * sk[i];
        ov += c * sv[i];
        oy += c * sy[i];
        if (mask) om += c * mask_strides[i];
      }
      const float* qb = pq + oq + q0 * mq.row_stride;
      float* out = py + oy + q0 * my.row_stride;
      std::vector<float> tile(static_cast<size_t>(rows * std::min(kKeyTile, t)));
      std::vector<float> running_max(static_cast<size_t>(rows), -std::numeric_limits<float>::infinity());
      std::vector<float> running_sum(static_cast<size_t>(rows), 0.0f);
      for (int64_t i = 0; i < rows; ++i)
        std::fill(out + i * my.row_stride, out + i * my.row_stride + dv, 0.0f);
      for (int64_t k0 = 0; k0 < t; k0 += kKeyTile) {
        const int64_t cols = std::min(kKeyTile, t - k0);
        gemm_f32(false, true, rows, cols, d, scale, qb, mq.row_stride, pk + ok + k0 * mk.row_stride,
                 mk.row_stride, 0.0f, tile.data(), cols);
        for (int64_t i = 0; i < rows; ++i) {
          float* row = tile.data() + i * cols;
          const int64_t qi = q0 + i;
          if (mask)
            for (int64_t j = 0; j < cols; ++j)
              row[j] += mask->data<float>()[om + qi * mask_strides[nb] + (k0 + j) * mask_strides[nb + 1]];
          if (causal)
            for (int64_t j = std::max<int64_t>(0, qi + (t - s) + 1 - k0); j < cols; ++j)
              row[j] = -std::numeric_limits<float>::infinity();
          const size_t at = static_cast<size_t>(i);
          const float new_max = std::max(running_max[at], row_max(row, cols));
          if (new_max == -std::numeric_limits<float>::infinity()) {  // all masked so far: nothing to add
            std::fill(row, row + cols, 0.0f);
            continue;
          }
          const float rescale = fast_exp(running_max[at] - new_max);
          running_sum[at] = running_sum[at] * rescale + exp_row(row, row, cols, new_max);
          running_max[at] = new_max;
          if (rescale != 1.0f) scale_row(out + i * my.row_stride, dv, rescale);
        }
        gemm_f32(false, false, rows, dv, cols, 1.0f, tile.data(), cols, pv + ov + k0 * mv.row_stride,
                 mv.row_stride, 1.0f, out, my.row_stride);
      }
      if (t > 0)  // a row masked everywhere divides 0 by 0, as the unfused softmax does
        for (int64_t i = 0; i < rows; ++i)
          scale_row(out + i * my.row_stride, dv, 1.0f / running_sum[static_cast<size_t>(i)]);
    }
  });
  return y;
}

// input_layout BSND: Q, K, V and Y hold the sequence axis before the heads axis
// ([..., S, N, D]; in 3-D, [S, B*N, D]), as the exporter's head split left them.
// The attention is the same, over [..., N, S, D] (the mask broadcasts to [..., N, S, T]).
void flash_attention(KernelContext& ctx) {
  const HostTensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const std::string layout = ctx.attr_string("input_layout", "BNSD");
  if (layout != "BNSD" && layout != "BSND") ctx.fail("input_layout must be BNSD or BSND, not " + layout);
  ctx.outputs[0] =
      attention(ctx, ctx.input(0), ctx.input(1), ctx.input(2), mask, layout == "BSND", /*is_output=*/true);
}

// Residual + LayerNorm(attention) over the last axis: the seed's fused kernel
// (the Dropout between them is the identity at inference).
void flash_attention_layer_norm(KernelContext& ctx) {
  HostTensor a = attention(ctx, ctx.input(0), ctx.input(1), ctx.input(2),
                           ctx.has_input(6) ? &ctx.input(6) : nullptr, false, false);
  HostTensor y = layer_norm_rows(ctx, a, -1, ctx.attr_float("epsilon", 1e-5f), ctx.input(3),
                                 ctx.has_input(4) ? &ctx.input(4) : nullptr);
  const HostTensor& residual = ctx.input(5);
  if (residual.dims() != y.dims() || residual.dtype() != DType::F32)
    ctx.fail("Residual " + residual.shape_string() + " must match the attention output " + y.shape_string());
  float* out = y.mutable_data<float>();
  const float* r = residual.data<float>();
  for (int64_t i = 0; i < y.size(); ++i) out[i] += r[i];
  ctx.outputs[0] = std::move(y);
}

// SiLU(X W1) * (X W3): LLaMA's gated MLP up to its down projection. SiLU is the first
// product's post-op; the second is multiplied in by rows.
void swiglu(KernelContext& ctx) {
  auto gate = fused_matmul_f32(ctx, ctx.input(0), ctx.input(1), nullptr, "SiLU", {}, /*is_output=*/true);
  auto up = fused_matmul_f32(ctx, ctx.input(0), ctx.input(2), nullptr, "none", {}, /*is_output=*/false);
  if (!gate || !up) {  // vectors or other dtypes: the plain products
    HostTensor g = matmul(ctx, ctx.input(0), ctx.input(1));
    require_f32(ctx, g);
    apply_activation(ctx, g, "SiLU", {});
    gate = std::move(g);
    up = matmul(ctx, ctx.input(0), ctx.input(2));
  }
  if (gate->dims() != up->dims())
    ctx.fail("W1 and W3 give different shapes: " + gate->shape_string() + ", " + up->shape_string());
  mul_rows(gate->data<float>(), up->data<float>(), gate->mutable_data<float>(), gate->size());
  ctx.outputs[0] = std::move(*gate);
}

// X * Cos + rotate(X) * Sin over the last axis, rotate(X) = concat(-X[..., split:], X[..., :split]).
void rotary_embedding(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& cos = ctx.input(1);
  const HostTensor& sin = ctx.input(2);
  for (const HostTensor* t : {&x, &cos, &sin}) require_f32(ctx, *t);
  if (x.rank() < 1) ctx.fail("X needs rank >= 1");
  const int64_t d = x.dim(-1);
  int64_t split = ctx.attr_int("split", 0);
  if (split == 0) split = d / 2;  // the schema's "0 means half", written or not
  if (split < 0 || split > d)
    ctx.fail("split " + std::to_string(split) + " is outside the last axis (" + std::to_string(d) + ")");
  auto plan = plan_broadcast<3>(ctx, {&x, &cos, &sin});
  if (plan.dims != x.dims()) ctx.fail("Cos and Sin must broadcast to X " + x.shape_string());
  HostTensor y = ctx.new_output(0, DType::F32, x.dims());
  const float* px = x.data<float>();
  const float* pc = cos.data<float>();
  const float* ps = sin.data<float>();
  float* py = y.mutable_data<float>();
  if (cos.rank() >= 1 && sin.rank() >= 1 && cos.dim(-1) == d && sin.dim(-1) == d && d > 0) {
    // Whole rows of Cos and Sin: each row of X meets one row of each, found by the
    // broadcast strides of the leading dims.
    const std::vector<int64_t> lead(x.dims().begin(), x.dims().end() - 1);
    auto lead_of = [&](const HostTensor& t) {
      std::vector<int64_t> dims(t.dims().begin(), t.dims().end() - 1);
      return broadcast_strides(dims, lead);
    };
    const std::vector<int64_t> sc = lead_of(cos), ss = lead_of(sin);
    const int64_t rows = x.size() / d;
    team_region(x.size() > (1 << 15), [&] {
#pragma omp for
      for (int64_t row = 0; row < rows; ++row) {
        int64_t oc = 0, os = 0, r = row;
        for (size_t i = lead.size(); i-- > 0;) {
          const int64_t c = r % lead[i];
          r /= lead[i];
          oc += c * sc[i];
          os += c * ss[i];
        }
        rotary_row(px + row * d, pc + oc * d, ps + os * d, py + row * d, d, split);
      }
    });
    ctx.outputs[0] = std::move(y);
    return;
  }
  HostTensor rotated(DType::F32, x.dims());
  float* pr = rotated.mutable_data<float>();
  for (int64_t row = 0; row < x.size() / std::max<int64_t>(d, 1); ++row) {
    const float* in = px + row * d;
    float* out = pr + row * d;
    for (int64_t j = 0; j < d - split; ++j) out[j] = -in[split + j];
    for (int64_t j = 0; j < split; ++j) out[d - split + j] = in[j];
  }
  apply_broadcast(plan,
                  [&](int64_t, const int64_t* o) { py[o[0]] = px[o[0]] * pc[o[1]] + pr[o[0]] * ps[o[2]]; });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

HostTensor fused_matmul_output(KernelContext& ctx, const HostTensor& b) {
  const HostTensor& a = ctx.input(0);
  const std::string activation = ctx.attr_string("activation", "none");
  const std::vector<float> params = ctx.attr_floats("activation_params");
  if (auto y = fused_matmul_f32(ctx, a, b, ctx.has_input(2) ? &ctx.input(2) : nullptr, activation, params))
    return std::move(*y);
  HostTensor y = matmul(ctx, a, b);
  require_f32(ctx, y);
  if (ctx.has_input(2)) add_broadcast(ctx, y, ctx.input(2));
  apply_activation(ctx, y, activation, params);
  return y;
}

void register_fused_kernels(OpRegistry& r) {
  r.add(kGeoptDomain, "Gelu", gelu);
  r.add(kGeoptDomain, "Rsqrt", rsqrt);
  r.add(kGeoptDomain, "FlashAttention", flash_attention);
  r.add(kGeoptDomain, "FlashAttentionLayerNorm", flash_attention_layer_norm);
  r.add(kGeoptDomain, "SwiGLU", swiglu);
  r.set_tactic_knobs(kGeoptDomain, "SwiGLU", kTacticPacking);  // its two products' weights
  r.add(kGeoptDomain, "RotaryEmbedding", rotary_embedding);
}

}  // namespace geopt
