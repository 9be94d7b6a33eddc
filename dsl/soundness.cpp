#include "dsl/soundness.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "dsl/rewriter.h"
#include "dsl/rule_tests.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "onnx/import.h"

namespace geopt::dsl {
namespace {

// The test graph with every input's leading dim set to `batch` (outputs' leading dims
// left to inference). nullopt when the inputs do not share a static leading dim, or
// it already is `batch`.
std::optional<onnx::ModelProto> with_batch(const onnx::ModelProto& model, int64_t batch) {
  onnx::ModelProto m = model;
  std::vector<std::string> initializers;
  for (const auto& t : m.graph().initializer()) initializers.push_back(t.name());
  std::optional<int64_t> common;
  for (auto& in : *m.mutable_graph()->mutable_input()) {
    if (std::find(initializers.begin(), initializers.end(), in.name()) != initializers.end()) continue;
    auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() == 0 || !shape->dim(0).has_dim_value()) return std::nullopt;
    if (common && *common != shape->dim(0).dim_value()) return std::nullopt;
    common = shape->dim(0).dim_value();
    shape->mutable_dim(0)->set_dim_value(batch);
  }
  if (!common || *common == batch) return std::nullopt;
  for (auto& out : *m.mutable_graph()->mutable_output()) {
    auto* shape = out.mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() > 0 && shape->dim(0).has_dim_value() && shape->dim(0).dim_value() == *common)
      shape->mutable_dim(0)->set_dim_param("batch");
  }
  m.mutable_graph()->clear_value_info();
  return m;
}

double magnitude(const HostTensor& t) {
  if (t.dtype() != DType::F32) return 1;
  double m = 0;
  for (int64_t i = 0; i < t.size(); ++i)
    if (std::isfinite(t.data<float>()[i])) m = std::max(m, std::fabs(static_cast<double>(t.data<float>()[i])));
  return m;
}

// Runs one instance; returns the worst error (relative to the outputs' magnitude
// above 1) and fills `failure` when a shape or a NaN differs.
double worst_error(const Model& original, const Model& rewritten, const SoundnessOptions& options, std::string& failure) {
  double worst = 0;
  for (int seed = 0; seed < options.seeds; ++seed)
    for (float scale : options.input_scales) {
      auto feeds = random_inputs(original, 7000 + static_cast<uint64_t>(seed));
      for (auto& [name, t] : feeds)
        if (t.dtype() == DType::F32)
          for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] *= scale;
      NamedTensors want = Evaluator(original).run(feeds), got = Evaluator(rewritten).run(feeds);
      for (size_t i = 0; i < want.size(); ++i) {
        TensorDiff d = diff(got[i].second, want[i].second);
        if (!d.comparable || d.nan_mismatches) {
          failure = "output '" + want[i].first + "' " + (d.comparable ? "has NaNs on one side only" : d.mismatch) +
                    " (seed " + std::to_string(seed) + ", inputs x" + std::to_string(scale) + ")";
          return INFINITY;
        }
        worst = std::max(worst, d.max_abs / std::max(1.0, magnitude(want[i].second)));
      }
    }
  return worst;
}

}  // namespace

bool RuleSoundness::passed() const {
  return std::all_of(cases.begin(), cases.end(), [](const SoundnessCase& c) { return c.passed; });
}

std::vector<RuleSoundness> check_soundness(const RuleSet& rules, const SoundnessOptions& options) {
  std::vector<RuleSoundness> out;
  for (const auto& cr : rules.rules()) {
    if (!cr.enabled) continue;
    RuleSoundness rs{cr.ast->name, {}};
    for (const RuleTest& t : cr.ast->tests) {
      const Expectation* equal = nullptr;
      for (const auto& e : t.expectations)
        if (e.kind == Expectation::Kind::OutputsEqual) equal = &e;
      if (!equal) continue;  // a test without outputs_equal declares no tolerance
      const onnx::ModelProto proto = load_test_model(t);
      std::vector<std::pair<std::string, onnx::ModelProto>> variants = {{"as written", proto}};
      for (int64_t b : options.batch_sizes)
        if (auto v = with_batch(proto, b)) variants.emplace_back("batch " + std::to_string(b), std::move(*v));
      for (const auto& [shapes, variant] : variants) {
        std::optional<Model> original, rewritten;
        try {
          original.emplace(import_onnx_proto(variant, t.loc.to_string()));
          rewritten.emplace(import_onnx_proto(variant, t.loc.to_string()));
          Evaluator(*original).run(random_inputs(*original, 1));
        } catch (const std::exception&) {
          continue;  // the graph fixes its batch elsewhere (a Reshape constant): not an instance
        }
        RewriteStats stats = apply_rules(*rewritten, rules, {.first_rule = cr.ast->name});
        auto fired = stats.per_rule.find(cr.ast->name);
        if (fired == stats.per_rule.end() || fired->second.applied == 0) continue;
        SoundnessCase c{cr.ast->name, t.name, shapes, 0, equal->tolerance, true, {}};
        c.max_error = worst_error(*original, *rewritten, options, c.failure);
        c.passed = c.failure.empty() && c.max_error <= c.tolerance;
        if (c.passed == false && c.failure.empty()) c.failure = "max error " + std::to_string(c.max_error) + " over the tolerance";
        rs.cases.push_back(std::move(c));
      }
    }
    out.push_back(std::move(rs));
  }
  return out;
}

}  // namespace geopt::dsl
