#include "eval/evaluator.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include <onnx/onnx_pb.h>

#include "eval/kernel_call.h"
#include "eval/kernel_implementation.h"
#include "ir/domain.h"
#include "kernels/cast.h"
#include "kernels/dispatch.h"
#include "util/error.h"

namespace geopt {

namespace {

// Ops without a kernel in a control-flow body and the bodies nested in it.
void missing_in_body(const onnx::GraphProto& g, const OpRegistry& kernels, const std::string& holder,
                     std::set<std::string>& missing) {
  for (const auto& n : g.node()) {
    const std::string domain = canonical_domain(n.domain());
    if (!kernels.find(domain, n.op_type()))
      missing.insert((domain.empty() ? "" : domain + "::") + n.op_type() + " (in a body of " + holder + ")");
    for (const auto& a : n.attribute()) {
      if (a.has_g()) missing_in_body(a.g(), kernels, holder, missing);
      for (const auto& sub : a.graphs()) missing_in_body(sub, kernels, holder, missing);
    }
  }
}

}  // namespace

Evaluator::Evaluator(const Model& model, const OpRegistry& kernels) : model_(model), kernels_(kernels) {
  std::set<std::string> missing;
  for (const auto& n : model.graph->nodes()) {
    const KernelInfo* k = kernels.find(n->domain, n->op_type);
    if (!k)
      missing.insert((n->domain.empty() ? "" : n->domain + "::") + n->op_type + " (e.g. " + n->describe() +
                     ")");
    for (const auto& a : n->attributes)
      if (a.kind == AttrKind::Graph || a.kind == AttrKind::Graphs)
        for (const auto& bytes : a.opaque) {
          onnx::GraphProto body;
          if (body.ParseFromString(bytes)) missing_in_body(body, kernels, n->describe(), missing);
        }
  }
  if (!missing.empty()) {
    std::string msg = "the reference evaluator has no kernel for:";
    for (const auto& m : missing) msg += "\n  " + m;
    throw Error(msg);
  }
}

std::vector<const Value*> Evaluator::required_inputs() const {
  std::vector<const Value*> out;
  for (const Value* v : model_.graph->inputs())
    if (!v->initializer) out.push_back(v);
  return out;
}

void Evaluator::check_inputs(const std::map<std::string, HostTensor>& inputs) const {
  std::string known;
  for (const Value* v : required_inputs()) known += (known.empty() ? "" : ", ") + v->name();
  for (const auto& [name, t] : inputs) {
    const Value* v = model_.graph->find_value(name);
    bool is_input = false;
    for (const Value* in : model_.graph->inputs()) is_input = is_input || in == v;
    if (!is_input)
      throw Error("input '" + name + "' is not an input of the model (its inputs: " + known + ")");
  }
  std::map<std::string, std::pair<int64_t, std::string>> symbols;  // symbol -> (value, input that set it)
  for (const Value* v : required_inputs()) {
    auto it = inputs.find(v->name());
    if (it == inputs.end())
      throw Error("input '" + v->name() + "' is missing (the model needs: " + known + ")");
    const HostTensor& t = it->second;
    const ValueType& want = v->type;
    if (want.dtype != DType::Undefined && t.dtype() != want.dtype)
      throw Error("input '" + v->name() + "': expected dtype " + dtype_name(want.dtype) + ", got " +
                  dtype_name(t.dtype()));
    if (!want.shape) continue;
    const Shape& s = *want.shape;
    bool ok = s.rank() == t.rank();
    for (size_t d = 0; ok && d < s.rank(); ++d) {
      if (s[d].is_static()) {
        ok = s[d].value() == t.dims()[d];
      } else if (s[d].is_symbolic()) {
        auto [sym, inserted] = symbols.emplace(s[d].symbol_name(), std::make_pair(t.dims()[d], v->name()));
        if (!inserted && sym->second.first != t.dims()[d])
          throw Error("input '" + v->name() + "': dim " + std::to_string(d) + " ('" + s[d].symbol_name() +
                      "') is " + std::to_string(t.dims()[d]) + ", but input '" + sym->second.second +
                      "' set it to " + std::to_string(sym->second.first));
      }
    }
    if (!ok)
      throw Error("input '" + v->name() + "': expected shape " + s.to_string() + ", got " + t.shape_string());
  }
}

namespace {

// The values of one running graph, then those of the graphs around it.
class GraphScope final : public Scope {
 public:
  GraphScope(const Model& model, const OpRegistry& kernels, const Graph& g,
             const std::unordered_map<const Value*, HostTensor>& env, const Scope* outer)
      : model_(model), kernels_(kernels), graph_(g), env_(env), outer_(outer) {}
  const Model& model() const override { return model_; }
  const OpRegistry& kernels() const override { return kernels_; }
  const HostTensor* find(std::string_view name) const override {
    if (const Value* v = graph_.find_value(name)) {
      auto it = env_.find(v);
      if (it != env_.end()) return &it->second;
    }
    return outer_ ? outer_->find(name) : nullptr;
  }

