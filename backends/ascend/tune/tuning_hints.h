#pragma once
// The seed's trigger for auto-tuning (GE's auto-tune): a plan's metric past its
// threshold names the tuning job that addresses it. Fusion rate below 50% and memory
// reuse below 60%: the strategy settings (subgraph tuning, --job_type 1); layout
// transforms above 20% of kernel time: the layout regions (--job_type 1, the `layout`
// tag); Cube utilisation below 70% or Vector below 60%: the kernels themselves
// (operator tuning, --job_type 2).
#include <string>
#include <vector>

#include "plan_profile.h"

namespace geopt::ascend {

struct TuningHint {
  std::string metric;  // "fusion rate", ...
  double value = 0, threshold = 0;
  bool above = false;  // the metric is past its threshold upward (layout transforms)
  int job_type = 1;
  std::string what;  // what the job changes for it
};

std::vector<TuningHint> tuning_hints(const PlanProfile& profile);
// "fusion rate 45% < 50%: geopt tune MODEL --job_type 1 (the fusion switches)"
std::string hint_text(const TuningHint& hint, const std::string& model);

}  // namespace geopt::ascend
