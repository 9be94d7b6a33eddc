#include "optimize_command.h"

#include <memory>

#include "pipeline_options.h"

namespace geopt::cli {
namespace {

struct OptimizeCliOptions : PipelineOptions {
  bool check = true;
  int64_t check_size_cap_mb = 512;
  std::string compile_stat;
};

int run(const OptimizeCliOptions& o) {
  api::OptimizeOptions a;
  o.fill(a);
  a.check.size_cap_mb = o.check_size_cap_mb;
  a.compile_stat = o.compile_stat;
  const api::OptimizeResult r = api::optimize(api::ModelSource::file(o.model), a);
  return o.finish(r.report_json, r.report_text, r.check_ok, r.error);
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
  o->add_extraction_options(cmd);
  cmd->add_option("--dump-graph", o->dump_dir,
                  "Write each stage (import; saturation + extraction + layout) as ONNX, DOT and SVG");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