 private:
  const Model& model_;
  const OpRegistry& kernels_;
  const Graph& graph_;
  const std::unordered_map<const Value*, HostTensor>& env_;
  const Scope* outer_;
};

// Runs graph g of `model` with `env` holding its inputs; a value no node here produces
// is looked up in `outer`. Values are dropped after their last use (what a body reads
// of this graph is an input of the node that holds it: onnx/captures.h).
// `precomputed` values are not computed again (their nodes are skipped).
NamedTensors run_graph(const Model& model, const OpRegistry& kernels, const Graph& g,
                       std::unordered_map<const Value*, HostTensor> env, const Scope* outer,
                       OpProfile* profile, const PrecomputedValues& precomputed = {}) {
  // An input with an initializer takes the fed value when there is one (env holds the feeds).
  for (const Value* v : g.initializers()) env.try_emplace(v, HostTensor::view(*v->initializer));
  for (const auto& [v, t] : precomputed.values) env.try_emplace(v, t);

  std::unordered_map<const Value*, size_t> last_use;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const Value* in : g.nodes()[i]->inputs())
      if (in) last_use[in] = i;
  for (const Value* out : g.outputs()) last_use[out] = SIZE_MAX;
  const GraphScope scope(model, kernels, g, env, outer);

  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    if (precomputed.nodes.count(&n)) continue;
    const KernelInfo* k = kernels.find(n.domain, n.op_type);
    if (!k)
      throw Error(n.describe() + ": the reference evaluator has no kernel for " +
                  (n.domain.empty() ? "" : n.domain + "::") + n.op_type);
    std::vector<const HostTensor*> ptrs;
    for (const Value* in : n.inputs()) {
      if (!in) {
        ptrs.push_back(nullptr);
        continue;
      }
      auto it = env.find(in);
      const HostTensor* t = it == env.end() ? nullptr : &it->second;
      if (!t && !in->producer() && outer) t = outer->find(in->name());
      if (!t) throw Error(n.describe() + ": input '" + in->name() + "' has no value");
      ptrs.push_back(t);
    }
    if (profile) take_implementation();  // a note is this call's only
    auto started = std::chrono::steady_clock::now();
    std::vector<HostTensor> results =
        call_kernel(kernels, *k, n, model.opset_version(n.domain), std::move(ptrs), &scope);
    if (profile)
      profile->add(
          n, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    for (size_t o = 0; o < n.outputs().size(); ++o)
      if (n.outputs()[o]) env[n.outputs()[o]] = std::move(results[o]);
    for (const Value* in : n.inputs())
      if (in && last_use[in] == i && !precomputed.values.count(in)) env.erase(in);
  }
  NamedTensors outs;
  for (const Value* v : g.outputs()) {
    auto it = env.find(v);
    const HostTensor* t = it == env.end() ? nullptr : &it->second;
    if (!t && !v->producer() && outer) t = outer->find(v->name());
    if (!t) throw Error("graph output '" + v->name() + "' was not computed");
    // A precomputed output is the evaluator's: the caller gets its own copy.
    outs.emplace_back(v->name(), precomputed.values.count(v) ? t->clone() : *t);
  }
  return outs;
}

}  // namespace

