#include "tune_command.h"

#include <iostream>
#include <memory>

#include "pipeline_options.h"
#include "progress_bar.h"

namespace geopt::cli {
namespace {

struct TuneCliOptions : PipelineOptions {
  int job_type = 2;
  std::string tune_ops_file, tune_target = "host", mdl_bank_path;
  bool reload = false, progress = true, tune_threads = false;
  double time_budget = 0;
  uint64_t seed = 0;
};

int run(const TuneCliOptions& o) {
  api::TuneOptions a;
  o.fill(a.compile);
  a.compile.mdl_bank_path = o.mdl_bank_path;
  a.job_type = o.job_type;
  a.bank_path = o.output;
  a.tune_ops_file = o.tune_ops_file;
  a.reload = o.reload;
  a.time_budget_s = o.time_budget;
  a.tune_target = o.tune_target;
  a.seed = o.seed;
  a.tune_threads = o.tune_threads;
  a.progress = progress_bar(o.progress && !o.json);
  const api::TuneResult r = api::tune(api::ModelSource::file(o.model), a);
  std::cout << (o.json ? r.report_json + "\n" : r.report_text) << std::flush;
  return 0;
}

}  // namespace

std::function<int()> add_tune_command(CLI::App& app) {
  auto o = std::make_shared<TuneCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "tune", "Measure on this machine and file the best settings in a knowledge bank (AOE's auto-tune)");
  cmd->add_option("model", o->model, "ONNX model")->required();
  cmd->add_option(
         "--job_type,--job-type", o->job_type,
         "1: subgraph tuning (rule tags, streams; model bank), 2: operator tuning (host tactics per op "
         "signature; op bank)")
      ->check(CLI::IsMember({1, 2}))
      ->capture_default_str();
  cmd->add_option("--output,-o", o->output,
                  "The knowledge bank: a folder (FOLDER/<soc_version>/op_bank.json, model_bank.json) or a "
                  ".json file; TUNE_BANK_PATH when unset")
      ->envname("TUNE_BANK_PATH");
  cmd->add_option(
      "--tune_ops_file,--tune-ops-file", o->tune_ops_file,
      "Only these ops (--job_type 2): JSON {\"tune_ops_name\": [...], \"tune_ops_type\": [...]} of "
      "kernel names and op types as plan dump lists them");
  cmd->add_flag("--reload", o->reload, "Resume: what the bank holds for this machine is not measured again");
  cmd->add_flag(
      "--tune_threads,--tune-threads", o->tune_threads,
      "--job_type 2: also try fewer threads per kernel, then the whole plan on one thread (can gain on "
      "dedicated cores, and lose on shared ones: docs/TUNING.md)");
  cmd->add_option("--time_budget,--time-budget", o->time_budget,
                  "Seconds at most (0: none); what is not reached keeps its setting, --reload goes on")
      ->check(CLI::NonNegativeNumber);
  cmd->add_option(
         "--tune_target,--tune-target", o->tune_target,
         "--job_type 1: judge by the plan on this host, or by the simulator (which also tunes streams)")
      ->check(CLI::IsMember({"host", "simulated"}))
      ->capture_default_str();
  cmd->add_option("--mdl_bank_path,--mdl-bank-path", o->mdl_bank_path,
                  "--job_type 2: compile with the strategy settings a subgraph tuning filed for this model");
  cmd->add_option("--seed", o->seed, "Seed of the random inputs the plans are timed on")
      ->capture_default_str();
  o->rules.add_to(cmd);
  o->profile.add_to(cmd);
  o->input_shape.add_to(cmd);
  cmd->add_flag("--no-check", o->no_check, "Skip checking the plan against the model before timing it");
  o->limits.add_to(cmd);
  o->add_extraction_options(cmd);
  cmd->add_flag("!--no-progress", o->progress, "No progress bar on stderr");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
