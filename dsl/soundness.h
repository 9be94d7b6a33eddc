#pragma once
// The soundness check of a rule set: every rule is instantiated on its in-file
// tests' graphs (the ones where it fires) at several batch sizes, the whole rule
// set is applied, and the rewritten graph is run against the original with the
// reference evaluator on several random inputs, at their usual scale and larger.
// A rule passes when every instance stays within the tolerance its test declares
// (`expect outputs_equal tolerance T`), relative to the outputs' magnitude when it
// exceeds 1.
#include <string>
#include <vector>

#include "dsl/rule_set.h"

namespace geopt::dsl {

struct SoundnessOptions {
  std::vector<int64_t> batch_sizes = {1, 3};  // besides the test's own shapes (leading dim of every input)
  int seeds = 3;
  std::vector<float> input_scales = {1.0f, 4.0f};
};

struct SoundnessCase {
  std::string rule, test, shapes;  // shapes: "as written" or "batch 3"
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
std::vector<RuleSoundness> check_soundness(const RuleSet& rules, const SoundnessOptions& options = {});

}  // namespace geopt::dsl
