#include "rules_command.h"
#include "json_output.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ascend/optimizer.h"
#include "dsl/diagnostic.h"
#include "dsl/explain.h"
#include "dsl/rule_tests.h"
#include "dsl/soundness.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "profile_options.h"
#include "rule_options.h"
#include "saturation_limit_options.h"
#include "util/error.h"

namespace geopt::cli {
namespace {

struct RulesOptions {
  RuleOptions rules;
  ProfileOptions profile;  // the cost the rules are extracted under, as geopt optimize does
  std::vector<std::string> check_paths;
  std::vector<std::string> test_paths;
  bool soundness = false;
  std::string model;
  std::string output;
  SaturationLimitOptions limits;
  bool json = false;
  bool dump = false;
};

int check(const RulesOptions& o) {
  std::vector<std::string> paths = o.check_paths.empty() ? o.rules.resolved_paths() : o.check_paths;
  std::vector<dsl::Diagnostic> errors;
  auto set = dsl::RuleSet::load(paths, errors);
  if (!set) {
    std::fprintf(stderr, "%s", dsl::format_diagnostics(errors).c_str());
    std::fprintf(stderr, "geopt: error: %zu error(s) in the rules\n", errors.size());
    return 1;
  }
  std::printf("%zu rules in %zu files: ok\n", set->rules().size(), set->files().size());
  return 0;
}

int list(const RulesOptions& o) {
  auto set = o.rules.load();
  nlohmann::ordered_json arr = nlohmann::ordered_json::array();
  for (const auto& r : set->rules()) {
    std::string tags;
    for (const auto& t : r.ast->tags) tags += (tags.empty() ? "" : ",") + t;
    if (o.json) {
      arr.push_back({{"name", r.ast->name},
                     {"tags", r.ast->tags},
                     {"location", r.ast->loc.to_string()},
                     {"enabled", r.enabled},
                     {"doc", r.ast->doc},
                     {"tests", r.ast->tests.size()}});
    } else {
      std::printf("%-32s %-22s %-3s %s\n", r.ast->name.c_str(), tags.c_str(), r.enabled ? "on" : "off",
                  r.ast->loc.to_string().c_str());
    }
  }
  if (o.json) std::cout << json_text(arr) << "\n";
  return 0;
}

int test(const RulesOptions& o) {
  RuleOptions ro = o.rules;
  if (!o.test_paths.empty()) ro.paths = o.test_paths;
  auto set = ro.load();
  const ascend::HardwareProfile profile = o.profile.load();
  ascend::OptimizeOptions opts;
  opts.cost = o.profile.cost_options(profile);
  o.limits.apply_to(opts.limits);
  // A rule's test checks what the rules make: the precision pass, after them, is not theirs.
  // Each test's model goes through geopt optimize's pipeline, as a user's would.
  auto pipeline = [&](const Model& m) {
    ascend::OptimizeResult r = ascend::optimize(m, *set, profile, opts);
    dsl::Rewritten out{std::move(r.model), r.selected, {}, {}, {}};
    for (const auto& [name, s] : r.saturation.per_rule) {
      out.matched[name] = s.matched;
      if (s.refused) out.refusals.push_back(s.refusal);
    }
    if (r.saturation.stop != dsl::StopReason::Saturated)
      out.stopped = std::string(dsl::stop_reason_name(r.saturation.stop)) + " after " +
                    std::to_string(r.saturation.iterations) + " iteration(s)";
    return out;
  };
  int failed = 0, passed = 0;
  nlohmann::ordered_json tests = nlohmann::ordered_json::array();
  for (const auto& r : dsl::run_rule_tests(*set, pipeline)) {
    (r.passed ? passed : failed)++;
    if (o.json) {
      tests.push_back({{"rule", r.rule},
                       {"test", r.test},
                       {"passed", r.passed},
                       {"failures", r.failures},
                       {"stopped", r.stopped}});
      continue;
    }
    std::printf("%s  %s: %s%s\n", r.passed ? "PASS" : "FAIL", r.rule.c_str(), r.test.c_str(),
                r.stopped.empty() ? "" : (" (saturation stopped at its " + r.stopped + ")").c_str());
    for (const auto& f : r.failures) std::printf("      %s\n", f.c_str());
  }
  nlohmann::ordered_json report = {{"tests", tests}, {"passed", passed}, {"failed", failed}};
  if (!o.json) std::printf("%d passed, %d failed\n", passed, failed);
  if (!o.soundness) {
    if (o.json) std::cout << json_text(report) << "\n";
    return failed ? 1 : 0;
  }
  // Each rule applied once at each site of its tests' graphs, at other batch sizes,
  // random inputs and drawn constants (dsl/soundness.h).
  int unsound = 0, unchecked = 0;
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const auto& r : dsl::check_soundness(*set, ascend::egraph_cost(profile, opts.cost))) {
    unchecked += !r.checked();
    unsound += r.checked() && !r.passed();
    double worst = 0;
    for (const auto& c : r.cases) worst = std::max(worst, c.max_error);
    if (o.json) {
      nlohmann::ordered_json failing = nlohmann::ordered_json::array();
      for (const auto& c : r.cases)
        if (!c.passed)
          failing.push_back(
              {{"test", c.test}, {"instance", c.shapes}, {"failure", c.failure}, {"tolerance", c.tolerance}});
      rules.push_back({{"rule", r.rule},
                       {"verdict", !r.checked() ? "unchecked"
                                   : r.passed() ? "sound"
                                                : "unsound"},
                       {"instances", r.cases.size()},
                       {"worst_error", worst},
                       {"failing", failing}});
      continue;
    }
    if (!r.checked()) {
      std::printf("UNCHECKED  %s: no test with `expect outputs_equal` makes it fire\n", r.rule.c_str());
      continue;
    }
    std::printf("%s  %s: %zu instance(s), worst error %.3g\n", r.passed() ? "SOUND    " : "UNSOUND  ",
                r.rule.c_str(), r.cases.size(), worst);
    for (const auto& c : r.cases)
      if (!c.passed)
        std::printf("      %s (%s): %s (tolerance %g)\n", c.test.c_str(), c.shapes.c_str(), c.failure.c_str(),
                    c.tolerance);
  }
  if (o.json) {
    report["soundness"] = {{"rules", rules}, {"unsound", unsound}, {"unchecked", unchecked}};
    std::cout << json_text(report) << "\n";
  } else {
    std::printf("soundness: %d unsound, %d unchecked\n", unsound, unchecked);
  }
  return failed || unsound || unchecked ? 1 : 0;
}

int match(const RulesOptions& o) {
  auto set = o.rules.load();
  Model model = import_onnx(o.model);
  std::map<std::string, std::vector<std::string>> sites = dsl::match_sites(*set, model);
  if (o.json) {
    nlohmann::ordered_json j = nlohmann::ordered_json::object();
    for (const auto& r : set->rules()) j[r.ast->name] = sites[r.ast->name];
    std::cout << json_text(j) << "\n";
    return 0;
  }
  for (const auto& r : set->rules()) {
    const auto& s = sites[r.ast->name];
    std::printf("%-32s %zu\n", r.ast->name.c_str(), s.size());
    for (const auto& name : s) std::printf("    at %s\n", name.c_str());
  }
  return 0;
}

int apply(const RulesOptions& o) {
  auto set = o.rules.load();
  const ascend::HardwareProfile profile = o.profile.load();
  Model model = import_onnx(o.model);
  const ascend::OptimizeOptions opts = o.profile.optimize_options(profile, o.limits);
  ascend::OptimizeResult r = ascend::optimize(model, *set, profile, opts);
  if (!o.output.empty()) export_onnx(r.model, o.output);
  std::printf("nodes %zu -> %zu; saturation %s after %d iteration(s)\n", r.nodes_before, r.nodes_after,
              r.saturation.stop == dsl::StopReason::Saturated
                  ? "saturated"
                  : ("stopped at its " + std::string(dsl::stop_reason_name(r.saturation.stop))).c_str(),
              r.saturation.iterations);
  for (const auto& [name, s] : r.saturation.per_rule) {
    if (!s.matched) continue;
    auto kept = r.selected.find(name);
    std::printf("  %-32s matched %zu, applied %zu, kept %zu\n", name.c_str(), s.matched, s.applied,
                kept == r.selected.end() ? 0 : kept->second);
  }
  return 0;
}

}  // namespace

