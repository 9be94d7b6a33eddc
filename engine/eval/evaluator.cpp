#include "eval/evaluator.h"

#include <chrono>
#include <random>
#include <set>
#include <unordered_map>

#include "eval/kernel_call.h"
#include "kernels/cast.h"
#include "kernels/dispatch.h"
#include "util/error.h"

namespace geopt {

Evaluator::Evaluator(const Model& model, const KernelRegistry& kernels) : model_(model), kernels_(kernels) {
  std::set<std::string> missing;
  for (const auto& n : model.graph->nodes()) {
    const KernelInfo* k = kernels.find(n->domain, n->op_type);
    if (!k) missing.insert((n->domain.empty() ? "" : n->domain + "::") + n->op_type + " (e.g. " + n->describe() + ")");
    node_kernels_.push_back(k);
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
    if (!is_input) throw Error("input '" + name + "' is not an input of the model (its inputs: " + known + ")");
  }
  std::map<std::string, std::pair<int64_t, std::string>> symbols;  // symbol -> (value, input that set it)
  for (const Value* v : required_inputs()) {
    auto it = inputs.find(v->name());
    if (it == inputs.end()) throw Error("input '" + v->name() + "' is missing (the model needs: " + known + ")");
    const HostTensor& t = it->second;
    const ValueType& want = v->type;
    if (want.dtype != DType::Undefined && t.dtype() != want.dtype)
      throw Error("input '" + v->name() + "': expected dtype " + dtype_name(want.dtype) + ", got " + dtype_name(t.dtype()));
    if (!want.shape) continue;
    const Shape& s = *want.shape;
    bool ok = s.rank() == t.rank();
    for (size_t d = 0; ok && d < s.rank(); ++d) {
      if (s[d].is_static()) {
        ok = s[d].value() == t.dims()[d];
      } else if (s[d].is_symbolic()) {
        auto [sym, inserted] = symbols.emplace(s[d].symbol_name(), std::make_pair(t.dims()[d], v->name()));
        if (!inserted && sym->second.first != t.dims()[d])
          throw Error("input '" + v->name() + "': dim " + std::to_string(d) + " ('" + s[d].symbol_name() + "') is " +
                      std::to_string(t.dims()[d]) + ", but input '" + sym->second.second + "' set it to " +
                      std::to_string(sym->second.first));
      }
    }
    if (!ok)
      throw Error("input '" + v->name() + "': expected shape " + s.to_string() + ", got " + t.shape_string());
  }
}

NamedTensors Evaluator::run(const std::map<std::string, HostTensor>& inputs, OpProfile* profile) const {
  check_inputs(inputs);
  const Graph& g = *model_.graph;
  std::unordered_map<const Value*, HostTensor> env;
  for (const Value* v : g.initializers()) env[v] = HostTensor::view(*v->initializer);
  for (const auto& [name, t] : inputs) env[g.find_value(name)] = t;

  std::unordered_map<const Value*, size_t> last_use;
  for (size_t i = 0; i < g.nodes().size(); ++i)
    for (const Value* in : g.nodes()[i]->inputs())
      if (in) last_use[in] = i;
  for (const Value* out : g.outputs()) last_use[out] = SIZE_MAX;

  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = *g.nodes()[i];
    const KernelInfo& k = *node_kernels_[i];
    std::vector<const HostTensor*> ptrs;
    for (const Value* in : n.inputs()) {
      if (!in) {
        ptrs.push_back(nullptr);
        continue;
      }
      auto it = env.find(in);
      if (it == env.end()) throw Error(n.describe() + ": input '" + in->name() + "' has no value");
      ptrs.push_back(&it->second);
    }
    auto started = std::chrono::steady_clock::now();
    std::vector<HostTensor> results = call_kernel(k, n, model_.opset_version(n.domain), std::move(ptrs));
    if (profile) {
      auto& [ms, calls] = profile->by_op[(n.domain.empty() ? "" : n.domain + "::") + n.op_type];
      ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
      ++calls;
    }
    for (size_t o = 0; o < n.outputs().size(); ++o)
      if (n.outputs()[o]) env[n.outputs()[o]] = std::move(results[o]);
    for (const Value* in : n.inputs())
      if (in && last_use[in] == i) env.erase(in);
  }
  NamedTensors outs;
  for (const Value* v : g.outputs()) {
    auto it = env.find(v);
    if (it == env.end()) throw Error("graph output '" + v->name() + "' was not computed");
    outs.emplace_back(v->name(), it->second);
  }
  return outs;
}

HostTensor random_tensor(DType dtype, const std::vector<int64_t>& dims, std::mt19937_64& rng) {
  HostTensor t(dtype, dims);
  const int64_t n = t.size();
  if (is_float(dtype)) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    HostTensor f(DType::F32, dims);
    for (int64_t i = 0; i < n; ++i) f.mutable_data<float>()[i] = u(rng);
    t = cast_tensor(f, dtype);
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

std::map<std::string, std::vector<int64_t>> input_dims(const Model& model, const std::map<std::string, int64_t>& symbol_values) {
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

std::map<std::string, HostTensor> random_inputs_of(const Model& model, uint64_t seed, const std::map<std::string, std::vector<int64_t>>& dims) {
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
