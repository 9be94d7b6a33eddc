#include "optimizer.h"

#include <chrono>
#include <functional>
#include <set>

namespace geopt::ascend {
namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }
}  // namespace

NodeCost egraph_cost(const HardwareProfile& profile, const CostOptions& options) {
  return [profile, options](const EGraph& g, ClassId cls, const ENode& n) -> double {
    if (n.kind != ENode::Kind::Op) return 0.0;
    const OpSignature& s = g.signature(n.op);
    KernelDesc d{s.domain, s.op_type, &s.attributes, {}, {}};
    for (ClassId c : n.children) d.inputs.push_back(c == kAbsent ? nullptr : &g.eclass(c).data.type);
    d.outputs.push_back(&g.eclass(cls).data.type);  // a tuple's first output is costed through its Proj
    KernelCost c = cost_of(work_of(d, options), profile);
    // Kernels a rule proposed must fit; the input's own kernels always stay
    // available, so the input program can always be extracted.
    if (!c.feasible && n.origin >= 0) return kInfeasible;
    return c.total_us;
  };
}

OptimizeResult optimize(const Model& input, const dsl::RuleSet& rules, const HardwareProfile& profile, const OptimizeOptions& options) {
  OptimizeResult r;
  r.nodes_before = input.graph->nodes().size();
  r.before = cost_of_graph(*input.graph, profile, options.cost);
  auto t = Clock::now();
  GraphEGraph geg = egraph_from_graph(*input.graph);
  r.egraph_ms = ms_since(t);
  t = Clock::now();
  r.saturation = dsl::saturate(geg.egraph, rules, input.opsets, options.limits, options.backoff);
  r.saturate_ms = ms_since(t);
  r.enodes = geg.egraph.node_count();
  r.eclasses = geg.egraph.class_count();
  t = Clock::now();
  NodeCost cost = egraph_cost(profile, options.cost);
  Extraction x = extract_best(geg.egraph, geg.roots, cost, options.exact_limit);
  r.extract_ms = ms_since(t);
  r.extraction_method = x.method;
  r.extraction_optimal = x.optimal;
  r.model = extraction_to_model(input, geg, x);
  // New ops' domains (ai.geopt) must be imported.
  for (const auto& n : r.model.graph->nodes())
    if (r.model.opset_version(n->domain) == 0) r.model.opsets.push_back({n->domain, 1});
  // effect_times: the sites whose rewrite the extraction kept (any of its e-nodes).
  std::set<std::pair<int32_t, int32_t>> sites;
  std::function<void(ClassId, std::set<ClassId>&)> count = [&](ClassId c, std::set<ClassId>& seen) {
    c = geg.egraph.find(c);
    if (!seen.insert(c).second) return;
    const ENode& n = geg.egraph.eclass(c).nodes.at(x.choice.at(c));
    if (n.origin >= 0 && sites.emplace(n.origin, n.site).second) ++r.selected[rules.rules()[static_cast<size_t>(n.origin)].ast->name];
    for (ClassId ch : n.children)
      if (ch != kAbsent) count(ch, seen);
  };
  std::set<ClassId> seen;
  for (ClassId root : geg.roots) count(root, seen);
  r.nodes_after = r.model.graph->nodes().size();
  r.after = cost_of_graph(*r.model.graph, profile, options.cost);
  return r;
}

}  // namespace geopt::ascend
