#pragma once
// Bounds on what a run may do that its inputs do not bound: a Loop's trips and the
// scan outputs it accumulates, and a deadline. A model can ask for 2^62 trips of an
// empty body, or for a Loop with no trip count whose condition never turns false;
// `geopt run` asked for it, so it stops only at a generous bound, but the numerical
// check of optimize and compile ran it on inputs of its own choosing, so it stops early
// and says what it could not check.
//
// The limits are those of the innermost RunLimitsScope on the calling thread: the
// evaluator and the plan executor run a graph's kernels, and control-flow bodies, on
// the thread that called them.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

namespace geopt {

// A quarter of the machine's memory: what a run's Loop may accumulate by default.
uint64_t default_accumulated_bytes();

struct RunLimits {
  uint64_t loop_trips = uint64_t{1} << 22;                   // per Loop node, per run of it
  uint64_t accumulated_bytes = default_accumulated_bytes();  // a Loop's or Scan's scan outputs together
  std::optional<std::chrono::steady_clock::time_point> deadline;
  std::string what;  // who set them, for the message: "the numerical check"
  std::string hint;  // what the user can do: "pass --no-check"
};

// The limits for the numerical check: 2^16 trips, 2 GiB of scan outputs, `seconds`.
RunLimits check_run_limits(double seconds);

// The limits in force on this thread (the defaults outside any scope).
const RunLimits& current_run_limits();

// The limits in force on this thread while it lives.
class RunLimitsScope {
 public:
  explicit RunLimitsScope(RunLimits limits);
  ~RunLimitsScope();
  RunLimitsScope(const RunLimitsScope&) = delete;
  RunLimitsScope& operator=(const RunLimitsScope&) = delete;

 private:
  RunLimits limits_;
  const RunLimits* previous_;
};

// Throws geopt::Error naming `node` when `trips` or `bytes` pass the limits, or the
// deadline has passed.
void check_run_limits(const std::string& node, uint64_t trips, uint64_t bytes);

}  // namespace geopt