// A node is computed once when it reads constants only: initializers no feed can
// replace, or values computed so. Control flow (its bodies may read anything) and
// random ops (each run draws anew) are left to each run.
void Evaluator::precompute_constants() const {
  const Graph& g = *model_.graph;
  PrecomputedValues done;
  std::unordered_map<const Value*, HostTensor> constants;
  for (const Value* v : g.initializers()) {
    bool fed = false;
    for (const Value* in : g.inputs()) fed = fed || in == v;
    if (!fed) constants.emplace(v, HostTensor::view(*v->initializer));
  }
  for (const auto& node : g.nodes()) {
    const Node& n = *node;
    bool foldable = !n.is_nondeterministic() && !n.outputs().empty();
    for (const auto& a : n.attributes)
      foldable = foldable && a.kind != AttrKind::Graph && a.kind != AttrKind::Graphs;
    std::vector<const HostTensor*> ptrs;
    for (const Value* in : n.inputs()) {
      if (!foldable) break;
      auto it = in ? constants.find(in) : constants.end();
      foldable = !in || it != constants.end();
      if (foldable) ptrs.push_back(in ? &it->second : nullptr);
    }
    if (!foldable) continue;
    std::vector<HostTensor> results = call_kernel(kernels_, *kernels_.find(n.domain, n.op_type), n,
                                                  model_.opset_version(n.domain), std::move(ptrs));
    for (size_t o = 0; o < n.outputs().size(); ++o)
      if (const Value* out = n.outputs()[o]) constants.emplace(out, results[o].frozen());
    done.nodes.insert(&n);
  }
  // Keep only what a run reads: a constant that only fed other constants is done with.
  std::unordered_set<const Value*> read(g.outputs().begin(), g.outputs().end());
  for (const auto& node : g.nodes())
    if (!done.nodes.count(node.get()))
      for (const Value* in : node->inputs()) read.insert(in);
  for (const auto& node : g.nodes())
    if (done.nodes.count(node.get()))
      for (const Value* out : node->outputs())
        if (out && read.count(out)) done.values.emplace(out, constants.at(out));
  precomputed_ = std::move(done);
}

void OpProfile::add(const Node& node, double ms) {
  const std::string op = (node.domain.empty() ? "" : node.domain + "::") + node.op_type;
  const Value* first = node.outputs().empty() ? nullptr : node.outputs()[0];
  Kernel& k = by_kernel[!node.name.empty() ? node.name : first ? first->name() : op];
  k.op = op;
  k.ms += ms;
  ++k.calls;
  if (std::string implementation = take_implementation(); !implementation.empty())
    ++k.implementations[implementation];
}

std::map<std::string, OpProfile::Kernel> OpProfile::by_op() const {
  std::map<std::string, Kernel> ops;
  for (const auto& [name, k] : by_kernel) {
    Kernel& o = ops[k.op];
    o.op = k.op;
    o.ms += k.ms;
    o.calls += k.calls;
    for (const auto& [implementation, calls] : k.implementations) o.implementations[implementation] += calls;
  }
  return ops;
}

NamedTensors Evaluator::run(const std::map<std::string, HostTensor>& inputs, OpProfile* profile) const {
  check_inputs(inputs);
  std::call_once(precomputed_once_, [this] { precompute_constants(); });
  const Graph& g = *model_.graph;
  std::unordered_map<const Value*, HostTensor> env;
  for (const auto& [name, t] : inputs) env[g.find_value(name)] = t;
  return run_graph(model_, kernels_, g, std::move(env), nullptr, profile, precomputed_);
}

