#include "rules_command.h"
#include "json_text.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ascend/optimizer.h"
#include "geopt/geopt.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "profile_options.h"
#include "rule_options.h"
#include "saturation_limit_options.h"
#include "util/error.h"

namespace geopt::cli {
using api::json_text;
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
  const api::RulesReport r =
      api::rules_check(o.check_paths.empty() ? o.rules.resolved_paths() : o.check_paths);
  if (!r.ok) {
    std::fprintf(stderr, "%s", r.report_text.c_str());
    std::fprintf(stderr, "geopt: error: %zu error(s) in the rules\n",
                 nlohmann::json::parse(r.report_json)["errors"].size());
    return 1;
  }
  std::cout << r.report_text;
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
  api::RuleTestOptions a;
  a.rules = o.rules.api();
  if (!o.test_paths.empty()) a.rules.paths = o.test_paths;
  o.limits.apply_to(a.rules);
  a.target = o.profile.target();
  a.soundness = o.soundness;
  const api::RulesReport r = api::rules_test(a);
  std::cout << (o.json ? r.report_json + "\n" : r.report_text) << std::flush;
  return r.ok ? 0 : 1;
}

int match(const RulesOptions& o) {
  const api::RulesReport r = api::rules_match(api::ModelSource::file(o.model), o.rules.api());
  std::cout << (o.json ? r.report_json + "\n" : r.report_text) << std::flush;
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
