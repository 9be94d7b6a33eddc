#include "ascend/compile.h"
#include "device_ops/device_ops.h"
#include "ops/op_traits.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <unordered_set>

#include "ascend/execution_order.h"
#include "ascend/layout.h"
#include "ascend/lowering_notes.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "ascend/tune/op_tuning.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "eval/numerical_check.h"
#include "eval/run_limits.h"
#include "onnx/captures.h"
#include "passes/control_flow_types.h"
#include "passes/sink_into_branches.h"
#include "passes/static_shapes.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}

struct Lowered {
  std::vector<size_t> order;
  MemoryPlan memory;
  StreamPlan streams;
  plan::Plan plan;
};

Lowered lower_graph(const Model& m, const HardwareProfile& profile, const CompileOptions& options,
                    size_t max_streams);
void lower_body(const Node& n, const Model& parent, const Attribute& a, const HardwareProfile& profile,
                const CompileOptions& options, plan::Kernel& kernel, double& body_us);

// Trips a Loop or Scan kernel runs its body: a Loop's constant trip count below 2^31
// (else the length of its first static scan output, else 1); a Scan's sequence length, from its first
// scan input along its scan axis.
double trips_of(const Node& n, const Graph& parent) {
  if (control_flow_of(n) == ControlFlow::Loop) {
    // INT64_MAX (torch's while loops) and other counts past 2^31 bound nothing: the
    // condition ends the loop, so the scan outputs, if static, tell the trips.
    if (const Tensor* m = n.input(0) ? parent.constant_value(n.input(0)) : nullptr;
        m && m->element_count() == 1 && m->dtype == DType::I64 &&
        m->to_vector<int64_t>()[0] < (int64_t{1} << 31))
      return static_cast<double>(std::max<int64_t>(m->to_vector<int64_t>()[0], 0));
    const size_t carried = n.inputs().size() - capture_count(n) - 2;
    for (size_t o = carried; o < n.outputs().size(); ++o)
      if (const Value* v = n.output(o);
          v && v->type.shape && v->type.shape->rank() > 0 && (*v->type.shape)[0].is_static())
        return static_cast<double>((*v->type.shape)[0].value());
    return 1;
  }
  if (control_flow_of(n) == ControlFlow::Scan) {
    const Attribute* ns = n.attr("num_scan_inputs");
    const size_t own = n.inputs().size() - capture_count(n);
    if (!ns || ns->i < 1 || static_cast<size_t>(ns->i) > own) return 1;
    const Value* first = n.input(own - static_cast<size_t>(ns->i));
    const Attribute* axes = n.attr("scan_input_axes");
    if (!first || !first->type.shape || first->type.shape->rank() == 0) return 1;
    int64_t axis = axes && !axes->ints.empty() ? axes->ints[0] : 0;
    if (axis < 0) axis += static_cast<int64_t>(first->type.shape->rank());
    if (axis < 0 || axis >= static_cast<int64_t>(first->type.shape->rank())) return 1;
    const Dim& d = (*first->type.shape)[static_cast<size_t>(axis)];
    return d.is_static() ? static_cast<double>(d.value()) : 1;
  }
  return 1;
}

// Lowers each body of control-flow node n (a node of `parent`) to a plan of its own: the
// body typed as n feeds it, its constants from the enclosing graph made its own, its
// shapes made static, optimized with the same rules, then lowered as any graph is. The
// kernel's modeled time becomes its bodies' (If: the slower branch; Loop, Scan: per trip).
void lower_bodies(const Node& n, const Model& parent, const HardwareProfile& profile,
                  const CompileOptions& options, plan::Kernel& kernel) {
  double body_us = 0;
  for (const auto& a : n.attributes) {
    if (a.kind != AttrKind::Graph) continue;
    try {
      lower_body(n, parent, a, profile, options, kernel, body_us);
    } catch (const Error& e) {
      // Only an If may hold a branch that never runs at these shapes; a Loop or Scan body always runs.
      if (n.op_type != "If") throw;
      spdlog::warn("{}: its {} cannot run at the compiled shapes, so the plan refuses to take it: {}",
                   n.describe(), a.name, e.what());
      auto* b = kernel.add_bodies();
      b->set_attribute(a.name);
      b->set_unrunnable(e.what());
    }
  }
  const double trips = trips_of(n, *parent.graph);
  kernel.set_trips(trips);
  kernel.set_modeled_us(kernel.launch_us() + body_us * trips);
}

