#pragma once
// The soundness check of a rule set: every rule is applied once, at one site at a
// time, on its in-file tests' graphs (as written and at other batch sizes), and the
// program with that one rewrite is run against the original with the reference
// evaluator on several random inputs, at their usual scale and larger. On the graph
// as written the float constants the match bound are also drawn at random around
// the test's values, wherever the rule still matches (its `where` says which
// constants it accepts). A rule that only matches what other rules made is checked
// at its sites in the saturated e-graph. A rule passes when every instance stays
// within the tolerance its test declares (`expect outputs_equal tolerance T`),
// relative to the outputs' magnitude when it exceeds 1.
#include <string>
#include <vector>

#include "dsl/rule_set.h"
#include "egraph/selection.h"
#include "ops/op_registry.h"

namespace geopt::dsl {

struct SoundnessOptions {
  std::vector<int64_t> batch_sizes = {1, 3};  // besides the test's own shapes (leading dim of every input)
  int seeds = 3;
  std::vector<float> input_scales = {1.0f, 4.0f};
};

struct SoundnessCase {
  std::string rule, test;
  std::string
      shapes;  // the instance: "as written, at 'y'", "batch 3, at 'y'", "..., constants drawn: %c = [..]"
  double max_error = 0, tolerance = 0;
  bool passed = true;
  std::string failure;  // what differed, when not passed
};

struct RuleSoundness {
  std::string rule;
  std::vector<SoundnessCase> cases;  // instances where the rule fired
  bool checked() const { return !cases.empty(); }
  bool passed() const;
};

// Every enabled rule, in rule-set order. A rule none of whose tests makes it fire
// comes back unchecked (no cases): its tests need a positive case.
// `cost` chooses the rest of the program where a rule builds on other rules' results.
// `ops` fold and run each case before and after.
std::vector<RuleSoundness> check_soundness(const RuleSet& rules, const OpRegistry& ops, const NodeCost& cost,
                                           const SoundnessOptions& options = {});

}  // namespace geopt::dsl
