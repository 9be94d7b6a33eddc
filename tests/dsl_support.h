#pragma once
// Helpers for the rule-language tests.
#include <string>
#include <vector>

#include "dsl/rule_set.h"

namespace geopt::test {

// Loads rule files; fails the test with every diagnostic if they do not load.
std::unique_ptr<dsl::RuleSet> load_rules(const std::vector<std::string>& paths);
// The shipped rules/ folder of the source tree.
std::string shipped_rules();
// `count` copies of the LayerNorm rule that ask for axes == [k], k = 1..count:
// they share every predicate but that one and never match a last-axis LayerNorm.
std::string layernorm_variants(int count);

}  // namespace geopt::test