void lower_body(const Node& n, const Model& parent, const Attribute& a, const HardwareProfile& profile,
                const CompileOptions& options, plan::Kernel& kernel, double& body_us) {
  {
    const ControlFlow kind = control_flow_of(n);
    if (kind == ControlFlow::Scan && parent.opset_version("") < 9)
      throw Error(n.describe() +
                  ": an opset-8 Scan (batch axis and sequence_lens) is run by the evaluator but not "
                  "compiled: re-export the model at opset 9 or later");
    Model body = body_as_model(n, parent, a.name.c_str(), body_input_types(n));
    StaticShapeOptions compile_time;
    compile_time.always_fold = is_weight_layout;
    StaticShapeReport shapes = propagate_static_shapes(body, op_registry(), compile_time);
    if (!shapes.dynamic.empty()) {
      const Value* v = body.graph->find_value(shapes.dynamic.front());
      throw Error(
          n.describe() + ": its body '" + a.name + "' has a value whose shape is not static ('" + v->name() +
          "', " + v->type.to_string() +
          "); a plan needs static shapes in bodies too (a Loop's carried values must keep their shape)");
    }
    // A Loop's carried values, and a Scan's states, keep their types from trip to trip.
    const bool loop = kind == ControlFlow::Loop;
    const size_t first_state = loop ? 2 : 0, first_out = loop ? 1 : 0;
    const size_t states =
        loop ? n.inputs().size() - capture_count(n) - 2
        : kind == ControlFlow::Scan
            ? body_input_types(n).size() -
                  static_cast<size_t>(n.attr("num_scan_inputs") ? n.attr("num_scan_inputs")->i : 0)
            : 0;
    for (size_t i = 0; i < states && first_state + i < body.graph->inputs().size() &&
                       first_out + i < body.graph->outputs().size();
         ++i) {
      const Value* in = body.graph->inputs()[first_state + i];
      const Value* out = body.graph->outputs()[first_out + i];
      if (in->type.dtype != out->type.dtype || in->type.shape != out->type.shape)
        throw Error(n.describe() + ": its body takes '" + in->name() + "' as " + in->type.to_string() +
                    " but gives back '" + out->name() + "' as " + out->type.to_string() +
                    "; a plan needs carried values that keep their shape");
    }
    if (options.rules) {
      Model optimized = std::move(optimize(body, *options.rules, profile, options.optimize).model);
      propagate_static_shapes(optimized, op_registry(), compile_time);
      body = std::move(optimized);
    }
    Lowered l = lower_graph(body, profile, options, options.single_stream ? 1 : options.max_streams);
    set_plan_weights(l.plan, l.memory);
    body_us = std::max(body_us, simulate_plan(l.plan).latency_us);
    auto* b = kernel.add_bodies();
    b->set_attribute(a.name);
    *b->mutable_plan() = std::move(l.plan);
  }
}

