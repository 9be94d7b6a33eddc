// Two plans of one model, timed like for like: the same process, inputs and thread
// count, runs interleaved (A, B, A, B, ...) so a slow spell of a shared machine falls
// on both. Used for "a plan on N streams against the same plan on one stream".
// Prints JSON: each side's median run time and the median of the per-pair ratios B/A.
//   geopt_plan_ab_bench PLAN_A PLAN_B INPUT_DIR THREADS PAIRS
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <omp.h>

#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "io/npy.h"
#include "util/error.h"

using namespace geopt;

namespace {

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s PLAN_A PLAN_B INPUT_DIR THREADS PAIRS\n", argv[0]);
    return 1;
  }
  try {
    const int threads = std::atoi(argv[4]), pairs = std::atoi(argv[5]);
    if (threads <= 0 || pairs <= 0) throw Error("THREADS and PAIRS must be positive");
    omp_set_num_threads(threads);
    const plan::Plan a = ascend::read_plan(argv[1]), b = ascend::read_plan(argv[2]);
    const ascend::PlanExecutor run_a(a), run_b(b);
    const auto feeds = read_npy_folder(argv[3]);
    auto time = [&](const ascend::PlanExecutor& e) {
      const auto t0 = std::chrono::steady_clock::now();
      e.run(feeds);
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    };
    for (int i = 0; i < 2; ++i) time(run_a), time(run_b);  // weights packed, primitives made
    std::vector<double> ta, tb, ratio;
    for (int i = 0; i < pairs; ++i) {
      // Alternate which goes first, so neither always follows the other.
      double x, y;
      if (i % 2) y = time(run_b), x = time(run_a);
      else x = time(run_a), y = time(run_b);
      ta.push_back(x);
      tb.push_back(y);
      ratio.push_back(y / x);
    }
    std::printf("{\"a_median_ms\": %.3f, \"b_median_ms\": %.3f, \"b_over_a\": %.4f, \"pairs\": %d, \"threads\": %d}\n", median(ta), median(tb),
                median(ratio), pairs, threads);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
}
