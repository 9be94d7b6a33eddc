#include "dsl/explain.h"

#include <algorithm>
#include <set>

#include "dsl/ematcher.h"
#include "dsl/saturation.h"
#include "egraph/egraph.h"
#include "ir/domain.h"
#include "passes/control_flow_bodies.h"
#include "util/error.h"

namespace geopt::dsl {
namespace {

const Pattern& root_op_of(const Alternative& alt) {
  const Pattern& root = *alt.roots.front();
  return root.kind == Pattern::Kind::Var ? *alt.lets.at(root.var) : root;
}

void collect_ops(const Pattern& p, std::set<std::pair<std::string, std::string>>& ops) {
  if (p.kind != Pattern::Kind::Op) return;
  if (p.op != "*") ops.emplace(canonical_domain(p.domain), p.op);
  for (const auto& a : p.args) collect_ops(*a, ops);
  if (p.rest) collect_ops(*p.rest, ops);
}

int pattern_depth(const Pattern& p, const std::map<std::string, PatternPtr>& lets,
                  std::set<std::string>& seen) {
  if (p.kind == Pattern::Kind::Var) {
    auto it = lets.find(p.var);
    return it != lets.end() && seen.insert(p.var).second ? pattern_depth(*it->second, lets, seen) : 0;
  }
  if (p.kind != Pattern::Kind::Op) return 0;
  int d = 0;
  for (const auto& a : p.args) d = std::max(d, pattern_depth(*a, lets, seen));
  return d + 1;
}

// The site's node as users know it: its name, else a description.
std::string site_name(const EGraph& g, ClassId c, const ENode& n) {
  const std::string& name = g.eclass(c).data.node_name;
  return name.empty() ? describe_enode(g, c, n) : name;
}

}  // namespace

size_t RuleExplanation::misses() const {
  size_t n = 0;
  for (const auto& s : sites) n += !s.matched;
  return n;
}

size_t RuleExplanation::near_misses() const {
  size_t n = 0;
  for (const auto& s : sites) n += !s.matched && s.near;
  return n;
}

GraphEGraph canonical_egraph(const RuleSet& rules, const OpRegistry& ops, const Model& model) {
  GraphEGraph geg = egraph_from_graph(*model.graph);
  SaturationLimits limits;
  limits.only_tags = {"canonical", "folding"};
  saturate(geg.egraph, rules, ops, model.opsets, limits);
  return geg;
}

std::map<std::string, std::vector<std::string>> match_sites(const RuleSet& rules, const OpRegistry& ops,
                                                            const Model& model, size_t* predicates_asked) {
  const GraphEGraph geg = canonical_egraph(rules, ops, model);
  const EGraph& g = geg.egraph;
  EMatcher matcher(rules, g, model.opsets);
  std::map<std::string, std::vector<std::string>> sites;
  for (const auto& r : rules.rules()) sites[r.ast->name];
  for (ClassId c : g.class_ids())
    for (const ENode& n : g.eclass(c).nodes) {
      if (n.kind != ENode::Kind::Op || n.origin >= 0) continue;  // sites are the model's own nodes
      int last_rule = -1;
      for (const auto& [rule, alt] : matcher.candidates(c, n, predicates_asked)) {
        if (rule == last_rule) continue;  // the first matching alternative per rule
        std::vector<EMatch> found;
        matcher.match(rule, alt, c, n, found, 1);
        if (found.empty()) continue;
        last_rule = rule;
        sites[rules.rules()[static_cast<size_t>(rule)].ast->name].push_back(site_name(g, c, n));
      }
    }
  return sites;
}

namespace {

// Appends the sites of one graph (the model's, or a body's) to each rule's explanation.
void explain_graph(const RuleSet& rules, const OpRegistry& ops, const Model& model,
                   const ExplainOptions& options, const std::string& scope,
                   std::vector<RuleExplanation>& per_rule) {
  // The model as written, seen through the one matcher, with the canonical forms added
  // (equal nodes merged, as the optimizer merges them).
  const GraphEGraph geg = canonical_egraph(rules, ops, model);
  const EGraph& g = geg.egraph;
  EMatcher matcher(rules, g, model.opsets);
  std::vector<std::pair<ClassId, const ENode*>> nodes;  // the model's own op e-nodes, in graph order
  for (ClassId c : g.class_ids())
    for (const ENode& n : g.eclass(c).nodes)
      if (n.kind == ENode::Kind::Op && n.origin < 0) nodes.emplace_back(c, &n);
  for (size_t r = 0; r < rules.rules().size(); ++r) {
    const CompiledRule& cr = rules.rules()[r];
    if (!options.rule.empty() && cr.ast->name != options.rule) continue;
    RuleExplanation& re = per_rule[r];
    const Alternative& first = cr.alternatives.front();
    const Pattern& root = root_op_of(first);
    const std::string root_domain = canonical_domain(root.domain);
    std::set<std::pair<std::string, std::string>> ops;
    if (options.anywhere) {
      for (const auto& p : first.roots) collect_ops(*p, ops);
      for (const auto& [v, p] : first.lets) collect_ops(*p, ops);
    }
    std::set<std::string> seen;
    const int depth = pattern_depth(root, first.lets, seen);
    re.root_op = root.op == "*" ? "any" : root.op;
    auto is_root_op = [&](const ENode& n) {
      const OpSignature& s = g.signature(n.op);
      return root.op == "*" || (s.op_type == root.op && s.domain == root_domain);
    };
    for (const auto& [cls, node] : nodes) {
      const OpSignature& sig = g.signature(node->op);
      const bool is_root = is_root_op(*node);
      if (!is_root && !ops.count({sig.domain, sig.op_type})) continue;
      SiteExplanation s{cr.ast->name, cr.ast->loc, site_name(g, cls, *node), scope, false, "", -1};
      if (!is_root) {
        // A node inside the pattern: does a root-op node consume it within the pattern's depth?
        std::vector<ClassId> frontier{cls};
        bool reached = false;
        for (int d = 0; d < depth && !reached && !frontier.empty(); ++d) {
          std::vector<ClassId> next;
          for (ClassId f : frontier)
            for (const auto& [user, user_cls] : g.eclass(f).parents) {
              reached = reached || (user.kind == ENode::Kind::Op && is_root_op(user));
              next.push_back(g.find(user_cls));
            }
          frontier = std::move(next);
        }
        if (reached) continue;  // reported at that root
        s.reason = "no " + root.op + " (the rule's root, " + root.loc.to_string() + ") consumes it within " +
                   std::to_string(depth) + " steps";
        s.near = true;
        re.sites.push_back(std::move(s));
        continue;
      }
      if (!cr.enabled) {
        s.reason = "the rule is disabled (--disable, a switch file, or `enabled false` at " +
                   cr.ast->loc.to_string() + ")";
        s.near = true;
        re.sites.push_back(std::move(s));
        continue;
      }
      Miss miss;
      for (size_t a = 0; a < cr.alternatives.size() && !s.matched; ++a) {
        std::vector<EMatch> found;
        matcher.match(static_cast<int>(r), static_cast<int>(a), cls, *node, found, 1, &miss);
        s.matched = !found.empty();
      }
      if (!s.matched) {
        s.depth = miss.depth;
        s.reason = miss.reason;
      }
      // Near: a value check failed (depth >= 500, see Miss), or it got at least halfway.
      s.near = !s.matched && (s.depth >= 500 || 2 * s.depth >= depth + 1);
      re.sites.push_back(std::move(s));
    }
  }
}

}  // namespace

std::vector<RuleExplanation> explain_matches(const RuleSet& rules, const OpRegistry& ops, const Model& model,
                                             const ExplainOptions& options) {
  if (!options.rule.empty() && !rules.find(options.rule)) throw Error("no rule named '" + options.rule + "'");
  std::vector<RuleExplanation> per_rule;
  for (const auto& cr : rules.rules()) per_rule.push_back({cr.ast->name, cr.ast->loc, cr.enabled, {}, ""});
  explain_graph(rules, ops, model, options, "", per_rule);
  for (const ScopedBody& b : control_flow_bodies(model, BodyShapes::Propagated, &ops))
    explain_graph(rules, ops, b.model, options, b.scope, per_rule);
  std::vector<RuleExplanation> out;
  for (RuleExplanation& re : per_rule) {
    if (!options.rule.empty() && re.rule != options.rule) continue;
    std::stable_sort(re.sites.begin(), re.sites.end(),
                     [](const SiteExplanation& a, const SiteExplanation& b) {
                       if (a.matched != b.matched) return !a.matched;
                       return a.depth > b.depth;
                     });
    if (!re.sites.empty() || !options.rule.empty()) out.push_back(std::move(re));
  }
  std::stable_sort(out.begin(), out.end(), [](const RuleExplanation& a, const RuleExplanation& b) {
    return a.near_misses() > b.near_misses();
  });
  return out;
}

}  // namespace geopt::dsl
