#pragma once
// The plan executor: a host simulation of the Ascend runtime. Every activation
// lives at its planned offset inside ONE pool, weights in their region, and
// each stream runs on its own host thread, waiting on events before a kernel
// and recording them after. A wrong offset, lifetime or missing event in the
// plan therefore changes the numbers.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "device_ops/device_ops.h"
#include "eval/evaluator.h"
#include "eval/host_tactic.h"
#include "eval/kernel.h"
#include "plan.pb.h"

namespace geopt::ascend {

// The order the host runs a plan's kernels in, one at a time on the calling thread
// with its whole OpenMP team: each stream's kernels in their order, a kernel once every
// event it waits on is recorded (the device's streams taking turns on the host's cores).
enum class StreamSchedule {
  in_order,     // the runnable kernel earliest in the plan's order first: the plan's
                // own order wherever its events allow
  adversarial,  // the runnable kernel latest in the plan's order first, so any missing
                // event reorders reads and writes (the check runs both)
};

class PlanExecutor {
 public:
  // Rebuilds each kernel's node from the plan; throws geopt::Error naming the
  // kernel when an op has no host kernel or an attribute does not decode.
  explicit PlanExecutor(const plan::Plan& plan, const OpRegistry& kernels = op_registry());
  ~PlanExecutor();

  const plan::Plan& plan() const { return plan_; }
  // Checks the feeds against the plan's bindings (names, dtypes, dims; a range plan's
  // inputs against its ranges). A plan of gears runs the gear whose input dims the
  // feeds have, and refuses other dims, listing its gears.
  // With `profile`, each kernel's host time (its inputs read, its outputs where the plan
  // keeps them) is added to its op type's total.
  NamedTensors run(const std::map<std::string, HostTensor>& inputs,
                   StreamSchedule schedule = StreamSchedule::in_order, OpProfile* profile = nullptr) const;
  // The gear run() takes for these feeds (a plan of gears only); throws as run() does.
  size_t gear_for(const std::map<std::string, HostTensor>& inputs) const;

  // Operator tuning (geopt tune --job_type 2). A timer runs one kernel alone with a
  // tactic, on the pool as the plan's run leaves it just before that kernel (the
  // kernel's inputs restored before each call), and returns the call's host seconds.
  using KernelTimer = std::function<double(const HostTactic&)>;
  // Runs the plan once, in its kernels' order, on `inputs`, handing `probe` a timer for
  // each kernel it may time: not a control-flow kernel, nor one of bounded dims. A plan
  // of gears or ranges is refused (geopt::Error): tuning times static shapes.
  void run_probed(const std::map<std::string, HostTensor>& inputs,
                  const std::function<void(size_t kernel, const KernelTimer& time)>& probe) const;

 private:
  // A gear: its plan, reading the weights of the plan of gears (already checked).
  PlanExecutor(const plan::Plan& gear, const OpRegistry& kernels, std::shared_ptr<std::byte> shared_weights);
  void build(const OpRegistry& kernels, std::shared_ptr<std::byte> shared_weights);

  struct Compiled;
  // The dims of bounded values (plan.proto TensorRef.bounded), as their kernels set them in
  // one run (whose kernels all run on one thread).
  struct RuntimeDims {
    std::map<std::string, std::vector<int64_t>> by_name;
  };
  // Copies the feeds into the pool at their offsets, checking each against its binding
  // (a range plan's input against its range, and one size per named dim).
  void bind_inputs(const std::map<std::string, HostTensor>& inputs, std::byte* pool, RuntimeDims& dims) const;
  // Runs every kernel, one at a time, each stream's next whose events are recorded.
  void run_streams(std::byte* pool, StreamSchedule schedule, RuntimeDims& dims, OpProfile* profile) const;
  // The outputs, read from the pool (or the weights) at their dims.
  NamedTensors read_outputs(const std::byte* pool, const RuntimeDims& dims) const;
  // With the plan's tactic for kernel k, or `tactic` where given.
  void run_kernel(size_t k, std::byte* pool, StreamSchedule schedule, RuntimeDims& dims,
                  const HostTactic* tactic = nullptr) const;
  // run_kernel, its time added to `profile` when there is one.
  void timed_kernel(size_t k, std::byte* pool, StreamSchedule schedule, RuntimeDims& dims,
                    OpProfile* profile) const;

  const plan::Plan& plan_;
  std::unique_ptr<Compiled> compiled_;
};

}  // namespace geopt::ascend
