#pragma once
// The one rule matcher. Every command matches through it: optimize and compile on
// the saturated e-graph, and `rules match`, explain and the rule tests on the
// e-graph of the model as written (one e-node per class, so "any e-node of the
// class" is "the node"). The automaton runs with set-valued answers (an e-class may
// hold several e-nodes, so a position may have several op types): a sound
// prefilter, each question asked once per root e-node. The full match then
// backtracks over e-node choices (and over candidates for further roots) and returns
// every match; asked for, it also says what failed furthest when nothing matched.
#include <map>
#include <optional>
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
  // List variables (bound inside a `...` pattern): one entry per input it matched, in order.
  std::map<std::string, std::vector<ClassId>> lists;
  std::map<std::string, std::vector<Attribute>> attr_lists;
  std::vector<ClassId> roots;       // the class of each root's value
  ENode root_node;                  // the first root's e-node, as matched
  std::vector<ClassId> op_classes;  // every class an op pattern matched (what the rewrite replaces)
  // For each of those, the matched e-node's (rule, site): (-1, -1) for a node of the input graph.
  std::vector<std::pair<int32_t, int32_t>> op_origins;
};

// Why a rule alternative did not match at a root: the failure that got furthest.
// `depth` orders failures: op patterns entered; 500 more when a value (attribute,
// constant) failed there rather than the structure; 1000 more once every op pattern
// of the first root matched (further roots, `where`).
struct Miss {
  int depth = -1;
  std::string reason;
};

class EMatcher {
 public:
  EMatcher(const RuleSet& rules, const EGraph& egraph, const std::vector<OpsetImport>& opsets);

  // (rule, alternative) pairs worth trying with `node` (of class `cls`) as the first root.
  std::vector<std::pair<int, int>> candidates(ClassId cls, const ENode& node, size_t* asked = nullptr) const;
  // Appends to `out` every match of one rule alternative rooted at `node`, up to `limit`
  // in total. `miss`, when given, is updated with any failure that got further.
  void match(int rule, int alternative, ClassId cls, const ENode& node, std::vector<EMatch>& out,
             size_t limit, Miss* miss = nullptr) const;

  int64_t opset(const std::string& domain) const;
  const EGraph& egraph() const { return g_; }
  // The input through which this op takes attribute `attr` at the model's opset
  // (dsl::attribute_input), remembered per signature.
  std::optional<size_t> moved_attribute(uint32_t signature, const std::string& attr) const;

 private:
  // An op signature's answers never change once interned: its label and each attribute
  // asked about are rendered once (the automaton asks for every e-node it sees).
  const std::string& label_of(uint32_t signature) const;
  const std::string* attribute_answer_of(const ENode& node, const std::string& attr) const;

  const RuleSet& rules_;
  const EGraph& g_;
  std::vector<OpsetImport> opsets_;
  mutable std::vector<std::string> labels_;  // by signature index; "" until rendered
  mutable std::vector<bool> labelled_;
  mutable std::map<std::pair<uint32_t, std::string>, std::optional<std::string>> attribute_answers_;
  mutable std::string input_attribute_answer_;  // the last answer read from an attribute-input
  mutable std::map<std::pair<uint32_t, std::string>, std::optional<size_t>> moved_attributes_;
};

// "Op 'node name'", or for a node without one (or made by a rule) "Op (value 'name')".
std::string describe_enode(const EGraph& g, ClassId cls, const ENode& n);

}  // namespace geopt::dsl
