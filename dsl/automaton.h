#pragma once
// One matcher automaton for all rules, in the spirit of MLIR's PDL predicate
// tree. Every rule alternative becomes a list of predicates (position,
// question, expected answer); predicates are ordered by how many alternatives
// share them and merged into a decision tree, so a predicate shared by many
// rules is evaluated once per candidate node. The tree only filters: the full
// match (bindings, where clauses, further roots) runs on its survivors.
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "ir/attribute.h"

namespace geopt::dsl {

struct Question {
  // AttrValue asks for an attribute's value (default applied), so rules that
  // differ only in the value they require share one question.
  enum class Kind { Op, OutputIndex, IsConst, AttrValue } kind = Kind::Op;
  std::vector<int> path;  // input indices from the root node
  std::string attr;       // AttrValue: the attribute's name
  std::string key;        // canonical text; equal keys are the same question
};

struct AutomatonNode {
  int question = -1;  // index into questions; -1 for a leaf
  std::map<std::string, std::unique_ptr<AutomatonNode>> on_answer;
  std::unique_ptr<AutomatonNode> otherwise;  // alternatives that do not ask this question
  std::vector<std::pair<int, int>> accept;   // (rule index, alternative index)
};

// The canonical text of an attribute value, as AttrValue questions answer.
std::string attribute_answer(const Attribute& a);

class Automaton {
 public:
  struct Entry {
    int rule;
    int alternative;
    const Pattern* root;
    const std::map<std::string, PatternPtr>* lets;
  };
  void build(const std::vector<Entry>& entries);

  // Walks the tree at one candidate: `answers(q)` gives the possible answers to
  // question q there (one for a graph node; several for an e-node, whose inputs
  // are e-classes). Returns the accepted (rule, alternative) pairs, sorted, unique.
  std::vector<std::pair<int, int>> run(
      const std::function<const std::vector<std::string>&(int question)>& answers) const;

  const std::vector<Question>& questions() const { return questions_; }
  const AutomatonNode* root() const { return root_.get(); }
  size_t node_count() const;
  size_t predicate_count() const { return total_predicates_; }  // before sharing
  // Text rendering for `geopt rules --dump-automaton`.
  std::string dump(const std::vector<std::string>& rule_names) const;

 private:
  std::vector<Question> questions_;
  std::unique_ptr<AutomatonNode> root_;
  size_t total_predicates_ = 0;
};

}  // namespace geopt::dsl
