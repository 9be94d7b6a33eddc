// Recurrent kernels: ONNX's RNN, GRU and LSTM (forward, reverse or bidirectional;
// batch-first or sequence-first layout; per-entry sequence lengths; initial states;
// clipped gates; any of ONNX's activation functions; LSTM peepholes and coupled
// input-forget gates). Nodes whose attributes oneDNN's RNN primitives cover run on
// them (recurrent_primitive.cpp); the rest run the loop here, where the input
// projections of all steps are one GEMM per direction and each step adds the
// recurrent GEMM.
#include "kernels/recurrent.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

#include <spdlog/spdlog.h>
#include <limits>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <string_view>

#include "kernels/layout.h"
#include "kernels/linalg.h"

namespace geopt {
namespace {

using Activation = std::function<float(float)>;

// An activation's alpha or beta: as the node gives it, else (NaN) the activation's default.
float given_or(float value, float fallback) { return std::isnan(value) ? fallback : value; }

// ONNX's recurrent activations by name, from the node's alpha and beta (NaN where unset).
Activation make_activation(const KernelContext& ctx, const ActivationSpec& spec) {
  using Factory = Activation (*)(float alpha, float beta);
  static const std::map<std::string_view, Factory> kFactories = {
      {"Sigmoid",
       [](float, float) -> Activation { return [](float x) { return 1.0f / (1.0f + std::exp(-x)); }; }},
      {"Tanh", [](float, float) -> Activation { return [](float x) { return std::tanh(x); }; }},
      {"Relu", [](float, float) -> Activation { return [](float x) { return std::max(x, 0.0f); }; }},
      {"Affine",
       [](float a, float b) -> Activation {
         return [al = given_or(a, 1.0f), be = given_or(b, 0.0f)](float x) { return al * x + be; };
       }},
      {"LeakyRelu",
       [](float a, float) -> Activation {
         return [al = given_or(a, 0.01f)](float x) { return x >= 0 ? x : al * x; };
       }},
      {"ThresholdedRelu",
       [](float a, float) -> Activation {
         return [al = given_or(a, 1.0f)](float x) { return x > al ? x : 0.0f; };
       }},
      {"ScaledTanh",
       [](float a, float b) -> Activation {
         return [al = given_or(a, 1.0f), be = given_or(b, 1.0f)](float x) { return al * std::tanh(be * x); };
       }},
      {"HardSigmoid",
       [](float a, float b) -> Activation {
         return [al = given_or(a, 0.2f), be = given_or(b, 0.5f)](float x) {
           return std::clamp(al * x + be, 0.0f, 1.0f);
         };
       }},
      {"Elu",
       [](float a, float) -> Activation {
         return [al = given_or(a, 1.0f)](float x) { return x >= 0 ? x : al * (std::exp(x) - 1.0f); };
       }},
      {"Softsign",
       [](float, float) -> Activation { return [](float x) { return x / (1.0f + std::fabs(x)); }; }},
      {"Softplus",
       [](float, float) -> Activation { return [](float x) { return std::log1p(std::exp(x)); }; }}};
  auto it = kFactories.find(spec.name);
  if (it == kFactories.end()) ctx.fail("unknown activation '" + spec.name + "'");
  const float unset = std::numeric_limits<float>::quiet_NaN();
  return it->second(spec.has_alpha ? spec.alpha : unset, spec.has_beta ? spec.beta : unset);
}

struct RecurrentSpec {
  Cell cell;
  int gates;
  std::vector<std::string> default_activations;  // per direction
};

// The activations of direction d (the list names every direction's in turn).
std::vector<ActivationSpec> activations_of(const KernelContext& ctx, const RecurrentSpec& spec,
                                           int directions, int d) {
  const size_t per = spec.default_activations.size();
  std::vector<std::string> names;
  for (const auto& s :
       ctx.node().attr("activations") ? ctx.node().attr("activations")->strings : std::vector<std::string>{})
    names.push_back(s);
  if (names.empty())
    for (int k = 0; k < directions; ++k)
      names.insert(names.end(), spec.default_activations.begin(), spec.default_activations.end());
  if (names.size() == per && directions == 2) {  // one direction's list serves both
    const std::vector<std::string> once = names;
    names.insert(names.end(), once.begin(), once.end());
  }
  if (names.size() != per * static_cast<size_t>(directions))
    ctx.fail("activations must name " + std::to_string(per) + " functions per direction");
  const auto alphas = ctx.attr_floats("activation_alpha"), betas = ctx.attr_floats("activation_beta");
  std::vector<ActivationSpec> out;
  for (size_t k = 0; k < per; ++k) {
    const size_t i = static_cast<size_t>(d) * per + k;
    ActivationSpec a{names[i], i < alphas.size() ? alphas[i] : 0.0f, i < betas.size() ? betas[i] : 0.0f,
                     i < alphas.size(), i < betas.size()};
    make_activation(ctx, a);  // an unknown name fails here, whichever path runs
    out.push_back(std::move(a));
  }
  return out;
}

RecurrentProblem problem_of(const KernelContext& ctx, const RecurrentSpec& spec) {
  RecurrentProblem p;
  p.cell = spec.cell;
  p.gates = spec.gates;
  const HostTensor& x_in = ctx.input(0);
  p.w = &ctx.input(1);
  p.r = &ctx.input(2);
  const HostTensor &w = *p.w, &r = *p.r;
  if (x_in.dtype() != DType::F32 || w.dtype() != DType::F32 || r.dtype() != DType::F32)
    ctx.fail("runs on f32");
  if (x_in.rank() != 3 || w.rank() != 3 || r.rank() != 3) ctx.fail("X, W and R must be 3-D");
  const bool batch_first = ctx.attr_int("layout", 0) != 0;
  const std::string direction = ctx.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    ctx.fail("unknown direction '" + direction + "'");
  p.dirs = direction == "bidirectional" ? 2 : 1;
  p.reverse_only = direction == "reverse";
  const int dirs = p.dirs;
  p.x = batch_first ? transpose(x_in, {1, 0, 2}) : x_in;
  p.steps = p.x.dims()[0];
  p.batch = p.x.dims()[1];
  p.input = p.x.dims()[2];
  p.hidden = ctx.has_attr("hidden_size") ? ctx.attr_int("hidden_size", 0) : r.dims()[2];
  const int64_t batch = p.batch, hidden = p.hidden, gh = p.gates * hidden;
  if (w.dims() != std::vector<int64_t>{dirs, gh, p.input})
    ctx.fail("W must be [" + std::to_string(dirs) + ", " + std::to_string(gh) + ", " +
             std::to_string(p.input) + "], not " + w.shape_string());
  if (r.dims() != std::vector<int64_t>{dirs, gh, hidden})
    ctx.fail("R must be [" + std::to_string(dirs) + ", " + std::to_string(gh) + ", " +
             std::to_string(hidden) + "], not " + r.shape_string());
  p.bias = ctx.has_input(3) && ctx.input(3).size() ? &ctx.input(3) : nullptr;
  if (p.bias && (p.bias->dtype() != DType::F32 || p.bias->dims() != std::vector<int64_t>{dirs, 2 * gh}))
    ctx.fail("B must be f32 [directions, 2 * gates * hidden]");
  p.lens.assign(static_cast<size_t>(batch), p.steps);
  if (ctx.has_input(4) && ctx.input(4).size()) {
    if (ctx.input(4).size() != batch) ctx.fail("sequence_lens needs one entry per batch entry");
    for (int64_t b = 0; b < batch; ++b) {
      p.lens[static_cast<size_t>(b)] = ctx.input(4).int_at(b);
      if (p.lens[static_cast<size_t>(b)] < 0 || p.lens[static_cast<size_t>(b)] > p.steps)
        ctx.fail("a sequence length is out of range");
    }
  }
  // States come [dirs, B, H] (sequence-first) or [B, dirs, H] (batch-first).
  auto state_input = [&](size_t i) -> HostTensor {
    if (!ctx.has_input(i) || !ctx.input(i).size()) return HostTensor(DType::F32, {dirs, batch, hidden});
    const HostTensor& s = ctx.input(i);
    if (s.dtype() != DType::F32) ctx.fail("an initial state must be f32");
    HostTensor t = batch_first ? transpose(s, {1, 0, 2}) : s.clone();
    if (t.dims() != std::vector<int64_t>{dirs, batch, hidden})
      ctx.fail("an initial state has shape " + s.shape_string());
    return t;
  };
  const bool lstm = spec.cell == Cell::Lstm;
  p.h0 = state_input(5);
  if (lstm) p.c0 = state_input(6);
  p.peep = lstm && ctx.has_input(7) && ctx.input(7).size() ? &ctx.input(7) : nullptr;
  if (p.peep && (p.peep->dtype() != DType::F32 || p.peep->dims() != std::vector<int64_t>{dirs, 3 * hidden}))
    ctx.fail("P must be f32 [directions, 3 * hidden]");
  p.has_clip = ctx.has_attr("clip");
  p.clip = ctx.attr_float("clip", 0.0f);
  if (p.has_clip && !(p.clip >= 0.0f)) ctx.fail("clip must not be negative");
  p.linear_before_reset = ctx.attr_int("linear_before_reset", 0) != 0;
  p.input_forget = ctx.attr_int("input_forget", 0) != 0;
  for (int d = 0; d < dirs; ++d) p.activations.push_back(activations_of(ctx, spec, dirs, d));
  return p;
}

// The general path: every attribute ONNX defines, one step at a time.
RecurrentResult run_recurrent_loop(const KernelContext& ctx, const RecurrentProblem& p) {
  const int dirs = p.dirs;
  const int64_t steps = p.steps, batch = p.batch, input = p.input, hidden = p.hidden, gh = p.gates * hidden;
  const bool lstm = p.cell == Cell::Lstm;
  const bool has_clip = p.has_clip, linear_before_reset = p.linear_before_reset,
             input_forget = p.input_forget;
  const float clip = p.clip;
  const std::vector<int64_t>& lens = p.lens;
  RecurrentResult out{HostTensor(DType::F32, {steps, dirs, batch, hidden}),
                      HostTensor(DType::F32, {dirs, batch, hidden}),
                      HostTensor(DType::F32, {dirs, batch, hidden})};
  float* py = out.y.mutable_data<float>();
  std::vector<float> xw(static_cast<size_t>(steps * batch * gh)), hr(static_cast<size_t>(batch * gh));
  std::vector<float> h(static_cast<size_t>(batch * hidden)), c(static_cast<size_t>(batch * hidden)),
      rh(static_cast<size_t>(batch * hidden));
  auto clipped = [&](float v) { return has_clip ? std::clamp(v, -clip, clip) : v; };
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = p.reverse_only || d == 1;
    std::vector<Activation> act;
    for (const auto& a : p.activations[static_cast<size_t>(d)]) act.push_back(make_activation(ctx, a));
    const float* wd = p.w->data<float>() + d * gh * input;
    const float* rd = p.r->data<float>() + d * gh * hidden;
    const float* wb = p.bias ? p.bias->data<float>() + d * 2 * gh : nullptr;
    const float* rb = p.bias ? wb + gh : nullptr;
    const float* pd = p.peep ? p.peep->data<float>() + d * 3 * hidden : nullptr;
    // X W^T for every step at once.
    gemm_f32(false, true, steps * batch, gh, input, 1.0f, p.x.data<float>(), wd, 0.0f, xw.data());
    std::copy_n(p.h0.data<float>() + d * batch * hidden, batch * hidden, h.begin());
    if (lstm) std::copy_n(p.c0.data<float>() + d * batch * hidden, batch * hidden, c.begin());
    for (int64_t s = 0; s < steps; ++s) {
      gemm_f32(false, true, batch, gh, hidden, 1.0f, h.data(), rd, 0.0f, hr.data());
      for (int64_t b = 0; b < batch; ++b) {
        const int64_t len = lens[static_cast<size_t>(b)];
        if (s >= len) continue;  // past this entry's end: its state stays, its outputs stay 0
        const int64_t t = reverse ? len - 1 - s : s;
        const float* gx = xw.data() + (t * batch + b) * gh;
        const float* gr = hr.data() + b * gh;
        float* hb = h.data() + b * hidden;
        float* cb = c.data() + b * hidden;
        auto pre = [&](int64_t gate, int64_t j) {
          const int64_t k = gate * hidden + j;
          return gx[k] + gr[k] + (wb ? wb[k] + rb[k] : 0.0f);
        };
        if (p.cell == Cell::Rnn) {
          for (int64_t j = 0; j < hidden; ++j) hb[j] = act[0](clipped(pre(0, j)));
        } else if (p.cell == Cell::Gru) {  // gates z, r, h
          std::vector<float> z(static_cast<size_t>(hidden)), rr(static_cast<size_t>(hidden)),
              hh(static_cast<size_t>(hidden));
          for (int64_t j = 0; j < hidden; ++j) {
            z[static_cast<size_t>(j)] = act[0](clipped(pre(0, j)));
            rr[static_cast<size_t>(j)] = act[0](clipped(pre(1, j)));
          }
          if (linear_before_reset) {
            for (int64_t j = 0; j < hidden; ++j) {
              const int64_t k = 2 * hidden + j;
              const float rec = gr[k] + (rb ? rb[k] : 0.0f);
              hh[static_cast<size_t>(j)] =
                  act[1](clipped(gx[k] + (wb ? wb[k] : 0.0f) + rr[static_cast<size_t>(j)] * rec));
            }
          } else {
            for (int64_t j = 0; j < hidden; ++j)
              rh[static_cast<size_t>(j)] = rr[static_cast<size_t>(j)] * hb[j];
            for (int64_t j = 0; j < hidden; ++j) {
              const int64_t k = 2 * hidden + j;
              float rec = 0;
              const float* row = rd + k * hidden;
              for (int64_t q = 0; q < hidden; ++q) rec += rh[static_cast<size_t>(q)] * row[q];
              hh[static_cast<size_t>(j)] = act[1](clipped(gx[k] + rec + (wb ? wb[k] + rb[k] : 0.0f)));
            }
          }
          for (int64_t j = 0; j < hidden; ++j) {
            const float zj = z[static_cast<size_t>(j)];
            hb[j] = (1.0f - zj) * hh[static_cast<size_t>(j)] + zj * hb[j];
          }
        } else {  // LSTM gates i, o, f, c; peepholes i, o, f
          for (int64_t j = 0; j < hidden; ++j) {
            const float c_prev = cb[j];
            const float i_gate = act[0](clipped(pre(0, j) + (pd ? pd[j] * c_prev : 0.0f)));
            const float f_gate = input_forget
                                     ? 1.0f - i_gate
                                     : act[0](clipped(pre(2, j) + (pd ? pd[2 * hidden + j] * c_prev : 0.0f)));
            const float cand = act[1](clipped(pre(3, j)));
            const float c_new = f_gate * c_prev + i_gate * cand;
            const float o_gate = act[0](clipped(pre(1, j) + (pd ? pd[hidden + j] * c_new : 0.0f)));
            cb[j] = c_new;
            hb[j] = o_gate * act[2](c_new);
          }
        }
        std::copy_n(hb, hidden, py + ((t * dirs + d) * batch + b) * hidden);
      }
    }
    std::copy_n(h.begin(), batch * hidden, out.yh.mutable_data<float>() + d * batch * hidden);
    if (lstm) std::copy_n(c.begin(), batch * hidden, out.yc.mutable_data<float>() + d * batch * hidden);
  }
  return out;
}

void recurrent(KernelContext& ctx, const RecurrentSpec& spec) {
  const RecurrentProblem p = problem_of(ctx, spec);
  std::optional<RecurrentResult> fast;
  if (recurrent_primitive_fits(p)) {
    try {
      fast = run_recurrent_primitive(p);
    } catch (const dnnl::error&
                 e) {  // a problem this oneDNN build has no implementation for: the loop computes it
      spdlog::debug("{}: oneDNN's RNN primitive failed ({}); running the step loop", ctx.node().describe(),
                    e.what());
    }
  }
  RecurrentResult out = fast ? std::move(*fast) : run_recurrent_loop(ctx, p);
  const bool lstm = spec.cell == Cell::Lstm;
  if (ctx.attr_int("layout", 0) != 0) {
    out.y = transpose(out.y, {2, 0, 1, 3});  // [B, T, dirs, H]
    out.yh = transpose(out.yh, {1, 0, 2});
    if (lstm) out.yc = transpose(out.yc, {1, 0, 2});
  }
  ctx.outputs[0] = std::move(out.y);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(out.yh);
  if (lstm && ctx.outputs.size() > 2) ctx.outputs[2] = std::move(out.yc);
}

}  // namespace

void register_recurrent_kernels(OpRegistry& r) {
  r.add("", "RNN", [](KernelContext& ctx) { recurrent(ctx, {Cell::Rnn, 1, {"Tanh"}}); });
  r.add("", "GRU", [](KernelContext& ctx) { recurrent(ctx, {Cell::Gru, 3, {"Sigmoid", "Tanh"}}); });
  r.add("", "LSTM", [](KernelContext& ctx) { recurrent(ctx, {Cell::Lstm, 4, {"Sigmoid", "Tanh", "Tanh"}}); });
}

}  // namespace geopt