// The outputs of an If whose branches give them different static shapes: each gets the
// bytes of the larger, as a flat upper bound, and is marked bounded in the plan (its dims
// are set at run time). Only graph outputs may be such values: a kernel reading one
// would need its shape at compile time. Returns their names.
std::set<std::string> bound_branch_shapes(Model& m) {
  std::set<std::string> bounded;
  std::unordered_set<const Value*> outputs(m.graph->outputs().begin(), m.graph->outputs().end());
  for (const auto& n : m.graph->nodes()) {
    if (!n->domain.empty() || n->op_type != "If") continue;
    bool open = false;
    for (const Value* v : n->outputs()) open = open || (v && !(v->type.shape && v->type.shape->is_static()));
    if (!open) continue;
    std::vector<ValueType> then_types, else_types;
    try {
      std::tie(then_types, else_types) = branch_output_types(*n, m, op_registry());
    } catch (const Error&) {
      continue;  // a branch that cannot run at these shapes: its outputs stay as typed
    }
    for (size_t i = 0; i < n->outputs().size() && i < then_types.size() && i < else_types.size(); ++i) {
      Value* v = n->outputs()[i];
      if (!v || (v->type.shape && v->type.shape->is_static())) continue;
      const ValueType& a = then_types[i];
      const ValueType& b = else_types[i];
      if (!a.shape || !b.shape || !a.shape->is_static() || !b.shape->is_static() || a.dtype != b.dtype)
        continue;
      if (!v->uses().empty() || !outputs.count(v))
        throw Error(n->describe() + ": its branches give '" + v->name() + "' the shapes " + a.to_string() +
                    " and " + b.to_string() + ", and " +
                    (v->uses().empty() ? std::string("it is not a graph output")
                                       : v->uses().front().node->describe() + " reads it") +
                    ": a plan holds a value of branch-dependent shape only as a graph output");
      ValueType bound;
      bound.dtype = a.dtype;
      bound.shape = Shape(std::vector<Dim>{std::max(*a.shape->element_count(), *b.shape->element_count())});
      v->type = bound;
      bounded.insert(v->name());
    }
  }
  return bounded;
}

// Streams, then the plan, for a graph whose order and memory are planned.
std::pair<StreamPlan, plan::Plan> lower_planned(
    const Model& m, const std::vector<size_t>& order, const MemoryPlan& memory,
    const HardwareProfile& profile, const CompileOptions& options, size_t max_streams,
    const std::set<std::string>& bounded = {},
    std::map<const Node*, plan::Kernel>* lowered_bodies = nullptr) {
  const Graph& g = *m.graph;
  std::vector<KernelCost> costs;
  const CostOptions priced = options.optimize.write_precision ? with_precision_applied(options.optimize.cost)
                                                              : options.optimize.cost;
  for (size_t k : order) costs.push_back(cost_of(work_of(*g.nodes()[k], priced), profile));
  StreamPlan streams = plan_streams(g, order, memory, {.max_streams = max_streams});
  validate_stream_plan(streams);
  LoweringInputs in{m,  order,  memory, streams, profile.soc_version, costs, /*with_weights=*/false,
                    {}, bounded};
  // The bodies do not depend on the enclosing plan's streams: lowered once per compile.
  in.lower_bodies = [&](const Node& n, plan::Kernel& kernel) {
    if (lowered_bodies)
      if (auto it = lowered_bodies->find(&n); it != lowered_bodies->end()) {
        *kernel.mutable_bodies() = it->second.bodies();
        kernel.set_modeled_us(it->second.modeled_us());
        return;
      }
    lower_bodies(n, m, profile, options, kernel);
    if (lowered_bodies) (*lowered_bodies)[&n] = kernel;
  };
  plan::Plan p = lower_to_plan(in);
  return {std::move(streams), std::move(p)};
}

Lowered lower_graph(const Model& m, const HardwareProfile& profile, const CompileOptions& options,
                    size_t max_streams) {
  Lowered l;
  l.order = execution_order(*m.graph, options.topo_sorting_mode);
  l.memory = plan_memory(*m.graph, l.order, options.memory);
  validate_memory_plan(l.memory);
  std::tie(l.streams, l.plan) = lower_planned(m, l.order, l.memory, profile, options, max_streams);
  return l;
}

}  // namespace

namespace {

// The device must hold the pool and the weights at once (GE reports this at compile
// time, not as an out-of-memory error at run time).
void check_fits_hbm(const MemoryPlan& memory, const HardwareProfile& profile) {
  if (profile.hbm_bytes > 0 &&
      memory.pool_bytes + memory.weight_bytes > static_cast<uint64_t>(profile.hbm_bytes)) {
    auto mib = [](uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; };
    throw Error("the plan needs " + mib(memory.pool_bytes) + " of activations and " +
                mib(memory.weight_bytes) + " of weights, more than the " +
                mib(static_cast<uint64_t>(profile.hbm_bytes)) + " of HBM on " + profile.soc_version +
                ": fix smaller input dims with --input_shape (a smaller batch or sequence), keep memory "
                "reuse on, or compile for a larger part");
  }
}

}  // namespace

