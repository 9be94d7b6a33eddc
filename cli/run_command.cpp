#include "run_command.h"

#include "finite_number.h"
#include "json_text.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <set>

#include "ascend/device_ops/device_ops.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "eval/kernel.h"
#include "eval/run_limits.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "util/error.h"

namespace geopt::cli {
using api::json_text;
namespace {

namespace fs = std::filesystem;

struct RunOptions {
  std::string model;
  std::vector<std::string> inputs;  // name=file.npy
  std::vector<std::string> dims;    // symbol=value, for random inputs
  bool random = false;
  uint64_t seed = 0;
  std::string output_dir;
  std::string compare_dir;
  Tolerance tolerance;
  int threads = 0;
  uint64_t max_loop_trips = RunLimits{}.loop_trips;
  std::string save_inputs_dir;
  int repeat = 1;
  int warmup = 0;
  bool profile = false;
  bool json = false;
  int gear = -1;
};

std::pair<std::string, std::string> split_assignment(const std::string& arg, const char* flag) {
  auto eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    throw Error(std::string(flag) + " '" + arg + "': expected NAME=VALUE");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

// What `run` executes: an ONNX model in the reference evaluator, or a plan in
// the plan executor (files ending in .plan).
struct Runner {
  std::optional<Model> model;
  std::optional<Evaluator> evaluator;
  std::optional<plan::Plan> plan;
  std::optional<ascend::PlanExecutor> executor;

  int gear = -1;  // --gear: the gear whose shapes random inputs take (a plan of gears)

  Runner(const std::string& path, int gear_option) {
    if (fs::path(path).extension() == ".plan") {
      plan = ascend::read_plan(path);
      executor.emplace(*plan);
      if (plan->gears_size()) {
        gear = std::max(gear_option, 0);
        if (gear >= plan->gears_size())
          throw Error("--gear " + std::to_string(gear) + ": the plan has " +
                      std::to_string(plan->gears_size()) + " gear(s), numbered from 0");
      } else if (gear_option >= 0) {
        throw Error("--gear " + std::to_string(gear_option) + ": " + path + " is not a plan of gears");
      }
    } else {
      if (gear_option >= 0) throw Error("--gear picks a gear of a .plan; " + path + " is a model");
      model = import_onnx(path);
      evaluator.emplace(*model, ascend::op_registry());
    }
  }
  // The plan whose bindings the inputs follow: the plan, or the chosen gear's. A range
  // plan's inputs are bounded: random ones take the upper bound.
  const plan::Plan& bindings() const { return gear >= 0 ? plan->gears(gear).plan() : *plan; }
  std::vector<std::string> required_inputs() const {
    std::vector<std::string> names;
    if (plan)
      for (const auto& r : bindings().inputs()) names.push_back(r.name());
    else
      for (const Value* v : evaluator->required_inputs()) names.push_back(v->name());
    return names;
  }
  // The dtype input `name` is declared with (Undefined when not known).
  DType input_dtype(const std::string& name) const {
    if (plan) {
      for (const auto& r : bindings().inputs())
        if (r.name() == name) return static_cast<DType>(r.dtype());
    } else {
      for (const Value* v : evaluator->required_inputs())
        if (v->name() == name) return v->type.dtype;
    }
    return DType::Undefined;
  }
  std::map<std::string, HostTensor> random(uint64_t seed,
                                           const std::map<std::string, int64_t>& symbols) const {
    if (model) return random_inputs(*model, seed, symbols);
    std::mt19937_64 rng(seed);
    std::map<std::string, HostTensor> feeds;
    for (const auto& r : bindings().inputs())
      feeds[r.name()] = random_tensor(static_cast<DType>(r.dtype()), {r.dims().begin(), r.dims().end()}, rng);
    return feeds;
  }
  NamedTensors run(const std::map<std::string, HostTensor>& feeds, OpProfile* profile) const {
    if (executor) return executor->run(feeds, ascend::StreamSchedule::in_order, profile);
    return evaluator->run(feeds, profile);
  }
};

// --dim symbol=value: a size, a whole number from 0 to 2^31 (a dim past that is no tensor
// this machine runs), each symbol once.
std::map<std::string, int64_t> parse_dims(const std::vector<std::string>& dims) {
  std::map<std::string, int64_t> symbols;
  for (const auto& d : dims) {
    auto [name, value] = split_assignment(d, "--dim");
    long long v = -1;
    size_t used = 0;
    try {
      v = std::stoll(value, &used);
    } catch (const std::exception&) {
    }
    if (used == 0 || used != value.size() || v < 0 || v > (int64_t{1} << 31))
      throw UsageError("--dim '" + d + "': the value must be a whole number from 0 to 2147483648");
    if (symbols.count(name)) throw UsageError("--dim " + name + " is given twice");
    symbols[name] = v;
  }
  return symbols;
}

// A --dim name the inputs do not have would be ignored: the user meant another.
void check_dims_named(const std::map<std::string, int64_t>& symbols, const Model& drawn,
                      const std::string& whose) {
  const std::set<std::string> open = open_dim_keys(drawn);
  std::string listed;
  for (const auto& k : open) listed += (listed.empty() ? "" : ", ") + k;
  for (const auto& [name, value] : symbols)
    if (!open.count(name))
      throw UsageError("--dim " + name + ": no input of " + whose + " has an open dim of that name (" +
                       (open.empty() ? std::string("its dims are all fixed") : "its open dims: " + listed) +
                       ")");
}

// One output against its reference: the figures into `e` (JSON) and `line` (text);
// whether it is within the tolerance.
bool compare_output(const HostTensor& got, const HostTensor& want, const Tolerance& tolerance,
                    nlohmann::ordered_json& e, std::string& line) {
  TensorDiff d = diff(got, want, tolerance);
  const bool ok = d.within();
  char buf[160];
  if (d.comparable)
    std::snprintf(buf, sizeof buf, "  max_abs %.3g  max_rel %.3g  cosine %.6f  %s", d.max_abs, d.max_rel,
                  d.cosine, ok ? "ok" : "FAIL");
  else
    std::snprintf(buf, sizeof buf, "  %s  FAIL", d.mismatch.c_str());
  line += buf;
  if (d.nan_mismatches)
    line += "  (NaN where the reference has none, or none where it has: " + std::to_string(d.nan_mismatches) +
            ")";
  if (d.both_nan) line += "  (NaN in both: " + std::to_string(d.both_nan) + ")";
  e["nan_mismatches"] = d.nan_mismatches;
  e["both_nan"] = d.both_nan;
  e["max_abs"] = d.max_abs;
  e["max_rel"] = d.max_rel;
  e["cosine"] = d.cosine;
  e["ok"] = ok;
  if (!ok && d.comparable) {
    e["worst"] = d.worst;
    line += "  (worst at " + d.worst + ")";
  }
  if (!d.comparable) e["mismatch"] = d.mismatch;
  return ok;
}

// Slowest first.
std::vector<std::pair<std::string, OpProfile::Kernel>> slowest_first(
    const std::map<std::string, OpProfile::Kernel>& m) {
  std::vector<std::pair<std::string, OpProfile::Kernel>> rows(m.begin(), m.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.ms > b.second.ms; });
  return rows;
}

// What ran a kernel or an op type's kernels: "oneDNN jit_1x1:avx512_core x36, ...".
std::string implementations_text(const OpProfile::Kernel& k, double runs) {
  std::string ran;
  for (const auto& [implementation, calls] : k.implementations)
    ran += std::string(ran.empty() ? "" : ", ") + implementation + " x" +
           std::to_string(static_cast<int64_t>(static_cast<double>(calls) / runs + 0.5));
  return ran;
}

// --profile: time and calls per run by op type, slowest first, with the implementations
// its kernels ran (oneDNN's primitives, geopt's loops; printed when `print`).
nlohmann::ordered_json profile_by_op(const OpProfile& profile, double runs, bool print) {
  auto prof = nlohmann::ordered_json::object();
  if (print) std::printf("time per run by op type:\n");
  for (const auto& [op, k] : slowest_first(profile.by_op())) {
    prof[op] = {{"ms_per_run", k.ms / runs}, {"calls_per_run", static_cast<double>(k.calls) / runs}};
    if (!k.implementations.empty()) {
      auto& by_implementation = prof[op]["implementations"] = nlohmann::ordered_json::object();
      for (const auto& [implementation, calls] : k.implementations)
        by_implementation[implementation] = static_cast<double>(calls) / runs;
    }
    const std::string ran = implementations_text(k, runs);
    if (print)
      std::printf("  %-24s %9.3f ms  %6.0f calls%s\n", op.c_str(), k.ms / runs,
                  static_cast<double>(k.calls) / runs, ran.empty() ? "" : ("  (" + ran + ")").c_str());
  }
  return prof;
}

// --profile: the slowest kernels by name, `print_top` of them printed; all in the JSON.
nlohmann::ordered_json profile_by_kernel(const OpProfile& profile, double runs, bool print,
                                         size_t print_top = 10) {
  const auto rows = slowest_first(profile.by_kernel);
  auto kernels = nlohmann::ordered_json::array();
  if (print && !rows.empty()) std::printf("slowest kernels (of %zu):\n", rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const auto& [name, k] = rows[i];
    std::string ran;  // the implementations without counts: a kernel runs one
    for (const auto& [implementation, calls] : k.implementations)
      ran += (ran.empty() ? "" : ", ") + implementation;
    kernels.push_back({{"name", name},
                       {"op", k.op},
                       {"ms_per_run", k.ms / runs},
                       {"calls_per_run", static_cast<double>(k.calls) / runs},
                       {"implementation", ran}});
    if (print && i < print_top)
      std::printf("  %9.3f ms  %-24s %s%s\n", k.ms / runs, k.op.c_str(), name.c_str(),
                  ran.empty() ? "" : ("  (" + ran + ")").c_str());
  }
  return kernels;
}

// The inputs: drawn (--random-inputs, following `reference`'s types where given, else the
// runner's), then those read from --input files; every required one present.
std::map<std::string, HostTensor> gather_feeds(const RunOptions& o, const Runner& runner,
                                               const Model* reference,
                                               const std::map<std::string, int64_t>& symbols) {
  std::map<std::string, HostTensor> feeds;
  if (o.random)
    feeds = reference ? random_inputs(*reference, o.seed, symbols) : runner.random(o.seed, symbols);
  std::set<std::string> given;
  for (const auto& in : o.inputs) {
    auto [name, file] = split_assignment(in, "--input");
    if (!given.insert(name).second) throw Error("--input " + name + " is given twice: which file is meant?");
    feeds[name] = as_declared_dtype(read_npy(file), runner.input_dtype(name));
  }
  if (!o.random)
    for (const auto& name : runner.required_inputs())
      if (!feeds.count(name))
        throw Error("input '" + name + "' is not given: pass --input " + name +
                    "=FILE.npy or --random-inputs");
  return feeds;
}

// The .npy file name of each output, and the outputs written there when `dir` is given.
std::map<std::string, std::string> write_outputs(const NamedTensors& outs, const std::string& dir) {
  std::vector<std::string> output_names;
  for (const auto& [name, t] : outs) output_names.push_back(name);
  auto output_files = npy_file_names(output_names);
  if (!dir.empty()) {
    std::vector<std::pair<std::string, const HostTensor*>> all;
    for (const auto& [name, t] : outs) all.emplace_back(name, &t);
    for (const auto& line : write_npy_folder(dir, all)) spdlog::warn("--output-dir: {}", line);
  }
  return output_files;
}

int run(const RunOptions& o) {
  if (o.threads > 0) set_kernel_threads(o.threads);
  RunLimits limits;
  limits.loop_trips = o.max_loop_trips;
  limits.hint = "raise --max-loop-trips if the model needs more";
  const RunLimitsScope bounded(limits);
  Runner runner(o.model, o.gear);
  const std::map<std::string, int64_t> symbols = parse_dims(o.dims);
  // With --compare ORIGINAL.onnx, random inputs follow the original's types.
  const bool compare_model = !o.compare_dir.empty() && fs::path(o.compare_dir).extension() == ".onnx";
  std::optional<Model> reference;
  if (compare_model) reference = import_onnx(o.compare_dir);
  // A name the inputs do not have would be ignored: the user meant another.
  if (!symbols.empty()) {
    const Model* drawn = reference      ? &*reference
                         : runner.model ? &*runner.model
                                        : nullptr;  // whose inputs random ones follow
    if (!drawn)
      throw UsageError(
          "--dim: a plan's inputs have the dims it was compiled for (a plan of gears: pick one with --gear)");
    check_dims_named(symbols, *drawn, reference ? o.compare_dir : o.model);
  }
  const std::map<std::string, HostTensor> feeds =
      gather_feeds(o, runner, reference ? &*reference : nullptr, symbols);

  if (!o.save_inputs_dir.empty()) {
    std::vector<std::pair<std::string, const HostTensor*>> all;
    for (const auto& [name, t] : feeds) all.emplace_back(name, &t);
    for (const auto& line : write_npy_folder(o.save_inputs_dir, all)) spdlog::warn("--save-inputs: {}", line);
  }
  for (int i = 0; i < o.warmup; ++i) runner.run(feeds, nullptr);
  std::vector<double> times;
  NamedTensors outs;
  OpProfile profile;
  for (int i = 0; i < std::max(o.repeat, 1); ++i) {
    auto start = std::chrono::steady_clock::now();
    outs = runner.run(feeds, o.profile ? &profile : nullptr);
    times.push_back(
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  std::map<std::string, HostTensor> expected;
  if (reference)
    for (auto& [name, t] : Evaluator(*reference, ascend::op_registry()).run(feeds))
      expected[name] = std::move(t);
  std::vector<double> sorted = times;
  std::sort(sorted.begin(), sorted.end());
  const double ms = sorted[sorted.size() / 2];

  const auto output_files = write_outputs(outs, o.output_dir);
  bool all_ok = true;
  nlohmann::ordered_json j;
  j["model"] = o.model;
  j["run_ms"] = ms;  // the median over --repeat runs
  j["runs"] = times.size();
  j["min_ms"] = sorted.front();
  j["max_ms"] = sorted.back();
  auto arr = nlohmann::ordered_json::array();
  if (!o.json) {
    if (times.size() == 1)
      std::printf("%s: ran in %.2f ms\n", o.model.c_str(), ms);
    else
      std::printf("%s: median %.2f ms over %zu runs (min %.2f, max %.2f)\n", o.model.c_str(), ms,
                  times.size(), sorted.front(), sorted.back());
  }
  if (runner.plan && runner.plan->gears_size()) {
    const size_t gear = runner.executor->gear_for(feeds);
    j["gear"] = gear;
    if (!o.json)
      std::printf("  gear %zu (%s)\n", gear, runner.plan->gears(static_cast<int>(gear)).name().c_str());
  }
  for (const auto& [name, t] : outs) {
    nlohmann::ordered_json e{{"name", name}, {"shape", t.shape_string()}};
    std::string line = "  " + name + "  " + t.shape_string();
    if (!o.compare_dir.empty()) {
      if (reference && !expected.count(name))
        throw Error("--compare: " + o.compare_dir + " has no output '" + name + "'");
      const HostTensor want =
          reference ? expected.at(name)
                    : as_declared_dtype(read_npy(fs::path(o.compare_dir) / output_files.at(name)), t.dtype());
      all_ok = compare_output(t, want, o.tolerance, e, line) && all_ok;
    }
    arr.push_back(e);
    if (!o.json) std::printf("%s\n", line.c_str());
  }
  j["outputs"] = arr;
  if (o.profile) {
    j["profile"] = profile_by_op(profile, static_cast<double>(times.size()), !o.json);
    j["profile_kernels"] = profile_by_kernel(profile, static_cast<double>(times.size()), !o.json);
  }
  if (!o.compare_dir.empty()) j["within_tolerance"] = all_ok;
  if (o.json) std::cout << json_text(j) << "\n";
  if (!all_ok) {
    std::fprintf(stderr, "geopt: error: outputs differ from %s beyond %g + %g x |reference|\n",
                 o.compare_dir.c_str(), o.tolerance.atol, o.tolerance.rtol);
    return 1;
  }
  return 0;
}

}  // namespace

std::function<int()> add_run_command(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  CLI::App* cmd = app.add_subcommand("run",
                                     "Run an ONNX model (reference evaluator) or a compiled .plan (plan "
                                     "executor); write or compare its outputs");
  cmd->add_option("model", o->model, "ONNX model or .plan file")->required();
  cmd->add_option("--input", o->inputs,
                  "Input as NAME=FILE.npy (repeatable). NumPy has no bfloat16: a bf16 input is read from a "
                  "'<u2' array of its bit "
                  "patterns (or a 2-byte void array, '<V2'), and bf16 outputs are written as '<u2' (view "
                  "them with ml_dtypes.bfloat16)");
  cmd->add_flag("--random-inputs", o->random,
                "Feed uniform random inputs (floats in [-1,1), integers in {0,1})");
  cmd->add_option("--seed", o->seed, "Seed for --random-inputs")->capture_default_str();
  cmd->add_option("--dim", o->dims, "Symbolic dim value for --random-inputs, as NAME=N (default 1)");
  cmd->add_option("--output-dir", o->output_dir,
                  "Write each output as DIR/<name>.npy ('/' and other odd characters become '_')");
  cmd->add_option("--compare", o->compare_dir,
                  "Compare with DIR/<name>.npy, or with ORIGINAL.onnx run by the reference evaluator on the "
                  "same inputs; exit 1 when an output is off by more than --atol + --rtol x |reference|");
  cmd->add_option("--atol", o->tolerance.atol,
                  "--compare allows |output - reference| <= atol + rtol |reference| (numpy.allclose)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFiniteNumber);
  cmd->add_option("--rtol", o->tolerance.rtol, "Relative part of --compare's tolerance")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFiniteNumber);
  cmd->add_option("--threads", o->threads, "Threads for the kernels, 1 to 1024 (default: all cores)")
      ->check(CLI::Range(1, 1024));
  cmd->add_option("--max-loop-trips", o->max_loop_trips,
                  "Stop a Loop past this many trips (a model can ask for 2^62, or never end)")
      ->check(CLI::PositiveNumber)
      ->capture_default_str();
  cmd->add_option("--save-inputs", o->save_inputs_dir,
                  "Write the inputs used (e.g. random ones) as DIR/<name>.npy");
  cmd->add_option("--repeat", o->repeat, "Run this many times and report the median time")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--warmup", o->warmup, "Untimed runs before the timed ones")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber & kFiniteNumber);
  cmd->add_flag("--profile", o->profile,
                "Report the host time spent per op type (averaged over the timed runs); for a plan, its "
                "kernels as the plan executor runs them (`geopt profile` simulates the device instead)");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  cmd->add_option("--gear", o->gear,
                  "A plan of gears: the gear whose shapes --random-inputs take (default 0); given inputs "
                  "pick their gear")
      ->check(CLI::NonNegativeNumber & kFiniteNumber);
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
