#pragma once
// The simulated profile of a plan: kernels placed on per-stream timelines,
// starting when their stream is free and their events are recorded, with the
// Cube unit, the Vector unit and HBM bandwidth shared by the kernels running
// at once. Gives the seed's four metrics and a Chrome trace. A control-flow kernel's
// bodies are simulated as plans of their own: an If takes its slower branch, a Loop or
// Scan its body once per modeled trip.
#include <string>
#include <vector>

#include "plan.pb.h"

namespace geopt::ascend {

struct KernelSpan {
  size_t kernel = 0;
  uint32_t stream = 0;
  double start_us = 0, end_us = 0;
};

struct BodyProfile;

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
  std::vector<BodyProfile> bodies;    // the control-flow kernels' bodies, in plan order
};

struct BodyProfile {
  size_t kernel = 0;                 // the control-flow kernel of the enclosing plan
  std::string attribute;             // then_branch, else_branch, body
  std::string unrunnable;            // an If branch that cannot run at the compiled shapes: why
  const plan::Plan* plan = nullptr;  // its plan, inside the plan simulated (null when unrunnable)
  double trips = 1;                  // runs per run of the kernel (If: 1)
  PlanProfile profile;               // one run of the body
};

PlanProfile simulate_plan(const plan::Plan& plan);

// Chrome trace-event JSON (chrome://tracing, Perfetto): one track per stream,
// a complete event per kernel, flow arrows for events. Each body has tracks of its
// own, its first run placed inside its control-flow kernel's span.
std::string chrome_trace(const plan::Plan& plan, const PlanProfile& profile);

}  // namespace geopt::ascend
