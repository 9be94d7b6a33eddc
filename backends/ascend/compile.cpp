#include "ascend/compile.h"

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "ascend/execution_order.h"
#include "ascend/layout.h"
#include "ascend/lowering_notes.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "eval/numerical_check.h"
#include "passes/static_shapes.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {

using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

}  // namespace

CompileResult compile(const Model& given, const HardwareProfile& profile, const CompileOptions& options) {
  const auto started = Clock::now();
  auto dump = [&](const std::string& stage, Model& m, const std::unordered_map<const Node*, std::string>& notes = {}) {
    if (options.dump) options.dump(stage, m, notes);
  };
  CompileResult r;
  // The plan is built from the model with its shape computations folded (a plan needs
  // static shapes); the check runs the model as given. Weight layouts already in the
  // model (one geopt optimized) are computed here too.
  Model prepared = given.clone();
  StaticShapeOptions compile_time;
  compile_time.always_fold = is_weight_layout;
  StaticShapeReport shapes = propagate_static_shapes(prepared, compile_time);
  dump("2_static_shapes", prepared);
  if (!shapes.dynamic.empty()) {
    std::string names;
    for (size_t i = 0; i < shapes.dynamic.size() && i < 3; ++i) names += (i ? ", '" : "'") + shapes.dynamic[i] + "'";
    const Value* v = prepared.graph->find_value(shapes.dynamic.front());
    throw Error("a plan needs static shapes, but " + std::to_string(shapes.dynamic.size()) + " value(s) are not (" + names +
                (shapes.dynamic.size() > 3 ? ", ..." : "") + "; the first is " + v->type.to_string() +
                "): fix the inputs' symbolic dims with --input_shape, e.g. " + example_input_shape(prepared));
  }
  if (options.rules) {
    r.optimized = optimize(prepared, *options.rules, profile, options.optimize);
    r.optimized->before = cost_of_graph(*given.graph, profile, options.optimize.cost);  // as optimize reports it
    r.optimized->nodes_before = given.graph->nodes().size();
    r.model = std::move(r.optimized->model);
    r.optimized->model = Model{};
    // What the optimizer left to compile time (ops of constants: weights laid out for
    // the Cube, scaled or merged by a rule) is computed now, once.
    propagate_static_shapes(r.model, compile_time);
    dump("3_saturation_extraction_layout", r.model);
  } else {
    r.model = std::move(prepared);
  }
  r.optimize_ms = ms_since(started);

  auto phase = Clock::now();
  const Graph& g = *r.model.graph;
  r.order = memory_aware_order(g);
  auto memory_started = Clock::now();
  r.memory = plan_memory(g, r.order, options.memory);
  r.memory_ms = ms_since(memory_started);
  validate_memory_plan(r.memory);
  // The device must hold the pool and the weights at once (GE reports this at compile
  // time, not as an out-of-memory error at run time).
  if (profile.hbm_bytes > 0 && r.memory.pool_bytes + r.memory.weight_bytes > static_cast<uint64_t>(profile.hbm_bytes)) {
    auto mib = [](uint64_t b) { return std::to_string((b + (1 << 20) - 1) >> 20) + " MiB"; };
    throw Error("the plan needs " + mib(r.memory.pool_bytes) + " of activations and " + mib(r.memory.weight_bytes) + " of weights, more than the " +
                mib(static_cast<uint64_t>(profile.hbm_bytes)) + " of HBM on " + profile.soc_version +
                ": fix smaller input dims with --input_shape (a smaller batch or sequence), keep memory reuse on, or compile for a larger part");
  }
  std::vector<KernelCost> costs;
  for (size_t k : r.order) costs.push_back(cost_of(work_of(*g.nodes()[k], options.optimize.cost), profile));
  auto lower_on = [&](size_t max_streams) {
    StreamPlan sp = plan_streams(g, r.order, r.memory, {.max_streams = max_streams});
    validate_stream_plan(sp);
    plan::Plan p = lower_to_plan({r.model, r.order, r.memory, sp, profile.soc_version, costs, /*with_weights=*/false});
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
      std::snprintf(text, sizeof text, " (%zu streams simulated slower: %.1f us against %.1f us)", r.streams.stream_count, r.profile.latency_us,
                    one_sim.latency_us);
      r.stream_note = text;
      r.streams = std::move(one_streams);
      r.plan = std::move(one_plan);
      r.profile = std::move(one_sim);
    }
  }
  set_plan_weights(r.plan, r.memory);
  r.lower_ms = ms_since(phase);
  dump("4_lowering", r.model, lowering_notes(g, r.order, r.memory, r.streams));

  if (options.check) {
    CheckInputs in = choose_check_inputs(given, 0);
    const auto& feeds = in.feeds;
    const NamedTensors& want = in.reference;
    PlanExecutor executor(r.plan);
    double worst_ratio = -1;
    for (auto schedule : {StreamSchedule::threads, StreamSchedule::adversarial}) {
      OutputsDiff d = diff_outputs(executor.run(feeds, schedule), want, options.check_tolerance);
      if (!d.mismatch.empty()) throw Error("--check: the plan's " + d.mismatch);
      r.max_abs = std::max(r.max_abs, d.error());
      r.check_ok = r.check_ok && d.within();
      if (d.worst_ratio > worst_ratio) {
        worst_ratio = d.worst_ratio;
        r.check_worst = d.worst;
      }
    }
    r.checked = true;
    r.outputs = want.size();
  }
  return r;
}

}  // namespace geopt::ascend
