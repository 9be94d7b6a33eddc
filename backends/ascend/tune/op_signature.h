#pragma once
// An op signature: what decides how fast a plan's kernel runs and which tactic wins, as
// text: its op, its tensors' dtypes, dims, formats and regions, and its attributes. Two
// kernels of one signature take one tactic from the knowledge bank, whatever the model
// (their weights' values and their names do not enter it).
#include <string>

#include "plan.pb.h"

namespace geopt::ascend {

// "ai.geopt::FusedConv(f32[1,2,56,56,16]:NC1HWC0, f32[32,32,3,3]:W, ...) -> (f32[1,2,56,56,16]:NC1HWC0)
//  {activation=\"relu\", group=1, ...}". Throws geopt::Error when an attribute does not decode.
std::string op_signature(const plan::Kernel& kernel);

}  // namespace geopt::ascend
