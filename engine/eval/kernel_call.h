#pragma once
// One kernel call as both the reference evaluator and the plan executor make it:
// half inputs widened to f32 where the kernel asks for it, exceptions turned
// into errors that name the node, outputs narrowed back.
#include <vector>

#include "eval/host_tensor.h"
#include "eval/kernel.h"
#include "ir/node.h"

namespace geopt {

// `inputs` holds nullptr for omitted optional inputs. Returns one tensor per
// node output (undefined for omitted outputs); throws geopt::Error. `ops` are the ops the
// caller runs with (a control-flow node runs its bodies with them). `scope` is where
// the node runs (control-flow bodies look outer values up in it); `placements`, where
// the caller keeps the outputs (KernelContext::new_output); `tactic`, how it runs
// (KernelContext::tactic).
std::vector<HostTensor> call_kernel(const OpRegistry& ops, const KernelInfo& kernel, const Node& node,
                                    int64_t opset, std::vector<const HostTensor*> inputs,
                                    const Scope* scope = nullptr,
                                    std::vector<OutputPlacement> placements = {},
                                    const HostTactic& tactic = {});

}  // namespace geopt
