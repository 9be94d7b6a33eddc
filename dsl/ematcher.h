#pragma once
// Matching rules over an e-graph. The automaton runs with set-valued answers
// (an e-class may hold several e-nodes, so a position may have several op
// types): a sound prefilter, each question still asked once per root e-node.
// The full match then backtracks over e-node choices and returns every match.
#include <map>
#include <string>
#include <vector>

#include "dsl/rule_set.h"
#include "egraph/egraph.h"

namespace geopt::dsl {

struct EMatch {
  int rule = -1;
  int alternative = -1;
  std::map<std::string, ClassId> values;
  std::map<std::string, Attribute> attrs;
  std::vector<ClassId> roots;  // the class of each root's value
  std::vector<ClassId> op_classes;  // every class an op pattern matched (what the rewrite replaces)
  // For each of those, the matched e-node's (rule, site): (-1, -1) for a node of the input graph.
  std::vector<std::pair<int32_t, int32_t>> op_origins;
};

class EMatcher {
 public:
  EMatcher(const RuleSet& rules, const EGraph& egraph, const std::vector<OpsetImport>& opsets);

  // (rule, alternative) pairs worth trying with `node` (of class `cls`) as the first root.
  std::vector<std::pair<int, int>> candidates(ClassId cls, const ENode& node, size_t* asked = nullptr) const;
  // Appends to `out` every match of one rule alternative rooted at `node`, up to `limit` in total.
  void match(int rule, int alternative, ClassId cls, const ENode& node, std::vector<EMatch>& out, size_t limit) const;

  int64_t opset(const std::string& domain) const;

 private:
  const RuleSet& rules_;
  const EGraph& g_;
  std::vector<OpsetImport> opsets_;
};

}  // namespace geopt::dsl
