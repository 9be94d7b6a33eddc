// Reference kernels of the ai.geopt fused ops (docs/OPS.md). Each must equal
// its unfused definition; tests/test_fused_kernels.cpp checks that.
#include <cmath>
#include <limits>

#include "kernels/activation.h"
#include "kernels/broadcast.h"
#include "kernels/conv.h"
#include "kernels/layout.h"
#include "kernels/elementwise_util.h"
#include "kernels/linalg.h"
#include "kernels/norm.h"

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
  ctx.outputs[0] = map_unary<float>(x, DType::F32, mode == "tanh" ? gelu_tanh : gelu_erf);
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
  if (plan.dims != y.dims()) ctx.fail("bias " + bias.shape_string() + " does not broadcast to " + y.shape_string());
  float* py = y.mutable_data<float>();
  const float* pb = bias.data<float>();
  apply_broadcast(plan, [&](int64_t, const int64_t* o) { py[o[0]] += pb[o[1]]; });
}

// B in FRACTAL_NZ (a weight laid out for the Cube) is read back as the K x N matrix.
void fused_matmul(KernelContext& ctx) {
  const std::string b_format = ctx.attr_string("b_format", "ND");
  if (b_format != "ND" && b_format != "FRACTAL_NZ") ctx.fail("b_format must be ND or FRACTAL_NZ");
  const HostTensor& a = ctx.input(0);
  if (b_format == "FRACTAL_NZ" && (a.rank() < 1 || ctx.attr_int("n", 0) <= 0)) ctx.fail("a FRACTAL_NZ operand needs `n` (its columns)");
  HostTensor b = b_format == "ND" ? ctx.input(1) : unpacked_weight(ctx.input(1), {a.dim(-1), ctx.attr_int("n", 0)}, true);
  HostTensor y = matmul(ctx, a, b);
  require_f32(ctx, y);
  if (ctx.has_input(2)) add_broadcast(ctx, y, ctx.input(2));
  apply_activation(ctx, y, ctx.attr_string("activation", "none"), ctx.attr_floats("activation_params"));
  ctx.outputs[0] = std::move(y);
}

// In NC1HWC0 the reference converts to NCHW, convolves, and converts back; the
// padding channels come out zero, as a device kernel leaves them.
void fused_conv(KernelContext& ctx) {
  const std::string format = ctx.attr_string("data_format", "NCHW");
  if (format != "NCHW" && format != "NC1HWC0") ctx.fail("data_format must be NCHW or NC1HWC0");
  const bool blocked = format == "NC1HWC0";
  const std::string weight_format = ctx.attr_string("weight_format", "NCHW");
  if (weight_format != "NCHW" && weight_format != "FRACTAL_Z") ctx.fail("weight_format must be NCHW or FRACTAL_Z");
  const std::string input_format = ctx.attr_string("input_format", "");
  if (!input_format.empty() && (input_format != "NCHW" || !blocked)) ctx.fail("input_format must be empty, or NCHW with data_format NC1HWC0");
  // A first conv reading its NCHW input as given: the reference lays it out first.
  const HostTensor x_given = input_format == "NCHW" ? to_nc1hwc0(ctx.input(0)) : HostTensor{};
  const HostTensor& x_in = input_format == "NCHW" ? x_given : ctx.input(0);
  HostTensor w = ctx.input(1);
  if (weight_format == "FRACTAL_Z") {
    // Read back with the input's padded channels (zero weights meet zero channels).
    const std::vector<int64_t> k = ctx.attr_ints("kernel_shape", {});
    const int64_t m = ctx.attr_int("channels", 0);
    if (!blocked || ctx.attr_int("group", 1) != 1 || k.size() != 2 || m <= 0)
      ctx.fail("FRACTAL_Z weights need data_format NC1HWC0, group 1, a 2-D kernel_shape and `channels`");
    w = unpacked_weight(w, {m, x_in.dim(1) * x_in.dim(4), k[0], k[1]}, false);
  }
  const int64_t channels_in = w.rank() == 4 ? w.dims()[1] * ctx.attr_int("group", 1) : 0;
  HostTensor x = blocked ? from_nc1hwc0(x_in, channels_in) : ctx.input(0);
  HostTensor y = convolution(ctx, x, w, ctx.has_input(2) ? &ctx.input(2) : nullptr);
  if (ctx.has_input(3)) add_broadcast(ctx, y, blocked ? from_nc1hwc0(ctx.input(3), w.dims()[0]) : ctx.input(3));
  apply_activation(ctx, y, ctx.attr_string("activation", "none"), ctx.attr_floats("activation_params"));
  ctx.outputs[0] = blocked ? to_nc1hwc0(y) : std::move(y);
}

