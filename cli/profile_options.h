#pragma once
// The options every cost-model command shares: which hardware profile
// (--soc-version, ATC's name, or a .toml), overrides of its values
// (--profile-set SECTION.KEY=VALUE) and ATC's --precision-mode.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ascend/cost_model.h"
#include "ascend/optimizer.h"

namespace geopt::cli {

struct ProfileOptions {
  std::string soc = "Ascend910B1";
  std::vector<std::string> sets;
  std::string precision = "force_fp16";

  void add_to(CLI::App* cmd);
  // Throws geopt::Error on an unknown profile or a bad override.
  ascend::HardwareProfile load() const;
  // What ascend::optimize takes: this precision mode and the saturation limits.
  ascend::OptimizeOptions optimize_options(int iterations, size_t enodes, double seconds) const;
};

}  // namespace geopt::cli
