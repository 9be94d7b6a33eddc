#include "report_text.h"

namespace geopt::cli {

std::string kernel_counts(const ascend::GraphCost& before, const ascend::GraphCost& after) {
  std::string text = std::to_string(before.kernels) + " -> " + std::to_string(after.kernels);
  if (before.body_kernels || after.body_kernels)
    text += " (in bodies " + std::to_string(before.body_kernels) + " -> " + std::to_string(after.body_kernels) + ")";
  return text;
}

}  // namespace geopt::cli
