#include "optimize_command.h"

#include <cstdio>
#include <iostream>
#include <memory>

#include "check_input_option.h"
#include "check_tolerance_option.h"
#include "geopt/geopt.h"
#include "input_shape_option.h"
#include "profile_options.h"
#include "rule_options.h"
#include "saturation_limit_options.h"

namespace geopt::cli {
namespace {

struct OptimizeCliOptions {
  std::string model, output;
  RuleOptions rules;
  ProfileOptions profile;
  InputShapeOption input_shape;
  CheckInputOption check_inputs;
  bool check = true, no_check = false;
  CheckToleranceOption tolerance;
  int64_t check_size_cap_mb = 512;
  std::string compile_stat;
  std::string dump_dir;
  SaturationLimitOptions limits;
  bool json = false;
};

int run(const OptimizeCliOptions& o) {
  api::OptimizeOptions a;
  a.target = o.profile.target();
  a.rules = o.rules.api();
  o.limits.apply_to(a.rules);
  a.input_shape = o.input_shape.text;
  a.check.enabled = !o.no_check;
  a.check.atol = o.tolerance.atol;
  a.check.rtol = o.tolerance.rtol;
  a.check.inputs = o.check_inputs.entries;
  a.check.size_cap_mb = o.check_size_cap_mb;
  a.output = o.output;
  a.compile_stat = o.compile_stat;
  a.dump_graph = o.dump_dir;
  const api::OptimizeResult r = api::optimize(api::ModelSource::file(o.model), a);
  std::cout << (o.json ? r.report_json + "\n" : r.report_text) << std::flush;
  if (!r.check_ok) {
    std::fprintf(stderr, "geopt: error: %s\n", r.error.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

std::function<int()> add_optimize_command(CLI::App& app) {
  auto o = std::make_shared<OptimizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "optimize",
      "Optimize a model for an Ascend NPU (equality saturation with the rules, cost-model extraction)");
  cmd->add_option("model", o->model, "ONNX model")->required();
  cmd->add_option("-o,--output", o->output, "Where to write the optimized model");
  o->rules.add_to(cmd);
  o->profile.add_to(cmd);
  o->input_shape.add_to(cmd);
  o->check_inputs.add_to(cmd);
  cmd->add_flag("--check", o->check,
                "Compare with the original on random inputs (the default, below --check-size-cap)");
  cmd->add_flag("--no-check", o->no_check, "Skip the numerical check");
  o->tolerance.add_to(cmd, "optimized");
  cmd->add_option("--check-size-cap", o->check_size_cap_mb, "Check only models up to this many MB")
      ->capture_default_str();
  cmd->add_option("--export-compile-stat", o->compile_stat,
                  "Write per-rule match_times/effect_times like GE's fusion_result.json");
  o->limits.add_to(cmd);
  cmd->add_option("--dump-graph", o->dump_dir,
                  "Write each stage (import; saturation + extraction + layout) as ONNX, DOT and SVG");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
