#pragma once
// --check-atol / --check-rtol. Unset, a check takes the precision mode's tolerance: a
// plan computed in fp16 differs from the fp32 model by fp16's rounding, not by 1e-4.
#include <CLI/CLI.hpp>
#include <optional>

#include "ascend/precision_mode.h"

namespace geopt::cli {

struct CheckToleranceOption {
  std::optional<double> atol, rtol;

  void add_to(CLI::App* cmd, const char* what);
};

}  // namespace geopt::cli
