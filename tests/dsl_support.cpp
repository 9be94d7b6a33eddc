#include "dsl_support.h"

#include <doctest/doctest.h>

#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "dsl/diagnostic.h"
#include "dsl/ematcher.h"
#include "dsl/explain.h"

namespace geopt::test {

std::unique_ptr<dsl::RuleSet> load_rules(const std::vector<std::string>& paths) {
  std::vector<dsl::Diagnostic> errors;
  auto set = dsl::RuleSet::load(paths, errors);
  REQUIRE_MESSAGE(set, dsl::format_diagnostics(errors));
  return set;
}

std::string shipped_rules() { return std::string(GEOPT_SOURCE_DIR_STR) + "/rules"; }

std::string layernorm_variants(int count) {
  std::string text;
  for (int k = 1; k <= count; ++k) {
    std::string a = std::to_string(k);
    text += "rule LayerNormAxis" + a +
            " [generated] {\n"
            "  let %d = Sub(%x, ReduceMean(%x) { axes == [" +
            a +
            "], keepdims == 1 })\n"
            "  let %var = ReduceMean(Pow(%d, 2.0)) { axes == [" +
            a +
            "], keepdims == 1 }\n"
            "  match %y = Add(Mul(Div(%d, Sqrt(Add(%var, const %eps))), %gamma), %beta)\n"
            "  rewrite %y => ai.geopt.LayerNorm(%x, %gamma, %beta) { axis = " +
            a +
            ", epsilon = %eps }\n"
            "}\n";
  }
  return text;
}

NodeMatch match_at(const dsl::RuleSet& rules, const Model& model, const std::string& node, int rule) {
  const GraphEGraph geg = egraph_from_graph(*model.graph);
  const EGraph& g = geg.egraph;
  dsl::EMatcher matcher(rules, g, model.opsets);
  NodeMatch out;
  dsl::Miss miss;
  bool found_node = false;
  for (ClassId c : g.class_ids())
    for (const ENode& n : g.eclass(c).nodes) {
      if (n.kind != ENode::Kind::Op || g.eclass(c).data.node_name != node) continue;
      found_node = true;
      for (size_t alt = 0; alt < rules.rules()[static_cast<size_t>(rule)].alternatives.size() && !out.matched;
           ++alt) {
        std::vector<dsl::EMatch> found;
        matcher.match(rule, static_cast<int>(alt), c, n, found, 1, &miss);
        if (found.empty()) continue;
        const dsl::EMatch& m = found.front();
        out.matched = true;
        for (ClassId r : m.roots) out.roots.push_back(g.eclass(r).data.node_name);
        for (const auto& [var, v] : m.values) out.values[var] = g.eclass(v).data.name;
        out.attrs = m.attrs;
      }
    }
  REQUIRE_MESSAGE(found_node, "no node named " << node);
  if (!out.matched) out.reason = miss.reason;
  return out;
}

std::map<std::string, int> matches_per_rule(const dsl::RuleSet& rules, const Model& model, size_t* asked) {
  std::map<std::string, int> counts;
  for (const auto& [rule, nodes] : dsl::match_sites(rules, ascend::op_registry(), model, asked))
    if (!nodes.empty()) counts[rule] = static_cast<int>(nodes.size());
  return counts;
}

NodeCost default_cost() { return ascend::egraph_cost(ascend::load_profile("Ascend910B1"), {}); }

}  // namespace geopt::test
