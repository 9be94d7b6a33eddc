#include "explain_command.h"
#include "json_output.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "ascend/dynamic_shapes.h"
#include "ascend/optimizer.h"
#include "dsl/explain.h"
#include "input_shape_option.h"
#include "onnx/import.h"
#include "passes/control_flow_bodies.h"
#include "profile_options.h"
#include "rule_options.h"
#include "saturation_limit_options.h"
#include "util/error.h"

namespace geopt::cli {
namespace {

struct ExplainCliOptions {
  std::string model;
  InputShapeOption input_shape;
  std::string input_shape_range;
  RuleOptions rules;
  ProfileOptions profile;
  std::string rule, node;
  bool anywhere = false, verbose = false, json = false, all = false;
  SaturationLimitOptions limits;
};

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

int explain_node(const ExplainCliOptions& o, const Model& model,
                 const std::vector<dsl::RuleExplanation>& matches, const ascend::OptimizeResult& r) {
  nlohmann::json prov = provenance_of(model);
  if (prov.contains(o.node)) {
    const auto& p = prov[o.node];
    std::string replaced;
    for (const auto& n : p["replaced"]) replaced += (replaced.empty() ? "" : ", ") + n.get<std::string>();
    std::printf("%s was made by rule %s, replacing: %s\n", o.node.c_str(),
                p["rule"].get<std::string>().c_str(), replaced.c_str());
    return 0;
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
      throw Error("no node named '" + o.node + "' in " + o.model + " (its control-flow bodies included)");
  }
  std::printf("%s (%s)\n", where(o.node, scope).c_str(), op.c_str());
  bool any = false;
  for (const auto& re : matches)
    for (const auto& s : re.sites)
      if (s.node == o.node && s.scope == scope) {
        std::printf("  considered by %s (%s): %s\n", re.rule.c_str(), re.loc.to_string().c_str(),
                    s.matched ? "matched" : s.reason.c_str());
        any = true;
      }
  for (const auto& s : r.sites) {
    if (s.scope != scope || std::find(s.replaced.begin(), s.replaced.end(), o.node) == s.replaced.end())
      continue;
    any = true;
    if (s.selected) {
      std::string became;
      const nlohmann::json out_prov = provenance_of(r.model);  // the range must outlive the loop
      for (const auto& [name, p] : out_prov.items())
        if (p["rule"] == s.rule)
          for (const auto& n : p["replaced"])
            if (n == o.node) became += (became.empty() ? "" : ", ") + name;
      if (became.empty())
        std::printf("  fused by %s, kept in the form a later rewrite made of it\n", s.rule.c_str());
      else
        std::printf("  fused by %s into %s\n", s.rule.c_str(), became.c_str());
    } else {
      std::printf("  rewritten by %s in the e-graph, not kept: %s\n", s.rule.c_str(), s.reason.c_str());
    }
  }
  if (!any) std::printf("  no rule considered it\n");
  if (scope.empty() && r.model.graph->find_node(o.node))
    std::printf("  it stays in the optimized model as %s\n", o.node.c_str());
  return 0;
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

// One screen per model: the rules that fired, the nearest misses over all rules (the
// deepest into their patterns first, one per node), what was rewritten but not kept,
// and the commands for the rest. `--all` is the listing per rule.
void print_summary(const ExplainCliOptions& o, const dsl::RuleSet& rules,
                   const std::vector<dsl::RuleExplanation>& matches,
                   std::map<std::string, std::vector<const ascend::SiteOutcome*>>& outcomes,
                   const std::map<std::string, std::vector<dsl::SiteExplanation>>& later,
                   const ascend::OptimizeResult& r) {
  std::vector<std::string> fired;
  size_t silent = 0;
  for (const auto& re : matches) {
    size_t kept = 0;
    for (const auto* s : outcomes[re.rule]) kept += s->selected;
    const size_t matched = re.sites.size() - re.misses();
    if (kept)
      fired.push_back(re.rule + " " + std::to_string(kept) + "/" + std::to_string(std::max(matched, kept)));
    else if (matched == 0 && !later.count(re.rule))
      silent += std::none_of(re.sites.begin(), re.sites.end(), [](const auto& s) { return s.near; });
  }
  // Wrapped at 96 columns, at most kSummaryFiredLines lines.
  std::vector<std::pair<std::string, size_t>> lines;  // text, rules on it
  for (const auto& f : fired) {
    if (lines.empty() || lines.back().first.size() + f.size() + 2 > 96) lines.push_back({"", 0});
    lines.back().first += (lines.back().second ? ", " : "") + f;
    ++lines.back().second;
  }
  std::printf("\nfired (sites kept / matched):%s\n", fired.empty() ? " none" : "");
  size_t listed = 0;
  for (size_t i = 0; i < lines.size() && i < kSummaryFiredLines; ++i) {
    std::printf("  %s\n", lines[i].first.c_str());
    listed += lines[i].second;
  }
  if (listed < fired.size()) std::printf("  ... and %zu more rules (--all)\n", fired.size() - listed);
  // A node several rules miss (variants of one fusion) shows the miss that got furthest;
  // a node some rule matched needs no excuse from the others.
  std::map<std::pair<std::string, std::string>, int> best_at;  // (scope, node) -> depth
  for (const auto& re : matches)
    for (const auto& s : re.sites) {
      int& best = best_at[{s.scope, s.node}];
      best = std::max(best, s.matched ? INT_MAX : s.depth);
    }
  struct Miss {
    const dsl::SiteExplanation* site;
    bool after_others;
  };
  std::vector<Miss> misses;
  std::set<std::pair<std::string, std::string>> shown_nodes;
  for (const auto& re : matches) {
    if (is_quiet(rules, re.rule) && re.enabled) continue;
    for (const auto& s : re.sites)  // a disabled rule's every site: the user turned it off
      if (!s.matched && ((s.near && s.depth >= best_at[{s.scope, s.node}]) || !re.enabled))
        misses.push_back({&s, false});
  }
  for (const auto& [rule, sites] : later)
    if (!is_quiet(rules, rule))
      for (const auto& s : sites) misses.push_back({&s, true});
  // The input's own misses first: those after other rules often meet what a rule already made.
  std::stable_sort(misses.begin(), misses.end(), [](const Miss& a, const Miss& b) {
    return a.after_others != b.after_others ? b.after_others : a.site->depth > b.site->depth;
  });
  std::vector<Miss> distinct;
  for (const Miss& m : misses)
    if (shown_nodes.insert({m.site->scope, m.site->node}).second) distinct.push_back(m);
  if (!distinct.empty()) {
    std::printf("\nnear misses, the closest first (%zu node(s)):\n", distinct.size());
    for (size_t i = 0; i < distinct.size() && i < kSummaryMisses; ++i) {
      const dsl::SiteExplanation& s = *distinct[i].site;
      std::printf("  %s @ %s: %s%s\n", s.rule.c_str(), where(s.node, s.scope).c_str(), s.reason.c_str(),
                  distinct[i].after_others ? " (after the other rules rewrote the graph)" : "");
    }
    if (distinct.size() > kSummaryMisses)
      std::printf("  ... %zu more: --all lists each rule's, --rule NAME one rule's\n",
                  distinct.size() - kSummaryMisses);
  }
  std::vector<std::string> not_kept;
  for (const auto& re : matches) {
    for (const auto* s : outcomes[re.rule])
      if (!s->selected)
        not_kept.push_back(re.rule + " @ " + where(s->node, s->scope) +
                           ": rewritten, not kept: " + s->reason);
    for (const auto& s : re.sites) {
      if (!s.matched) continue;
      bool rewritten = false;
      for (const auto* oc : outcomes[re.rule])
        rewritten = rewritten || (oc->node == s.node && oc->scope == s.scope);
      if (!rewritten)
        not_kept.push_back(re.rule + " @ " + where(s.node, s.scope) + ": " +
                           not_rewritten_reason(r.saturation, re.rule));
    }
  }
  if (!not_kept.empty()) {
    std::printf("\nmatched, not kept (%zu site(s)):\n", not_kept.size());
    for (size_t i = 0; i < not_kept.size() && i < kSummaryNotKept; ++i)
      std::printf("  %s\n", not_kept[i].c_str());
    if (not_kept.size() > kSummaryNotKept)
      std::printf("  ... %zu more (--all)\n", not_kept.size() - kSummaryNotKept);
  }
  if (silent) std::printf("\n%zu rule(s) came near no site (--all names them)\n", silent);
  std::printf("\nfusion rate %.0f%% of the input's kernels; left unfused: %s\n", 100 * r.fusion_rate,
              unfused_text(r, 8).c_str());
  std::printf(
      "details: geopt explain %s --rule NAME (one rule) | --node NAME (one node) | --all (every rule) | "
      "--verbose (every site)\n",
      o.model.c_str());
}

int run(const ExplainCliOptions& o) {
  auto rules = o.rules.load();
  ascend::HardwareProfile profile = o.profile.load();
  Model imported = import_onnx(o.model, o.input_shape.import_options());
  // With a range (a range plan's), the rules prove their conditions on its dims over it.
  if (!o.input_shape_range.empty())
    ascend::set_dim_ranges(imported, ascend::parse_input_shape_range(imported, o.input_shape_range));
  // The rules read the shapes optimize gives them: shape computations folded, symbolic
  // ones followed (docs/LOWERING.md, section 0).
  const Model model = ascend::shapes_for_rules(imported);
  dsl::ExplainOptions eo{o.rule, o.anywhere};
  std::vector<dsl::RuleExplanation> matches = dsl::explain_matches(*rules, model, eo);
  const ascend::OptimizeOptions opts = o.profile.optimize_options(profile, o.limits);
  ascend::OptimizeResult r = ascend::optimize(model, *rules, profile, opts);
  if (!o.node.empty()) return explain_node(o, imported, matches, r);

  std::map<std::string, std::vector<const ascend::SiteOutcome*>> outcomes;
  for (const auto& s : r.sites) outcomes[s.rule].push_back(&s);
  // Rules that build on other rules' results (FlashAttention + LayerNorm needs the
  // attention fused first) meet their sites only after those rules ran: explain them
  // again on the optimized model, where they got nowhere on the input.
  const Model& rewritten = r.model;
  std::map<std::string, std::vector<dsl::SiteExplanation>> later;
  for (const auto& re : dsl::explain_matches(*rules, rewritten, eo)) {
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
  if (o.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const auto& re : matches) {
      nlohmann::ordered_json rj{{"rule", re.rule}, {"location", re.loc.to_string()}, {"enabled", re.enabled}};
      auto sites = nlohmann::ordered_json::array();
      for (const auto& s : re.sites) {
        nlohmann::ordered_json sj{{"node", s.node}, {"matched", s.matched}};
        if (!s.scope.empty()) sj["scope"] = s.scope;
        if (!s.matched) sj["reason"] = s.reason;
        sites.push_back(sj);
      }
      rj["sites"] = sites;
      auto kept = nlohmann::ordered_json::array();
      for (const auto* s : outcomes[re.rule]) {
        nlohmann::ordered_json sj{{"node", s->node}, {"selected", s->selected}};
        if (!s->scope.empty()) sj["scope"] = s->scope;
        if (!s->selected) sj["reason"] = s->reason;
        kept.push_back(sj);
      }
      for (const auto& s : re.sites) {
        if (!s.matched) continue;
        bool rewritten = false;
        for (const auto* oc : outcomes[re.rule])
          rewritten = rewritten || (oc->node == s.node && oc->scope == s.scope);
        if (rewritten) continue;
        nlohmann::ordered_json sj{
            {"node", s.node}, {"selected", false}, {"reason", not_rewritten_reason(r.saturation, re.rule)}};
        if (!s.scope.empty()) sj["scope"] = s.scope;
        kept.push_back(sj);
      }
      rj["extraction"] = kept;
      if (auto it = later.find(re.rule); it != later.end()) {
        auto after = nlohmann::ordered_json::array();
        for (const auto& s : it->second) {
          nlohmann::ordered_json sj{{"node", s.node}, {"reason", s.reason}};
          if (!s.scope.empty()) sj["scope"] = s.scope;
          after.push_back(sj);
        }
        rj["after_other_rules"] = after;
      }
      j.push_back(rj);
    }
    nlohmann::ordered_json out{{"model", o.model},
                               {"soc_version", profile.soc_version},
                               {"rules", j},
                               {"fusion_rate", r.fusion_rate}};
    out["saturation"] = {{"stop", dsl::stop_reason_name(r.saturation.stop)},
                         {"iterations", r.saturation.iterations}};
    out["unfused"] = r.unfused;
    std::cout << json_text(out) << "\n";
    return 0;
  }
  std::printf("geopt explain: %s on %s (%zu rules)\n", o.model.c_str(), profile.soc_version.c_str(),
              rules->rules().size());
  if (r.saturation.stop != dsl::StopReason::Saturated)
    std::printf("saturation stopped at its %s after %d iteration(s): rewrites past it were not explored\n",
                dsl::stop_reason_name(r.saturation.stop), r.saturation.iterations);
  if (!o.all && !o.verbose && o.rule.empty()) {
    print_summary(o, *rules, matches, outcomes, later, r);
    return 0;
  }
  const size_t shown = o.verbose ? SIZE_MAX : kDefaultSitesShown;
  // At a node several rules miss (variants of one fusion), the default report keeps the
  // misses that got furthest; a node some rule matched needs no excuse from the others.
  std::map<std::pair<std::string, std::string>, int> best_at;  // (scope, node) -> depth
  for (const auto& re : matches)
    for (const auto& s : re.sites) {
      int& best = best_at[{s.scope, s.node}];
      best = std::max(best, s.matched ? INT_MAX : s.depth);
    }
  // Quiet rules' misses (is_quiet) are listed only when asked for.
  auto worth_showing = [&](const dsl::RuleExplanation& re, const dsl::SiteExplanation& s) {
    if (o.verbose || !o.rule.empty() || !re.enabled) return true;
    return s.near && !s.matched && !is_quiet(*rules, re.rule) && s.depth >= best_at[{s.scope, s.node}];
  };
  std::vector<std::string> silent;
  for (const auto& re : matches) {
    size_t near = 0;
    for (const auto& s : re.sites) near += !s.matched && s.near && worth_showing(re, s);
    const size_t matched = re.sites.size() - re.misses(), shallow = re.misses() - near;
    size_t rewritten = outcomes[re.rule].size(), kept = 0;
    for (const auto* s : outcomes[re.rule]) kept += s->selected;
    auto after = later.find(re.rule);
    if (near == 0 && kept == rewritten && rewritten >= matched && !o.verbose && o.rule.empty() &&
        after == later.end()) {
      if (matched == 0) {  // nothing matched, nothing came near: named once, at the end
        silent.push_back(re.rule);
        continue;
      }
      std::printf("\n%s: %zu of %zu %s node(s) matched; %zu rewrite(s) in the e-graph, %zu kept\n",
                  re.rule.c_str(), matched, re.sites.size(), re.root_op.c_str(), rewritten, kept);
      continue;
    }
    std::printf("\n%s (%s): %zu of %zu %s node(s) matched; %zu rewrite(s) in the e-graph, %zu kept\n",
                re.rule.c_str(), re.loc.to_string().c_str(), matched, re.sites.size(), re.root_op.c_str(),
                rewritten, kept);
    size_t lines = 0;
    for (const auto& s : re.sites) {
      if ((s.matched || !s.near || !worth_showing(re, s)) && !o.verbose) continue;
      if (lines++ == shown) break;
      std::printf("  %s @ %s: %s\n", re.rule.c_str(), where(s.node, s.scope).c_str(),
                  s.matched ? "matched" : s.reason.c_str());
    }
    if (shallow && !o.verbose)
      std::printf(
          "  (%zu other %s node(s) miss earlier in the pattern or nearer another rule; --verbose lists "
          "them)\n",
          shallow, re.root_op.c_str());
    for (const auto* s : outcomes[re.rule]) {
      if (s->selected) continue;
      if (lines++ == shown) break;
      std::printf("  %s @ %s: rewritten, not kept: %s\n", re.rule.c_str(), where(s->node, s->scope).c_str(),
                  s->reason.c_str());
    }
    for (const auto& s : re.sites) {
      if (!s.matched) continue;
      bool rewritten = false;
      for (const auto* oc : outcomes[re.rule])
        rewritten = rewritten || (oc->node == s.node && oc->scope == s.scope);
      if (rewritten || lines++ == shown) continue;
      std::printf("  %s @ %s: %s\n", re.rule.c_str(), where(s.node, s.scope).c_str(),
                  not_rewritten_reason(r.saturation, re.rule).c_str());
    }
    if (lines > shown) std::printf("  ... more (--verbose shows every site)\n");
    if (after != later.end()) {
      std::printf("  after the other rules rewrote the graph:\n");
      for (const auto& s : after->second)
        std::printf("  %s @ %s: %s\n", re.rule.c_str(), where(s.node, s.scope).c_str(), s.reason.c_str());
    }
  }
  if (!silent.empty()) {
    std::string names;
    for (const auto& name : silent) names += (names.empty() ? "" : ", ") + name;
    std::printf("\nno site near a match (--verbose shows each): %s\n", names.c_str());
  }
  std::printf("\nfusion rate %.0f%% of the input's kernels; left unfused: %s\n", 100 * r.fusion_rate,
              unfused_text(r, 8).c_str());
  return 0;
}

}  // namespace

std::function<int()> add_explain_command(CLI::App& app) {
  auto o = std::make_shared<ExplainCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("explain", "Why rules did or did not fire, and why a match was or was not kept");
  cmd->add_option("model", o->model,
                  "ONNX model (an input, or a model geopt optimized: then --node reads its provenance)")
      ->required();
  o->input_shape.add_to(cmd);
  cmd->add_option("--input_shape_range,--input-shape-range", o->input_shape_range,
                  "Ranges of the symbolic dims, ATC style (\"input_ids:[1,1~128]\"): conditions on them are "
                  "proven over the range, as compile does for a range plan");
  cmd->add_option("--rule", o->rule, "Only this rule");
  cmd->add_option("--node", o->node, "What happened to this node");
  cmd->add_flag("--anywhere", o->anywhere,
                "Also report nodes of any op in a rule's pattern, not only its root op");
  cmd->add_flag(
      "--all", o->all,
      "Every rule's report (the default is a summary of one screen: what fired, the nearest misses)");
  cmd->add_flag("--verbose", o->verbose, "Every site, matched ones too");
  cmd->add_flag("--json", o->json, "Print JSON");
  o->limits.add_to(cmd);
  o->rules.add_to(cmd);
  o->profile.add_to(cmd);
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
