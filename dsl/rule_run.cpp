#include "dsl/rule_run.h"

#include <algorithm>
#include <chrono>
#include <set>

#include "dsl/ematcher.h"

namespace geopt::dsl {
namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
}  // namespace

Model extracted_model(const Model& input, const GraphEGraph& geg, const Extraction& x,
                      std::map<std::string, std::pair<int32_t, int32_t>>* origins) {
  Model m = extraction_to_model(input, geg, x, origins);
  for (const auto& n : m.graph->nodes())
    if (m.opset_version(n->domain) == 0) m.opsets.push_back({n->domain, 1});
  return m;
}

RuleRun run_rules(const Model& input, const RuleSet& rules, const OpRegistry& ops, const NodeCost& cost,
                  const RuleRunOptions& options) {
  RuleRun r;
  auto t = Clock::now();
  r.egraph = egraph_from_graph(*input.graph);
  r.egraph_ms = ms_since(t);
  t = Clock::now();
  r.saturation = saturate(r.egraph.egraph, rules, ops, input.opsets, options.limits, options.backoff);
  r.saturate_ms = ms_since(t);
  t = Clock::now();
  r.cost = remember_costs(cost);  // priced many times below
  const EGraph& g = r.egraph.egraph;
  r.extraction = extract_best(g, r.egraph.roots, r.cost, options.exact_limit, options.extraction);
  r.extract_ms = ms_since(t);
  r.model = extracted_model(input, r.egraph, r.extraction, &r.origins);

  // Sites whose e-nodes the result computes. A free helper (a view, a constant) that a
  // site built below its rewritten values does not count on its own: e-nodes are shared,
  // so the first site to build one owns it (QKVMerge's Reshape of the input, which
  // QKVMergeBiased builds too and whose merged product is the one chosen).
  std::map<std::pair<int32_t, int32_t>, const SiteRecord*> records;
  for (const auto& rec : r.saturation.sites) records[{rec.rule, rec.site}] = &rec;
  const Selection kept(g, r.egraph.roots, r.cost, r.extraction.choice);
  for (ClassId c : kept.order()) {
    const ENode& n = g.eclass(c).nodes.at(r.extraction.choice.at(c));
    if (n.origin < 0) continue;
    if (auto it = records.find({n.origin, n.site}); it != records.end() && r.cost(g, c, n) == 0) {
      const auto& targets = it->second->targets;
      if (std::none_of(targets.begin(), targets.end(), [&](ClassId t) { return g.find(t) == c; })) continue;
    }
    r.kept_sites.emplace(n.origin, n.site);
  }
  // A site the result keeps without any e-node of its own: a rewrite into a value that
  // was there (Dropout into its input) is kept where its root e-node is not chosen; a
  // site whose value the result computes through a later rewrite by a rule that fuses
  // nothing (a layout: weights in FRACTAL_NZ, the op in NC1HWC0) covering the same input
  // nodes is kept in that form.
  auto is_fusion = [&](int32_t rule) {
    return rules.rules()[static_cast<size_t>(rule)].ast->has_tag("fusion");
  };
  auto only_values = [&](int32_t rule) {
    const auto& rewrites = rules.rules()[static_cast<size_t>(rule)].ast->rewrites;
    return !rewrites.empty() && std::all_of(rewrites.begin(), rewrites.end(), [](const auto& w) {
      return w.replacement->kind == Replacement::Kind::Var;
    });
  };
  auto canonical = [&](ENode n) {
    for (ClassId& ch : n.children)
      if (ch != kAbsent) ch = g.find(ch);
    return n;
  };
  for (const auto& rec : r.saturation.sites) {
    if (r.kept_sites.count({rec.rule, rec.site})) continue;
    const ClassId c = g.find(rec.target);
    const size_t chosen = r.extraction.choice.at(c);
    if (chosen == kNoChoice || !kept.computes(c)) continue;
    const ENode& further = g.eclass(c).nodes.at(chosen);
    if (only_values(rec.rule)) {
      if (!(canonical(rec.matched_root) == further)) r.kept_sites.emplace(rec.rule, rec.site);
      continue;
    }
    if (further.origin < 0 || further.origin == rec.rule || is_fusion(further.origin)) continue;
    auto it = records.find({further.origin, further.site});
    if (it == records.end()) continue;
    const auto& covered = it->second->replaced;
    if (std::all_of(rec.replaced.begin(), rec.replaced.end(), [&](const std::string& name) {
          return std::find(covered.begin(), covered.end(), name) != covered.end();
        }))
      r.kept_sites.emplace(rec.rule, rec.site);
  }
  // A site a kept site built on (its pattern read the e-nodes this one made: ConvBias's
  // FusedConv under FusedConvRelu, weights laid out before the activation joined) is
  // kept in that later form.
  std::vector<std::pair<int32_t, int32_t>> pending(r.kept_sites.begin(), r.kept_sites.end());
  while (!pending.empty()) {
    auto it = records.find(pending.back());
    pending.pop_back();
    if (it == records.end()) continue;
    for (const auto& below : it->second->built_on)
      if (r.kept_sites.insert(below).second) pending.push_back(below);
  }
  // Per rule, the values its kept sites rewrote (operand orders of one commutative
  // pattern are two sites rewriting one value: one).
  std::set<std::pair<int32_t, ClassId>> kept_targets;
  for (const auto& [rule, site] : r.kept_sites) {
    auto it = records.find({rule, site});
    kept_targets.emplace(
        rule, it == records.end() ? kAbsent - static_cast<ClassId>(site) : g.find(it->second->target));
  }
  for (const auto& [rule, target] : kept_targets)
    ++r.selected[rules.rules()[static_cast<size_t>(rule)].ast->name];
  return r;
}

