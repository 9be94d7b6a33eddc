// The rules as a library: check rule files, run their tests (and soundness checks), and
// show where they match in a model: `geopt rules check|test|match`.
#include <algorithm>
#include <nlohmann/json.hpp>

#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "dsl/diagnostic.h"
#include "dsl/explain.h"
#include "dsl/rule_tests.h"
#include "dsl/soundness.h"
#include "guard.h"
#include "json_text.h"
#include "settings.h"
#include "text_format.h"

namespace geopt::api {
namespace {

RulesReport check_rules(const std::vector<std::string>& given) {
  const std::vector<std::string> paths = given.empty() ? rule_paths({}) : given;
  std::vector<dsl::Diagnostic> errors;
  auto set = dsl::RuleSet::load(paths, errors);
  nlohmann::ordered_json j;
  if (!set) {
    auto list = nlohmann::ordered_json::array();
    for (const auto& d : errors)
      list.push_back(
          {{"file", d.loc.file}, {"line", d.loc.line}, {"col", d.loc.column}, {"message", d.message}});
    j["errors"] = list;
    return {.ok = false, .report_json = json_text(j), .report_text = dsl::format_diagnostics(errors)};
  }
  j["paths"] = paths;
  j["rules"] = set->rules().size();
  j["files"] = set->files().size();
  j["errors"] = nlohmann::ordered_json::array();
  std::string text;
  appendf(text, "%zu rules in %zu files: ok\n", set->rules().size(), set->files().size());
  return {.ok = true, .report_json = json_text(j), .report_text = text};
}

RulesReport test_rules(const RuleTestOptions& o) {
  auto set = load_rules(o.rules);
  const ascend::HardwareProfile profile = load_profile(o.target);
  ascend::OptimizeOptions opts;
  opts.cost = cost_options(o.target, profile);
  opts.limits = saturation_limits(o.rules);
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
  std::string text;
  nlohmann::ordered_json tests = nlohmann::ordered_json::array();
  for (const auto& r : dsl::run_rule_tests(*set, ascend::op_registry(), pipeline)) {
    (r.passed ? passed : failed)++;
    tests.push_back({{"rule", r.rule},
                     {"test", r.test},
                     {"passed", r.passed},
                     {"failures", r.failures},
                     {"stopped", r.stopped}});
    appendf(text, "%s  %s: %s%s\n", r.passed ? "PASS" : "FAIL", r.rule.c_str(), r.test.c_str(),
            r.stopped.empty() ? "" : (" (saturation stopped at its " + r.stopped + ")").c_str());
    for (const auto& f : r.failures) appendf(text, "      %s\n", f.c_str());
  }
  nlohmann::ordered_json report = {{"tests", tests}, {"passed", passed}, {"failed", failed}};
  appendf(text, "%d passed, %d failed\n", passed, failed);
  if (!o.soundness) return {.ok = failed == 0, .report_json = json_text(report), .report_text = text};
  // Each rule applied once at each site of its tests' graphs, at other batch sizes,
  // random inputs and drawn constants (dsl/soundness.h).
  int unsound = 0, unchecked = 0;
  nlohmann::ordered_json rules = nlohmann::ordered_json::array();
  for (const auto& r :
       dsl::check_soundness(*set, ascend::op_registry(), ascend::egraph_cost(profile, opts.cost))) {
    unchecked += !r.checked();
    unsound += r.checked() && !r.passed();
    double worst = 0;
    for (const auto& c : r.cases) worst = std::max(worst, c.max_error);
    {
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
    }
    if (!r.checked()) {
      appendf(text, "UNCHECKED  %s: no test with `expect outputs_equal` makes it fire\n", r.rule.c_str());
      continue;
    }
    appendf(text, "%s  %s: %zu instance(s), worst error %.3g\n", r.passed() ? "SOUND    " : "UNSOUND  ",
            r.rule.c_str(), r.cases.size(), worst);
    for (const auto& c : r.cases)
      if (!c.passed)
        appendf(text, "      %s (%s): %s (tolerance %g)\n", c.test.c_str(), c.shapes.c_str(),
                c.failure.c_str(), c.tolerance);
  }
  report["soundness"] = {{"rules", rules}, {"unsound", unsound}, {"unchecked", unchecked}};
  appendf(text, "soundness: %d unsound, %d unchecked\n", unsound, unchecked);
  return {.ok = !failed && !unsound && !unchecked, .report_json = json_text(report), .report_text = text};
}

RulesReport match_rules(const ModelSource& source, const RuleOptions& o) {
  auto set = load_rules(o);
  Model model = import_model(source, {});
  std::map<std::string, std::vector<std::string>> sites =
      dsl::match_sites(*set, ascend::op_registry(), model);
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  std::string text;
  for (const auto& r : set->rules()) {
    const auto& s = sites[r.ast->name];
    j[r.ast->name] = s;
    appendf(text, "%-32s %zu\n", r.ast->name.c_str(), s.size());
    for (const auto& name : s) appendf(text, "    at %s\n", name.c_str());
  }
  return {.ok = true, .report_json = json_text(j), .report_text = text};
}

}  // namespace

RulesReport rules_check(const std::vector<std::string>& paths) {
  return guarded([&] { return check_rules(paths); });
}

RulesReport rules_test(const RuleTestOptions& options) {
  return guarded([&] { return test_rules(options); });
}

RulesReport rules_match(const ModelSource& model, const RuleOptions& rules) {
  return guarded([&] { return match_rules(model, rules); });
}

}  // namespace geopt::api
