#pragma once
// Helpers for the rule-language tests.
#include <map>
#include <string>
#include <vector>

#include "dsl/rule_set.h"
#include "egraph/selection.h"
#include "ir/graph.h"

namespace geopt::test {

// Loads rule files; fails the test with every diagnostic if they do not load.
std::unique_ptr<dsl::RuleSet> load_rules(const std::vector<std::string>& paths);
// The shipped rules/ folder of the source tree.
std::string shipped_rules();
// `count` copies of the LayerNorm rule that ask for axes == [k], k = 1..count:
// they share every predicate but that one and never match a last-axis LayerNorm.
std::string layernorm_variants(int count);

// One rule tried at one node through the one matcher (every alternative), as
// explain, `rules match` and optimize try it.
struct NodeMatch {
  bool matched = false;
  std::string reason;                         // not matched: the failure that got furthest
  std::vector<std::string> roots;             // the root nodes' names
  std::map<std::string, std::string> values;  // %var -> the bound value's name
  std::map<std::string, Attribute> attrs;
};
NodeMatch match_at(const dsl::RuleSet& rules, const Model& model, const std::string& node, int rule = 0);
// Per rule, the nodes it matches on the model as written (geopt rules match), counted.
std::map<std::string, int> matches_per_rule(const dsl::RuleSet& rules, const Model& model,
                                            size_t* predicates_asked = nullptr);
// The cost every geopt command extracts under by default: Ascend910B1, force_fp16.
NodeCost default_cost();

}  // namespace geopt::test
