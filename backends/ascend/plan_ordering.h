#pragma once
// The ordering a plan's streams and events must give its pool: what check_plan adds
// after the dataflow check (which binds every read to an earlier write).
#include <string>

#include "plan.pb.h"

namespace geopt::ascend {

// Throws geopt::Error (prefixed with `where`) unless, in every order of the kernels that
// the streams and events allow:
//  - each kernel reads a pool tensor only after the kernel that writes it has run;
//  - no kernel writes over the bytes of a tensor another kernel (or the caller, for an
//    output) still reads, or that another write could still come after.
// A view (Reshape, Squeeze, Unsqueeze, Flatten, Identity, a Transpose of unit axes, a
// Split into contiguous pieces) that lies exactly where its input's bytes are rewrites
// nothing: its readers read its input's bytes. A kernel may write over a tensor it reads
// itself (in place): the kernel decides whether it can (KernelContext::new_output).
void check_plan_ordering(const plan::Plan& plan, const std::string& where);

}  // namespace geopt::ascend
