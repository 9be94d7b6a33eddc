#include "tune/tuning_hints.h"

#include <cstdio>

namespace geopt::ascend {

std::vector<TuningHint> tuning_hints(const PlanProfile& p) {
  std::vector<TuningHint> hints;
  auto below = [&](const char* metric, double value, double threshold, int job, const char* what) {
    if (value < threshold) hints.push_back({metric, value, threshold, false, job, what});
  };
  below("fusion rate", p.fusion_rate, 0.5, 1, "the fusion switches");
  below("memory reuse", p.memory_reuse_rate, 0.6, 1, "the fusion switches and stream count");
  if (p.layout_transform_share > 0.2)
    hints.push_back({"layout transforms", p.layout_transform_share, 0.2, true, 1, "the layout regions"});
  // A plan with no Cube (or no Vector) work has nothing to tune there.
  if (p.cube_utilization > 0) below("Cube utilisation", p.cube_utilization, 0.7, 2, "the kernels' tactics");
  if (p.vector_utilization > 0)
    below("Vector utilisation", p.vector_utilization, 0.6, 2, "the kernels' tactics");
  return hints;
}

std::string hint_text(const TuningHint& h, const std::string& model) {
  // A launch-bound plan's Cube may be busy 0.3% of its time: one decimal below 10%, not "0%".
  const double percent = 100 * h.value;
  char figures[64];
  std::snprintf(figures, sizeof figures, percent < 10 ? " %.1f%% %s %.0f%%" : " %.0f%% %s %.0f%%", percent,
                h.above ? ">" : "<", 100 * h.threshold);
  return h.metric + figures + ": geopt tune " + model + " --job_type " + std::to_string(h.job_type) + " (" +
         h.what + ")";
}

}  // namespace geopt::ascend
