#pragma once
// Applies matches to an IR graph: builds each rewrite's replacement (or folds a
// constant subgraph), redirects uses, keeps the names users know, and removes
// what became dead. `apply_rules` is the direct driver used by rule tests and
// `geopt rules apply`: it merges common subexpressions, then rewrites until nothing
// more matches.
#include <map>
#include <string>

#include "dsl/matcher.h"

namespace geopt::dsl {

struct RuleStats {
  int matched = 0;  // full matches found
  int applied = 0;  // rewrites made
};

struct RewriteStats {
  std::map<std::string, RuleStats> per_rule;
  int passes = 0;
  size_t nodes_before = 0, nodes_after = 0;
};

struct RewriteOptions {
  int max_passes = 32;
  // A rule applied alone in a first pass, before any other rule rewrites its sites
  // (the soundness check gives the rule under test its instances this way).
  std::string first_rule;
  // Leave `late` rules out altogether (explain's re-check: they enable no other rule,
  // and the weight layouts among them would copy every weight).
  bool skip_late = false;
};

// Applies one match; false (with `why`) when it cannot: a fold too large, an op
// without a kernel, or a rewrite that would create a cycle.
bool apply_match(Model& model, const RuleSet& rules, const Match& match, std::string* why);

RewriteStats apply_rules(Model& model, const RuleSet& rules, const RewriteOptions& options = {});

}  // namespace geopt::dsl
