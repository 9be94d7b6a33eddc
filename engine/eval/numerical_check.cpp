#include "eval/numerical_check.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <set>
#include <unordered_map>

#include "eval/run_limits.h"
#include "ir/dtype.h"
#include "ops/op_traits.h"
#include "util/checked_size.h"
#include "util/error.h"

namespace geopt {

bool quantizes_activations(const Model& model) {
  const Graph& g = *model.graph;
  for (const auto& n : g.nodes()) {
    if (!n->domain.empty() || !n->input(0) || g.constant_value(n->input(0))) continue;
    // onnxruntime's dynamic quantization quantizes each activation at its own range.
    if (n->op_type == "QuantizeLinear" || n->op_type == "DynamicQuantizeLinear") return true;
  }
  return false;
}

ModelPrecision model_precision(const Model& model) {
  ModelPrecision m;
  m.quantized = quantizes_activations(model);
  const Graph& g = *model.graph;
  // Roundings on the longest path to each value; nodes come in topological order.
  std::unordered_map<const Value*, size_t> depth;
  for (const auto& n : g.nodes()) {
    size_t in = 0;
    for (const Value* v : n->inputs())
      if (v)
        if (auto it = depth.find(v); it != depth.end()) in = std::max(in, it->second);
    const OpTraits& traits = standard_op_traits(n->domain, n->op_type);
    bool rounds = false;
    if (!traits.view && !traits.shape_only)
      for (const Value* v : n->outputs())
        if (v && (v->type.dtype == DType::F16 || v->type.dtype == DType::BF16)) {
          rounds = true;
          if (m.low != DType::BF16) m.low = v->type.dtype;
        }
    for (const Value* v : n->outputs())
      if (v) depth[v] = in + (rounds ? 1 : 0);
  }
  for (const Value* v : g.outputs())
    if (auto it = depth.find(v); it != depth.end()) m.low_depth = std::max(m.low_depth, it->second);
  return m;
}

Tolerance tolerance_for(const ModelPrecision& model, Tolerance base) {
  if (model.quantized) {
    base.atol = std::max(base.atol, kQuantizedAtol);
    base.rtol = std::max(base.rtol, kQuantizedRtol);
    base.min_cosine = kQuantizedMinCosine;
    base.basis = "a model that quantizes activations: quantization's own noise";
  }
  if (model.low == DType::F16 || model.low == DType::BF16) {
    const bool bf16 = model.low == DType::BF16;
    const double unit = bf16 ? 1.0 / 256 : 1.0 / 2048;
    const size_t roundings = std::max<size_t>(8, model.low_depth);
    const double t = std::min(unit * static_cast<double>(roundings), bf16 ? 0.25 : 0.05);
    if (t > base.atol || t > base.rtol) {
      base.atol = std::max(base.atol, t);
      base.rtol = std::max(base.rtol, t);
      char text[160];
      std::snprintf(text, sizeof text, "%s model: %s x %zu (its longest path has %zu roundings, at least 8)",
                    bf16 ? "bf16" : "fp16", bf16 ? "2^-8" : "2^-11", roundings, model.low_depth);
      base.basis = text;
    }
  }
  return base;
}
namespace {

// Where an open dim appears: every (rank, axis) of the inputs that use it, and their names.
struct OpenDim {
  std::vector<std::pair<size_t, size_t>> uses;
  std::set<std::string> inputs;
  bool named = false;  // a symbol (dim_param), not an unknown dim
};

// Sizes the graph itself names, past the common ones: the dims of a Reshape's constant
// shape (audio split into frames of 400 samples runs at 400 and at none of the powers of
// two) and the windows of convs and pools (a 400-sample filter needs 400 samples).
std::vector<int64_t> implied_sizes(const Model& model) {
  constexpr int64_t kLargest = int64_t{1} << 16;
  std::set<int64_t> sizes;
  const Graph& g = *model.graph;
  for (const auto& n : g.nodes()) {
    if (n->domain.empty() && n->op_type == "Reshape" && n->input(1))
      if (const Tensor* shape = g.constant_value(n->input(1)); shape && shape->dtype == DType::I64)
        for (int64_t v : shape->to_vector<int64_t>())
          if (v > 1 && v <= kLargest) sizes.insert(v);
    if (standard_op_traits(n->domain, n->op_type).sliding_window)
      if (const Attribute* k = n->attr("kernel_shape"))
        for (int64_t v : k->ints)
          if (v > 1 && v <= kLargest) sizes.insert(v);
  }
  // Each size the model fails at costs a run: a transformer's Reshapes name a dozen
  // (heads, head size, width, vocabulary), and the smallest are tried.
  constexpr size_t kMost = 12;
  std::vector<int64_t> smallest(sizes.begin(), sizes.end());
  if (smallest.size() > kMost) smallest.resize(kMost);
  return smallest;
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

bool contains_any(const std::string& s, std::initializer_list<const char*> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](const char* w) { return s.find(w) != std::string::npos; });
}

// A batch is 1 in deployment as in the check; anything else (sequence, height, width) is
// drawn at a real size. A dim is batch-like when its name says so, or when it leads every
// input of rank 2 or more that uses it and its name says nothing else.
// A dim without a name is classified by its position alone (its key holds the input's
// name, which says nothing about the dim).
bool batch_like(const std::string& name, const OpenDim& d) {
  if (d.named) {
    const std::string n = lower(name);
    if (n == "n" || n == "b" || n == "bs" || contains_any(n, {"batch"})) return true;
    if (contains_any(n, {"seq", "len", "token", "height", "width", "time", "frame", "pos", "past", "total"}))
      return false;
  }
  return std::all_of(d.uses.begin(), d.uses.end(),
                     [](const auto& u) { return u.second == 0 && u.first >= 2; });
}

// The inputs' bytes at these dims; SIZE_MAX past 2^62 (too big to try, not an error).
size_t input_bytes(const Model& model, const std::map<std::string, std::vector<int64_t>>& dims) {
  size_t total = 0;
  for (const Value* v : model.graph->inputs()) {
    if (v->initializer) continue;
    try {
      const size_t bytes = checked_byte_count(checked_element_count(dims.at(v->name()), v->name()),
                                              std::max<size_t>(1, dtype_size(v->type.dtype)), v->name());
      if (__builtin_add_overflow(total, bytes, &total)) return SIZE_MAX;
    } catch (const Error&) {
      return SIZE_MAX;
    }
  }
  return total;
}

}  // namespace