void optimize_for_plan(CompileResult& r, const Model& given, Model prepared, const HardwareProfile& profile,
                       const CompileOptions& options) {
  const auto started = Clock::now();
  if (options.rules) {
    r.optimized = optimize(prepared, *options.rules, profile, options.optimize);
    r.optimized->before = cost_of_model(given, profile, options.optimize.cost);  // as optimize reports it
    r.optimized->nodes_before = given.graph->nodes().size();
    r.model = std::move(r.optimized->model);
    r.optimized->model = Model{};
    // What the optimizer left to compile time (ops of constants: weights laid out for
    // the Cube, scaled or merged by a rule) is computed now, once.
    StaticShapeOptions compile_time;
    compile_time.always_fold = is_weight_layout;
    propagate_static_shapes(r.model, op_registry(), compile_time);
    if (options.dump) options.dump("3_saturation_extraction_layout", r.model, {});
  } else {
    r.model = std::move(prepared);
    if (options.optimize.write_precision)
      apply_precision(r.model, options.optimize.cost.precision);  // fused or not
  }
  r.optimize_ms += ms_since(started);
}

void lower_for_plan(CompileResult& r, const HardwareProfile& profile, const CompileOptions& options,
                    const std::set<std::string>& bounded) {
  auto phase = Clock::now();
  const Graph& g = *r.model.graph;
  r.order = execution_order(g, options.topo_sorting_mode);
  auto memory_started = Clock::now();
  MemoryPlanOptions memory_options = options.memory;
  memory_options.runtime_shaped.insert(bounded.begin(), bounded.end());
  r.memory = plan_memory(g, r.order, memory_options);
  r.memory_ms = ms_since(memory_started);
  validate_memory_plan(r.memory);
  check_fits_hbm(r.memory, profile);
  std::map<const Node*, plan::Kernel> lowered_bodies;
  auto lower_on = [&](size_t max_streams) {
    auto [sp, p] =
        lower_planned(r.model, r.order, r.memory, profile, options, max_streams, bounded, &lowered_bodies);
    if (r.optimized) {
      auto* stats = p.mutable_compile();
      stats->set_kernels_before(r.optimized->before.kernels);
      stats->set_kernels_after(r.optimized->after.kernels);
      stats->set_fusion_rate(r.optimized->fusion_rate);
      stats->set_latency_before_us(r.optimized->before.latency_us);
      stats->set_latency_after_us(r.optimized->after.latency_us);
    }
    return std::make_pair(std::move(sp), std::move(p));
  };
  std::tie(r.streams, r.plan) = lower_on(options.single_stream ? 1 : options.max_streams);
  // Concurrent kernels share HBM and the compute units: where the simulation says the
  // streams do not pay for their events, one stream is kept (as GE may decide).
  r.profile = simulate_plan(r.plan);
  if (options.choose_streams && r.streams.stream_count > 1) {
    auto [one_streams, one_plan] = lower_on(1);
    PlanProfile one_sim = simulate_plan(one_plan);
    if (one_sim.latency_us < r.profile.latency_us) {
      char text[128];
      std::snprintf(text, sizeof text, " (%zu streams simulated slower: %.1f us against %.1f us)",
                    r.streams.stream_count, r.profile.latency_us, one_sim.latency_us);
      r.stream_note = text;
      r.streams = std::move(one_streams);
      r.plan = std::move(one_plan);
      r.profile = std::move(one_sim);
    }
  }
  if (options.op_bank) r.bank_kernels = apply_op_bank(r.plan, *options.op_bank, options.bank_key);
  set_plan_weights(r.plan, r.memory);
  r.lower_ms = ms_since(phase);
  if (options.dump) options.dump("4_lowering", r.model, lowering_notes(g, r.order, r.memory, r.streams));
}

