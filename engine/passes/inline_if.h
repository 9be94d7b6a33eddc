#pragma once
// An If whose condition is a constant is its branch: the branch's nodes move into the
// enclosing graph in the If's place (its values renamed apart, its references to the
// enclosing graph bound to the If's captured inputs), so the rest of the pipeline sees
// plain dataflow. Exporters leave such Ifs behind where a condition depends only on
// shapes (torch.jit.script's `if x.dim() == 3`), which --input_shape makes constant.
#include <cstddef>

#include "ir/graph.h"

namespace geopt {

// Inlines every such If of the model's graph (not of bodies); returns how many.
// `remove_dead_code` false: the Ifs inlined and what only they read stay, unread (for a
// caller that reads every value's type, StaticShapeOptions::remove_dead_code).
size_t inline_constant_ifs(Model& model, bool remove_dead_code = true);

}  // namespace geopt