void trans_data(KernelContext& ctx) {
  const std::string src = ctx.attr_string("src_format", ""), dst = ctx.attr_string("dst_format", "");
  if (src == "NCHW" && dst == "NC1HWC0") ctx.outputs[0] = to_nc1hwc0(ctx.input(0));
  else if (src == "NC1HWC0" && dst == "NCHW") ctx.outputs[0] = from_nc1hwc0(ctx.input(0), ctx.attr_int("channels", 0));
  else if (src == "NCHW" && dst == "FRACTAL_Z") ctx.outputs[0] = to_fractal_z(ctx.input(0));
  else if (src == "ND" && dst == "FRACTAL_NZ") ctx.outputs[0] = to_fractal_nz(ctx.input(0));
  else ctx.fail("TransData supports NCHW <-> NC1HWC0, NCHW -> FRACTAL_Z and ND -> FRACTAL_NZ, not " + src + " -> " + dst);
}

// softmax(Q K^T * scale + mask [causal]) V, one (batch, head) matrix at a time.
HostTensor attention(const KernelContext& ctx, const HostTensor& q, const HostTensor& k, const HostTensor& v, const HostTensor* mask) {
  for (const HostTensor* t : {&q, &k, &v}) {
    require_f32(ctx, *t);
    if (t->rank() < 2) ctx.fail("Q, K and V need rank >= 2");
  }
  const int64_t s = q.dim(-2), d = q.dim(-1), t = k.dim(-2), dv = v.dim(-1);
  if (k.dim(-1) != d || v.dim(-2) != t) ctx.fail("Q " + q.shape_string() + ", K " + k.shape_string() + ", V " + v.shape_string() + " do not fit");
  auto lead = [](const HostTensor& x) { return std::vector<int64_t>(x.dims().begin(), x.dims().end() - 2); };
  std::vector<int64_t> batch;
  if (!broadcast_shape({lead(q), lead(k), lead(v)}, batch)) ctx.fail("batch dims of Q, K, V do not broadcast");
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
    if (!broadcast_shape({mask->dims(), score_dims}, md) || md != score_dims) ctx.fail("mask " + mask->shape_string() + " does not broadcast to the scores");
    mask_strides = broadcast_strides(mask->dims(), score_dims);
  }
  std::vector<int64_t> out_dims = batch;
  out_dims.push_back(s);
  out_dims.push_back(dv);
  HostTensor y(DType::F32, out_dims);
  int64_t batches = 1;
  for (int64_t b : batch) batches *= b;
  auto sq = broadcast_strides(lead(q), batch), sk = broadcast_strides(lead(k), batch), sv = broadcast_strides(lead(v), batch);
  const size_t nb = batch.size();
#pragma omp parallel for if (batches > 1)
  for (int64_t bi = 0; bi < batches; ++bi) {
    std::vector<float> scores(static_cast<size_t>(s * t));
    int64_t oq = 0, ok = 0, ov = 0, om = 0, r = bi;
    for (size_t i = nb; i-- > 0;) {
      int64_t c = r % batch[i];
      r /= batch[i];
      oq += c * sq[i];
      ok += c * sk[i];
      ov += c * sv[i];
      if (mask) om += c * mask_strides[i];
    }
    gemm_f32(false, true, s, t, d, scale, q.data<float>() + oq * s * d, k.data<float>() + ok * t * d, 0.0f, scores.data());
    for (int64_t i = 0; i < s; ++i) {
      float* row = scores.data() + i * t;
      if (mask)
        for (int64_t j = 0; j < t; ++j) row[j] += mask->data<float>()[om + i * mask_strides[nb] + j * mask_strides[nb + 1]];
      if (causal)
        for (int64_t j = i + (t - s) + 1; j < t; ++j) row[j] = -std::numeric_limits<float>::infinity();
      float mx = -std::numeric_limits<float>::infinity();
      for (int64_t j = 0; j < t; ++j) mx = std::max(mx, row[j]);
      float sum = 0;
      for (int64_t j = 0; j < t; ++j) {
        row[j] = std::exp(row[j] - mx);
        sum += row[j];
      }
      for (int64_t j = 0; j < t; ++j) row[j] /= sum;
    }
    gemm_f32(false, false, s, dv, t, 1.0f, scores.data(), v.data<float>() + ov * t * dv, 0.0f, y.mutable_data<float>() + bi * s * dv);
  }
  return y;
}

// input_layout BSND: Q, K, V and Y hold the sequence axis before the heads axis
// ([..., S, N, D]; in 3-D, [S, B*N, D]), as the exporter's head split left them.
// The attention is the same, over [..., N, S, D] (the mask broadcasts to [..., N, S, T]).
std::vector<int64_t> swap_sequence_and_heads(int64_t rank) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  for (int64_t i = 0; i < rank; ++i) perm[static_cast<size_t>(i)] = i;
  std::swap(perm[static_cast<size_t>(rank - 3)], perm[static_cast<size_t>(rank - 2)]);
  return perm;
}