std::string example_input_shape(const Model& model, const std::map<std::string, int64_t>& known) {
  std::string text;
  for (const Value* v : model.graph->inputs()) {
    if (v->initializer || !v->type.shape) continue;
    text += (text.empty() ? "" : ";") + v->name() + ":";
    const auto& declared = v->type.shape->dims();
    for (size_t a = 0; a < declared.size(); ++a) {
      const Dim& d = declared[a];
      const std::string key = open_dim_key(*v, a);
      text += a ? "," : "";
      if (d.is_static())
        text += std::to_string(d.value());
      else if (known.count(key))
        text += std::to_string(known.at(key));
      else
        text += "<" + (d.is_symbolic() ? d.symbol_name() : std::string("size")) + ">";
    }
  }
  return "\"" + text + "\"";
}

std::string CheckInputs::describe() const {
  std::string text;
  for (const auto& [name, size] : sizes)
    text += (text.empty() ? "" : ", ") + name + "=" + std::to_string(size);
  if (only_at_one)
    text +=
        " (every larger size failed: checked at 1 only, where a Softmax or a norm over one element cannot "
        "tell a wrong fusion)";
  return text;
}

const std::vector<int64_t>& check_size_candidates() {
  // Powers of two and the image sizes exporters are traced at; 1 last, as the size
  // some dims must have (a cache of length 1, a fixed single step).
  static const std::vector<int64_t> sizes{16, 32, 64, 128, 224, 256, 320, 512, 640, 1024, 1};
  return sizes;
}

namespace {

// What to say when the model fails on the check's own inputs and an If picks its branch
// by an input the check drew at random (Silero VAD's sample rate): the failure is then
// likely the branch's, not the model's, and --check-input gives the value that selects
// the branch users take.
std::string branch_hint(const Model& model, const std::map<std::string, HostTensor>& fixed) {
  std::set<std::string> inputs;
  std::string node;
  const std::set<const Value*> graph_inputs(model.graph->inputs().begin(), model.graph->inputs().end());
  for (const auto& n : model.graph->nodes()) {
    if (n->op_type != "If" || n->inputs().empty() || !n->inputs()[0]) continue;
    std::vector<const Value*> todo{n->inputs()[0]};
    std::set<const Value*> seen;
    while (!todo.empty()) {
      const Value* v = todo.back();
      todo.pop_back();
      if (!v || !seen.insert(v).second) continue;
      if (!v->producer()) {
        if (!v->initializer && !fixed.count(v->name()) && graph_inputs.count(v)) {
          if (inputs.insert(v->name()).second && node.empty()) node = n->describe();
        }
        continue;
      }
      for (const Value* in : v->producer()->inputs()) todo.push_back(in);
    }
  }
  if (inputs.empty()) return {};
  std::string names, first;
  for (const auto& i : inputs) {
    names += (names.empty() ? "'" : ", '") + i + "'";
    if (first.empty()) first = i;
  }
  return "; the check drew input " + names + " at random, and it picks the branch of " + node +
         ": if that branch cannot run here, give the value users feed with --check-input " + first +
         "=FILE.npy";
}

}  // namespace

