#include "compile_command.h"
#include "json_output.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include <spdlog/spdlog.h>

#include "ascend/compile.h"
#include "ascend/dynamic_compile.h"
#include "ascend/plan_file.h"
#include "check_input_option.h"
#include "check_tolerance_option.h"
#include "eval/numerical_check.h"
#include "input_shape_option.h"
#include "onnx/import.h"
#include "profile_options.h"
#include "report_text.h"
#include "rule_options.h"
#include "saturation_limit_options.h"
#include "stage_dump.h"
#include "util/error.h"

namespace geopt::cli {
namespace {

struct CompileOptions {
  std::string model, output;
  RuleOptions rules;
  ProfileOptions profile;
  InputShapeOption input_shape;
  CheckInputOption check_inputs;
  bool no_optimize = false;
  bool disable_reuse = false;
  std::vector<std::string> no_reuse;  // OP_NO_REUSE_MEM: "name,OpType,..."
  bool single_stream = false;
  size_t max_streams = 4;
  bool no_check = false;
  CheckToleranceOption tolerance;
  bool json = false;
  std::string dump_dir;
  bool external_weights = false;
  SaturationLimitOptions limits;
  // ATC's dynamic-shape options (docs/LOWERING.md, "Dynamic shapes")
  std::string dynamic_batch_size, dynamic_image_size, dynamic_dims, input_shape_range;
};

std::string human(double bytes) {
  char text[32];
  if (bytes >= (1 << 20))
    std::snprintf(text, sizeof text, "%.2f MiB", bytes / (1 << 20));
  else
    std::snprintf(text, sizeof text, "%.1f KiB", bytes / 1024);
  return text;
}

std::string check_text(const ascend::CompileResult& c, const Tolerance& tolerance) {
  if (!c.checked) return "off (--no-check)";
  char text[300];
  std::snprintf(text, sizeof text,
                "plan executor vs reference on the original: max abs error %.3g over %zu output(s), in-order "
                "and adversarial schedules (tolerance %s): %s",
                c.max_abs, c.outputs, tolerance_text(tolerance, "reference").c_str(),
                c.check_ok ? "ok" : "FAILED");
  std::string note = text;
  if (!c.check_ok) note += "; worst at " + c.check_worst;
  return note;
}

nlohmann::ordered_json report_json(const ascend::CompileResult& c, const ascend::CompileOptions& co) {
  const Tolerance tolerance = *co.check_tolerance;
  nlohmann::ordered_json j;
  const auto& memory = c.memory;
  const auto& streams = c.streams;
  const auto& sim = c.profile;
  if (c.optimized) {
    const auto& r = *c.optimized;
    j["kernels"] = {{"before", r.before.kernels}, {"after", r.after.kernels}};
    j["body_kernels"] = {{"before", r.before.body_kernels}, {"after", r.after.body_kernels}};
    j["latency_us"] = {{"before", r.before.latency_us}, {"after", r.after.latency_us}};
    j["fusion_rate"] = r.fusion_rate;
    j["precision"] = precision_json(r.precision);
    j["saturation"] = {{"stop", dsl::stop_reason_name(r.saturation.stop)},
                       {"iterations", r.saturation.iterations}};
    auto fused = nlohmann::ordered_json::object();
    for (const auto& [name, n] : r.fused) fused[name] = n;
    j["fused"] = fused;
    auto rewritten = nlohmann::ordered_json::object();
    for (const auto& [name, n] : r.rewritten) rewritten[name] = n;
    j["rewritten"] = rewritten;
  }
  j["memory"] = {{"pool_bytes", memory.pool_bytes},
                 {"load_bytes", memory.load_bytes},
                 {"no_reuse_bytes", memory.no_reuse_bytes},
                 {"weight_bytes", memory.weight_bytes},
                 {"reuse_rate", memory.reuse_rate()},
                 {"strategy", memory.strategy},
                 {"strategies", memory.strategy_pool_bytes},
                 {"views", memory.views},
                 {"in_place", memory.in_place},
                 {"kept_apart", memory.kept_apart},
                 {"no_reuse_unmatched", memory.no_reuse_unmatched}};
  j["streams"] = {{"count", streams.stream_count},
                  {"events", streams.events.size()},
                  {"cross_stream_dependencies", streams.cross_stream_dependencies},
                  {"kept_one_stream", !c.stream_note.empty()}};
  j["profile"] = {{"latency_us", sim.latency_us},
                  {"one_stream_us", sim.one_stream_us},
                  {"critical_path_us", sim.critical_path_us},
                  {"fusion_rate", sim.fusion_rate},
                  {"memory_reuse_rate", sim.memory_reuse_rate},
                  {"layout_transform_share", sim.layout_transform_share},
                  {"cube_utilization", sim.cube_utilization},
                  {"vector_utilization", sim.vector_utilization}};
  j["check"] = !c.checked
                   ? nlohmann::ordered_json{{"skipped", check_text(c, tolerance)}}
                   : nlohmann::ordered_json{
                         {"max_abs_error", c.max_abs}, {"atol", tolerance.atol},
                         {"rtol", tolerance.rtol},     {"worst", c.check_worst},
                         {"ok", c.check_ok},           {"outputs", output_errors_json(c.output_errors)}};
  j["time_ms"] = {{"optimize", c.optimize_ms}, {"memory_plan", c.memory_ms}, {"lower", c.lower_ms}};
  return j;
}

void print_report(const ascend::CompileResult& c, const ascend::CompileOptions& co) {
  const auto& memory = c.memory;
  const auto& streams = c.streams;
  const auto& sim = c.profile;
  if (c.optimized) {
    const auto& r = *c.optimized;
    auto listed = [](const std::map<std::string, size_t>& rules) {
      std::string text;
      for (const auto& [name, n] : rules)
        text += (text.empty() ? "" : ", ") + name + " x" + std::to_string(n);
      return text.empty() ? std::string("nothing") : text;
    };
    if (r.saturation.stop != dsl::StopReason::Saturated)
      std::printf("saturation       stopped at its %s after %d iteration(s)\n",
                  dsl::stop_reason_name(r.saturation.stop), r.saturation.iterations);
    std::printf("fused            %s\n", listed(r.fused).c_str());
    std::printf("rewritten        %s\n", listed(r.rewritten).c_str());
    std::printf("kernels          %s (fusion rate %.0f%%)\n", kernel_counts(r.before, r.after).c_str(),
                100 * r.fusion_rate);
    std::printf("modeled latency  %.1f us -> %.1f us (one stream)\n", r.before.latency_us,
                r.after.latency_us);
    if (co.optimize.write_precision)
      std::printf("precision        %s\n", precision_text(r.precision).c_str());
  }
  std::printf("memory           pool %s (LOAD %s, %.3fx); without reuse %s; reuse rate %.0f%%\n",
              human(memory.pool_bytes).c_str(), human(memory.load_bytes).c_str(),
              memory.load_bytes ? double(memory.pool_bytes) / double(memory.load_bytes) : 1.0,
              human(memory.no_reuse_bytes).c_str(), 100 * memory.reuse_rate());
  std::printf("                 strategy %s; %zu views, %zu in place; weights %s\n", memory.strategy.c_str(),
              memory.views, memory.in_place, human(memory.weight_bytes).c_str());
  if (!co.memory.no_reuse.empty())
    std::printf("                 OP_NO_REUSE_MEM: %zu buffer(s) kept apart\n", memory.kept_apart);
  std::printf("streams          %zu stream(s), %zu event(s) for %zu cross-stream dependencies%s\n",
              streams.stream_count, streams.events.size(), streams.cross_stream_dependencies,
              c.stream_note.c_str());
  std::printf("simulated        %.1f us on %zu stream(s) (one stream %.1f us, critical path %.1f us)\n",
              sim.latency_us, streams.stream_count, sim.one_stream_us, sim.critical_path_us);
  std::printf(
      "metrics          fusion rate %.0f%%, memory reuse %.0f%%, layout transforms %.1f%% of kernel time, "
      "Cube %.1f%%, Vector %.1f%%\n",
      100 * sim.fusion_rate, 100 * sim.memory_reuse_rate, 100 * sim.layout_transform_share,
      100 * sim.cube_utilization, 100 * sim.vector_utilization);
  std::printf("check            %s\n", check_text(c, *co.check_tolerance).c_str());
  if (c.checked && co.optimize.write_precision &&
      co.optimize.cost.precision.mode != ascend::PrecisionMode::MustKeepOriginDtype)
    for (const OutputError& e : c.output_errors)
      std::printf("                 %s\n", output_error_text(e).c_str());
  std::printf("time             optimize %.1f ms, lower %.1f ms (memory plan %.1f ms)\n", c.optimize_ms,
              c.lower_ms, c.memory_ms);
}

// Writes the plan when every check passed; returns what was written (empty: nothing).
std::string write_if_checked(plan::Plan& plan, bool ok, const CompileOptions& o) {
  if (!ok || o.output.empty()) return "";
  std::string written = o.output;
  auto side = ascend::write_plan(
      plan, o.output,
      {.inline_weight_limit = o.external_weights ? 0 : ascend::PlanWriteOptions{}.inline_weight_limit});
  if (!side.empty()) written += " (weights in " + side.string() + ")";
  return written;
}

int check_failed(const ascend::CompileResult& c, const ascend::CompileOptions& co, const std::string& where) {
  const Tolerance tolerance = *co.check_tolerance;
  std::fprintf(stderr,
               "geopt: error: %sthe plan's outputs differ from the original model's beyond %s (worst at %s); "
               "nothing written\n",
               where.c_str(), tolerance_text(tolerance, "reference").c_str(), c.check_worst.c_str());
  return 1;
}

// The dynamic-shape option given (ATC's: at most one of them).
struct DynamicChoice {
  std::optional<ascend::GearKind> gears;
  std::string gear_text;
  bool range = false;
};

DynamicChoice dynamic_choice(const CompileOptions& o) {
  DynamicChoice d;
  int given = 0;
  if (!o.dynamic_batch_size.empty())
    ++given, d.gears = ascend::GearKind::batch_size, d.gear_text = o.dynamic_batch_size;
  if (!o.dynamic_image_size.empty())
    ++given, d.gears = ascend::GearKind::image_size, d.gear_text = o.dynamic_image_size;
  if (!o.dynamic_dims.empty()) ++given, d.gears = ascend::GearKind::dims, d.gear_text = o.dynamic_dims;
  if (!o.input_shape_range.empty()) ++given, d.range = true;
  if (given > 1)
    throw UsageError(
        "--dynamic_batch_size, --dynamic_image_size, --dynamic_dims and --input_shape_range are exclusive: "
        "give one");
  if (d.range && !o.input_shape.text.empty())
    throw UsageError("--input_shape_range gives every dynamic input's dims; leave out --input_shape");
  return d;
}

int run_gears(const CompileOptions& o, const Model& given, const ascend::CompileOptions& co,
              const ascend::HardwareProfile& profile, ascend::GearKind kind, const std::string& text) {
  const std::vector<ascend::InputShapes> gears = ascend::parse_gears(given, o.input_shape.text, kind, text);
  ascend::GearedCompileResult g = ascend::compile_gears(given, gears, profile, co);
  bool ok = true;
  for (const auto& c : g.gears) ok = ok && c.check_ok;
  const std::string written = write_if_checked(g.plan, ok, o);
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["soc_version"] = profile.soc_version;
    auto list = nlohmann::ordered_json::array();
    for (size_t i = 0; i < g.gears.size(); ++i) {
      nlohmann::ordered_json one;
      one["gear"] = i;
      one["input_shape"] = g.plan.gears(static_cast<int>(i)).name();
      one.update(report_json(g.gears[i], co));
      list.push_back(one);
    }
    j["gears"] = list;
    j["weights"] = {{"shared_bytes", g.plan.weight_bytes()}, {"gears_summed_bytes", g.gear_weight_bytes}};
    if (!written.empty()) j["written"] = written;
    std::cout << json_text(j) << "\n";
  } else {
    std::printf("model            %s\n", o.model.c_str());
    std::printf("profile          %s (%s)\n", profile.soc_version.c_str(), o.profile.precision.c_str());
    std::printf("gears            %zu, each optimized and planned at its own shapes\n", g.gears.size());
    for (size_t i = 0; i < g.gears.size(); ++i) {
      std::printf("\ngear %zu           %s\n", i, g.plan.gears(static_cast<int>(i)).name().c_str());
      print_report(g.gears[i], co);
    }
    std::printf("\nweights          %s, shared by the %zu gears (%s if each kept its own)\n",
                human(double(g.plan.weight_bytes())).c_str(), g.gears.size(),
                human(double(g.gear_weight_bytes)).c_str());
    if (!written.empty()) std::printf("written          %s\n", written.c_str());
  }
  for (size_t i = 0; i < g.gears.size(); ++i)
    if (!g.gears[i].check_ok)
      return check_failed(g.gears[i], co, "gear " + g.plan.gears(static_cast<int>(i)).name() + ": ");
  return 0;
}

int run_range(const CompileOptions& o, Model given, const ascend::CompileOptions& co,
              const ascend::HardwareProfile& profile) {
  ascend::InputRanges ranges = ascend::parse_input_shape_range(given, o.input_shape_range);
  // Dims a range fixes (MIN == MAX) are fixed at import, so the rules see them static.
  std::map<std::string, std::vector<int64_t>> fixed;
  bool fixes = false;
  for (const Value* v : given.graph->inputs()) {
    auto it = ranges.find(v->name());
    if (v->initializer || it == ranges.end()) continue;
    for (size_t a = 0; a < it->second.size(); ++a) {
      const bool one = it->second[a].min == it->second[a].max;
      fixed[v->name()].push_back(one ? it->second[a].min : -1);
      fixes = fixes || (one && !(*v->type.shape)[a].is_static());
    }
  }
  if (fixes) given = import_onnx(o.model, {.input_shapes = fixed});
  ascend::RangeCompileResult rc = ascend::compile_range(given, ranges, profile, co);
  ascend::CompileResult& c = rc.compiled;
  const std::string written = write_if_checked(c.plan, c.check_ok, o);
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["soc_version"] = profile.soc_version;
    j["input_shape_range"] = ascend::input_ranges_text(given, ranges);
    j.update(report_json(c, co));
    auto at = nlohmann::ordered_json::array();
    for (size_t i = 0; i < rc.checked_at.size(); ++i)
      at.push_back({{"input_shape", ascend::input_shapes_text(given, rc.checked_at[i])},
                    {"load_bytes", rc.load_at[i]}});
    j["sizes"] = at;
    if (!written.empty()) j["written"] = written;
    std::cout << json_text(j) << "\n";
  } else {
    std::printf("model            %s\n", o.model.c_str());
    std::printf("profile          %s (%s)\n", profile.soc_version.c_str(), o.profile.precision.c_str());
    std::printf("range            %s: one plan, planned and priced at the upper bound\n",
                ascend::input_ranges_text(given, ranges).c_str());
    print_report(c, co);
    for (size_t i = 0; i < rc.checked_at.size(); ++i)
      std::printf("at               %s: LOAD %s, the pool %.3fx of it%s\n",
                  ascend::input_shapes_text(given, rc.checked_at[i]).c_str(),
                  human(double(rc.load_at[i])).c_str(),
                  rc.load_at[i] ? double(c.memory.pool_bytes) / double(rc.load_at[i]) : 1.0,
                  c.checked ? ", checked" : "");
    if (!written.empty()) std::printf("written          %s\n", written.c_str());
  }
  return c.check_ok ? 0 : check_failed(c, co, "");
}

