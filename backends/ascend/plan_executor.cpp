#include "plan_executor.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <exception>
#include <mutex>
#include <new>

#include "eval/kernel_call.h"
#include "eval/kernel_implementation.h"
#include "onnx/captures.h"
#include "onnx/import.h"
#include "plan_file.h"
#include "util/error.h"
#include "util/memory.h"

namespace geopt::ascend {
namespace {

std::shared_ptr<std::byte> aligned_bytes(size_t n, int fill, const char* what) {
  return allocate_filled(n, 512, fill, what);
}

std::vector<int64_t> dims_of(const plan::TensorRef& r) { return {r.dims().begin(), r.dims().end()}; }

std::string describe(const plan::Kernel& k, size_t index) {
  return "kernel " + std::to_string(index) + " (" + k.op_type() + " '" + k.name() + "')";
}

}  // namespace

struct PlanExecutor::Compiled {
  Model model;  // one node per kernel, rebuilt from the plan
  std::vector<const Node*> nodes;
  std::vector<const KernelInfo*> kernels;
  std::vector<int64_t> opsets;
  std::shared_ptr<std::byte> weights;
  std::vector<std::vector<size_t>> stream_kernels;
  // Per kernel, its bodies' executors by attribute (control-flow kernels only).
  std::vector<std::map<std::string, std::unique_ptr<PlanExecutor>>> bodies;
  // Per kernel, the branches it cannot take (plan.proto Body.unrunnable), by attribute.
  std::map<size_t, std::map<std::string, std::string>> unrunnable;
  const OpRegistry* registry = nullptr;
  std::vector<std::unique_ptr<PlanExecutor>> gears;       // a plan of gears: one executor per gear
  std::map<std::string, const plan::InputRange*> ranges;  // a range plan's inputs, by name
  // Activation pools of finished runs, for the next: a fresh one is page-faulted in,
  // a few ms a run on ResNet-50 (7 MB).
  std::mutex pools_mutex;
  std::vector<std::shared_ptr<std::byte>> free_pools;
  // Per kernel, the events it waits on and records.
  std::vector<std::vector<uint32_t>> waits, records;
  std::vector<HostTactic> tactics;  // per kernel (plan.proto Kernel.host_tactic)
};

namespace {

// Where a control-flow kernel of the plan runs: its bodies are sub-plans, run by their
// own executors (StreamSwitch and StreamActive: the kernel picks a body and starts its
// streams; it completes, and records its events, once the body's streams are done).
// The values a body reads from this plan are the kernel's captured inputs, fed by name.
class SubPlanScope final : public Scope {
 public:
  SubPlanScope(const Model& model, const OpRegistry& kernels,
               const std::map<std::string, std::unique_ptr<PlanExecutor>>& bodies,
               const std::map<std::string, std::string>& unrunnable,
               std::map<std::string, const HostTensor*> captured, StreamSchedule schedule)
      : model_(model),
        kernels_(kernels),
        bodies_(bodies),
        unrunnable_(unrunnable),
        captured_(std::move(captured)),
        schedule_(schedule) {}
  const Model& model() const override { return model_; }
  const OpRegistry& kernels() const override { return kernels_; }
  const HostTensor* find(std::string_view name) const override {
    auto it = captured_.find(std::string(name));
    return it == captured_.end() ? nullptr : it->second;
  }
  std::optional<std::vector<HostTensor>> run_body(const Node& node, const std::string& attribute,
                                                  const std::vector<HostTensor>& inputs) const override {
    if (auto why = unrunnable_.find(attribute); why != unrunnable_.end())
      throw Error("plan: " + node.describe() + ": its " + attribute +
                  " was not compiled, as it cannot run at the compiled shapes: " + why->second);
    auto it = bodies_.find(attribute);
    if (it == bodies_.end())
      throw Error("plan: " + node.describe() + ": the plan has no body '" + attribute + "'");
    const plan::Plan& body = it->second->plan();
    std::map<std::string, HostTensor> feeds;
    for (int i = 0; i < body.inputs_size(); ++i) {
      const std::string& name = body.inputs(i).name();
      if (static_cast<size_t>(i) < inputs.size()) {
        feeds[name] = inputs[static_cast<size_t>(i)];
      } else if (const HostTensor* t = find(name)) {
        feeds[name] = *t;
      } else {
        throw Error("plan: " + node.describe() + ": body '" + attribute + "' reads '" + name +
                    "', which the kernel does not capture");
      }
    }
    std::vector<HostTensor> outs;
    for (auto& [name, t] : it->second->run(feeds, schedule_)) outs.push_back(std::move(t));
    return outs;
  }

