#pragma once
// The simulated profile of a plan: kernels placed on per-stream timelines,
// starting when their stream is free and their events are recorded, with the
// Cube unit, the Vector unit and HBM bandwidth shared by the kernels running
// at once. Gives the seed's four metrics and a Chrome trace.
#include <string>
#include <vector>

#include "plan.pb.h"

namespace geopt::ascend {

struct KernelSpan {
  size_t kernel = 0;
  uint32_t stream = 0;
  double start_us = 0, end_us = 0;
};

struct PlanProfile {
  std::vector<KernelSpan> spans;  // per kernel, in plan order
  double latency_us = 0;          // the makespan
  double one_stream_us = 0;       // the kernels back to back, uncontended
  double critical_path_us = 0;    // lower bound: the longest data-dependency chain, uncontended
  double cube_utilization = 0;    // Cube busy time / latency
  double vector_utilization = 0;
  double layout_transform_share = 0;  // TransData's share of kernel time
  double memory_reuse_rate = 0;       // 1 - pool / sum of activation sizes
  double fusion_rate = 0;             // from the compile stats
};

PlanProfile simulate_plan(const plan::Plan& plan);

// Chrome trace-event JSON (chrome://tracing, Perfetto): one track per stream,
// a complete event per kernel, flow arrows for events.
std::string chrome_trace(const plan::Plan& plan, const PlanProfile& profile);

}  // namespace geopt::ascend
