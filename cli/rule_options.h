#pragma once
// The options every rule-using command shares: where rules come from
// (--rules, repeatable; default: the shipped rules/), and which are off
// (--disable NAME|TAG, --fusion-switch-file FILE, after GE's switch file).
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "dsl/rule_set.h"
#include "geopt/geopt.h"

namespace geopt::cli {

struct RuleOptions {
  std::vector<std::string> paths;
  std::vector<std::string> disabled;
  std::string switch_file;

  void add_to(CLI::App* cmd);
  api::RuleOptions api() const;
  // Loads, checks and switches the rules; throws geopt::Error with every diagnostic.
  std::unique_ptr<dsl::RuleSet> load() const;
  std::vector<std::string> resolved_paths() const;
};

}  // namespace geopt::cli