int run(const CompileOptions& o) {
  // A plan written over its own model would destroy the model (and its external data's
  // anchor): refused before anything is read.
  if (!o.output.empty()) {
    std::error_code ec;
    namespace fs = std::filesystem;
    if (fs::equivalent(o.model, o.output, ec) ||
        fs::path(o.output).lexically_normal() == fs::path(o.model).lexically_normal())
      throw Error("-o " + o.output + " is the model itself; write the plan elsewhere (e.g. " +
                  fs::path(o.model).replace_extension(".plan").string() + ")");
  }
  const DynamicChoice dynamic = dynamic_choice(o);
  ascend::HardwareProfile profile = o.profile.load();
  Model given = import_onnx(o.model, o.input_shape.import_options());
  if (!o.dump_dir.empty()) dump_stage(o.dump_dir, "1_import", given);
  std::unique_ptr<dsl::RuleSet> rules;
  if (!o.no_optimize) rules = o.rules.load();
  ascend::CompileOptions co;
  co.rules = rules.get();
  co.optimize.cost = o.profile.cost_options(profile);
  o.limits.apply_to(co.optimize.limits);
  co.optimize.write_precision = o.profile.computes_precision();
  co.memory.reuse = !o.disable_reuse;
  for (const auto& name : o.no_reuse)
    if (!name.empty()) co.memory.no_reuse.insert(name);
  co.single_stream = o.single_stream;
  co.max_streams = o.max_streams;
  co.check = !o.no_check;
  co.check_tolerance = o.tolerance.resolve(co.optimize.cost.precision, co.optimize.write_precision,
                                           quantizes_activations(given));
  co.check_inputs = o.check_inputs.read(given);
  if (!o.dump_dir.empty())
    co.dump = [&](const std::string& stage, Model& m,
                  const std::unordered_map<const Node*, std::string>& notes) {
      dump_stage(o.dump_dir, stage, m, notes);
    };
  if (dynamic.gears) return run_gears(o, given, co, profile, *dynamic.gears, dynamic.gear_text);
  if (dynamic.range) return run_range(o, std::move(given), co, profile);

  ascend::CompileResult c = ascend::compile(given, profile, co);
  // GE ignores names it does not find; a typo should not pass unseen.
  for (const auto& name : c.memory.no_reuse_unmatched)
    spdlog::warn(
        "OP_NO_REUSE_MEM: no kernel of the compiled graph is named or typed '{}' (plan dump lists them)",
        name);
  const std::string written = write_if_checked(c.plan, c.check_ok, o);
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["soc_version"] = profile.soc_version;
    j.update(report_json(c, co));
    std::cout << json_text(j) << "\n";
  } else {
    std::printf("model            %s\n", o.model.c_str());
    std::printf("profile          %s (%s)\n", profile.soc_version.c_str(), o.profile.precision.c_str());
    print_report(c, co);
    if (!written.empty()) std::printf("written          %s\n", written.c_str());
  }
  return c.check_ok ? 0 : check_failed(c, co, "");
}

}  // namespace

