#include "tune/plan_timing.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <vector>

#include "device_ops/device_ops.h"
#include "eval/evaluator.h"
#include "plan_executor.h"

namespace geopt::ascend {
namespace {

double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const size_t lo = static_cast<size_t>(at);
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * (at - static_cast<double>(lo));
}

}  // namespace

Spread spread_of(std::vector<double> samples) {
  if (samples.empty()) return {};
  std::sort(samples.begin(), samples.end());
  return {quantile(samples, 0.5), quantile(samples, 0.25), quantile(samples, 0.75)};
}

PlanTimes time_plans(const plan::Plan& a, const plan::Plan& b,
                     const std::map<std::string, HostTensor>& inputs) {
  using Clock = std::chrono::steady_clock;
  const PlanExecutor ea(a, op_registry()), eb(b, op_registry());
  auto once = [&](const PlanExecutor& e) {
    const auto started = Clock::now();
    e.run(inputs);
    return std::chrono::duration<double, std::milli>(Clock::now() - started).count();
  };
  double warm = 0;
  for (int i = 0; i < 2; ++i) warm = std::max({warm, once(ea), once(eb)});
  // Blocks of about 100 ms (at most 5 runs), 20 pairs, the order alternating. On a 2-core
  // virtual machine one ResNet-50 plan read 0.978 and 1.069 against itself in ab_bench's
  // 8 pairs, and with 10 pairs and the runs' medians a tuned EfficientNet-B0 that ran 2-4%
  // slower passed as 1% at most: a check needs every pair it can afford, and the ratio
  // within each pair, which a drift of the machine's speed moves less than the medians.
  const int block = std::clamp(static_cast<int>(100.0 / std::max(warm, 1e-3)), 1, 5);
  constexpr int kPairs = 20;
  std::vector<double> ta, tb, ratios;
  for (int pair = 0; pair < kPairs; ++pair) {
    std::vector<double> pa, pb;
    for (int side = 0; side < 2; ++side) {
      const bool a_first = pair % 2 == 0;
      const bool run_a = (side == 0) == a_first;
      for (int r = 0; r < block; ++r) (run_a ? pa : pb).push_back(once(run_a ? ea : eb));
    }
    ta.insert(ta.end(), pa.begin(), pa.end());
    tb.insert(tb.end(), pb.begin(), pb.end());
    const double a_block = spread_of(std::move(pa)).median;
    if (a_block > 0) ratios.push_back(spread_of(std::move(pb)).median / a_block);
  }
  const Spread r = ratios.empty() ? Spread{1.0, 1.0, 1.0} : spread_of(std::move(ratios));
  return {spread_of(std::move(ta)).median, spread_of(std::move(tb)).median, r.median, r.q3};
}

std::map<std::string, HostTensor> random_plan_inputs(const plan::Plan& plan, uint64_t seed) {
  const plan::Plan& p = plan.gears_size() ? plan.gears(0).plan() : plan;
  std::mt19937_64 rng(seed);
  std::map<std::string, HostTensor> feeds;
  for (const auto& r : p.inputs())
    feeds[r.name()] = random_tensor(static_cast<DType>(r.dtype()), {r.dims().begin(), r.dims().end()}, rng);
  return feeds;
}

}  // namespace geopt::ascend
