#pragma once
// The compile pipeline, as geopt compile runs it: shape computations folded (a plan
// needs static shapes), the optimize pipeline, what it left to compile time folded,
// a memory-aware order, the memory plan, the stream plan (kept on one stream where the
// simulation says the streams do not pay for their events), the plan, its simulated
// profile, and the plan executor checked against the model as given.
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "ascend/execution_order.h"
#include "ascend/memory_plan.h"
#include "ascend/optimizer.h"
#include "ascend/plan_profile.h"
#include "ascend/stream_plan.h"
#include "ascend/tune/knowledge_bank.h"
#include "eval/compare.h"
#include "plan.pb.h"

namespace geopt::ascend {

struct CompileOptions {
  const dsl::RuleSet* rules = nullptr;  // null: lower the model as it is (--no-optimize)
  OptimizeOptions optimize;
  MemoryPlanOptions memory;  // reuse on or off (--disable_reuse_memory), OP_NO_REUSE_MEM
  bool single_stream = false;
  size_t max_streams = 4;
  TopoSortingMode topo_sorting_mode = TopoSortingMode::memory_aware;  // --topo_sorting_mode
  // Keep one stream where the simulation says the streams do not pay for their events
  // (as GE may decide); off, the stream plan is lowered as planned (tests of events).
  bool choose_streams = true;
  bool check = true;
  // allclose: |plan - reference| <= atol + rtol |reference|; unset, the precision mode's
  // (Precision::tolerance: fp16 plans differ from the fp32 model by fp16's rounding).
  std::optional<Tolerance> check_tolerance;
  // `model`: what the model itself computes in (model_precision).
  Tolerance tolerance(const ModelPrecision& model) const {
    return check_tolerance.value_or(optimize.cost.precision.check_tolerance(optimize.write_precision, model));
  }
  std::map<std::string, HostTensor> check_inputs;  // inputs the check takes as given (--check-input)
  // A knowledge bank's tactics for the plan's kernels (--op_bank_path): the entries of
  // `bank_key` whose op signature a kernel has. Nothing is measured.
  const KnowledgeBank* op_bank = nullptr;
  BankKey bank_key;
  // Called with each stage's model (and per-node notes for lowering): --dump-graph.
  std::function<void(const std::string& stage, Model& model,
                     const std::unordered_map<const Node*, std::string>& notes)>
      dump;
};

struct CompileResult {
  std::optional<OptimizeResult> optimized;  // its `before` is the model as given
  Model model;                              // the lowered model
  std::vector<size_t> order;
  MemoryPlan memory;
  StreamPlan streams;
  plan::Plan plan;
  PlanProfile profile;
  std::string stream_note;  // why one stream was kept, when it was
  size_t bank_kernels = 0;  // kernels that took a tactic from options.op_bank
  bool checked = false, check_ok = true;
  double max_abs = 0;
  std::string check_worst;        // the element furthest outside the tolerance (or nearest its edge)
  double check_worst_ratio = -1;  // its distance against the tolerance (diff_outputs' worst_ratio)
  size_t outputs = 0;
  std::vector<OutputError> output_errors;  // per output, the largest over the check's runs
  double optimize_ms = 0, memory_ms = 0, lower_ms = 0;
};

// Throws geopt::Error when a shape stays dynamic (naming the values and an
// --input_shape that fixes them) or the plan's outputs differ in shape or type.
CompileResult compile(const Model& given, const HardwareProfile& profile, const CompileOptions& options);

// The stages of compile, for the dynamic-shape compiles (dynamic_compile.h):
// the optimize pipeline on the prepared model into r.model (as given when there are no rules);
void optimize_for_plan(CompileResult& r, const Model& given, Model prepared, const HardwareProfile& profile,
                       const CompileOptions& options);
// order, memory, streams and the plan, for r.model whose values all have static types
// (the `bounded` ones as an upper bound: plan.proto TensorRef.bounded);
void lower_for_plan(CompileResult& r, const HardwareProfile& profile, const CompileOptions& options,
                    const std::set<std::string>& bounded);
// r.plan against `given` on random inputs at sizes it runs at (or `fixed`), in the in-order
// and adversarial schedules; each call adds to r's check figures.
void check_plan_against(CompileResult& r, const Model& given, const CompileOptions& options,
                        const std::map<std::string, HostTensor>& fixed);

}  // namespace geopt::ascend
