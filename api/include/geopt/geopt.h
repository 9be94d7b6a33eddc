#pragma once
// geopt's C++ API: the one header a program includes to optimize ONNX models for an
// Ascend NPU, compile them to execution plans and run those plans on the host.
//
//   #include <geopt/geopt.h>
//
//   geopt::api::OptimizeOptions o;
//   o.target.soc_version = "Ascend310P3";
//   geopt::api::OptimizeResult r = geopt::api::optimize(geopt::api::ModelSource::file("bert.onnx"), o);
//   r.model.save("bert_opt.onnx");                      // r.report_json: the CLI's --json report
//
//   geopt::api::CompileResult c = geopt::api::compile(geopt::api::ModelSource::file("resnet50.onnx"), {});
//   c.plan.save("resnet50.plan");
//   auto outputs = c.plan.run({{"input", geopt::api::Tensor::copy_of("float32", {1, 3, 224, 224}, data)}});
//
// `geopt optimize`, `geopt compile`, `geopt explain`, `geopt quantize`, `geopt rules
// check|test|match` and the Python module call these same functions: the reports are the
// same. Plan::run is the plan executor `geopt run PLAN` runs. Options take ATC's names. Everything here
// is plain C++ (no geopt-internal types), so the header stands alone; with CMake:
//   find_package(geopt CONFIG REQUIRED)   target_link_libraries(app PRIVATE geopt::geopt)
// Errors are thrown as geopt::api::Error (below). Calls may run concurrently on
// different objects; a Plan may be run from several threads at once.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#ifndef GEOPT_API
#define GEOPT_API __attribute__((visibility("default")))
#endif

namespace geopt::api {

// "0.1.0": the library's version (plans and reports record it).
GEOPT_API std::string version();

// What geopt logs to stderr: "trace", "debug", "info", "warn" (the CLI's and the Python
// module's default), "error" or "off". Throws UsageError for another name.
GEOPT_API void set_log_level(const std::string& level);

// ---------------------------------------------------------------- errors
// Every failure is an Error. Its message is the CLI's ("geopt: error: ..." without the
// prefix); where the message names a place, file/line/col and node say it as data
// (rule files: file:line:col; models: the file and the node).
class GEOPT_API Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message);
  ~Error() override;
  std::string file;
  int line = 0, col = 0;
  std::string node;
};
// The input is at fault: a malformed model, rule file, option value, plan file or feed.
class GEOPT_API BadInput : public Error {
 public:
  using Error::Error;
  ~BadInput() override;
};
// Options that contradict each other or do not parse (the CLI exits 2 on these).
class GEOPT_API UsageError : public BadInput {
 public:
  using BadInput::BadInput;
  ~UsageError() override;
};
// A broken invariant of geopt itself: a bug to report with the model and options.
class GEOPT_API InternalError : public Error {
 public:
  using Error::Error;
  ~InternalError() override;
};

// ---------------------------------------------------------------- inputs
// A model: an .onnx file (its external data beside it) or its serialized bytes
// (external data, if any, resolves against the current folder).
struct GEOPT_API ModelSource {
  std::string path;
  std::string bytes;  // used when path is empty
  static ModelSource file(std::string path);
  static ModelSource serialized(std::string bytes);
  // How reports name it: the path, or "<bytes>".
  std::string name() const;
};

// What the cost model prices: the device and the dtype its ops compute in.
struct TargetOptions {
  std::string soc_version = "Ascend910B1";  // ATC's name, or a profile .toml
  std::vector<std::string> profile_set;     // SECTION.KEY=VALUE overrides (--profile-set)
  // ATC's --precision_mode. Unset: priced as force_fp16, the model keeps its dtypes;
  // set: the mode is also written into the model (and the check's tolerance follows it).
  std::optional<std::string> precision_mode;
  std::string modify_mixlist;  // allow_mix_precision's list changes, a JSON file
  bool enable_small_channel = false;
  // ATC's --buffer_optimize: l2_optimize (the default), l1_optimize or off_optimize.
  std::string buffer_optimize = "l2_optimize";
};