std::vector<HostTensor> run_body(const Graph& body, const std::vector<HostTensor>& inputs,
                                 const Scope& outer) {
  if (inputs.size() > body.inputs().size())
    throw Error("the body takes " + std::to_string(body.inputs().size()) + " inputs, not " +
                std::to_string(inputs.size()));
  std::unordered_map<const Value*, HostTensor> env;
  for (size_t i = 0; i < inputs.size(); ++i) env[body.inputs()[i]] = inputs[i];
  NamedTensors outs = run_graph(outer.model(), outer.kernels(), body, std::move(env), &outer, nullptr);
  std::vector<HostTensor> values;
  for (auto& [name, t] : outs) values.push_back(std::move(t));
  return values;
}

HostTensor random_tensor(DType dtype, const std::vector<int64_t>& dims, std::mt19937_64& rng) {
  HostTensor t(dtype, dims);
  const int64_t n = t.size();
  if (is_float(dtype)) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    HostTensor f(DType::F32, dims);
    for (int64_t i = 0; i < n; ++i) f.mutable_data<float>()[i] = u(rng);
    t = cast_tensor(f, dtype);
  } else if (dtype == DType::U8 || dtype == DType::I8) {
    // 8-bit tensors are quantized data (or images): every value of the type, in a random
    // order, so a tensor of 256 or more holds each one (a table lookup is checked whole).
    for (int64_t i = 0; i < n; ++i) t.mutable_data<uint8_t>()[i] = static_cast<uint8_t>(i % 256);
    std::shuffle(t.mutable_data<uint8_t>(), t.mutable_data<uint8_t>() + n, rng);
  } else if (dtype != DType::String) {
    // Small non-negative integers are valid ids, masks, indices and bools.
    HostTensor idx(DType::I64, dims);
    for (int64_t i = 0; i < n; ++i) idx.mutable_data<int64_t>()[i] = static_cast<int64_t>(rng() % 2);
    t = cast_tensor(idx, dtype);
  }
  return t;
}

std::string open_dim_key(const Value& input, size_t axis) {
  const Dim& d = (*input.type.shape)[axis];
  return d.is_symbolic() ? d.symbol_name() : input.name() + ":" + std::to_string(axis);
}

std::set<std::string> open_dim_keys(const Model& model) {
  std::set<std::string> keys;
  for (const Value* v : model.graph->inputs())
    if (!v->initializer && v->type.shape)
      for (size_t a = 0; a < v->type.shape->rank(); ++a)
        if (!(*v->type.shape)[a].is_static()) keys.insert(open_dim_key(*v, a));
  return keys;
}

std::map<std::string, std::vector<int64_t>> input_dims(const Model& model,
                                                       const std::map<std::string, int64_t>& symbol_values) {
  std::map<std::string, std::vector<int64_t>> all;
  for (const Value* v : model.graph->inputs()) {
    if (v->initializer) continue;
    if (!v->type.shape) throw Error("input '" + v->name() + "' has unknown rank; give it explicitly");
    std::vector<int64_t>& dims = all[v->name()];
    for (size_t a = 0; a < v->type.shape->rank(); ++a) {
      const Dim& d = (*v->type.shape)[a];
      if (d.is_static()) {
        dims.push_back(d.value());
      } else {
        auto it = symbol_values.find(open_dim_key(*v, a));
        dims.push_back(it == symbol_values.end() ? 1 : it->second);
      }
    }
  }
  return all;
}

std::map<std::string, HostTensor> random_inputs_of(const Model& model, uint64_t seed,
                                                   const std::map<std::string, std::vector<int64_t>>& dims) {
  std::mt19937_64 rng(seed);
  std::map<std::string, HostTensor> feeds;
  for (const Value* v : model.graph->inputs()) {
    if (v->initializer) continue;
    auto it = dims.find(v->name());
    if (it == dims.end()) throw Error("input '" + v->name() + "' has no dims to draw it at");
    feeds[v->name()] = random_tensor(v->type.dtype, it->second, rng);
  }
  return feeds;
}

std::map<std::string, HostTensor> random_inputs(const Model& model, uint64_t seed,
                                                const std::map<std::string, int64_t>& symbol_values) {
  return random_inputs_of(model, seed, input_dims(model, symbol_values));
}

}  // namespace geopt