namespace {

// Each output's worst figures over several runs (threads, schedules, sizes).
void merge_output_errors(std::vector<OutputError>& into, const std::vector<OutputError>& run) {
  for (const OutputError& e : run) {
    auto it = std::find_if(into.begin(), into.end(), [&](const OutputError& o) { return o.name == e.name; });
    if (it == into.end()) {
      into.push_back(e);
      continue;
    }
    it->max_abs = std::max(it->max_abs, e.max_abs);
    it->max_rel = std::max(it->max_rel, e.max_rel);
    it->cosine = std::min(it->cosine, e.cosine);
    it->max_reference = std::max(it->max_reference, e.max_reference);
  }
}

}  // namespace

void check_plan_against(CompileResult& r, const Model& given, const CompileOptions& options,
                        const std::map<std::string, HostTensor>& fixed) {
  CheckInputs in = choose_check_inputs(op_registry(), given, 0, size_t{256} << 20, fixed);
  const RunLimitsScope limits(check_run_limits(kCheckSeconds));
  const auto& feeds = in.feeds;
  const NamedTensors& want = in.reference;
  PlanExecutor executor(r.plan);
  double worst_ratio = r.checked ? r.check_worst_ratio : -1;
  for (auto schedule : {StreamSchedule::in_order, StreamSchedule::adversarial}) {
    OutputsDiff d =
        diff_outputs(executor.run(feeds, schedule), want, options.tolerance(model_precision(given)));
    if (!d.mismatch.empty())
      throw Error("--check: the plan's " + d.mismatch +
                  (in.describe().empty() ? "" : " (at " + in.describe() + ")"));
    r.max_abs = std::max(r.max_abs, d.error());
    r.check_ok = r.check_ok && d.within();
    merge_output_errors(r.output_errors, d.per_output);
    if (d.worst_ratio > worst_ratio) {
      worst_ratio = d.worst_ratio;
      r.check_worst = d.worst + (in.describe().empty() ? "" : " (at " + in.describe() + ")");
    }
  }
  r.check_worst_ratio = worst_ratio;
  r.checked = true;
  r.outputs = want.size();
}

CompileResult compile(const Model& given, const HardwareProfile& profile, const CompileOptions& options) {
  CompileResult r;
  const auto started = Clock::now();
  // The plan is built from the model with its shape computations folded (a plan needs
  // static shapes); the check runs the model as given. Weight layouts already in the
  // model (one geopt optimized) are computed here too.
  Model prepared = given.clone();
  StaticShapeOptions compile_time;
  compile_time.always_fold = is_weight_layout;
  StaticShapeReport shapes = propagate_static_shapes(prepared, op_registry(), compile_time);
  // Readers of a value whose shape depends on an If's branch move into the branches.
  if (sink_readers_into_branches(prepared, op_registry()) > 0)
    shapes = propagate_static_shapes(prepared, op_registry(), compile_time);
  const std::set<std::string> bounded = bound_branch_shapes(prepared);
  if (!bounded.empty())
    shapes.dynamic.erase(std::remove_if(shapes.dynamic.begin(), shapes.dynamic.end(),
                                        [&](const std::string& s) { return bounded.count(s) > 0; }),
                         shapes.dynamic.end());
  if (options.dump) options.dump("2_static_shapes", prepared, {});
  if (!shapes.dynamic.empty()) {
    std::string names;
    for (size_t i = 0; i < shapes.dynamic.size() && i < 3; ++i)
      names += (i ? ", '" : "'") + shapes.dynamic[i] + "'";
    const Value* v = prepared.graph->find_value(shapes.dynamic.front());
    throw Error("a plan needs static shapes, but " + std::to_string(shapes.dynamic.size()) +
                " value(s) are not (" + names + (shapes.dynamic.size() > 3 ? ", ..." : "") +
                "; the first is " + v->type.to_string() +
                "): fix the inputs' symbolic dims with --input_shape, e.g. " + example_input_shape(prepared) +
                ", or compile for several shapes with --dynamic_dims or --input_shape_range");
  }
  r.optimize_ms = ms_since(started);
  optimize_for_plan(r, given, std::move(prepared), profile, options);
  lower_for_plan(r, profile, options, bounded);
  if (options.check) check_plan_against(r, given, options, options.check_inputs);
  return r;
}

}  // namespace geopt::ascend
