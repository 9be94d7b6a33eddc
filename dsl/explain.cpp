#include "dsl/explain.h"

#include <algorithm>
#include <set>

#include "dsl/matcher.h"
#include "util/error.h"

namespace geopt::dsl {
namespace {

const Pattern& root_op_of(const Alternative& alt) {
  const Pattern& root = *alt.roots.front();
  return root.kind == Pattern::Kind::Var ? *alt.lets.at(root.var) : root;
}

void collect_ops(const Pattern& p, std::set<std::pair<std::string, std::string>>& ops) {
  if (p.kind != Pattern::Kind::Op) return;
  if (p.op != "*") ops.emplace(p.domain == "ai.onnx" ? "" : p.domain, p.op);
  for (const auto& a : p.args) collect_ops(*a, ops);
  if (p.rest) collect_ops(*p.rest, ops);
}

int pattern_depth(const Pattern& p, const std::map<std::string, PatternPtr>& lets, std::set<std::string>& seen) {
  if (p.kind == Pattern::Kind::Var) {
    auto it = lets.find(p.var);
    return it != lets.end() && seen.insert(p.var).second ? pattern_depth(*it->second, lets, seen) : 0;
  }
  if (p.kind != Pattern::Kind::Op) return 0;
  int d = 0;
  for (const auto& a : p.args) d = std::max(d, pattern_depth(*a, lets, seen));
  return d + 1;
}

std::string site_name(const Node& n) { return n.name.empty() ? n.describe() : n.name; }

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

std::vector<RuleExplanation> explain_matches(const RuleSet& rules, const Model& model, const ExplainOptions& options) {
  if (!options.rule.empty() && !rules.find(options.rule)) throw Error("no rule named '" + options.rule + "'");
  Matcher matcher(rules, model);
  std::vector<RuleExplanation> out;
  for (size_t r = 0; r < rules.rules().size(); ++r) {
    const CompiledRule& cr = rules.rules()[r];
    if (!options.rule.empty() && cr.ast->name != options.rule) continue;
    RuleExplanation re{cr.ast->name, cr.ast->loc, cr.enabled, {}, ""};
    const Alternative& first = cr.alternatives.front();
    const Pattern& root = root_op_of(first);
    const std::string root_domain = root.domain == "ai.onnx" ? "" : root.domain;
    std::set<std::pair<std::string, std::string>> ops;
    if (options.anywhere) {
      for (const auto& p : first.roots) collect_ops(*p, ops);
      for (const auto& [v, p] : first.lets) collect_ops(*p, ops);
    }
    std::set<std::string> seen;
    const int depth = pattern_depth(root, first.lets, seen);
    re.root_op = root.op == "*" ? "any" : root.op;
    for (const auto& node : model.graph->nodes()) {
      const bool is_root = root.op == "*" || (node->op_type == root.op && node->domain == root_domain);
      if (!is_root && !ops.count({node->domain, node->op_type})) continue;
      SiteExplanation s{cr.ast->name, cr.ast->loc, site_name(*node), false, "", -1};
      if (!is_root) {
        // A node inside the pattern: does a root-op node consume it within the pattern's depth?
        std::vector<const Node*> frontier{node.get()};
        bool reached = false;
        for (int d = 0; d < depth && !reached && !frontier.empty(); ++d) {
          std::vector<const Node*> next;
          for (const Node* f : frontier)
            for (const Value* out_v : f->outputs())
              if (out_v)
                for (const Use& u : out_v->uses()) {
                  reached = reached || (u.node->op_type == root.op && u.node->domain == root_domain);
                  next.push_back(u.node);
                }
          frontier = std::move(next);
        }
        if (reached) continue;  // reported at that root
        s.reason = "no " + root.op + " (the rule's root, " + root.loc.to_string() + ") consumes it within " + std::to_string(depth) + " steps";
        s.near = true;
        re.sites.push_back(std::move(s));
        continue;
      }
      if (!cr.enabled) {
        s.reason = "the rule is disabled (--disable, a switch file, or `enabled false` at " + cr.ast->loc.to_string() + ")";
        s.near = true;
        re.sites.push_back(std::move(s));
        continue;
      }
      for (size_t a = 0; a < cr.alternatives.size() && !s.matched; ++a) {
        Match m;
        std::string why;
        int got = 0;
        if (matcher.try_rule(static_cast<int>(r), static_cast<int>(a), node.get(), m, &why, &got)) {
          s.matched = true;
          s.reason.clear();
        } else if (got > s.depth) {
          s.depth = got;
          s.reason = why;
        }
      }
      // Near: a value check failed (depth >= 500, see Matcher::try_rule), or it got at least halfway.
      s.near = !s.matched && (s.depth >= 500 || 2 * s.depth >= depth + 1);
      re.sites.push_back(std::move(s));
    }
    std::stable_sort(re.sites.begin(), re.sites.end(), [](const SiteExplanation& a, const SiteExplanation& b) {
      if (a.matched != b.matched) return !a.matched;
      return a.depth > b.depth;
    });
    if (!re.sites.empty() || !options.rule.empty()) out.push_back(std::move(re));
  }
  std::stable_sort(out.begin(), out.end(), [](const RuleExplanation& a, const RuleExplanation& b) { return a.near_misses() > b.near_misses(); });
  return out;
}

}  // namespace geopt::dsl
