#include "saturation_limit_options.h"

namespace geopt::cli {

void SaturationLimitOptions::add_to(CLI::App* cmd) {
  cmd->add_option("--iter-limit", iterations, "Saturation iterations at most")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--node-limit", enodes, "E-nodes at most")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--time-limit", seconds, "Saturation seconds at most")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

void SaturationLimitOptions::apply_to(dsl::SaturationLimits& limits) const {
  limits.iterations = iterations;
  limits.enodes = enodes;
  limits.seconds = seconds;
}

void SaturationLimitOptions::apply_to(api::RuleOptions& rules) const {
  rules.iter_limit = iterations;
  rules.node_limit = enodes;
  rules.time_limit = seconds;
}

}  // namespace geopt::cli
