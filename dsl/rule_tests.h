#pragma once
// Runs the `test` blocks of rule files: each test's model goes through the
// whole rule set, then its expectations (op counts, rules fired, outputs equal
// to the original's on random inputs) are checked.
#include <string>
#include <vector>

#include "dsl/rule_set.h"

namespace geopt::dsl {

struct RuleTestResult {
  std::string rule;
  std::string test;
  SourceLoc loc;
  bool passed = true;
  std::vector<std::string> failures;  // each names the expectation's location
};

std::vector<RuleTestResult> run_rule_tests(const RuleSet& rules);

}  // namespace geopt::dsl
