#pragma once
// Runs the `test` blocks of rule files: each test's model goes through the
// whole rule set through the pipeline geopt optimize runs (the caller's: dsl/
// knows no hardware), then its expectations are checked: op counts in the result,
// `fired(R)` (the sites of R the result kept, GE's effect_times), `matched(R)`
// (the sites R rewrote in the e-graph, GE's match_times: a rewrite the cost
// model may not keep) and outputs equal to the original's on random inputs.
#include <onnx/onnx_pb.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "dsl/rule_set.h"
#include "ir/graph.h"
#include "ops/op_registry.h"

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
  std::string stopped;                // the limit the rewriting stopped at, if any
};

// What a test's model becomes: the rewritten model, and per rule the sites it kept.
struct Rewritten {
  Model model;
  std::map<std::string, size_t> selected;  // per rule: sites kept
  std::map<std::string, size_t> matched;   // per rule: sites rewritten in the e-graph
  std::vector<std::string> refusals;  // rewrites refused (a rule making the wrong type): each fails the test
  std::string stopped;                // the limit saturation stopped at, if it did not saturate
};
using RewritePipeline = std::function<Rewritten(const Model&)>;

// `ops` run each test model before and after, to compare their outputs.
std::vector<RuleTestResult> run_rule_tests(const RuleSet& rules, const OpRegistry& ops,
                                           const RewritePipeline& pipeline);

}  // namespace geopt::dsl
