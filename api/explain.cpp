// geopt explain as a library call: why each rule did or did not fire on a model, and
// why a match was or was not kept; a one-screen summary by default.
#include <algorithm>
#include <climits>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ascend/device_ops/device_ops.h"
#include "ascend/dynamic_shapes.h"
#include "ascend/optimizer.h"
#include "dsl/explain.h"
#include "guard.h"
#include "json_text.h"
#include "passes/control_flow_bodies.h"
#include "settings.h"
#include "text_format.h"
#include "util/error.h"

namespace geopt::api {
namespace {

// A site that matched in the input graph but was never rewritten in the e-graph: why.
std::string not_rewritten_reason(const dsl::SaturationReport& s, const std::string& rule) {
  auto it = s.per_rule.find(rule);
  if (it != s.per_rule.end() && it->second.refused)
    return "matched, but the rewrite was refused: " + it->second.refusal;
  if (s.stop != dsl::StopReason::Saturated)
    return std::string("matched, but saturation stopped (") + dsl::stop_reason_name(s.stop) + " after " +
           std::to_string(s.iterations) + " iteration(s)) before it was rewritten";
  if (it != s.per_rule.end() && it->second.banned)
    return "matched, but the scheduler throttled the rule (too many matches)";
  return "matched; the value was already rewritten the same way from another site";
}

constexpr size_t kDefaultSitesShown = 5;

// A site's node, with the control-flow body it sits in.
std::string where(const std::string& node, const std::string& scope) {
  return scope.empty() ? node : node + " (in " + scope + ")";
}

// A model geopt wrote records where its fused nodes came from.
nlohmann::json provenance_of(const Model& m) {
  for (const auto& [k, v] : m.metadata)
    if (k == "geopt.provenance") return nlohmann::json::parse(v, nullptr, false);
  return nlohmann::json::object();
}

// What happened to one node (--node): the rules that considered it, the rewrites that
// replaced it; in a model geopt wrote, the rule that made it.
void explain_node(const ExplainOptions& o, const std::string& model_name, const Model& model,
                  const std::vector<dsl::RuleExplanation>& matches, const ascend::OptimizeResult& r,
                  ExplainResult& out) {
  std::string& t = out.report_text;
  nlohmann::ordered_json j{{"model", model_name}, {"node", o.node}};
  nlohmann::json prov = provenance_of(model);
  if (prov.contains(o.node)) {
    const auto& p = prov[o.node];
    std::string replaced;
    for (const auto& n : p["replaced"]) replaced += (replaced.empty() ? "" : ", ") + n.get<std::string>();
    appendf(t, "%s was made by rule %s, replacing: %s\n", o.node.c_str(),
            p["rule"].get<std::string>().c_str(), replaced.c_str());
    j["made_by"] = {{"rule", p["rule"]}, {"replaced", p["replaced"]}};
    out.report_json = json_text(j);
    return;
  }
  // The node, in the graph or in a control-flow body.
  std::string scope, op;
  if (const Node* n = model.graph->find_node(o.node)) {
    op = n->op_type;
  } else {
    for (const ScopedBody& b : control_flow_bodies(model, BodyShapes::AsGiven))
      if (const Node* in_body = b.model.graph->find_node(o.node)) {
        op = in_body->op_type;
        scope = b.scope;
        break;
      }
    if (op.empty())
      throw geopt::Error("no node named '" + o.node + "' in " + model_name +
                         " (its control-flow bodies included)");
  }
  appendf(t, "%s (%s)\n", where(o.node, scope).c_str(), op.c_str());
  j["op_type"] = op;
  if (!scope.empty()) j["scope"] = scope;
  auto considered = nlohmann::ordered_json::array(), rewrites = nlohmann::ordered_json::array();
  bool any = false;
  for (const auto& re : matches)
    for (const auto& s : re.sites)
      if (s.node == o.node && s.scope == scope) {
        appendf(t, "  considered by %s (%s): %s\n", re.rule.c_str(), re.loc.to_string().c_str(),
                s.matched ? "matched" : s.reason.c_str());
        considered.push_back({{"rule", re.rule},
                              {"location", re.loc.to_string()},
                              {"matched", s.matched},
                              {"reason", s.matched ? "" : s.reason}});
        any = true;
      }
  for (const auto& s : r.sites) {
    if (s.scope != scope || std::find(s.replaced.begin(), s.replaced.end(), o.node) == s.replaced.end())
      continue;
    any = true;
    rewrites.push_back({{"rule", s.rule}, {"selected", s.selected}, {"reason", s.selected ? "" : s.reason}});
    if (s.selected) {
      std::string became;
      const nlohmann::json out_prov = provenance_of(r.model);  // the range must outlive the loop
      for (const auto& [name, p] : out_prov.items())
        if (p["rule"] == s.rule)
          for (const auto& n : p["replaced"])
            if (n == o.node) became += (became.empty() ? "" : ", ") + name;
      if (became.empty())
        appendf(t, "  fused by %s, kept in the form a later rewrite made of it\n", s.rule.c_str());
      else
        appendf(t, "  fused by %s into %s\n", s.rule.c_str(), became.c_str());
    } else {
      appendf(t, "  rewritten by %s in the e-graph, not kept: %s\n", s.rule.c_str(), s.reason.c_str());
    }
  }
  if (!any) appendf(t, "  no rule considered it\n");
  const bool stays = scope.empty() && r.model.graph->find_node(o.node);
  if (stays) appendf(t, "  it stays in the optimized model as %s\n", o.node.c_str());
  j["considered"] = considered;
  j["rewrites"] = rewrites;
  j["stays"] = stays;
  out.report_json = json_text(j);
}

// The rules' misses a report shows: a fold's is always "an input is not constant", and
// an elimination's or an algebraic simplification's says the op does real work (a
// Reshape that reshapes): neither is a missed fusion.
bool is_quiet(const dsl::RuleSet& rules, const std::string& rule) {
  const dsl::CompiledRule* cr = rules.find(rule);
  return cr && (cr->ast->fold || cr->ast->has_tag("elimination") || cr->ast->has_tag("algebra"));
}

// The unfused ops, most first: "Add 12, Reshape 8".
std::string unfused_text(const ascend::OptimizeResult& r, size_t most) {
  std::string left;
  std::vector<std::pair<std::string, size_t>> by(r.unfused.begin(), r.unfused.end());
  std::stable_sort(by.begin(), by.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  for (size_t i = 0; i < by.size() && i < most; ++i)
    left += (left.empty() ? "" : ", ") + by[i].first + " " + std::to_string(by[i].second);
  return left.empty() ? "none" : left;
}

constexpr size_t kSummaryMisses = 15, kSummaryNotKept = 5, kSummaryFiredLines = 6;

// What explain found on one model: each rule's sites in the input, what extraction did
// with its rewrites, and where rules that build on others missed after those rewrote.
struct Findings {
  std::vector<dsl::RuleExplanation> matches;
  ascend::OptimizeResult optimized;
  std::map<std::string, std::vector<const ascend::SiteOutcome*>> outcomes;  // rule -> its rewrites
  std::map<std::string, std::vector<dsl::SiteExplanation>> later;           // rule -> misses after the others
};

// Rules that build on other rules' results (FlashAttention + LayerNorm needs the
// attention fused first) meet their sites only after those rules ran: explained again on
// the optimized model, where they got nowhere on the input.
std::map<std::string, std::vector<dsl::SiteExplanation>> later_misses(
    const dsl::RuleSet& rules, const std::vector<dsl::RuleExplanation>& matches, const Model& rewritten,
    const dsl::ExplainOptions& eo) {
  std::map<std::string, std::vector<dsl::SiteExplanation>> later;
  for (const auto& re : dsl::explain_matches(rules, ascend::op_registry(), rewritten, eo)) {
    int deepest_on_input = -1;
    bool matched_on_input = false;
    for (const auto& m : matches)
      if (m.rule == re.rule)
        for (const auto& s : m.sites) {
          deepest_on_input = std::max(deepest_on_input, s.depth);
          matched_on_input = matched_on_input || s.matched;
        }
    if (matched_on_input) continue;
    for (const auto& s : re.sites)
      if (!s.matched && s.near && s.depth > deepest_on_input) later[re.rule].push_back(s);
  }
  return later;
}

// A site the rule matched in the input: did the e-graph rewrite it?
bool rewritten_in_egraph(Findings& f, const std::string& rule, const dsl::SiteExplanation& s) {
  for (const auto* oc : f.outcomes[rule])
    if (oc->node == s.node && oc->scope == s.scope) return true;
  return false;
}

// At a node several rules miss (variants of one fusion), the furthest any got; a node
// some rule matched needs no excuse from the others (INT_MAX).
std::map<std::pair<std::string, std::string>, int> best_miss_depths(
    const std::vector<dsl::RuleExplanation>& matches) {
  std::map<std::pair<std::string, std::string>, int> best_at;  // (scope, node) -> depth
  for (const auto& re : matches)
    for (const auto& s : re.sites) {
      int& best = best_at[{s.scope, s.node}];
      best = std::max(best, s.matched ? INT_MAX : s.depth);
    }
  return best_at;
}

// The summary's first part: the rules that fired (sites kept / matched), wrapped at 96
// columns, at most kSummaryFiredLines lines. Returns how many rules came near no site.
size_t summary_fired(Findings& f, std::string& t) {
  std::vector<std::string> fired;
  size_t silent = 0;
  for (const auto& re : f.matches) {
    size_t kept = 0;
    for (const auto* s : f.outcomes[re.rule]) kept += s->selected;
    const size_t matched = re.sites.size() - re.misses();
    if (kept)
      fired.push_back(re.rule + " " + std::to_string(kept) + "/" + std::to_string(std::max(matched, kept)));
    else if (matched == 0 && !f.later.count(re.rule))
      silent += std::none_of(re.sites.begin(), re.sites.end(), [](const auto& s) { return s.near; });
  }
  std::vector<std::pair<std::string, size_t>> lines;  // text, rules on it
  for (const auto& rule : fired) {
    if (lines.empty() || lines.back().first.size() + rule.size() + 2 > 96) lines.push_back({"", 0});
    lines.back().first += (lines.back().second ? ", " : "") + rule;
    ++lines.back().second;
  }
  appendf(t, "\nfired (sites kept / matched):%s\n", fired.empty() ? " none" : "");
  size_t listed = 0;
  for (size_t i = 0; i < lines.size() && i < kSummaryFiredLines; ++i) {
    appendf(t, "  %s\n", lines[i].first.c_str());
    listed += lines[i].second;
  }
  if (listed < fired.size()) appendf(t, "  ... and %zu more rules (--all)\n", fired.size() - listed);
  return silent;
}

// The nearest misses over all rules: the deepest into their patterns first, one per
// node, the input's own before those after other rules (which often meet what a rule
// already made); quiet rules' misses left out unless the user disabled the rule.
void summary_misses(const dsl::RuleSet& rules, Findings& f, std::string& t) {
  std::map<std::pair<std::string, std::string>, int> best_at = best_miss_depths(f.matches);
  struct Miss {
    const dsl::SiteExplanation* site;
    bool after_others;
  };
  std::vector<Miss> misses;
  for (const auto& re : f.matches) {
    if (is_quiet(rules, re.rule) && re.enabled) continue;
    for (const auto& s : re.sites)  // a disabled rule's every site: the user turned it off
      if (!s.matched && ((s.near && s.depth >= best_at[{s.scope, s.node}]) || !re.enabled))
        misses.push_back({&s, false});
  }
  for (const auto& [rule, sites] : f.later)
    if (!is_quiet(rules, rule))
      for (const auto& s : sites) misses.push_back({&s, true});
  std::stable_sort(misses.begin(), misses.end(), [](const Miss& a, const Miss& b) {
    return a.after_others != b.after_others ? b.after_others : a.site->depth > b.site->depth;
  });
  std::vector<Miss> distinct;
  std::set<std::pair<std::string, std::string>> shown_nodes;
  for (const Miss& m : misses)
    if (shown_nodes.insert({m.site->scope, m.site->node}).second) distinct.push_back(m);
  if (distinct.empty()) return;
  appendf(t, "\nnear misses, the closest first (%zu node(s)):\n", distinct.size());
  for (size_t i = 0; i < distinct.size() && i < kSummaryMisses; ++i) {
    const dsl::SiteExplanation& s = *distinct[i].site;
    appendf(t, "  %s @ %s: %s%s\n", s.rule.c_str(), where(s.node, s.scope).c_str(), s.reason.c_str(),
            distinct[i].after_others ? " (after the other rules rewrote the graph)" : "");
  }
  if (distinct.size() > kSummaryMisses)
    appendf(t, "  ... %zu more: --all lists each rule's, --rule NAME one rule's\n",
            distinct.size() - kSummaryMisses);
}

// Sites that matched but were not kept: rewritten and not chosen, or never rewritten.
void summary_not_kept(Findings& f, std::string& t) {
  std::vector<std::string> not_kept;
  for (const auto& re : f.matches) {
    for (const auto* s : f.outcomes[re.rule])
      if (!s->selected)
        not_kept.push_back(re.rule + " @ " + where(s->node, s->scope) +
                           ": rewritten, not kept: " + s->reason);
    for (const auto& s : re.sites)
      if (s.matched && !rewritten_in_egraph(f, re.rule, s))
        not_kept.push_back(re.rule + " @ " + where(s.node, s.scope) + ": " +
                           not_rewritten_reason(f.optimized.saturation, re.rule));
  }
  if (not_kept.empty()) return;
  appendf(t, "\nmatched, not kept (%zu site(s)):\n", not_kept.size());
  for (size_t i = 0; i < not_kept.size() && i < kSummaryNotKept; ++i)
    appendf(t, "  %s\n", not_kept[i].c_str());
  if (not_kept.size() > kSummaryNotKept)
    appendf(t, "  ... %zu more (--all)\n", not_kept.size() - kSummaryNotKept);
}

// One screen per model: the rules that fired, the nearest misses, what was rewritten
// but not kept, and the commands for the rest. `--all` is the listing per rule.
void print_summary(const std::string& model_name, const dsl::RuleSet& rules, Findings& f, std::string& t) {
  const size_t silent = summary_fired(f, t);
  summary_misses(rules, f, t);
  summary_not_kept(f, t);
  if (silent) appendf(t, "\n%zu rule(s) came near no site (--all names them)\n", silent);
  appendf(t, "\nfusion rate %.0f%% of the input's kernels; left unfused: %s\n", 100 * f.optimized.fusion_rate,
          unfused_text(f.optimized, 8).c_str());
  appendf(t,
          "details: geopt explain %s --rule NAME (one rule) | --node NAME (one node) | --all (every rule) | "
          "--verbose (every site)\n",
          model_name.c_str());
}

nlohmann::ordered_json scoped(nlohmann::ordered_json j, const std::string& scope) {
  if (!scope.empty()) j["scope"] = scope;
  return j;
}

// `geopt explain --json`: per rule, its sites, what extraction kept of its rewrites (and
// why not), and its misses after the other rules.
nlohmann::ordered_json rules_json(Findings& f) {
  nlohmann::ordered_json j = nlohmann::ordered_json::array();
  for (const auto& re : f.matches) {
    nlohmann::ordered_json rj{{"rule", re.rule}, {"location", re.loc.to_string()}, {"enabled", re.enabled}};
    auto sites = nlohmann::ordered_json::array();
    for (const auto& s : re.sites) {
      nlohmann::ordered_json sj{{"node", s.node}, {"matched", s.matched}};
      if (!s.matched) sj["reason"] = s.reason;
      sites.push_back(scoped(sj, s.scope));
    }
    rj["sites"] = sites;
    auto kept = nlohmann::ordered_json::array();
    for (const auto* s : f.outcomes[re.rule]) {
      nlohmann::ordered_json sj{{"node", s->node}, {"selected", s->selected}};
      if (!s->selected) sj["reason"] = s->reason;
      kept.push_back(scoped(sj, s->scope));
    }
    for (const auto& s : re.sites)
      if (s.matched && !rewritten_in_egraph(f, re.rule, s))
        kept.push_back(scoped({{"node", s.node},
                               {"selected", false},
                               {"reason", not_rewritten_reason(f.optimized.saturation, re.rule)}},
                              s.scope));
    rj["extraction"] = kept;
    if (auto it = f.later.find(re.rule); it != f.later.end()) {
      auto after = nlohmann::ordered_json::array();
      for (const auto& s : it->second)
        after.push_back(scoped({{"node", s.node}, {"reason", s.reason}}, s.scope));
      rj["after_other_rules"] = after;
    }
    j.push_back(rj);
  }
  return j;
}

// One rule's part of the full listing (--all, --rule, --verbose): its near misses (the
// furthest at each node unless --verbose), the rewrites not kept, and its misses after
// the other rules. A rule with nothing to say is a line, or (nothing near) `silent`.
void rule_listing(const ExplainOptions& o, const dsl::RuleSet& rules, Findings& f,
                  const dsl::RuleExplanation& re, std::map<std::pair<std::string, std::string>, int>& best_at,
                  std::vector<std::string>& silent, std::string& t) {
  const size_t shown = o.verbose ? SIZE_MAX : kDefaultSitesShown;
  // Quiet rules' misses (is_quiet) are listed only when asked for.
  auto worth_showing = [&](const dsl::SiteExplanation& s) {
    if (o.verbose || !o.rule.empty() || !re.enabled) return true;
    return s.near && !s.matched && !is_quiet(rules, re.rule) && s.depth >= best_at[{s.scope, s.node}];
  };
  size_t near = 0;
  for (const auto& s : re.sites) near += !s.matched && s.near && worth_showing(s);
  const size_t matched = re.sites.size() - re.misses(), shallow = re.misses() - near;
  size_t rewritten = f.outcomes[re.rule].size(), kept = 0;
  for (const auto* s : f.outcomes[re.rule]) kept += s->selected;
  auto after = f.later.find(re.rule);
  if (near == 0 && kept == rewritten && rewritten >= matched && !o.verbose && o.rule.empty() &&
      after == f.later.end()) {
    if (matched == 0)  // nothing matched, nothing came near: named once, at the end
      silent.push_back(re.rule);
    else
      appendf(t, "\n%s: %zu of %zu %s node(s) matched; %zu rewrite(s) in the e-graph, %zu kept\n",
              re.rule.c_str(), matched, re.sites.size(), re.root_op.c_str(), rewritten, kept);
    return;
  }
  appendf(t, "\n%s (%s): %zu of %zu %s node(s) matched; %zu rewrite(s) in the e-graph, %zu kept\n",
          re.rule.c_str(), re.loc.to_string().c_str(), matched, re.sites.size(), re.root_op.c_str(),
          rewritten, kept);
  size_t lines = 0;
  for (const auto& s : re.sites) {
    if ((s.matched || !s.near || !worth_showing(s)) && !o.verbose) continue;
    if (lines++ == shown) break;
    appendf(t, "  %s @ %s: %s\n", re.rule.c_str(), where(s.node, s.scope).c_str(),
            s.matched ? "matched" : s.reason.c_str());
  }
  if (shallow && !o.verbose)
    appendf(t,
            "  (%zu other %s node(s) miss earlier in the pattern or nearer another rule; --verbose lists "
            "them)\n",
            shallow, re.root_op.c_str());
  for (const auto* s : f.outcomes[re.rule]) {
    if (s->selected) continue;
    if (lines++ == shown) break;
    appendf(t, "  %s @ %s: rewritten, not kept: %s\n", re.rule.c_str(), where(s->node, s->scope).c_str(),
            s->reason.c_str());
  }
  for (const auto& s : re.sites) {
    if (!s.matched || rewritten_in_egraph(f, re.rule, s) || lines++ == shown) continue;
    appendf(t, "  %s @ %s: %s\n", re.rule.c_str(), where(s.node, s.scope).c_str(),
            not_rewritten_reason(f.optimized.saturation, re.rule).c_str());
  }
  if (lines > shown) appendf(t, "  ... more (--verbose shows every site)\n");
  if (after != f.later.end()) {
    appendf(t, "  after the other rules rewrote the graph:\n");
    for (const auto& s : after->second)
      appendf(t, "  %s @ %s: %s\n", re.rule.c_str(), where(s.node, s.scope).c_str(), s.reason.c_str());
  }
}

// The full listing: every rule's part, the silent ones named once, the fusion rate.
void full_listing(const ExplainOptions& o, const dsl::RuleSet& rules, Findings& f, std::string& t) {
  // At a node several rules miss, the default listing keeps the misses that got furthest.
  std::map<std::pair<std::string, std::string>, int> best_at = best_miss_depths(f.matches);
  std::vector<std::string> silent;
  for (const auto& re : f.matches) rule_listing(o, rules, f, re, best_at, silent, t);
  if (!silent.empty()) {
    std::string names;
    for (const auto& name : silent) names += (names.empty() ? "" : ", ") + name;
    appendf(t, "\nno site near a match (--verbose shows each): %s\n", names.c_str());
  }
  appendf(t, "\nfusion rate %.0f%% of the input's kernels; left unfused: %s\n", 100 * f.optimized.fusion_rate,
          unfused_text(f.optimized, 8).c_str());
}

ExplainResult explain_model(const ModelSource& source, const ExplainOptions& o) {
  const std::string model_name = source.name();
  auto rules = load_rules(o.rules);
  const ascend::HardwareProfile profile = load_profile(o.target);
  Model imported = import_model(source, import_options(o.input_shape));
  // With a range (a range plan's), the rules prove their conditions on its dims over it.
  if (!o.input_shape_range.empty())
    ascend::set_dim_ranges(imported, ascend::parse_input_shape_range(imported, o.input_shape_range));
  // The rules read the shapes optimize gives them: shape computations folded, symbolic
  // ones followed (docs/LOWERING.md, section 0).
  const Model model = ascend::shapes_for_rules(imported);
  const dsl::ExplainOptions eo{o.rule, o.anywhere};
  Findings f;
  f.matches = dsl::explain_matches(*rules, ascend::op_registry(), model, eo);
  f.optimized =
      ascend::optimize(model, *rules, profile, optimize_options(o.target, o.rules, profile, &model));
  const ascend::OptimizeResult& r = f.optimized;
  ExplainResult result;
  if (!o.node.empty()) {
    explain_node(o, model_name, imported, f.matches, r, result);
    return result;
  }
  for (const auto& s : r.sites) f.outcomes[s.rule].push_back(&s);
  f.later = later_misses(*rules, f.matches, r.model, eo);

  nlohmann::ordered_json out{{"model", model_name},
                             {"soc_version", profile.soc_version},
                             {"rules", rules_json(f)},
                             {"fusion_rate", r.fusion_rate}};
  out["saturation"] = {{"stop", dsl::stop_reason_name(r.saturation.stop)},
                       {"iterations", r.saturation.iterations}};
  out["unfused"] = r.unfused;
  result.report_json = json_text(out);

  std::string& t = result.report_text;
  appendf(t, "geopt explain: %s on %s (%zu rules)\n", model_name.c_str(), profile.soc_version.c_str(),
          rules->rules().size());
  if (r.saturation.stop != dsl::StopReason::Saturated)
    appendf(t, "saturation stopped at its %s after %d iteration(s): rewrites past it were not explored\n",
            dsl::stop_reason_name(r.saturation.stop), r.saturation.iterations);
  if (!o.all && !o.verbose && o.rule.empty())
    print_summary(model_name, *rules, f, t);
  else
    full_listing(o, *rules, f, t);
  return result;
}

}  // namespace

ExplainResult explain(const ModelSource& model, const ExplainOptions& options) {
  return guarded([&] { return explain_model(model, options); });
}

}  // namespace geopt::api
