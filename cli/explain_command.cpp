#include "explain_command.h"

#include <iostream>
#include <memory>

#include "geopt/geopt.h"
#include "input_shape_option.h"
#include "profile_options.h"
#include "rule_options.h"
#include "saturation_limit_options.h"

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

int run(const ExplainCliOptions& o) {
  api::ExplainOptions a;
  a.target = o.profile.target();
  a.rules = o.rules.api();
  o.limits.apply_to(a.rules);
  a.input_shape = o.input_shape.text;
  a.input_shape_range = o.input_shape_range;
  a.rule = o.rule;
  a.node = o.node;
  a.anywhere = o.anywhere;
  a.all = o.all;
  a.verbose = o.verbose;
  const api::ExplainResult r = api::explain(api::ModelSource::file(o.model), a);
  std::cout << (o.json ? r.report_json + "\n" : r.report_text) << std::flush;
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
