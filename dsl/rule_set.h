#pragma once
// A loaded set of rules: parsed, checked, expanded (commutative operand orders)
// and compiled into one matcher automaton. Rules load from .gerule files at run
// time; editing a file takes effect on the next load, with no rebuild.
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "dsl/automaton.h"
#include "dsl/diagnostic.h"

namespace geopt::dsl {

// One operand order of a rule's patterns: commutative ops expanded.
struct Alternative {
  std::vector<PatternPtr> roots;
  std::map<std::string, PatternPtr> lets;
  // alike_previous[r]: root r is written like root r-1 (same ops, shared variables in the
  // same places, the rest local to each), so swapping their matches gives the same match
  // again; the matchers take such roots in graph order only, finding three alike
  // MatMuls once instead of 3! times.
  std::vector<bool> alike_previous;
  // Per root: how many edges below it its pattern looks (a `let` counted where it is used).
  std::vector<int> root_depth;
};

struct CompiledRule {
  const Rule* ast = nullptr;
  std::string file;
  bool enabled = true;
  std::vector<Alternative> alternatives;
};

class RuleSet {
 public:
  // Loads every path (a .gerule file, or a folder whose *.gerule files load in
  // name order). Parse and check errors go to `errors`; rules load only when
  // there are none.
  static std::unique_ptr<RuleSet> load(const std::vector<std::string>& paths,
                                       std::vector<Diagnostic>& errors);

  // Turns rules on or off by name or tag (a tag applies to every rule carrying it).
  // Returns false if nothing has that name or tag. Rebuilds the automaton.
  bool set_enabled(const std::string& name_or_tag, bool enabled);
  // GE-style switch file (TOML): [rules] NAME = "on"|"off", [tags] TAG = "on"|"off".
  // Throws geopt::Error naming the file and line on a bad file.
  void apply_switch_file(const std::string& path);

  const std::vector<CompiledRule>& rules() const { return rules_; }
  const CompiledRule* find(const std::string& name) const;
  const Automaton& automaton() const { return automaton_; }
  const std::vector<std::unique_ptr<RuleFile>>& files() const { return files_; }

 private:
  void rebuild_automaton();

  std::vector<std::unique_ptr<RuleFile>> files_;
  std::vector<CompiledRule> rules_;
  Automaton automaton_;
};

// The shipped rules/ folder: next to the binary (build tree), in the install
// prefix (share/geopt/rules), or in the source tree. Empty if none exists.
std::string default_rules_dir();

}  // namespace geopt::dsl