 private:
  const Model& model_;
  const OpRegistry& kernels_;
  const std::map<std::string, std::unique_ptr<PlanExecutor>>& bodies_;
  const std::map<std::string, std::string>& unrunnable_;
  std::map<std::string, const HostTensor*> captured_;
  StreamSchedule schedule_;
};

}  // namespace

PlanExecutor::PlanExecutor(const plan::Plan& plan, const OpRegistry& registry)
    : plan_(plan), compiled_(std::make_unique<Compiled>()) {
  check_plan(plan, "plan");
  std::shared_ptr<std::byte> weights = aligned_bytes(plan.weights().size(), 0, "the plan's weight region");
  if (!plan.weights().empty()) std::memcpy(weights.get(), plan.weights().data(), plan.weights().size());
  if (plan.gears_size()) {
    compiled_->registry = &registry;
    for (const auto& g : plan.gears())
      compiled_->gears.push_back(
          std::unique_ptr<PlanExecutor>(new PlanExecutor(g.plan(), registry, weights)));
    return;
  }
  build(registry, std::move(weights));
}

PlanExecutor::PlanExecutor(const plan::Plan& gear, const OpRegistry& registry,
                           std::shared_ptr<std::byte> shared_weights)
    : plan_(gear), compiled_(std::make_unique<Compiled>()) {
  build(registry, std::move(shared_weights));
}

void PlanExecutor::build(const OpRegistry& registry, std::shared_ptr<std::byte> weights) {
  const plan::Plan& plan = plan_;
  Compiled& c = *compiled_;
  c.registry = &registry;
  for (const auto& r : plan.input_ranges()) c.ranges[r.name()] = &r;
  for (const auto& o : plan.opsets()) c.model.opsets.push_back({o.domain(), o.version()});
  Graph& g = *c.model.graph;
  auto value = [&](const plan::TensorRef& r) -> Value* {
    if (r.absent()) return nullptr;
    // Each kernel output gets its own value: names repeat only for inputs.
    Value* v = g.find_value(r.name());
    return v ? v : g.add_value(r.name());
  };
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const auto& pk = plan.kernels(k);
    std::vector<Value*> ins, outs;
    for (const auto& r : pk.inputs()) ins.push_back(value(r));
    for (const auto& r : pk.outputs()) {
      Value* v =
          r.absent() ? nullptr : g.add_value(g.find_value(r.name()) ? g.unique_name(r.name()) : r.name());
      outs.push_back(v);
    }
    Node* n = g.add_node(pk.op_type(), pk.domain(), pk.name(), ins, outs);
    for (const auto& bytes : pk.attributes()) {
      onnx::AttributeProto ap;
      if (!ap.ParseFromString(bytes))
        throw Error("plan: " + describe(pk, static_cast<size_t>(k)) + ": an attribute does not decode");
      n->attributes.push_back(
          import_attribute(std::move(ap), "plan: " + describe(pk, static_cast<size_t>(k))));
    }
    // The rebuilt values carry the planned types (a Loop that runs no trip shapes its
    // empty scan outputs from them); a bounded value's dims are known only at run time.
    for (int o = 0; o < pk.outputs_size(); ++o)
      if (Value* v = outs[static_cast<size_t>(o)]) {
        const auto& r = pk.outputs(o);
        v->type.dtype = static_cast<DType>(r.dtype());
        std::vector<Dim> dims;
        if (r.bounded())
          dims.resize(static_cast<size_t>(r.dims_size()));
        else
          dims.assign(r.dims().begin(), r.dims().end());
        v->type.shape = Shape(std::move(dims));
      }
    auto& bodies = c.bodies.emplace_back();
    for (const auto& b : pk.bodies())
      if (b.unrunnable().empty())
        bodies[b.attribute()] = std::make_unique<PlanExecutor>(b.plan(), registry);
      else
        c.unrunnable[static_cast<size_t>(k)][b.attribute()] = b.unrunnable();
    const KernelInfo* info = registry.find(pk.domain(), pk.op_type());
    if (!info) throw Error("plan: " + describe(pk, static_cast<size_t>(k)) + ": no host kernel for this op");
    try {
      c.tactics.push_back(parse_tactic(pk.host_tactic()));
    } catch (const Error& e) {
      throw Error("plan: " + describe(pk, static_cast<size_t>(k)) + ": " + e.what());
    }
    c.nodes.push_back(n);
    c.kernels.push_back(info);
    c.opsets.push_back(c.model.opset_version(pk.domain()));
  }
  c.weights = std::move(weights);
  c.stream_kernels.resize(plan.stream_count());
  for (int k = 0; k < plan.kernels_size(); ++k) {
    const auto& pk = plan.kernels(k);
    c.stream_kernels[pk.stream()].push_back(static_cast<size_t>(k));
    c.waits.emplace_back(pk.wait_events().begin(), pk.wait_events().end());
    c.records.emplace_back(pk.record_events().begin(), pk.record_events().end());
  }
}