std::vector<EMatch> rule_matches(const RuleSet& rules, int rule, const GraphEGraph& geg,
                                 const std::vector<OpsetImport>& opsets, size_t limit) {
  const EGraph& g = geg.egraph;
  EMatcher matcher(rules, g, opsets);
  std::vector<EMatch> out;
  std::set<ClassId> roots;
  for (ClassId c : g.class_ids())
    for (const ENode& n : g.eclass(c).nodes) {
      if (n.kind != ENode::Kind::Op || roots.size() >= limit) continue;
      for (const auto& [r, alt] : matcher.candidates(c, n)) {
        if (r != rule || roots.count(c)) continue;
        std::vector<EMatch> found;
        matcher.match(r, alt, c, n, found, 1);
        if (found.empty()) continue;
        roots.insert(c);
        out.push_back(std::move(found.front()));
      }
    }
  return out;
}

std::optional<Model> program_with_site(const Model& input, const GraphEGraph& geg, const NodeCost& cost,
                                       const SiteRecord& site, std::optional<ClassId> folded) {
  const EGraph& g = geg.egraph;
  std::set<ClassId> made;
  for (ClassId c : site.rule < 0 ? std::vector<ClassId>{} : g.class_ids())
    for (const ENode& n : g.eclass(c).nodes)
      if (n.origin == site.rule && n.site == site.site) made.insert(c);
  ENode matched = site.matched_root;
  for (ClassId& ch : matched.children)
    if (ch != kAbsent) ch = g.find(ch);
  const ClassId target = g.find(site.target);
  NodeCost with_site = [&](const EGraph& eg, ClassId c, const ENode& n) -> double {
    c = eg.find(c);
    if (folded && c == eg.find(*folded)) return n.kind == ENode::Kind::Const ? 0.0 : kInfeasible;
    if (made.count(c) && !(n.origin == site.rule && n.site == site.site)) return kInfeasible;
    if (c == target && n == matched) return kInfeasible;
    return cost(eg, c, n);
  };
  Extraction x = extract_best(g, geg.roots, remember_costs(with_site));
  if (x.cost == kInfeasible) return std::nullopt;
  return extracted_model(input, geg, x);
}

std::optional<Model> apply_once(const Model& model, const RuleSet& rules, const OpRegistry& ops, int rule,
                                const std::string& root_name, const NodeCost& cost) {
  GraphEGraph geg = egraph_from_graph(*model.graph);
  std::optional<EMatch> m;
  for (auto& found : rule_matches(rules, rule, geg, model.opsets))
    if (geg.egraph.eclass(found.roots.front()).data.name == root_name) m = std::move(found);
  if (!m) return std::nullopt;
  EMatcher matcher(rules, geg.egraph, model.opsets);
  SiteRecord rec;
  rec.target = m->roots.front();  // a fold records nothing else
  rec.matched_root = m->root_node;
  const bool changed = apply_ematch(geg.egraph, rules, ops, matcher, *m, &rec);
  geg.egraph.rebuild();
  if (!changed) return std::nullopt;
  const bool fold = rules.rules()[static_cast<size_t>(rule)].ast->fold;
  return program_with_site(model, geg, cost, rec,
                           fold ? std::optional<ClassId>(m->roots.front()) : std::nullopt);
}

}  // namespace geopt::dsl