// Which rules run, and how far saturation may go.
struct RuleOptions {
  std::vector<std::string> paths;    // .gerule files or folders; empty: the shipped rules
  std::vector<std::string> disable;  // rule names or tags turned off
  std::string fusion_switch_file;    // TOML: [rules] NAME = "on"|"off", [tags] TAG = ...
  std::optional<int> iter_limit;     // unset: the library's defaults
  std::optional<size_t> node_limit;
  std::optional<double> time_limit;  // seconds
  // Input nodes the layout rules leave in the model's format (NCHW/ND): a region kept out
  // of NC1HWC0. Names as the model gives them; one the model lacks is an error.
  std::vector<std::string> keep_format;
  // How extraction chooses the program: "auto" (exact on small e-graphs), "greedy" or
  // "exact" (branch and bound from the heuristic's program, within a state budget).
  std::string extraction = "auto";
};

// The numerical check of what was made against the model as given.
struct CheckOptions {
  bool enabled = true;
  std::optional<double> atol, rtol;  // unset: the precision mode's tolerance
  std::vector<std::string> inputs;   // NAME=FILE.npy: inputs the check takes as given
  int64_t size_cap_mb = 512;         // optimize: models above this are not checked
};

struct OptimizeOptions {
  TargetOptions target;
  RuleOptions rules;
  std::string input_shape;  // ATC's "name:1,3,224,224;other:1,128"
  CheckOptions check;
  std::string output;        // written when the check passed (empty: nothing written)
  std::string compile_stat;  // GE's fusion_result.json (--export-compile-stat)
  std::string dump_graph;    // a folder: each stage as ONNX, DOT and SVG
};

// ---------------------------------------------------------------- results
// The optimized model. Nothing is serialized until asked.
class GEOPT_API OptimizedModel {
 public:
  OptimizedModel();
  ~OptimizedModel();
  OptimizedModel(const OptimizedModel&);
  OptimizedModel& operator=(const OptimizedModel&);
  // Writes it (atomically) as .onnx.
  void save(const std::string& path) const;
  // The serialized onnx.ModelProto, weights inline.
  std::string serialized() const;
  struct Impl;
  explicit OptimizedModel(std::shared_ptr<const Impl> impl);

 private:
  std::shared_ptr<const Impl> impl_;
};

// Figures every report has, as data.
struct Summary {
  size_t kernels_before = 0, kernels_after = 0;
  double latency_us_before = 0, latency_us_after = 0;  // modeled, one stream
  std::map<std::string, size_t> fused;                 // rule -> sites kept
};

struct OptimizeResult {
  OptimizedModel model;
  bool check_ok = true;     // false: the check failed and `output` was not written
  std::string report_json;  // what `geopt optimize --json` prints
  std::string report_text;  // what `geopt optimize` prints
  std::string error;        // when !check_ok: the CLI's error line
  Summary summary;
};

// Imports, optimizes (rules, cost-model extraction) and checks `model`.
GEOPT_API OptimizeResult optimize(const ModelSource& model, const OptimizeOptions& options = {});

// A tensor handed to or returned by a Plan: numpy's dtype names ("float32",
// "float16", "bfloat16", "int64", "bool", ...), C-contiguous bytes kept alive by `owner`.
struct GEOPT_API Tensor {
  std::string dtype;
  std::vector<int64_t> shape;
  const void* data = nullptr;
  size_t nbytes = 0;
  std::shared_ptr<const void> owner;
  // A tensor owning a copy of `data` (shape's product x the dtype's size bytes).
  static Tensor copy_of(const std::string& dtype, std::vector<int64_t> shape, const void* data);
  // A tensor of zeros.
  static Tensor zeros(const std::string& dtype, std::vector<int64_t> shape);
};

struct RunOptions {
  // Kernel threads, up to 1024; 0: OMP_NUM_THREADS, else every core. OpenMP's team size
  // is a setting of the calling thread: it stays after the run.
  int threads = 0;
  uint64_t max_loop_trips = 0;  // 0: the library's bound
};

