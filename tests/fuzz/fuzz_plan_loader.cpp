// The plan loader (backends/ascend/plan_file.cpp) and, for what it accepts, the plan
// executor. The bytes are read as a file as given, and, where they parse as a Plan,
// resealed (checksums recomputed, as a reviewer who knows the CRC does): so the checks
// behind the checksums see every mutation, and a plan they accept must run.
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "fuzz_support.h"
#include "util/error.h"

namespace {

using namespace geopt;

void run_small(const plan::Plan& p) {
  const plan::Plan& bound = p.gears_size() ? p.gears(0).plan() : p;
  uint64_t bytes = p.activation_bytes() + p.weight_bytes();
  for (const auto& g : p.gears()) bytes += g.plan().activation_bytes();
  if (bytes > (uint64_t{64} << 20) || bound.kernels_size() > 256) return;  // loading was the question
  std::map<std::string, HostTensor> feeds;
  for (const auto& r : bound.inputs()) {
    if (r.absent() || r.size() > (uint64_t{16} << 20)) return;
    feeds[r.name()] = HostTensor(static_cast<DType>(r.dtype()), {r.dims().begin(), r.dims().end()});
  }
  ascend::PlanExecutor executor(p);
  executor.run(feeds);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = fuzz::as_file(data, size, ".plan");
  fuzz::refused_or_fine([&] { run_small(ascend::read_plan(path)); });
  plan::Plan parsed;
  if (!parsed.ParseFromArray(data, static_cast<int>(size)) || !parsed.weights_file().empty()) return 0;
  fuzz::refused_or_fine([&] {
    const auto resealed = path.string() + ".resealed";
    ascend::write_plan(parsed, resealed);
    run_small(ascend::read_plan(resealed));
  });
  return 0;
}
