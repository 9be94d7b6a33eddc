#include "dsl/soundness.h"
#include "ops/op_traits.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <random>
#include <set>

#include "dsl/ematcher.h"
#include "dsl/rule_run.h"
#include "dsl/rule_tests.h"
#include "dsl/saturation.h"
#include "dsl/value_facts.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "passes/window_attributes.h"

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
    if (std::isfinite(t.data<float>()[i]))
      m = std::max(m, std::fabs(static_cast<double>(t.data<float>()[i])));
  return m;
}

// Runs one instance; returns the worst error (relative to the outputs' magnitude
// above 1) and fills `failure` when a shape or a NaN differs.
double worst_error(const OpRegistry& ops, const Model& original, const Model& rewritten,
                   const SoundnessOptions& options, std::string& failure) {
  double worst = 0;
  for (int seed = 0; seed < options.seeds; ++seed)
    for (float scale : options.input_scales) {
      auto feeds = random_inputs(original, 7000 + static_cast<uint64_t>(seed));
      for (auto& [name, t] : feeds)
        if (t.dtype() == DType::F32)
          for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] *= scale;
      NamedTensors want = Evaluator(original, ops).run(feeds), got = Evaluator(rewritten, ops).run(feeds);
      for (size_t i = 0; i < want.size(); ++i) {
        TensorDiff d = diff(got[i].second, want[i].second);
        if (!d.comparable || d.nan_mismatches) {
          failure = "output '" + want[i].first + "' " +
                    (d.comparable ? "has NaNs on one side only" : d.mismatch) + " (seed " +
                    std::to_string(seed) + ", inputs x" + std::to_string(scale) + ")";
          return INFINITY;
        }
        worst = std::max(worst, d.max_abs / std::max(1.0, magnitude(want[i].second)));
      }
    }
  return worst;
}

// The model with the float constants a match bound drawn at random around their
// values; `drawn` says which and what. nullopt when it bound none.
std::optional<Model> with_constants_drawn(const Model& model, const GraphEGraph& geg, const EMatch& m,
                                          uint64_t seed, std::string& drawn) {
  Model out = model.clone();
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> scale(-2.0f, 2.0f);
  std::normal_distribution<float> shift(0.0f, 0.5f);
  bool any = false;
  for (const auto& [var, cls] : m.values) {
    const ClassData& d = geg.egraph.eclass(cls).data;
    Value* v = out.graph->find_value(d.name);
    if (!d.constant || d.constant->dtype != DType::F32 || !v) continue;
    // An initializer, or a Constant node's value.
    Attribute* value_attr = nullptr;
    if (Node* p = v->producer(); p && is_constant_node(*p))
      for (Attribute& a : p->attributes)
        if (a.name == "value" && a.tensors.size() == 1) value_attr = &a;
    if (!v->initializer && !value_attr) continue;
    HostTensor h = HostTensor::view(*d.constant);
    HostTensor copy = HostTensor::uninitialized(DType::F32, h.dims());
    const float factor = scale(rng);
    std::string values;
    for (int64_t i = 0; i < h.size(); ++i) {
      copy.mutable_data<float>()[i] = h.data<float>()[i] * factor + shift(rng);
      if (i < 4) values += (i ? ", " : "") + format_number(copy.data<float>()[i]);
    }
    std::shared_ptr<const Tensor> t = std::move(copy).into_constant(v->name());
    if (value_attr)
      value_attr->tensors[0] = t;
    else
      v->initializer = t;
    drawn += (drawn.empty() ? "" : "; ") + var + " = [" + values + (h.size() > 4 ? ", ..." : "") + "]";
    any = true;
  }
  if (!any) return std::nullopt;
  return out;
}

constexpr size_t kSitesPerGraph = 4;
constexpr int kConstantDraws = 4;

}  // namespace

bool RuleSoundness::passed() const {
  return std::all_of(cases.begin(), cases.end(), [](const SoundnessCase& c) { return c.passed; });
}

std::vector<RuleSoundness> check_soundness(const RuleSet& rules, const OpRegistry& ops, const NodeCost& cost,
                                           const SoundnessOptions& options) {
  std::vector<RuleSoundness> out;
  for (size_t ri = 0; ri < rules.rules().size(); ++ri) {
    const CompiledRule& cr = rules.rules()[ri];
    if (!cr.enabled) continue;
    const int rule = static_cast<int>(ri);
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
        std::optional<Model> original;
        try {
          original.emplace(import_onnx_proto(variant, t.loc.to_string()));
          // In the one form the optimizer gives window ops before any rule runs.
          make_window_attributes_explicit(*original->graph);
          Evaluator(*original, ops).run(random_inputs(*original, 1));
        } catch (const std::exception&) {
          continue;  // the graph fixes its batch elsewhere (a Reshape constant): not an instance
        }
        auto add_case = [&](const Model& before, const Model& after, const std::string& what) {
          SoundnessCase c{cr.ast->name, t.name, what, 0, equal->tolerance, true, {}};
          c.max_error = worst_error(ops, before, after, options, c.failure);
          c.passed = c.failure.empty() && c.max_error <= c.tolerance;
          if (!c.passed && c.failure.empty())
            c.failure = "max error " + format_number(c.max_error) + " over the tolerance";
          rs.cases.push_back(std::move(c));
        };
        // The rule once, at one site of the graph as written, against the original; then
        // with the constants it bound drawn at random (a rule sound only for the test's
        // constants is unsound).
        const GraphEGraph geg = egraph_from_graph(*original->graph);
        const std::vector<EMatch> sites = rule_matches(rules, rule, geg, original->opsets, kSitesPerGraph);
        for (const EMatch& m : sites) {
          const ClassId root = m.roots.front();
          const std::string& root_name = geg.egraph.eclass(root).data.name;
          if (auto after = apply_once(*original, rules, ops, rule, root_name, cost))
            add_case(*original, *after, shapes + ", at '" + root_name + "'");
          if (shapes != "as written") continue;
          for (int draw = 0; draw < kConstantDraws; ++draw) {
            std::string drawn;
            auto varied = with_constants_drawn(*original, geg, m, 9000 + static_cast<uint64_t>(draw), drawn);
            if (!varied) break;
            try {
              Evaluator(*varied, ops).run(random_inputs(*varied, 1));
            } catch (const std::exception&) {
              continue;  // the drawn constants make the graph itself invalid
            }
            // Only where the rule still matches: its `where` says which constants it takes.
            if (auto after = apply_once(*varied, rules, ops, rule, root_name, cost))
              add_case(*varied, *after, shapes + ", at '" + root_name + "', constants drawn: " + drawn);
          }
        }
        if (!sites.empty()) continue;
        // A rule that builds on others' results (attention fused before its LayerNorm is):
        // its sites in the saturated e-graph, each taken in the program the cost prefers.
        GraphEGraph saturated = egraph_from_graph(*original->graph);
        SaturationReport report = saturate(saturated.egraph, rules, ops, original->opsets);
        std::set<ClassId> targets;
        for (const SiteRecord& rec : report.sites) {
          if (rec.rule != rule || targets.size() >= kSitesPerGraph ||
              !targets.insert(saturated.egraph.find(rec.target)).second)
            continue;
          if (auto after = program_with_site(*original, saturated, cost, rec, std::nullopt))
            add_case(
                *original, *after,
                shapes + ", after other rules, at '" + saturated.egraph.eclass(rec.target).data.name + "'");
        }
      }
    }
    out.push_back(std::move(rs));
  }
  return out;
}

}  // namespace geopt::dsl
