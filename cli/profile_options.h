#pragma once
// The options every cost-model command shares: which hardware profile
// (--soc-version, ATC's name, or a .toml), overrides of its values
// (--profile-set SECTION.KEY=VALUE) and ATC's --precision-mode.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "ascend/cost_model.h"

namespace geopt::cli {

struct ProfileOptions {
  std::string soc = "Ascend910B1";
  std::vector<std::string> sets;
  std::string precision = "force_fp16";

  void add_to(CLI::App* cmd);
  // Throws geopt::Error on an unknown profile or a bad override.
  ascend::HardwareProfile load() const;
};

}  // namespace geopt::cli
