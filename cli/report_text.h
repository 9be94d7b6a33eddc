#pragma once
// Phrases the optimize and compile reports share.
#include <string>

#include "ascend/cost_model.h"

namespace geopt::cli {

// "12 -> 8", and where control-flow bodies hold kernels "12 -> 8 (in bodies 5 -> 3)".
std::string kernel_counts(const ascend::GraphCost& before, const ascend::GraphCost& after);

}  // namespace geopt::cli
