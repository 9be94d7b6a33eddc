#include "eval/run_limits.h"

#include "util/error.h"
#include "util/memory.h"

namespace geopt {
namespace {

thread_local const RunLimits* current = nullptr;

std::string stopped(const RunLimits& l, const std::string& node, const std::string& why) {
  return node + ": stopped " + (l.what.empty() ? std::string() : "in " + l.what + " ") + why +
         (l.hint.empty() ? "" : ": " + l.hint);
}

}  // namespace

uint64_t default_accumulated_bytes() { return physical_memory_bytes() / 4; }

RunLimits check_run_limits(double seconds) {
  RunLimits l;
  l.loop_trips = uint64_t{1} << 16;
  l.accumulated_bytes = uint64_t{2} << 30;
  l.deadline =
      std::chrono::steady_clock::now() +
      std::chrono::duration_cast<std::chrono::steady_clock::duration>(std::chrono::duration<double>(seconds));
  l.what = "the numerical check";
  l.hint =
      "the model was not checked; pass --no-check to skip the check, or --check-input for inputs that bound "
      "the loop";
  return l;
}

const RunLimits& current_run_limits() {
  static const RunLimits defaults;
  return current ? *current : defaults;
}

RunLimitsScope::RunLimitsScope(RunLimits limits) : limits_(std::move(limits)), previous_(current) {
  current = &limits_;
}

RunLimitsScope::~RunLimitsScope() { current = previous_; }

void check_run_limits(const std::string& node, uint64_t trips, uint64_t bytes) {
  const RunLimits& l = current_run_limits();
  if (trips > l.loop_trips)
    throw Error(stopped(l, node, "after " + std::to_string(l.loop_trips) + " trips of its loop"));
  if (bytes > l.accumulated_bytes)
    throw Error(
        stopped(l, node, "when its scan outputs passed " + std::to_string(l.accumulated_bytes) + " bytes"));
  if (l.deadline && std::chrono::steady_clock::now() > *l.deadline)
    throw Error(stopped(l, node, "past its time budget"));
}

}  // namespace geopt