PlanExecutor::~PlanExecutor() = default;

void PlanExecutor::run_kernel(size_t k, std::byte* pool, StreamSchedule schedule, RuntimeDims& dims,
                              const HostTactic* tactic) const {
  const Compiled& c = *compiled_;
  const HostTactic& how = tactic ? *tactic : c.tactics[k];
  const KernelThreadLimit threads(how.threads);
  const plan::Kernel& pk = plan_.kernels(static_cast<int>(k));
  std::vector<HostTensor> views;
  views.reserve(static_cast<size_t>(pk.inputs_size()));
  std::vector<const HostTensor*> ptrs;
  bool bounded_input = false;
  for (const auto& r : pk.inputs()) {
    if (r.absent()) {
      ptrs.push_back(nullptr);
      continue;
    }
    bool weight = r.region() == plan::WEIGHT;
    const std::byte* at = (weight ? c.weights.get() : pool) + r.offset();
    // Weights get a keep-alive per tensor so kernel caches keyed on it stay distinct.
    std::shared_ptr<const void> keep = weight ? std::shared_ptr<const void>(c.weights, at) : nullptr;
    std::vector<int64_t> in_dims = dims_of(r);
    if (r.bounded()) {
      bounded_input = true;
      auto it = dims.by_name.find(r.name());
      if (it == dims.by_name.end())
        throw Error("plan: " + describe(pk, k) + ": input '" + r.name() +
                    "' has bounded dims that no kernel set");
      in_dims = it->second;
      // The bytes at these dims must lie in the ones the plan gave this reference.
      int64_t elements = 1;
      for (int64_t d : in_dims) elements = d < 0 || (d && elements > INT64_MAX / d) ? -1 : elements * d;
      if (elements < 0 ||
          static_cast<uint64_t>(elements) * dtype_size(static_cast<DType>(r.dtype())) > r.size())
        throw Error("plan: " + describe(pk, k) + ": input '" + r.name() + "' came out larger than the " +
                    std::to_string(r.size()) + " bytes this kernel reads");
    }
    views.push_back(
        HostTensor::borrowed(static_cast<DType>(r.dtype()), std::move(in_dims), at, std::move(keep), weight));
    ptrs.push_back(&views.back());
  }
  // Kernels may write their outputs where the plan keeps them (no copy afterwards). Not
  // when an input's dims are set at run time: an output planned in place over such an
  // input could be written while the kernel still reads it broadcast.
  std::vector<OutputPlacement> placements(static_cast<size_t>(pk.outputs_size()));
  for (int o = 0; o < pk.outputs_size() && !bounded_input; ++o) {
    const auto& r = pk.outputs(o);
    if (!r.absent() && !r.bounded())
      placements[static_cast<size_t>(o)] = {pool + r.offset(), static_cast<DType>(r.dtype()), dims_of(r)};
  }
  std::vector<HostTensor> results;
  if (!c.bodies[k].empty() || c.unrunnable.count(k)) {
    std::map<std::string, const HostTensor*> captured;
    const Node& n = *c.nodes[k];
    if (const Attribute* names = n.attr(kCapturesAttr)) {
      const size_t first = ptrs.size() - std::min(names->strings.size(), ptrs.size());
      for (size_t i = 0; first + i < ptrs.size(); ++i) captured[names->strings[i]] = ptrs[first + i];
    }
    static const std::map<std::string, std::string> none;
    auto it = c.unrunnable.find(k);
    const SubPlanScope scope(c.model, *c.registry, c.bodies[k], it == c.unrunnable.end() ? none : it->second,
                             std::move(captured), schedule);
    results = call_kernel(*c.registry, *c.kernels[k], n, c.opsets[k], std::move(ptrs), &scope, {}, how);
  } else {
    results = call_kernel(*c.registry, *c.kernels[k], *c.nodes[k], c.opsets[k], std::move(ptrs), nullptr,
                          std::move(placements), how);
  }
  for (int o = 0; o < pk.outputs_size(); ++o) {
    const auto& r = pk.outputs(o);
    if (r.absent()) continue;
    const HostTensor& t = results[static_cast<size_t>(o)];
    const bool fits = r.bounded() ? static_cast<int32_t>(t.dtype()) == r.dtype() && t.nbytes() <= r.size()
                                  : static_cast<int32_t>(t.dtype()) == r.dtype() && t.dims() == dims_of(r);
    if (!fits)
      throw Error("plan: " + describe(pk, k) + ": output '" + r.name() + "' came out as " + t.shape_string() +
                  ", the plan reserved " + std::to_string(r.size()) + " bytes for " +
                  (r.bounded() ? "at most that" : "another shape"));
    if (r.bounded()) dims.by_name[r.name()] = t.dims();
    std::byte* dst = pool + r.offset();
    if (t.raw() != dst && t.nbytes()) std::memmove(dst, t.raw(), t.nbytes());
  }
}