// A compiled execution plan (geopt's plan file) and its executor.
class GEOPT_API Plan {
 public:
  Plan();
  ~Plan();
  Plan(const Plan&);
  Plan& operator=(const Plan&);
  static Plan load(const std::string& path);
  // Writes it atomically; weights beside it (PATH.weights) when asked or above 1 GiB.
  // Returns what was written ("x.plan", or "x.plan (weights in x.plan.weights)").
  std::string save(const std::string& path, bool external_weights = false) const;
  // Runs it on the host (the plan executor: planned offsets, streams and events). Feeds
  // are read in place; outputs own their bytes.
  std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& feeds,
                                    const RunOptions& options = {}) const;
  // Its inputs' names, dtypes and dims (a plan of gears: the first gear's).
  struct Binding {
    std::string name, dtype;
    std::vector<int64_t> shape;
  };
  std::vector<Binding> inputs() const;
  std::vector<Binding> outputs() const;
  // `geopt plan dump --json`: kernels, streams, events, tensors, memory (no weight bytes).
  std::string dump_json() const;
  // `geopt profile --json`: the simulated device profile (gear: of a plan of gears).
  std::string profile_json(int gear = 0) const;
  struct Impl;
  explicit Plan(std::shared_ptr<Impl> impl);

 private:
  std::shared_ptr<Impl> impl_;
};

// compile takes OptimizeOptions' fields but compile_stat and check.size_cap_mb (a plan is
// always checked unless check.enabled is false).
struct CompileOptions : OptimizeOptions {
  bool optimize = true;                      // false: lower the model as it is (--no-optimize)
  bool disable_reuse_memory = false;         // every tensor its own bytes
  std::vector<std::string> op_no_reuse_mem;  // node names or op types kept apart
  bool enable_single_stream = false;
  size_t max_streams = 4;
  // The order kernels are issued in: ATC's --topo_sorting_mode, "0" BFS, "1" DFS, "2"
  // reverse DFS, "3" stable reverse DFS (or those names); empty: geopt's memory-aware order.
  std::string topo_sorting_mode;
  bool external_weights = false;  // for `output`
  // ATC's dynamic-shape options (at most one): gears or ranges.
  std::string dynamic_batch_size, dynamic_image_size, dynamic_dims, input_shape_range;
  // Knowledge banks geopt tune wrote (a folder, or a bank file; docs/TUNING.md): the
  // kernels take the tactics filed for their op signatures (op bank), and the model the
  // strategy settings filed for it (model bank). Nothing is measured.
  std::string op_bank_path, mdl_bank_path;
};

struct CompileResult {
  Plan plan;
  bool check_ok = true;
  std::string report_json;            // what `geopt compile --json` prints
  std::string report_text;            // what `geopt compile` prints
  std::string error;                  // when !check_ok: the CLI's error line
  std::vector<std::string> warnings;  // also logged (spdlog, warn)
  Summary summary;
};

// Optimizes `model`, plans memory and streams, lowers it to a plan and checks the plan
// on the plan executor against the model as given.
GEOPT_API CompileResult compile(const ModelSource& model, const CompileOptions& options = {});

// ---------------------------------------------------------------- tune
// Progress of long work: `done` of `total` steps of `stage` (called from the working thread).
using Progress = std::function<void(std::string_view stage, size_t done, size_t total)>;

// geopt tune, as Huawei's AOE: measures on this machine and files the results in a
// knowledge bank that later compiles read (docs/TUNING.md).
struct TuneOptions {
  CompileOptions compile;  // how the model is compiled (its output and check are not used)
  // 1: subgraph tuning (strategy settings per model: rule tags, streams), filed in the
  // model bank; 2: operator tuning (host tactics per op signature), in the op bank.
  int job_type = 2;
  std::string bank_path;      // a folder (AOE's custom bank: FOLDER/<soc>/op_bank.json) or a .json file
  std::string tune_ops_file;  // AOE's: {"tune_ops_name": [...], "tune_ops_type": [...]}, job 2 only
  bool reload = false;        // resume: what the bank already holds for this machine is not measured again
  double time_budget_s = 0;   // 0: none; what is not reached in time is left as it was
  std::string tune_target = "host";  // job 1: "host" (the plan measured) or "simulated" (the cost model)
  bool tune_threads = false;         // job 2: also fewer threads per kernel (fragile on shared cores)
  uint64_t seed = 0;                 // of the random inputs the plans are timed on
  Progress progress;
};

