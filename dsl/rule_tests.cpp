#include "dsl/rule_tests.h"

#include <onnx/defs/parser.h>

#include <cmath>
#include <fstream>

#include "eval/compare.h"
#include "eval/evaluator.h"
#include "ir/domain.h"
#include "onnx/import.h"
#include "util/error.h"
#include "util/input_file.h"

namespace geopt::dsl {
namespace {

namespace fs = std::filesystem;

Model load_model(const RuleTest& t) {
  // A file is imported from its path, so external data next to it is found.
  if (!t.model_file.empty()) return import_onnx(fs::path(t.loc.file).parent_path() / t.model_file);
  return import_onnx_proto(load_test_model(t), t.loc.to_string());
}

bool compare(int64_t got, CmpOp op, int64_t want) {
  switch (op) {
    case CmpOp::Eq:
      return got == want;
    case CmpOp::Ne:
      return got != want;
    case CmpOp::Lt:
      return got < want;
    case CmpOp::Le:
      return got <= want;
    case CmpOp::Gt:
      return got > want;
    case CmpOp::Ge:
      return got >= want;
    default:
      return false;
  }
}

}  // namespace

onnx::ModelProto load_test_model(const RuleTest& t) {
  onnx::ModelProto proto;
  if (!t.model_file.empty()) {
    const fs::path path = fs::path(t.loc.file).parent_path() / t.model_file;
    std::string bytes;
    try {
      bytes = read_regular_file(path, size_t{1} << 30, "a rule test's model");
    } catch (const Error& e) {
      throw Error(t.loc.to_string() + ": cannot read the test model: " + e.what());
    }
    if (!proto.ParseFromString(bytes))
      throw Error(t.loc.to_string() + ": cannot read the test model " + path.string() +
                  " (not an ONNX model)");
    return proto;
  }
  auto status = onnx::OnnxParser::Parse(proto, t.model_text.c_str());
  if (!status.IsOK())
    throw Error(t.loc.to_string() + ": the test model does not parse: " + status.ErrorMessage());
  return proto;
}

std::vector<RuleTestResult> run_rule_tests(const RuleSet& rules, const OpRegistry& ops,
                                           const RewritePipeline& pipeline) {
  std::vector<RuleTestResult> results;
  for (const auto& cr : rules.rules())
    for (const RuleTest& t : cr.ast->tests) {
      RuleTestResult r{cr.ast->name, t.name, t.loc, true, {}, {}};
      auto failed = [&](const SourceLoc& loc, const std::string& msg) {
        r.passed = false;
        r.failures.push_back(loc.to_string() + ": " + msg);
      };
      try {
        Model original = load_model(t);
        const Rewritten run = pipeline(original);
        const Model& model = run.model;
        r.stopped = run.stopped;
        for (const std::string& refusal : run.refusals) failed(t.loc, refusal);
        for (const Expectation& e : t.expectations) {
          if (e.kind == Expectation::Kind::Count) {
            const std::string domain = canonical_domain(e.domain);
            int64_t n = 0;
            for (const auto& node : model.graph->nodes())
              n += node->op_type == e.op && node->domain == domain;
            if (!compare(n, e.cmp, e.value))
              failed(e.loc, "count(" + (domain.empty() ? "" : domain + ".") + e.op + ") is " +
                                std::to_string(n) + ", expected " + cmp_op_text(e.cmp) + " " +
                                std::to_string(e.value));
          } else if (e.kind == Expectation::Kind::Fired || e.kind == Expectation::Kind::Matched) {
            const bool fired = e.kind == Expectation::Kind::Fired;
            const auto& per_rule = fired ? run.selected : run.matched;
            auto it = per_rule.find(e.rule);
            int64_t n = it == per_rule.end() ? 0 : static_cast<int64_t>(it->second);
            if (!compare(n, e.cmp, e.value))
              failed(e.loc, std::string(fired ? "fired(" : "matched(") + e.rule + ") is " +
                                std::to_string(n) + ", expected " + cmp_op_text(e.cmp) + " " +
                                std::to_string(e.value));
          } else {
            auto feeds = random_inputs(original, 1234);
            NamedTensors want = Evaluator(original, ops).run(feeds);
            NamedTensors got = Evaluator(model, ops).run(feeds);
            for (size_t i = 0; i < want.size(); ++i) {
              TensorDiff d = diff(got[i].second, want[i].second);
              if (!d.comparable || d.max_abs > e.tolerance || d.nan_mismatches)
                failed(e.loc, "output '" + want[i].first + "' differs: " +
                                  (d.comparable ? "max abs error " + std::to_string(d.max_abs) : d.mismatch));
            }
          }
        }
      } catch (const std::exception& ex) {
        failed(t.loc, ex.what());
      }
      results.push_back(std::move(r));
    }
  return results;
}

}  // namespace geopt::dsl