void flash_attention(KernelContext& ctx) {
  const HostTensor* mask = ctx.has_input(3) ? &ctx.input(3) : nullptr;
  const std::string layout = ctx.attr_string("input_layout", "BNSD");
  if (layout == "BNSD") {
    ctx.outputs[0] = attention(ctx, ctx.input(0), ctx.input(1), ctx.input(2), mask);
    return;
  }
  if (layout != "BSND") ctx.fail("input_layout must be BNSD or BSND, not " + layout);
  for (int i = 0; i < 3; ++i)
    if (ctx.input(i).rank() < 3) ctx.fail("input_layout BSND needs Q, K and V of rank >= 3");
  auto heads_first = [&](int i) { return transpose(ctx.input(i), swap_sequence_and_heads(ctx.input(i).rank())); };
  HostTensor y = attention(ctx, heads_first(0), heads_first(1), heads_first(2), mask);
  ctx.outputs[0] = transpose(y, swap_sequence_and_heads(y.rank()));
}

// Residual + LayerNorm(attention) over the last axis: the seed's fused kernel
// (the Dropout between them is the identity at inference).
void flash_attention_layer_norm(KernelContext& ctx) {
  HostTensor a = attention(ctx, ctx.input(0), ctx.input(1), ctx.input(2), ctx.has_input(6) ? &ctx.input(6) : nullptr);
  HostTensor y = layer_norm_rows(ctx, a, -1, ctx.attr_float("epsilon", 1e-5f), ctx.input(3), ctx.has_input(4) ? &ctx.input(4) : nullptr);
  const HostTensor& residual = ctx.input(5);
  if (residual.dims() != y.dims() || residual.dtype() != DType::F32)
    ctx.fail("Residual " + residual.shape_string() + " must match the attention output " + y.shape_string());
  float* out = y.mutable_data<float>();
  const float* r = residual.data<float>();
  for (int64_t i = 0; i < y.size(); ++i) out[i] += r[i];
  ctx.outputs[0] = std::move(y);
}

// SiLU(X W1) * (X W3): LLaMA's gated MLP up to its down projection.
void swiglu(KernelContext& ctx) {
  HostTensor gate = matmul(ctx, ctx.input(0), ctx.input(1));
  HostTensor up = matmul(ctx, ctx.input(0), ctx.input(2));
  require_f32(ctx, gate);
  if (gate.dims() != up.dims()) ctx.fail("W1 and W3 give different shapes: " + gate.shape_string() + ", " + up.shape_string());
  float* g = gate.mutable_data<float>();
  const float* u = up.data<float>();
  for (int64_t i = 0; i < gate.size(); ++i) g[i] = g[i] / (1.0f + std::exp(-g[i])) * u[i];
  ctx.outputs[0] = std::move(gate);
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
  if (split < 0 || split > d) ctx.fail("split " + std::to_string(split) + " is outside the last axis (" + std::to_string(d) + ")");
  HostTensor rotated(DType::F32, x.dims());
  const float* px = x.data<float>();
  float* pr = rotated.mutable_data<float>();
  for (int64_t row = 0; row < x.size() / std::max<int64_t>(d, 1); ++row) {
    const float* in = px + row * d;
    float* out = pr + row * d;
    for (int64_t j = 0; j < d - split; ++j) out[j] = -in[split + j];
    for (int64_t j = 0; j < split; ++j) out[d - split + j] = in[j];
  }
  auto plan = plan_broadcast<3>(ctx, {&x, &cos, &sin});
  if (plan.dims != x.dims()) ctx.fail("Cos and Sin must broadcast to X " + x.shape_string());
  HostTensor y(DType::F32, x.dims());
  float* py = y.mutable_data<float>();
  const float* pc = cos.data<float>();
  const float* ps = sin.data<float>();
  apply_broadcast(plan, [&](int64_t, const int64_t* o) { py[o[0]] = px[o[0]] * pc[o[1]] + pr[o[0]] * ps[o[2]]; });
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_fused_kernels(KernelRegistry& r) {
  r.add(kGeoptDomain, "Gelu", gelu);
  r.add(kGeoptDomain, "Rsqrt", rsqrt);
  r.add(kGeoptDomain, "FusedMatMul", fused_matmul);
  r.add(kGeoptDomain, "FusedConv", fused_conv);
  r.add(kGeoptDomain, "FlashAttention", flash_attention);
  r.add(kGeoptDomain, "FlashAttentionLayerNorm", flash_attention_layer_norm);
  r.add(kGeoptDomain, "SwiGLU", swiglu);
  r.add(kGeoptDomain, "RotaryEmbedding", rotary_embedding);
  r.add(kGeoptDomain, "TransData", trans_data, /*half_via_f32=*/false);
}

}  // namespace geopt