std::function<int()> add_compile_command(CLI::App& app) {
  auto o = std::make_shared<CompileOptions>();
  CLI::App* cmd = app.add_subcommand(
      "compile", "Optimize a model and compile it to an execution plan (memory, streams, events)");
  cmd->add_option("model", o->model, "ONNX model")->required();
  cmd->add_option("-o,--output", o->output, "Where to write the plan");
  o->rules.add_to(cmd);
  o->profile.add_to(cmd);
  o->input_shape.add_to(cmd);
  o->check_inputs.add_to(cmd);
  cmd->add_flag("--no-optimize", o->no_optimize, "Lower the model as it is, without the rules");
  cmd->add_flag("--disable_reuse_memory,--disable-reuse-memory", o->disable_reuse,
                "Give every tensor its own bytes (ATC's option, for debugging; =1 or =0)");
  cmd->add_option("--op_no_reuse_mem,--op-no-reuse-mem", o->no_reuse,
                  "Outputs of these nodes or op types (\"name,OpType,...\", as plan dump names them) keep "
                  "their own bytes; GE's OP_NO_REUSE_MEM, read from the environment when unset")
      ->delimiter(',')
      ->envname("OP_NO_REUSE_MEM");
  cmd->add_flag("--enable_single_stream,--enable-single-stream", o->single_stream,
                "Put every kernel on one stream (ATC's option; =true or =false)");
  cmd->add_option("--max-streams", o->max_streams, "Streams at most")
      ->check(CLI::Range(1, 64))
      ->capture_default_str();
  cmd->add_flag("--no-check", o->no_check, "Skip running the plan against the original");
  o->tolerance.add_to(cmd, "plan");
  o->limits.add_to(cmd);
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  cmd->add_flag("--external-weights", o->external_weights,
                "Write the weights to PLAN.weights beside the plan (automatic above 1 GiB: a protobuf "
                "message cannot exceed 2 GB)");
  cmd->add_option("--dynamic_batch_size,--dynamic-batch-size", o->dynamic_batch_size,
                  "Gears of batch size, ATC style: \"1,2,4,8\", with --input_shape marking the batch dims "
                  "-1; one plan holds every gear");
  cmd->add_option(
      "--dynamic_image_size,--dynamic-image-size", o->dynamic_image_size,
      "Gears of image size, ATC style: \"320,320;640,640\" (H,W), with --input_shape marking H and W -1");
  cmd->add_option("--dynamic_dims,--dynamic-dims", o->dynamic_dims,
                  "Gears of any dims, ATC style: \"32;64;128\" or \"20,20;40,40\", a value per -1 of "
                  "--input_shape (or per symbol behind them)");
  cmd->add_option("--input_shape_range,--input-shape-range", o->input_shape_range,
                  "Shape ranges, ATC style: \"input_ids:[1,1~512];attention_mask:[1,1~512]\": one plan for "
                  "every shape in range, memory planned at the upper bound");
  cmd->add_option("--dump-graph", o->dump_dir,
                  "Write each stage (import; static shapes; saturation + extraction + layout; lowering) as "
                  "ONNX, DOT and SVG");
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
