#pragma once
// Lowering to the plan file (plan.proto): the optimized graph in issue order,
// each kernel with its stream and events, every tensor at its planned place.
#include <filesystem>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "cost_model.h"
#include "ir/graph.h"
#include "memory_plan.h"
#include "plan.pb.h"
#include "stream_plan.h"

namespace geopt::ascend {

inline constexpr const char* kPlanMagic = "geopt.plan";
inline constexpr uint32_t kPlanFormatVersion = 3;        // 2: checksums; 3: gears and shape ranges
inline constexpr uint32_t kOldestPlanFormatVersion = 2;  // read as well: it has neither

struct LoweringInputs {
  const Model& model;
  const std::vector<size_t>& order;
  const MemoryPlan& memory;
  const StreamPlan& streams;
  std::string soc_version;
  std::vector<KernelCost> costs;  // per position in the order; may be empty
  // false: the weight region is left empty, for set_plan_weights once the plan is
  // chosen (compile lowers twice to pick a stream count; the weights are copied once).
  bool with_weights = true;
  // Lowers the bodies of a control-flow node into its kernel (plan.proto Body); a model
  // with control flow and no such callback is refused.
  std::function<void(const Node&, plan::Kernel&)> lower_bodies;
  // Values whose planned dims are an upper bound (plan.proto TensorRef.bounded).
  std::set<std::string> bounded;
};

plan::Plan lower_to_plan(const LoweringInputs& in);
// Fills the plan's weight region from the initializers at their planned offsets.
void set_plan_weights(plan::Plan& plan, const MemoryPlan& memory);

struct PlanWriteOptions {
  // Weights above this many bytes go to PATH.weights beside the plan: one
  // protobuf message cannot exceed 2 GB. 0: always a side file.
  uint64_t inline_weight_limit = uint64_t{1} << 30;
};

// Atomic write (the side file first, removed again if the plan cannot be
// written). The weight region is written straight from `plan`, never serialized
// into a second copy. Reading checks magic, version and
// internal consistency, loads a side file, and throws geopt::Error naming the file.
// Returns the side file written, or an empty path when the weights are inline.
std::filesystem::path write_plan(plan::Plan& plan, const std::filesystem::path& path,
                                 const PlanWriteOptions& options = {});
plan::Plan read_plan(const std::filesystem::path& path);
// The consistency checks read_plan applies (also for plans built in memory): every
// tensor inside its region with dims, dtype and size agreeing; every event recorded by
// exactly one kernel and waited on by exactly one later kernel (so no schedule can
// deadlock); a stream count no larger than the kernels need; gears that share one weight
// region and take the same inputs; input ranges that bound their inputs.
void check_plan(const plan::Plan& plan, const std::string& where);

// "input_ids:1,32;attention_mask:1,32": a gear's input dims, ATC style.
std::string gear_name(const plan::Plan& gear);
// "input_ids:[1,1~128]": a range plan's input range, ATC style.
std::string range_text(const plan::InputRange& range);

}  // namespace geopt::ascend