CheckInputs choose_check_inputs(const OpRegistry& ops, const Model& model, uint64_t seed,
                                size_t max_input_bytes, const std::map<std::string, HostTensor>& fixed) {
  const RunLimitsScope limits(check_run_limits(kCheckSeconds));
  std::map<std::string, OpenDim> open;
  // A given input's open dims take its sizes (a rank that does not match is the
  // evaluator's error to report).
  std::map<std::string, int64_t> pinned;
  for (const Value* v : model.graph->inputs()) {
    auto it = fixed.find(v->name());
    if (v->initializer || it == fixed.end() || !v->type.shape || v->type.shape->rank() != it->second.rank())
      continue;
    for (size_t a = 0; a < v->type.shape->rank(); ++a)
      if (!(*v->type.shape)[a].is_static()) pinned[open_dim_key(*v, a)] = it->second.dims()[a];
  }
  for (const Value* v : model.graph->inputs()) {
    if (v->initializer) continue;
    if (!v->type.shape)
      throw Error("input '" + v->name() + "' has unknown rank: the check cannot draw it (pass --no-check)");
    const auto& declared = v->type.shape->dims();
    for (size_t a = 0; a < declared.size(); ++a)
      if (!declared[a].is_static()) {
        OpenDim& d = open[open_dim_key(*v, a)];
        d.uses.emplace_back(declared.size(), a);
        d.inputs.insert(v->name());
        d.named = declared[a].is_symbolic();
      }
  }
  std::map<std::string, int64_t> sizes, batch;
  std::vector<std::string> drawn;  // the dims the candidates set
  for (auto& [name, d] : open) {
    if (pinned.count(name))
      batch[name] = pinned[name];
    else if (batch_like(name, d))
      batch[name] = 1;
    else
      drawn.push_back(name);
  }
  auto draw = [&](const std::map<std::string, std::vector<int64_t>>& dims) {
    auto feeds = random_inputs_of(model, seed, dims);
    for (const auto& [name, t] : fixed) feeds[name] = t;
    return feeds;
  };
  // The evaluator is built once: an op without a kernel is not a question of sizes.
  Evaluator evaluator(model, ops);
  if (drawn.empty()) {  // nothing to choose: the model's own errors are the answer
    CheckInputs r;
    r.feeds = draw(input_dims(model, batch));
    try {
      r.reference = evaluator.run(r.feeds);
    } catch (const Error& e) {
      const std::string hint = branch_hint(model, fixed);
      if (hint.empty()) throw;
      throw Error(std::string(e.what()) + hint);
    }
    r.sizes = std::move(batch);
    return r;
  }
  // The common sizes, then those the graph names, then 1.
  std::vector<int64_t> candidates = check_size_candidates();
  for (int64_t size : implied_sizes(model))
    if (std::find(candidates.begin(), candidates.end(), size) == candidates.end())
      candidates.insert(candidates.end() - 1, size);
  std::string first_failure, tried;
  for (int64_t c : candidates) {
    sizes = batch;
    for (const auto& name : drawn) sizes[name] = c;
    const auto dims = input_dims(model, sizes);
    if (input_bytes(model, dims) > max_input_bytes) continue;
    tried += (tried.empty() ? "" : ", ") + std::to_string(c);
    CheckInputs r;
    r.feeds = draw(dims);
    try {
      r.reference = evaluator.run(r.feeds);
    } catch (const Error& e) {
      if (first_failure.empty()) first_failure = "at " + std::to_string(c) + ": " + e.what();
      continue;
    }
    r.sizes = std::move(sizes);
    r.only_at_one = c == 1;
    return r;
  }
  std::string names;
  for (const auto& name : drawn) {
    std::string of;
    for (const std::string& input : open[name].inputs) of += (of.empty() ? "'" : ", '") + input + "'";
    names += (names.empty() ? "" : ", ") + name + " (of input " + of + ")";
  }
  throw Error("the model does not run at any size tried for its open dims " + names + " (" +
              (tried.empty() ? "none fit in memory" : tried) + "; " +
              (first_failure.empty() ? std::string("no size was small enough") : first_failure) +
              "): fix them with --input_shape, e.g. " + example_input_shape(model, batch) +
              ", or pass --no-check" + branch_hint(model, fixed));
}

NumericalCheck check_same_outputs(const OpRegistry& ops, const Model& original, const Model& changed,
                                  const Tolerance& tolerance, uint64_t seed,
                                  const std::map<std::string, HostTensor>& fixed) {
  CheckInputs in = choose_check_inputs(ops, original, seed, size_t{256} << 20, fixed);
  const RunLimitsScope limits(check_run_limits(kCheckSeconds));
  NumericalCheck c;
  c.diff = diff_outputs(Evaluator(changed, ops).run(in.feeds), in.reference, tolerance);
  if (!c.diff.mismatch.empty())
    throw Error("--check: " + c.diff.mismatch + " (the optimized model changed it)");
  c.outputs = in.reference.size();
  c.sizes = in.describe();
  return c;
}

}  // namespace geopt
