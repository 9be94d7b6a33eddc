#pragma once
// Runs the `test` blocks of rule files: each test's model goes through the
// whole rule set, then its expectations (op counts, rules fired, outputs equal
// to the original's on random inputs) are checked.
#include <onnx/onnx_pb.h>

#include <string>
#include <vector>

#include "dsl/rule_set.h"

namespace geopt::dsl {

// A test's model as ONNX (its text parsed, or its file read, relative to the rule
// file); throws geopt::Error naming the test.
onnx::ModelProto load_test_model(const RuleTest& test);

struct RuleTestResult {
  std::string rule;
  std::string test;
  SourceLoc loc;
  bool passed = true;
  std::vector<std::string> failures;  // each names the expectation's location
};

std::vector<RuleTestResult> run_rule_tests(const RuleSet& rules);

}  // namespace geopt::dsl
