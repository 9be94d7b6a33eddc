#pragma once
// Two plans timed against each other on the host as bench/ab_bench.cpp does: one process,
// the same inputs and threads, blocks of runs interleaved (A B, B A, ...), medians. What
// tuning judges a whole plan by.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "eval/host_tensor.h"
#include "plan.pb.h"

namespace geopt::ascend {

// The median and quartiles of timing samples (linear interpolation between order
// statistics); zero for no samples.
struct Spread {
  double median = 0, q1 = 0, q3 = 0;
};
Spread spread_of(std::vector<double> samples);

struct PlanTimes {
  double a_ms = 0, b_ms = 0;  // median ms of one run
  double b_over_a = 1;        // the median of the pairs' ratios (each pair's B block over its A block)
  double b_over_a_q3 = 1;     // their upper quartile: below 1, three pairs in four favour B
  // Whether B wins beyond the pairs' spread: three pairs in four favour it, not merely
  // half. On a 2-vCPU VM, plans 2-4% slower passed a median check in one tune in two.
  bool b_wins() const { return b_over_a_q3 < 1.0; }
};
PlanTimes time_plans(const plan::Plan& a, const plan::Plan& b,
                     const std::map<std::string, HostTensor>& inputs);

// Random inputs for a plan's bindings (as geopt run --random-inputs draws them), from `seed`.
std::map<std::string, HostTensor> random_plan_inputs(const plan::Plan& plan, uint64_t seed);

}  // namespace geopt::ascend
