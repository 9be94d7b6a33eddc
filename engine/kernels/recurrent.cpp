// Recurrent kernels: ONNX's RNN, GRU and LSTM (forward, reverse or bidirectional;
// batch-first or sequence-first layout; per-entry sequence lengths; initial states;
// clipped gates; any of ONNX's activation functions; LSTM peepholes and coupled
// input-forget gates). The input projections of all steps are one GEMM per
// direction; each step adds the recurrent GEMM.
#include <algorithm>
#include <cmath>
#include <functional>

#include "eval/kernel.h"
#include "kernels/layout.h"
#include "kernels/linalg.h"

namespace geopt {
namespace {

using Activation = std::function<float(float)>;

Activation make_activation(const KernelContext& ctx, const std::string& name, float alpha, float beta, bool has_alpha, bool has_beta) {
  auto a = [&](float d) { return has_alpha ? alpha : d; };
  auto b = [&](float d) { return has_beta ? beta : d; };
  if (name == "Sigmoid") return [](float x) { return 1.0f / (1.0f + std::exp(-x)); };
  if (name == "Tanh") return [](float x) { return std::tanh(x); };
  if (name == "Relu") return [](float x) { return std::max(x, 0.0f); };
  if (name == "Affine") return [al = a(1.0f), be = b(0.0f)](float x) { return al * x + be; };
  if (name == "LeakyRelu") return [al = a(0.01f)](float x) { return x >= 0 ? x : al * x; };
  if (name == "ThresholdedRelu") return [al = a(1.0f)](float x) { return x > al ? x : 0.0f; };
  if (name == "ScaledTanh") return [al = a(1.0f), be = b(1.0f)](float x) { return al * std::tanh(be * x); };
  if (name == "HardSigmoid") return [al = a(0.2f), be = b(0.5f)](float x) { return std::clamp(al * x + be, 0.0f, 1.0f); };
  if (name == "Elu") return [al = a(1.0f)](float x) { return x >= 0 ? x : al * (std::exp(x) - 1.0f); };
  if (name == "Softsign") return [](float x) { return x / (1.0f + std::fabs(x)); };
  if (name == "Softplus") return [](float x) { return std::log1p(std::exp(x)); };
  ctx.fail("unknown activation '" + name + "'");
}

enum class Cell { Rnn, Gru, Lstm };

struct RecurrentSpec {
  Cell cell;
  int gates;
  std::vector<std::string> default_activations;  // per direction
};

// The activations of direction d (the list names every direction's in turn).
std::vector<Activation> activations_of(const KernelContext& ctx, const RecurrentSpec& spec, int directions, int d) {
  const size_t per = spec.default_activations.size();
  std::vector<std::string> names;
  for (const auto& s : ctx.node().attr("activations") ? ctx.node().attr("activations")->strings : std::vector<std::string>{}) names.push_back(s);
  if (names.empty())
    for (int k = 0; k < directions; ++k) names.insert(names.end(), spec.default_activations.begin(), spec.default_activations.end());
  if (names.size() == per && directions == 2) names.insert(names.end(), names.begin(), names.end());
  if (names.size() != per * static_cast<size_t>(directions))
    ctx.fail("activations must name " + std::to_string(per) + " functions per direction");
  const auto alphas = ctx.attr_floats("activation_alpha"), betas = ctx.attr_floats("activation_beta");
  std::vector<Activation> out;
  for (size_t k = 0; k < per; ++k) {
    const size_t i = static_cast<size_t>(d) * per + k;
    out.push_back(make_activation(ctx, names[i], i < alphas.size() ? alphas[i] : 0.0f, i < betas.size() ? betas[i] : 0.0f,
                                  i < alphas.size(), i < betas.size()));
  }
  return out;
}

void recurrent(KernelContext& ctx, const RecurrentSpec& spec) {
  const HostTensor& x_in = ctx.input(0);
  const HostTensor& w = ctx.input(1);
  const HostTensor& r = ctx.input(2);
  if (x_in.dtype() != DType::F32) ctx.fail("runs on f32");
  if (x_in.rank() != 3 || w.rank() != 3 || r.rank() != 3) ctx.fail("X, W and R must be 3-D");
  const bool batch_first = ctx.attr_int("layout", 0) != 0;
  const std::string direction = ctx.attr_string("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") ctx.fail("unknown direction '" + direction + "'");
  const int dirs = direction == "bidirectional" ? 2 : 1;
  // Work sequence-first: X [T, B, I].
  const HostTensor x = batch_first ? transpose(x_in, {1, 0, 2}) : x_in;
  const int64_t steps = x.dims()[0], batch = x.dims()[1], input = x.dims()[2];
  const int64_t hidden = ctx.has_attr("hidden_size") ? ctx.attr_int("hidden_size", 0) : r.dims()[2];
  const int64_t g = spec.gates, gh = g * hidden;
  if (w.dims() != std::vector<int64_t>{dirs, gh, input}) ctx.fail("W must be [" + std::to_string(dirs) + ", " + std::to_string(gh) + ", " + std::to_string(input) + "], not " + w.shape_string());
  if (r.dims() != std::vector<int64_t>{dirs, gh, hidden}) ctx.fail("R must be [" + std::to_string(dirs) + ", " + std::to_string(gh) + ", " + std::to_string(hidden) + "], not " + r.shape_string());
  const HostTensor* bias = ctx.has_input(3) && ctx.input(3).size() ? &ctx.input(3) : nullptr;
  if (bias && bias->dims() != std::vector<int64_t>{dirs, 2 * gh}) ctx.fail("B must be [directions, 2 * gates * hidden]");
  std::vector<int64_t> lens(static_cast<size_t>(batch), steps);
  if (ctx.has_input(4) && ctx.input(4).size()) {
    if (ctx.input(4).size() != batch) ctx.fail("sequence_lens needs one entry per batch entry");
    for (int64_t b = 0; b < batch; ++b) {
      lens[static_cast<size_t>(b)] = ctx.input(4).int_at(b);
      if (lens[static_cast<size_t>(b)] < 0 || lens[static_cast<size_t>(b)] > steps) ctx.fail("a sequence length is out of range");
    }
  }
  // States come [dirs, B, H] (sequence-first) or [B, dirs, H] (batch-first).
  auto state_input = [&](size_t i) -> HostTensor {
    if (!ctx.has_input(i) || !ctx.input(i).size()) return HostTensor(DType::F32, {dirs, batch, hidden});
    const HostTensor& s = ctx.input(i);
    HostTensor t = batch_first ? transpose(s, {1, 0, 2}) : s.clone();
    if (t.dims() != std::vector<int64_t>{dirs, batch, hidden}) ctx.fail("an initial state has shape " + s.shape_string());
    return t;
  };
  const bool lstm = spec.cell == Cell::Lstm;
  HostTensor h0 = state_input(5);
  HostTensor c0 = lstm ? state_input(6) : HostTensor();
  const HostTensor* peep = lstm && ctx.has_input(7) && ctx.input(7).size() ? &ctx.input(7) : nullptr;
  if (peep && peep->dims() != std::vector<int64_t>{dirs, 3 * hidden}) ctx.fail("P must be [directions, 3 * hidden]");
  const bool has_clip = ctx.has_attr("clip");
  const float clip = ctx.attr_float("clip", 0.0f);
  if (has_clip && !(clip >= 0.0f)) ctx.fail("clip must not be negative");
  const bool linear_before_reset = ctx.attr_int("linear_before_reset", 0) != 0;
  const bool input_forget = ctx.attr_int("input_forget", 0) != 0;

  HostTensor y(DType::F32, {steps, dirs, batch, hidden});
  HostTensor yh(DType::F32, {dirs, batch, hidden}), yc(DType::F32, {dirs, batch, hidden});
  float* py = y.mutable_data<float>();
  std::vector<float> xw(static_cast<size_t>(steps * batch * gh)), hr(static_cast<size_t>(batch * gh));
  std::vector<float> h(static_cast<size_t>(batch * hidden)), c(static_cast<size_t>(batch * hidden)), rh(static_cast<size_t>(batch * hidden));
  auto clipped = [&](float v) { return has_clip ? std::clamp(v, -clip, clip) : v; };
  for (int d = 0; d < dirs; ++d) {
    const bool reverse = direction == "reverse" || d == 1;
    const auto act = activations_of(ctx, spec, dirs, d);
    const float* wd = w.data<float>() + d * gh * input;
    const float* rd = r.data<float>() + d * gh * hidden;
    const float* wb = bias ? bias->data<float>() + d * 2 * gh : nullptr;
    const float* rb = bias ? wb + gh : nullptr;
    const float* pd = peep ? peep->data<float>() + d * 3 * hidden : nullptr;
    // X W^T for every step at once.
    gemm_f32(false, true, steps * batch, gh, input, 1.0f, x.data<float>(), wd, 0.0f, xw.data());
    std::copy_n(h0.data<float>() + d * batch * hidden, batch * hidden, h.begin());
    if (lstm) std::copy_n(c0.data<float>() + d * batch * hidden, batch * hidden, c.begin());
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
        if (spec.cell == Cell::Rnn) {
          for (int64_t j = 0; j < hidden; ++j) hb[j] = act[0](clipped(pre(0, j)));
        } else if (spec.cell == Cell::Gru) {  // gates z, r, h
          std::vector<float> z(static_cast<size_t>(hidden)), rr(static_cast<size_t>(hidden)), hh(static_cast<size_t>(hidden));
          for (int64_t j = 0; j < hidden; ++j) {
            z[static_cast<size_t>(j)] = act[0](clipped(pre(0, j)));
            rr[static_cast<size_t>(j)] = act[0](clipped(pre(1, j)));
          }
          if (linear_before_reset) {
            for (int64_t j = 0; j < hidden; ++j) {
              const int64_t k = 2 * hidden + j;
              const float rec = gr[k] + (rb ? rb[k] : 0.0f);
              hh[static_cast<size_t>(j)] = act[1](clipped(gx[k] + (wb ? wb[k] : 0.0f) + rr[static_cast<size_t>(j)] * rec));
            }
          } else {
            for (int64_t j = 0; j < hidden; ++j) rh[static_cast<size_t>(j)] = rr[static_cast<size_t>(j)] * hb[j];
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
            const float f_gate = input_forget ? 1.0f - i_gate : act[0](clipped(pre(2, j) + (pd ? pd[2 * hidden + j] * c_prev : 0.0f)));
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
    std::copy_n(h.begin(), batch * hidden, yh.mutable_data<float>() + d * batch * hidden);
    if (lstm) std::copy_n(c.begin(), batch * hidden, yc.mutable_data<float>() + d * batch * hidden);
  }
  if (batch_first) {
    y = transpose(y, {2, 0, 1, 3});  // [B, T, dirs, H]
    yh = transpose(yh, {1, 0, 2});
    if (lstm) yc = transpose(yc, {1, 0, 2});
  }
  ctx.outputs[0] = std::move(y);
  if (ctx.outputs.size() > 1) ctx.outputs[1] = std::move(yh);
  if (lstm && ctx.outputs.size() > 2) ctx.outputs[2] = std::move(yc);
}

}  // namespace

void register_recurrent_kernels(KernelRegistry& r) {
  r.add("", "RNN", [](KernelContext& ctx) { recurrent(ctx, {Cell::Rnn, 1, {"Tanh"}}); });
  r.add("", "GRU", [](KernelContext& ctx) { recurrent(ctx, {Cell::Gru, 3, {"Sigmoid", "Tanh"}}); });
  r.add("", "LSTM", [](KernelContext& ctx) { recurrent(ctx, {Cell::Lstm, 4, {"Sigmoid", "Tanh", "Tanh"}}); });
}

}  // namespace geopt
