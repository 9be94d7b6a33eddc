#pragma once
// --iter-limit, --node-limit, --time-limit: the saturation limits of every command that
// runs the rules, defaulting to the library's.
#include <CLI/CLI.hpp>

#include "dsl/saturation.h"
#include "geopt/geopt.h"

namespace geopt::cli {

struct SaturationLimitOptions {
  int iterations = dsl::SaturationLimits{}.iterations;
  size_t enodes = dsl::SaturationLimits{}.enodes;
  double seconds = dsl::SaturationLimits{}.seconds;

  void add_to(CLI::App* cmd);
  void apply_to(dsl::SaturationLimits& limits) const;
  void apply_to(api::RuleOptions& rules) const;
};

}  // namespace geopt::cli
