#pragma once
// Why a rule did (or did not) match: every candidate site of a rule (a node of
// the rule's root op, or with `anywhere` a node of any op in its pattern), and
// for each the nearest miss: the first predicate that failed in the operand
// order that got furthest, in the user's terms (node, what was checked, value
// found, value required, rule file:line:col).
#include <map>
#include <string>
#include <vector>

#include "dsl/rule_set.h"
#include "egraph/egraph.h"
#include "ir/graph.h"
#include "ops/op_registry.h"

namespace geopt::dsl {

struct SiteExplanation {
  std::string rule;
  SourceLoc rule_loc;
  std::string node;   // the site's node (name, or "Op (unnamed node #k)")
  std::string scope;  // the control-flow body it sits in (body_scope), empty in the graph
  bool matched = false;
  std::string reason;  // why not, when not matched
  int depth = 0;       // how far the nearest miss got
  bool near = false;   // got at least halfway into the pattern (or failed only at `where`)
};

struct RuleExplanation {
  std::string rule;
  SourceLoc loc;
  bool enabled = true;
  std::vector<SiteExplanation> sites;  // nearest misses first, then matches
  std::string root_op;                 // the op type of its candidate sites
  size_t misses() const;
  size_t near_misses() const;
};

struct ExplainOptions {
  std::string rule;       // only this rule (empty: all)
  bool anywhere = false;  // also nodes of any op in the pattern, not just the root op
};

// The model as written, in its e-graph, with the canonical forms added: the rules
// tagged `canonical` (and the folds they need, `folding`) saturated. Rules are written
// against these forms, so `rules match` and explain match on it as optimize does.
GraphEGraph canonical_egraph(const RuleSet& rules, const OpRegistry& ops, const Model& model);

// Where each enabled rule matches on the model as written (canonical forms added), through the automaton and
// the one matcher (`geopt rules match`): rule -> the root nodes of its matches, in
// graph order, each once. `predicates_asked`, when given, counts automaton questions.
std::map<std::string, std::vector<std::string>> match_sites(const RuleSet& rules, const OpRegistry& ops,
                                                            const Model& model,
                                                            size_t* predicates_asked = nullptr);

// Rules with candidate sites, the ones with most misses first. Each rule's sites include
// those of the control-flow bodies (control_flow_bodies, shapes propagated), each with its
// scope, sorted with the graph's (nearest misses first, then matches).
std::vector<RuleExplanation> explain_matches(const RuleSet& rules, const OpRegistry& ops, const Model& model,
                                             const ExplainOptions& options);

}  // namespace geopt::dsl
