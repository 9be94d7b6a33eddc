#pragma once
// Matches a rule set against an IR graph: the automaton picks the rule
// alternatives worth trying at a node (each shared predicate asked once), then
// the full match binds variables, checks `where` clauses and finds further roots.
#include <map>
#include <string>
#include <vector>

#include "dsl/rule_set.h"
#include "ir/graph.h"

namespace geopt::dsl {

struct Match {
  int rule = -1;
  int alternative = -1;
  std::map<std::string, Value*> values;     // %var -> matched value
  std::map<std::string, Attribute> attrs;   // %var -> bound attribute value
  std::vector<Node*> roots;                 // one per `match` root
  std::vector<Node*> nodes;                 // every node an op pattern matched
};

class Matcher {
 public:
  Matcher(const RuleSet& rules, const Model& model);

  // Full matches of enabled rules rooted at `node`, in rule order, at most one per
  // rule. `predicates_asked`, when given, counts automaton questions evaluated.
  std::vector<Match> match_at(Node* node, size_t* predicates_asked = nullptr) const;
  // Only the automaton's survivors at `node`: (rule, alternative) pairs.
  std::vector<std::pair<int, int>> candidates_at(Node* node, size_t* predicates_asked = nullptr) const;
  // Tries one alternative of one rule at `node`; on failure, `why` says what failed first.
  // `depth`, when given, says how far the attempt got (to pick the nearest miss).
  bool try_rule(int rule, int alternative, Node* node, Match& out, std::string* why, int* depth = nullptr) const;

  // The constant behind a value (initializer that is not a graph input, or a Constant node's value).
  const Tensor* constant_of(const Value* v) const;

 private:
  const RuleSet& rules_;
  const Model& model_;
};

}  // namespace geopt::dsl
