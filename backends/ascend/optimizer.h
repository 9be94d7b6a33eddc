#pragma once
// The optimize pipeline: IR -> e-graph -> equality saturation with the rules ->
// extraction of the cheapest whole graph under the Ascend cost model -> IR.
// Infeasible kernels (working set over UB/L1 on the profile) are never picked.
#include <map>
#include <string>

#include "ascend/cost_model.h"
#include "ascend/precision_pass.h"
#include "dsl/saturation.h"
#include "egraph/extract.h"

namespace geopt::ascend {

struct OptimizeOptions {
  CostOptions cost;
  dsl::SaturationLimits limits;
  dsl::BackoffConfig backoff;
  size_t exact_limit = 40;  // exact extraction up to this many classes with a choice
  ExtractionMode extraction = ExtractionMode::automatic;
  // Write cost.precision into the result (precision_pass.h); off, the result keeps the
  // model's dtypes though the extraction priced the mode's. Off by default for now: the
  // default mode (force_fp16) is priced, and computed only when asked (the CLI asks when
  // --precision_mode is given), until every test that compares with fp32 at 1e-4 names
  // must_keep_origin_dtype (issue 19).
  bool write_precision = false;
};

// What became of one site a rule matched and rewrote in the e-graph.
struct SiteOutcome {
  std::string rule;
  std::string node;                   // the input node the rewrite replaced (its root)
  std::string scope;                  // the control-flow body it sits in (body_scope), empty in the graph
  std::vector<std::string> replaced;  // every input node its pattern covered
  bool selected = false;
  std::string reason;  // why the extraction did not keep it
};

struct OptimizeResult {
  Model model;
  bool shapes_folded = false;  // static shape computations folded before the rules ran
  dsl::SaturationReport saturation;
  std::string extraction_method;
  size_t extraction_steps = 0;  // classes extraction visited (Extraction::steps): deterministic
  bool extraction_optimal = false;
  size_t enodes = 0, eclasses = 0;
  GraphCost before, after;
  size_t nodes_before = 0, nodes_after = 0;
  std::map<std::string, size_t>
      selected;  // per rule: sites whose rewrite the result kept (GE's effect_times)
  // The same, split: rules tagged `fusion`, and the rest (layouts, algebra, eliminations).
  std::map<std::string, size_t> fused, rewritten;
  std::vector<SiteOutcome> sites;
  // The share of the input's kernels absorbed into fused kernels, and what is left unfused.
  double fusion_rate = 0;
  std::map<std::string, size_t> unfused;  // op type -> kernels of the input still in the result
  PrecisionReport precision;              // what the precision mode changed in the result
  double egraph_ms = 0, saturate_ms = 0, extract_ms = 0;
};

// The cost of one e-node on the profile (kInfeasible when it does not fit).
NodeCost egraph_cost(const HardwareProfile& profile, const CostOptions& options);

// The whole optimize pipeline, as geopt optimize, compile and explain run it: static
// shapes folded, saturation, extraction under the profile's cost, the report.
// `before` is the cost of the model as given.
OptimizeResult optimize(const Model& input, const dsl::RuleSet& rules, const HardwareProfile& profile,
                        const OptimizeOptions& options = {});

// The model as the rules see it in optimize: a copy with its shape computations folded
// and its symbolic shapes followed (propagate_static_shapes), for explain.
Model shapes_for_rules(const Model& model);

}  // namespace geopt::ascend