std::function<int()> add_rules_command(CLI::App& app) {
  auto o = std::make_shared<RulesOptions>();
  CLI::App* cmd = app.add_subcommand("rules", "Check, list, test and apply .gerule rewrite rules");
  o->rules.add_to(cmd);
  o->profile.add_to(cmd);
  cmd->add_flag("--dump-automaton", o->dump, "Print the matcher automaton all enabled rules compile into");
  cmd->fallthrough();  // --rules etc. may follow the subcommand
  CLI::App* c_check = cmd->add_subcommand("check", "Parse and check rule files (default: the shipped rules)");
  c_check->add_option("paths", o->check_paths, "Rule files or folders");
  CLI::App* c_list = cmd->add_subcommand("list", "List rules: name, tags, enabled, file:line");
  c_list->add_flag("--json", o->json, "Print JSON");
  CLI::App* c_test = cmd->add_subcommand("test", "Run the test blocks in rule files");
  c_test->add_option("paths", o->test_paths, "Rule files or folders (default: the shipped rules)");
  c_test->add_flag("--soundness", o->soundness,
                   "Also check each rule on its tests' graphs at other batch sizes and random inputs, within "
                   "its declared tolerance");
  c_test->add_flag("--json", o->json, "Print JSON");
  o->limits.add_to(c_test);
  CLI::App* c_match = cmd->add_subcommand("match", "Show where each rule matches in a model");
  c_match->add_option("model", o->model, "ONNX model")->required();
  c_match->add_flag("--json", o->json, "Print JSON");
  CLI::App* c_apply = cmd->add_subcommand(
      "apply", "Rewrite a model with the rules as geopt optimize does (no check, no report) and write it");
  c_apply->add_option("model", o->model, "ONNX model")->required();
  c_apply->add_option("-o,--output", o->output, "Where to write the rewritten model");
  o->limits.add_to(c_apply);
  for (CLI::App* sub : {c_check, c_list, c_test, c_match, c_apply}) sub->fallthrough();
  return [=]() -> int {
    if (!*cmd) return -1;
    if (*c_check) return check(*o);
    if (*c_list) return list(*o);
    if (*c_test) return test(*o);
    if (*c_match) return match(*o);
    if (*c_apply) return apply(*o);
    if (o->dump) {
      auto set = o->rules.load();
      std::vector<std::string> names;
      for (const auto& r : set->rules()) names.push_back(r.ast->name);
      std::cout << set->automaton().dump(names);
      return 0;
    }
    std::cout << cmd->help();
    return 2;
  };
}

}  // namespace geopt::cli