struct TuneResult {
  std::string bank_file;    // the bank written
  std::string report_json;  // what `geopt tune --json` prints
  std::string report_text;
};

GEOPT_API TuneResult tune(const ModelSource& model, const TuneOptions& options);

// ---------------------------------------------------------------- explain
struct ExplainOptions {
  TargetOptions target;
  RuleOptions rules;
  std::string input_shape;
  std::string input_shape_range;  // conditions on symbolic dims proven over these ranges
  std::string rule;               // only this rule
  std::string node;               // what happened to this node
  bool anywhere = false;          // sites at any op of a pattern, not only its root
  bool all = false;               // report_text: every rule's report, not the one-screen summary
  bool verbose = false;           // report_text: every site
};

struct ExplainResult {
  // `geopt explain --json`: per rule its sites (node, matched, reason), what extraction
  // kept of its rewrites and why not; with `node`, that node's story.
  std::string report_json;
  std::string report_text;  // what `geopt explain` prints
};

// Why rules did or did not fire on `model`, and why a match was or was not kept.
GEOPT_API ExplainResult explain(const ModelSource& model, const ExplainOptions& options = {});

// ---------------------------------------------------------------- quantize

struct QuantizeOptions {
  std::string calibration;                // a folder of samples: one folder per sample, NAME.npy per input
  std::string method = "percentile";      // percentile, auto (per tensor), minmax or entropy
  std::string activation_type = "uint8";  // uint8 (asymmetric) or int8 (symmetric)
  double percentile = 99.999;
  bool bias_correction = true;            // move each quantized layer's bias by its mean shift
  double holdout = 0;                     // share of the samples held out to judge (0 to 0.5)
  std::vector<std::string> skip_layers;   // node names kept in float
  bool quantize_image_convs = false;      // also a conv reading a model input of <= 4 channels
  bool sensitivity = false;               // each layer's error when it alone is quantized
  std::optional<double> accuracy_target;  // keep sensitive layers in float until the cosine reaches it
  std::string input_shape;
  std::string output;  // written when given
  Progress progress;
};

struct QuantizeResult {
  OptimizedModel model;     // the quantized model, QDQ form
  std::string report_json;  // what `geopt quantize --json` prints
  std::string report_text;
};

// INT8 post-training quantization: calibrates on the samples, writes ONNX's QDQ form.
GEOPT_API QuantizeResult quantize(const ModelSource& model, const QuantizeOptions& options);

// ---------------------------------------------------------------- rules
struct RulesReport {
  bool ok = true;  // check: no errors; test: every test passed (with soundness: every rule checked and sound)
  std::string report_json;  // what `geopt rules check|test|match --json` prints
  std::string report_text;
};

// Parses and checks rule files or folders (empty: the shipped rules). Errors are
// reported, not thrown: report_json lists them with file, line, col and message.
GEOPT_API RulesReport rules_check(const std::vector<std::string>& paths = {});

struct RuleTestOptions {
  RuleOptions rules;  // whose tests run (paths; empty: the shipped rules)
  TargetOptions target;
  bool soundness = false;  // also each rule at other batch sizes and random inputs
};
// Runs the rules' test blocks through the optimize pipeline.
GEOPT_API RulesReport rules_test(const RuleTestOptions& options = {});

// Where each rule matches in `model` (report_json: rule -> node names).
GEOPT_API RulesReport rules_match(const ModelSource& model, const RuleOptions& rules = {});

}  // namespace geopt::api