void PlanExecutor::timed_kernel(size_t k, std::byte* pool, StreamSchedule schedule, RuntimeDims& dims,
                                OpProfile* profile) const {
  if (!profile) return run_kernel(k, pool, schedule, dims);
  take_implementation();  // a note is this call's only
  const auto started = std::chrono::steady_clock::now();
  run_kernel(k, pool, schedule, dims);
  profile->add(*compiled_->nodes[k],
               std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
}

namespace {

std::string type_text(const plan::TensorRef& r) {
  return HostTensor::borrowed(static_cast<DType>(r.dtype()), dims_of(r), nullptr, nullptr, false)
      .shape_string();
}

// The feeds name exactly the plan's inputs.
void check_input_names(const plan::Plan& p, const std::map<std::string, HostTensor>& inputs) {
  std::string known;
  for (const auto& r : p.inputs()) known += (known.empty() ? "" : ", ") + r.name();
  for (const auto& entry : inputs) {
    const std::string& name = entry.first;  // a plain reference: the lambda captures it (clang 14)
    auto it =
        std::find_if(p.inputs().begin(), p.inputs().end(), [&](const auto& r) { return r.name() == name; });
    if (it == p.inputs().end())
      throw Error("input '" + name + "' is not an input of the plan (its inputs: " + known + ")");
  }
  for (const auto& r : p.inputs())
    if (!inputs.count(r.name()))
      throw Error("input '" + r.name() + "' is missing (the plan needs: " + known + ")");
}

}  // namespace

size_t PlanExecutor::gear_for(const std::map<std::string, HostTensor>& inputs) const {
  const Compiled& c = *compiled_;
  if (c.gears.empty()) throw Error("plan: it has no gears");
  check_input_names(plan_.gears(0).plan(), inputs);
  std::string listed, given;
  for (size_t g = 0; g < c.gears.size(); ++g) {
    const plan::Plan& gear = plan_.gears(static_cast<int>(g)).plan();
    bool fits = true;
    for (const auto& r : gear.inputs()) {
      const HostTensor& t = inputs.at(r.name());
      fits = fits && static_cast<int32_t>(t.dtype()) == r.dtype() && t.dims() == dims_of(r);
    }
    if (fits) return g;
    listed += (g ? "; " : "") + std::to_string(g) + ") " + plan_.gears(static_cast<int>(g)).name();
  }
  for (const auto& r : plan_.gears(0).plan().inputs())
    given += (given.empty() ? "" : ", ") + r.name() + " " + inputs.at(r.name()).shape_string();
  throw Error("the inputs (" + given + ") match no gear of the plan; its gears: " + listed);
}

NamedTensors PlanExecutor::run(const std::map<std::string, HostTensor>& inputs, StreamSchedule schedule,
                               OpProfile* profile) const {
  Compiled& c = *compiled_;  // its pools change; the rest is read only
  if (!c.gears.empty()) return c.gears[gear_for(inputs)]->run(inputs, schedule, profile);
  // Poisoned with NaN bytes, so reading bytes no kernel wrote shows in the numbers: a
  // fresh pool always (the check runs a fresh executor), a reused one under the
  // adversarial schedule. A reused pool otherwise keeps the last run's values, which a
  // read before its write would see from the second run on; bytes no kernel ever
  // writes stay NaN. Poisoning on every run cost MobileNetV2 6% of its run (6 MB).
  std::shared_ptr<std::byte> pool;
  {
    std::lock_guard lock(c.pools_mutex);
    if (!c.free_pools.empty()) {
      pool = std::move(c.free_pools.back());
      c.free_pools.pop_back();
    }
  }
  if (!pool)
    pool = aligned_bytes(plan_.activation_bytes(), 0xFF, "the plan's activation pool");
  else if (schedule == StreamSchedule::adversarial)
    std::memset(pool.get(), 0xFF, std::max<size_t>(plan_.activation_bytes(), 1));
  // Handed back however the run ends; a few are kept for runs at once.
  struct ReturnPool {
    Compiled& c;
    std::shared_ptr<std::byte>& pool;
    ~ReturnPool() {
      std::lock_guard lock(c.pools_mutex);
      if (c.free_pools.size() < 4) c.free_pools.push_back(std::move(pool));
    }
  } return_pool{c, pool};
  check_input_names(plan_, inputs);
  RuntimeDims runtime_dims;
  bind_inputs(inputs, pool.get(), runtime_dims);
  run_streams(pool.get(), schedule, runtime_dims, profile);
  return read_outputs(pool.get(), runtime_dims);
}

void PlanExecutor::run_probed(
    const std::map<std::string, HostTensor>& inputs,
    const std::function<void(size_t kernel, const KernelTimer& time)>& probe) const {
  const Compiled& c = *compiled_;
  if (!c.gears.empty() || plan_.input_ranges_size())
    throw Error("plan: tuning times a plan of static shapes, not one of gears or ranges");
  std::shared_ptr<std::byte> pool =
      aligned_bytes(plan_.activation_bytes(), 0xFF, "the plan's activation pool");
  check_input_names(plan_, inputs);
  RuntimeDims dims;
  bind_inputs(inputs, pool.get(), dims);
  // Every event points forward (check_plan), so the kernels' own order is a valid one.
  for (size_t k = 0; k < static_cast<size_t>(plan_.kernels_size()); ++k) {
    const plan::Kernel& pk = plan_.kernels(static_cast<int>(k));
    auto bounded = [](const plan::TensorRef& r) { return r.bounded(); };
    const bool timeable = c.bodies[k].empty() && !c.unrunnable.count(k) &&
                          std::none_of(pk.inputs().begin(), pk.inputs().end(), bounded) &&
                          std::none_of(pk.outputs().begin(), pk.outputs().end(), bounded);
    if (timeable) {
      // The kernel's activation inputs as they stand: a kernel may write over one (a
      // residual it adds in place), and each timed call must read what the run would.
      std::vector<std::pair<uint64_t, std::string>> saved;
      for (const auto& r : pk.inputs())
        if (!r.absent() && r.region() == plan::ACTIVATION)
          saved.emplace_back(r.offset(), std::string(reinterpret_cast<const char*>(pool.get()) + r.offset(),
                                                     static_cast<size_t>(r.size())));
      auto restore = [&] {
        for (const auto& [offset, bytes] : saved)
          std::memcpy(pool.get() + offset, bytes.data(), bytes.size());
      };
      const KernelTimer time = [&](const HostTactic& tactic) {
        restore();
        RuntimeDims scratch = dims;
        const auto started = std::chrono::steady_clock::now();
        run_kernel(k, pool.get(), StreamSchedule::in_order, scratch, &tactic);
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      };
      probe(k, time);
      restore();
    }
    run_kernel(k, pool.get(), StreamSchedule::in_order, dims);
  }
}

void PlanExecutor::bind_inputs(const std::map<std::string, HostTensor>& inputs, std::byte* pool,
                               RuntimeDims& runtime_dims) const {
  Compiled& c = *compiled_;
  // The sizes the inputs give the model's named dims: one name, one size (symbol -> size, input).
  std::map<std::string, std::pair<int64_t, std::string>> symbols;
  for (const auto& r : plan_.inputs()) {
    const HostTensor& t = inputs.at(r.name());
    if (r.bounded()) {
      // A range plan's input: any dims in its range (the plan checked that each range's
      // upper bound is the input's planned dims, so the bytes fit).
      const plan::InputRange& range = *c.ranges.at(r.name());
      bool in_range =
          static_cast<int32_t>(t.dtype()) == r.dtype() && static_cast<int>(t.rank()) == range.dims_size();
      for (int d = 0; in_range && d < range.dims_size(); ++d)
        in_range = t.dim(d) >= range.dims(d).min() && t.dim(d) <= range.dims(d).max();
      if (!in_range)
        throw Error("input '" + r.name() + "': got " + t.shape_string() +
                    ", outside the range the plan was compiled for (" + range_text(range) + ", " +
                    dtype_name(static_cast<DType>(r.dtype())) + ")");
      for (int d = 0; d < range.dims_size(); ++d) {
        const std::string& symbol = range.dims(d).symbol();
        if (symbol.empty()) continue;
        auto [it, first] = symbols.emplace(symbol, std::make_pair(t.dim(d), r.name()));
        if (!first && it->second.first != t.dim(d))
          throw Error("input '" + r.name() + "': dim " + std::to_string(d) + " is " +
                      std::to_string(t.dim(d)) + ", but '" + symbol + "' is " +
                      std::to_string(it->second.first) + " in input '" + it->second.second +
                      "'; the plan was compiled for one size of '" + symbol + "'");
      }
      runtime_dims.by_name[r.name()] = t.dims();
      if (t.nbytes()) std::memcpy(pool + r.offset(), t.raw(), t.nbytes());
      continue;
    }
    if (static_cast<int32_t>(t.dtype()) != r.dtype() || t.dims() != dims_of(r))
      throw Error("input '" + r.name() + "': expected " + type_text(r) + ", got " + t.shape_string());
    if (r.size()) std::memcpy(pool + r.offset(), t.raw(), r.size());
  }
}

void PlanExecutor::run_streams(std::byte* pool, StreamSchedule schedule, RuntimeDims& runtime_dims,
                               OpProfile* profile) const {
  Compiled& c = *compiled_;
  // Each step runs one stream's next kernel whose events are all recorded: the earliest
  // in the plan's order (in_order), or the latest (adversarial). Host threads for the
  // streams would add nothing but their handoffs: the kernels run one at a time on this
  // thread, with its whole OpenMP team, whatever stream they are on (a second team would
  // spin against the first on the same cores), and each handoff between threads cost
  // tens of microseconds on a virtual machine (ShuffleNet's 4-stream plan ran 1.03 to
  // 1.13x its one-stream plan that way, docs/BENCHMARKS.md).
  const size_t kernel_count = static_cast<size_t>(plan_.kernels_size());
  std::vector<char> recorded(static_cast<size_t>(plan_.events_size()), 0);
  auto waits_met = [&](size_t k) {
    for (uint32_t e : c.waits[k])
      if (!recorded[e]) return false;
    return true;
  };
  std::vector<size_t> head(c.stream_kernels.size(), 0);
  const bool latest_first = schedule == StreamSchedule::adversarial;
  for (size_t done = 0; done < kernel_count; ++done) {
    size_t pick = head.size();
    for (size_t s = 0; s < head.size(); ++s) {
      if (head[s] >= c.stream_kernels[s].size()) continue;
      const size_t k = c.stream_kernels[s][head[s]];
      if (!waits_met(k)) continue;
      if (pick == head.size()) {
        pick = s;
        continue;
      }
      const size_t best = c.stream_kernels[pick][head[pick]];
      if (latest_first ? k > best : k < best) pick = s;
    }
    if (pick == head.size()) throw Error("plan: every stream waits on an event nobody records (deadlock)");
    const size_t k = c.stream_kernels[pick][head[pick]++];
    timed_kernel(k, pool, schedule, runtime_dims, profile);
    for (uint32_t e : c.records[k]) recorded[e] = 1;
  }
}

NamedTensors PlanExecutor::read_outputs(const std::byte* pool, const RuntimeDims& runtime_dims) const {
  Compiled& c = *compiled_;
  NamedTensors outs;
  for (const auto& r : plan_.outputs()) {
    std::vector<int64_t> out_dims = dims_of(r);
    if (r.bounded()) {
      auto it = runtime_dims.by_name.find(r.name());
      if (it == runtime_dims.by_name.end())
        throw Error("plan: output '" + r.name() + "' has bounded dims that no kernel set");
      out_dims = it->second;
    }
    HostTensor t(static_cast<DType>(r.dtype()), out_dims);
    // The bytes at the dims set at run time must lie in the ones the output was given.
    if (t.nbytes() > r.size())
      throw Error("plan: output '" + r.name() + "' came out as " + t.shape_string() + ", larger than the " +
                  std::to_string(r.size()) + " bytes the plan gives it");
    // An output may be a constant (a branch that returns one of its weights).
    const std::byte* base = r.region() == plan::WEIGHT ? c.weights.get() : pool;
    if (t.nbytes()) std::memcpy(t.mutable_raw(), base + r.offset(), t.nbytes());
    outs.emplace_back(r.name(), std::move(t));
  }
  return outs;
}

}  // namespace geopt::ascend
