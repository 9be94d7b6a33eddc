// RNN, GRU and LSTM on oneDNN's RNN primitives (vanilla_rnn, gru, lbr_gru, lstm
// with peepholes), one unidirectional primitive per direction so that each
// direction writes its own slice of ONNX's [T, dirs, B, H] output.
//
// ONNX and oneDNN order the gates differently (LSTM: ONNX i, o, f, c and peepholes
// i, o, f; oneDNN i, f, c, o and peepholes i, f, o), and ONNX keeps the input and
// recurrent biases apart where oneDNN adds them. The weights are rewritten into
// oneDNN's order and then reordered into the layout its primitive chooses, once
// per model when they are constants.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "kernels/onednn.h"
#include "kernels/recurrent.h"

namespace geopt {
namespace {

using namespace dnnl;
using dt = memory::data_type;
using tag = memory::format_tag;

bool is_default(const std::vector<ActivationSpec>& acts, const std::vector<std::string>& names) {
  if (acts.size() != names.size()) return false;
  for (size_t i = 0; i < acts.size(); ++i)
    if (acts[i].name != names[i] || acts[i].has_alpha || acts[i].has_beta) return false;
  return true;
}

algorithm rnn_activation(const ActivationSpec& a) {
  if (a.name == "Relu") return algorithm::eltwise_relu;
  if (a.name == "Sigmoid") return algorithm::eltwise_logistic;
  return algorithm::eltwise_tanh;
}

// oneDNN's gate g takes ONNX's gate onnx_gate[g].
std::vector<int64_t> gate_order(const RecurrentProblem& p) {
  if (p.cell == Cell::Lstm) return {0, 2, 3, 1};  // i, f, c, o from i, o, f, c
  if (p.cell == Cell::Gru) return {0, 1, 2};      // u, r, o are z, r, h
  return {0};
}

struct RecurrentPlan {
  primitive_desc_base pd;
  dnnl::primitive kernel;
  memory::desc weights_layer, weights_iter, bias, peephole;
};

// The four weight tensors of one direction, in the primitive's layouts.
struct DirectionWeights {
  memory layer, iter, bias, peephole;
};

struct CachedWeights {
  std::vector<std::weak_ptr<const void>> owners;  // of W, R and the B and P present: the entry dies with any
  DirectionWeights weights;
};

struct RecurrentCache {
  std::mutex mutex;
  std::map<std::string, std::shared_ptr<RecurrentPlan>> plans;
  // By the addresses of W, R, B and P and what the primitive wants of them (the
  // direction, the cell, the weights' layouts): one copy per model and layout, not per
  // sequence length. Tensors of one model share one owner (a mapped file, a plan's weight
  // region), so the addresses, not the owners, tell two nodes' weights apart.
  std::map<std::string, CachedWeights> weights;
};

RecurrentCache& recurrent_cache() {
  static RecurrentCache cache;
  return cache;
}

memory::desc any_desc(const memory::dims& d) { return memory::desc(d, dt::f32, tag::any); }

std::shared_ptr<RecurrentPlan> make_plan(const RecurrentProblem& p, int d) {
  const int64_t T = p.steps, N = p.batch, I = p.input, H = p.hidden, G = p.gates;
  const bool lbr = p.cell == Cell::Gru && p.linear_before_reset;
  const rnn_direction dir = p.reverse_only || d == 1 ? rnn_direction::unidirectional_right2left
                                                     : rnn_direction::unidirectional_left2right;
  const memory::desc src_layer({T, N, I}, dt::f32, tag::tnc), dst_layer({T, N, H}, dt::f32, tag::tnc);
  const memory::desc state({1, 1, N, H}, dt::f32, tag::ldnc);
  const memory::desc wl = any_desc({1, 1, I, G, H}), wi = any_desc({1, 1, H, G, H});
  const memory::desc bias({1, 1, G + (lbr ? 1 : 0), H}, dt::f32, tag::ldgo);
  const memory::desc peep = p.peep ? memory::desc({1, 1, 3, H}, dt::f32, tag::ldgo) : memory::desc();
  primitive_attr attr;
  attr.set_scratchpad_mode(scratchpad_mode::user);
  engine& eng = cpu_engine();
  auto plan = std::make_shared<RecurrentPlan>();
  const prop_kind inference = prop_kind::forward_inference;
  // Every cell's primitive descriptor answers the same queries.
  auto adopt = [&](const auto& pd, dnnl::primitive kernel) {
    plan->pd = pd;
    plan->kernel = std::move(kernel);
    plan->weights_layer = pd.weights_layer_desc();
    plan->weights_iter = pd.weights_iter_desc();
  };
  if (p.cell == Cell::Lstm) {
    lstm_forward::desc desc(inference, dir, src_layer, state, state, wl, wi, peep, bias, dst_layer, state,
                            state);
    lstm_forward::primitive_desc pd(desc, attr, eng);
    adopt(pd, lstm_forward(pd));
    plan->peephole = pd.weights_peephole_desc();
  } else if (lbr) {
    lbr_gru_forward::desc desc(inference, dir, src_layer, state, wl, wi, bias, dst_layer, state);
    lbr_gru_forward::primitive_desc pd(desc, attr, eng);
    adopt(pd, lbr_gru_forward(pd));
  } else if (p.cell == Cell::Gru) {
    gru_forward::desc desc(inference, dir, src_layer, state, wl, wi, bias, dst_layer, state);
    gru_forward::primitive_desc pd(desc, attr, eng);
    adopt(pd, gru_forward(pd));
  } else {
    vanilla_rnn_forward::desc desc(inference, rnn_activation(p.activations[static_cast<size_t>(d)][0]), dir,
                                   src_layer, state, wl, wi, bias, dst_layer, state);
    vanilla_rnn_forward::primitive_desc pd(desc, attr, eng);
    adopt(pd, vanilla_rnn_forward(pd));
  }
  plan->bias = bias;
  return plan;
}

// Direction d's weights, gates in oneDNN's order, reordered into the plan's layouts.
DirectionWeights prepare_weights(const RecurrentProblem& p, int d, const RecurrentPlan& plan, stream& s) {
  const int64_t I = p.input, H = p.hidden, G = p.gates;
  const bool lbr = p.cell == Cell::Gru && p.linear_before_reset;
  const std::vector<int64_t> order = gate_order(p);
  engine& eng = cpu_engine();
  // ONNX's [G*H, K] rows are oneDNN's ldgoi layout once the gates are permuted.
  auto matrix = [&](const HostTensor& t, int64_t k, const memory::desc& want) {
    memory plain(memory::desc({1, 1, k, G, H}, dt::f32, tag::ldgoi), eng);
    const float* src = t.data<float>() + d * G * H * k;
    float* dst = static_cast<float*>(plain.get_data_handle());
    for (int64_t g = 0; g < G; ++g)
      std::copy_n(src + order[static_cast<size_t>(g)] * H * k, H * k, dst + g * H * k);
    if (want == plain.get_desc()) return plain;
    memory packed(want, eng);
    reorder(plain, packed).execute(s, plain, packed);
    return packed;
  };
  DirectionWeights out;
  out.layer = matrix(*p.w, I, plan.weights_layer);
  out.iter = matrix(*p.r, H, plan.weights_iter);
  out.bias = memory(plan.bias, eng);
  float* b = static_cast<float*>(out.bias.get_data_handle());
  std::fill_n(b, (G + (lbr ? 1 : 0)) * H, 0.0f);
  if (p.bias) {
    const float* wb = p.bias->data<float>() + d * 2 * G * H;
    const float* rb = wb + G * H;
    for (int64_t g = 0; g < G; ++g) {
      const int64_t from = order[static_cast<size_t>(g)] * H;
      // linear_before_reset keeps the candidate's recurrent bias inside r * (...).
      const bool split = lbr && g == 2;
      for (int64_t j = 0; j < H; ++j) b[g * H + j] = wb[from + j] + (split ? 0.0f : rb[from + j]);
    }
    if (lbr) std::copy_n(rb + 2 * H, H, b + 3 * H);
  }
  if (p.peep) {
    out.peephole = memory(plan.peephole, eng);
    const float* src = p.peep->data<float>() + d * 3 * H;
    float* dst = static_cast<float*>(out.peephole.get_data_handle());
    std::copy_n(src, H, dst);              // i
    std::copy_n(src + 2 * H, H, dst + H);  // f
    std::copy_n(src + H, H, dst + 2 * H);  // o
  }
  s.wait();
  return out;
}

bool all_constant(const RecurrentProblem& p) {
  return p.w->is_constant() && p.r->is_constant() && (!p.bias || p.bias->is_constant()) &&
         (!p.peep || p.peep->is_constant());
}

}  // namespace

bool recurrent_primitive_fits(const RecurrentProblem& p) {
  if (p.has_clip || p.input_forget) return false;
  if (p.steps == 0 || p.batch == 0 || p.hidden == 0 || p.input == 0) return false;
  for (int64_t len : p.lens)
    if (len != p.steps) return false;
  for (const auto& acts : p.activations) {
    if (p.cell == Cell::Lstm && !is_default(acts, {"Sigmoid", "Tanh", "Tanh"})) return false;
    if (p.cell == Cell::Gru && !is_default(acts, {"Sigmoid", "Tanh"})) return false;
    if (p.cell == Cell::Rnn &&
        !(is_default(acts, {"Tanh"}) || is_default(acts, {"Relu"}) || is_default(acts, {"Sigmoid"})))
      return false;
  }
  return true;
}

RecurrentResult run_recurrent_primitive(const RecurrentProblem& p) {
  const int64_t T = p.steps, N = p.batch, H = p.hidden;
  const int dirs = p.dirs;
  const bool lstm = p.cell == Cell::Lstm;
  engine& eng = cpu_engine();
  thread_local stream s(eng);
  RecurrentResult out{HostTensor::uninitialized(DType::F32, {T, dirs, N, H}),
                      HostTensor::uninitialized(DType::F32, {dirs, N, H}),
                      HostTensor::uninitialized(DType::F32, {dirs, N, H})};
  RecurrentCache& cache = recurrent_cache();
  const bool cacheable = all_constant(p);
  for (int d = 0; d < dirs; ++d) {
    std::ostringstream key_stream;
    key_stream << static_cast<int>(p.cell) << ',' << p.linear_before_reset << ','
               << p.activations[static_cast<size_t>(d)][0].name << ',' << (p.reverse_only || d == 1) << ','
               << (p.peep != nullptr) << ';' << T << ',' << N << ',' << p.input << ',' << H;
    const std::string key = key_stream.str();
    std::shared_ptr<RecurrentPlan> plan;
    {
      std::lock_guard lock(cache.mutex);
      auto& slot = cache.plans[key];
      if (!slot) slot = make_plan(p, d);
      plan = slot;
    }
    DirectionWeights weights;
    if (cacheable) {
      std::lock_guard lock(cache.mutex);
      std::vector<std::shared_ptr<const void>> live{p.w->storage(), p.r->storage()};  // the present ones only
      if (p.bias) live.push_back(p.bias->storage());
      if (p.peep) live.push_back(p.peep->storage());
      std::ostringstream weight_key;
      weight_key << static_cast<const void*>(p.w->raw()) << ',' << static_cast<const void*>(p.r->raw()) << ','
                 << static_cast<const void*>(p.bias ? p.bias->raw() : nullptr) << ','
                 << static_cast<const void*>(p.peep ? p.peep->raw() : nullptr) << ';' << d << ','
                 << static_cast<int>(p.cell) << ',' << p.linear_before_reset << ';';
      const std::string wkey =
          weight_key.str() + desc_bytes(plan->weights_layer) + desc_bytes(plan->weights_iter);
      auto it = cache.weights.find(wkey);
      bool hit = it != cache.weights.end() && it->second.owners.size() == live.size();
      for (size_t i = 0; hit && i < live.size(); ++i) hit = it->second.owners[i].lock() == live[i];
      if (!hit) {
        std::erase_if(cache.weights, [](const auto& kv) {
          return std::any_of(kv.second.owners.begin(), kv.second.owners.end(),
                             [](const auto& o) { return o.expired(); });
        });
        CachedWeights fresh{{live.begin(), live.end()}, prepare_weights(p, d, *plan, s)};
        it = cache.weights.insert_or_assign(wkey, fresh).first;
      }
      weights = it->second.weights;
    } else {
      weights = prepare_weights(p, d, *plan, s);
    }
    // States in, one direction's slice; outputs into buffers of this direction.
    HostTensor h0(DType::F32, {1, 1, N, H}), c0(DType::F32, {1, 1, N, H});
    std::copy_n(p.h0.data<float>() + d * N * H, N * H, h0.mutable_data<float>());
    if (lstm) std::copy_n(p.c0.data<float>() + d * N * H, N * H, c0.mutable_data<float>());
    HostTensor y = HostTensor::uninitialized(DType::F32, {T, N, H});
    const memory::desc state({1, 1, N, H}, dt::f32, tag::ldnc);
    float* yh = out.yh.mutable_data<float>() + d * N * H;
    float* yc = out.yc.mutable_data<float>() + d * N * H;
    std::unordered_map<int, memory> args{
        {DNNL_ARG_SRC_LAYER,
         memory(memory::desc({T, N, p.input}, dt::f32, tag::tnc), eng, const_cast<std::byte*>(p.x.raw()))},
        {DNNL_ARG_SRC_ITER, memory(state, eng, h0.mutable_raw())},
        {DNNL_ARG_WEIGHTS_LAYER, weights.layer},
        {DNNL_ARG_WEIGHTS_ITER, weights.iter},
        {DNNL_ARG_BIAS, weights.bias},
        {DNNL_ARG_DST_LAYER, memory(memory::desc({T, N, H}, dt::f32, tag::tnc), eng, y.mutable_raw())},
        {DNNL_ARG_DST_ITER, memory(state, eng, yh)},
        {DNNL_ARG_SCRATCHPAD, thread_scratchpad(plan->pd.query_md(query::scratchpad_md))}};
    if (lstm) {
      args[DNNL_ARG_SRC_ITER_C] = memory(state, eng, c0.mutable_raw());
      args[DNNL_ARG_DST_ITER_C] = memory(state, eng, yc);
    }
    if (p.peep) args[DNNL_ARG_WEIGHTS_PEEPHOLE] = weights.peephole;
    plan->kernel.execute(s, args);
    s.wait();
    const float* py = y.data<float>();
    float* dst = out.y.mutable_data<float>();
    for (int64_t t = 0; t < T; ++t) std::copy_n(py + t * N * H, N * H, dst + (t * dirs + d) * N * H);
  }
  if (!lstm) out.yc = HostTensor();
  return out;
}

}  // namespace geopt
