#include "optimize_command.h"
#include "json_output.h"

#include <spdlog/spdlog.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ascend/optimizer.h"
#include "check_input_option.h"
#include "check_tolerance_option.h"
#include "eval/compare.h"
#include "eval/numerical_check.h"
#include "input_shape_option.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "profile_options.h"
#include "report_text.h"
#include "rule_options.h"
#include "saturation_limit_options.h"
#include "stage_dump.h"
#include "util/atomic_file.h"
#include "util/error.h"

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

struct CheckResult {
  bool ran = false, ok = true;
  double max_abs = 0;
  std::string worst;
  size_t outputs = 0;
  std::string sizes;  // the open dims' sizes the check drew
  std::string note;
  std::vector<OutputError> per_output;
};

CheckResult check(const Model& original, const Model& optimized, const OptimizeCliOptions& o,
                  const Tolerance& tolerance, int64_t model_bytes) {
  CheckResult c;
  if (o.no_check) {
    c.note = "off (--no-check)";
    return c;
  }
  if (model_bytes > o.check_size_cap_mb << 20) {
    c.note = "skipped: the model is over " + std::to_string(o.check_size_cap_mb) + " MB (--check-size-cap)";
    return c;
  }
  NumericalCheck n = check_same_outputs(original, optimized, tolerance, 0, o.check_inputs.read(original));
  c.ran = true;
  c.outputs = n.outputs;
  c.sizes = n.sizes;
  c.max_abs = n.diff.error();
  c.ok = n.diff.within();
  c.worst = n.diff.worst;
  c.per_output = n.diff.per_output;
  return c;
}

void write_compile_stat(const std::string& path, const ascend::OptimizeResult& r) {
  nlohmann::ordered_json passes = nlohmann::ordered_json::object();
  for (const auto& [name, s] : r.saturation.per_rule) {
    auto sel = r.selected.find(name);
    passes[name] = {{"match_times", std::to_string(s.matched)},
                    {"effect_times", std::to_string(sel == r.selected.end() ? 0 : sel->second)}};
  }
  nlohmann::ordered_json j;
  j["session_and_graph_id_0_0"]["graph_fusion"] = passes;
  j["geopt"] = {{"fusion_rate", r.fusion_rate}, {"unfused", r.unfused}};  // beyond GE's format: what is left
  write_file_atomically(path, json_text(j) + "\n");
}

// "  (banned in iteration 3, back in 9)": the backoff scheduler dropped its matches.
std::string ban_note(const dsl::RuleRunStats& s, int iterations) {
  std::string note;
  for (const auto& [in, back] : s.bans)
    note += (note.empty() ? "  (" : "; ") + std::string("banned in iteration ") + std::to_string(in) +
            (back <= iterations ? ", back in " + std::to_string(back) : ", not back before the run stopped");
  return note.empty() ? note : note + ")";
}

int run(const OptimizeCliOptions& o) {
  auto rules = o.rules.load();
  ascend::HardwareProfile profile = o.profile.load();
  auto phase = std::chrono::steady_clock::now();
  auto ms_since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
  };
  Model input = import_onnx(o.model, o.input_shape.import_options());
  const double import_ms = ms_since(phase);
  if (!o.dump_dir.empty()) dump_stage(o.dump_dir, "1_import", input);
  std::error_code ec;
  const int64_t bytes = static_cast<int64_t>(std::filesystem::file_size(o.model, ec));
  const ascend::OptimizeOptions opts = o.profile.optimize_options(profile, o.limits);
  ascend::OptimizeResult r = ascend::optimize(input, *rules, profile, opts);
  // Layouts are assigned by the same extraction, so this stage is also the layout stage.
  if (!o.dump_dir.empty()) dump_stage(o.dump_dir, "2_saturation_extraction_layout", r.model);
  // The check runs the model as given.
  phase = std::chrono::steady_clock::now();
  const Tolerance tolerance =
      o.tolerance.resolve(opts.cost.precision, opts.write_precision, quantizes_activations(input));
  CheckResult c = check(input, r.model, o, tolerance, bytes);
  const double check_ms = ms_since(phase);
  const bool check_ok = !c.ran || c.ok;
  phase = std::chrono::steady_clock::now();
  if (check_ok && !o.output.empty()) export_onnx(r.model, o.output);
  const double write_ms = ms_since(phase);
  if (!o.compile_stat.empty()) write_compile_stat(o.compile_stat, r);

  const double speedup = r.after.latency_us > 0 ? r.before.latency_us / r.after.latency_us : 0;
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["soc_version"] = profile.soc_version;
    j["precision_mode"] = o.profile.precision;
    j["saturation"] = {{"stop", dsl::stop_reason_name(r.saturation.stop)},
                       {"iterations", r.saturation.iterations},
                       {"enodes", r.enodes},
                       {"eclasses", r.eclasses}};
    j["extraction"] = {
        {"method", r.extraction_method}, {"optimal", r.extraction_optimal}, {"steps", r.extraction_steps}};
    auto rules_j = nlohmann::ordered_json::object();
    for (const auto& [name, s] : r.saturation.per_rule) {
      auto sel = r.selected.find(name);
      auto bans = nlohmann::ordered_json::array();
      for (const auto& [in, back] : s.bans) bans.push_back({{"banned_in", in}, {"back_in", back}});
      rules_j[name] = {{"matched", s.matched},
                       {"applied", s.applied},
                       {"selected", sel == r.selected.end() ? 0 : sel->second},
                       {"banned", s.banned},
                       {"bans", bans},
                       {"refused", s.refused},
                       {"search_ms", s.search_ms},
                       {"apply_ms", s.apply_ms}};
      if (!s.refusal.empty()) rules_j[name]["refusal"] = s.refusal;
    }
    j["rules"] = rules_j;
    j["nodes"] = {{"before", r.nodes_before}, {"after", r.nodes_after}};
    j["kernels"] = {{"before", r.before.kernels}, {"after", r.after.kernels}};
    j["body_kernels"] = {{"before", r.before.body_kernels}, {"after", r.after.body_kernels}};
    j["latency_us"] = {{"before", r.before.latency_us}, {"after", r.after.latency_us}};
    j["hbm_bytes"] = {{"before", r.before.hbm_bytes}, {"after", r.after.hbm_bytes}};
    j["check"] = c.ran ? nlohmann::ordered_json{{"max_abs_error", c.max_abs}, {"atol", tolerance.atol},
                                                {"rtol", tolerance.rtol},     {"worst", c.worst},
                                                {"sizes", c.sizes},           {"ok", check_ok}}
                       : nlohmann::ordered_json{{"skipped", c.note}};
    j["precision"] = precision_json(r.precision);
    if (c.ran) j["check"]["outputs"] = output_errors_json(c.per_output);
    if (c.ran && tolerance.min_cosine > 0) j["check"]["min_cosine"] = tolerance.min_cosine;
    j["fusion_rate"] = r.fusion_rate;
    j["unfused"] = r.unfused;
    for (const auto& [k, v] : r.model.metadata)
      if (k == "geopt.provenance") {  // geopt's own record; a model's own text under that key is not reported
        auto provenance = nlohmann::ordered_json::parse(v, nullptr, false);
        if (!provenance.is_discarded()) j["provenance"] = std::move(provenance);
      }
    j["time_ms"] = {{"import", import_ms},        {"egraph", r.egraph_ms}, {"saturation", r.saturate_ms},
                    {"extraction", r.extract_ms}, {"check", check_ms},     {"write", write_ms}};
    std::cout << json_text(j) << "\n";
  } else {
    std::printf("model            %s\n", o.model.c_str());
    std::printf("profile          %s (%s)\n", profile.soc_version.c_str(), o.profile.precision.c_str());
    std::printf("saturation       stopped: %s after %d iteration(s); %zu e-nodes in %zu e-classes\n",
                dsl::stop_reason_name(r.saturation.stop), r.saturation.iterations, r.enodes, r.eclasses);
    std::printf("extraction       %s%s\n", r.extraction_method.c_str(),
                r.extraction_optimal ? " (optimal)" : "");
    std::printf("rules            %-30s %8s %8s\n", "", "matched", "selected");
    for (const auto& [name, s] : r.saturation.per_rule) {
      if (s.matched == 0 && !r.selected.count(name) && !s.refused) continue;
      auto sel = r.selected.find(name);
      std::string note = ban_note(s, r.saturation.iterations);
      if (s.refused) note += "  (" + std::to_string(s.refused) + " rewrite(s) refused: see the warning)";
      std::printf("                 %-30s %8zu %8zu%s\n", name.c_str(), s.matched,
                  sel == r.selected.end() ? 0 : sel->second, note.c_str());
    }
    std::printf("nodes            %zu -> %zu\n", r.nodes_before, r.nodes_after);
    std::printf("kernels          %s\n", kernel_counts(r.before, r.after).c_str());
    std::printf("modeled latency  %.1f us -> %.1f us (%.2fx)\n", r.before.latency_us, r.after.latency_us,
                speedup);
    std::printf("HBM traffic      %.2f MiB -> %.2f MiB\n", r.before.hbm_bytes / (1 << 20),
                r.after.hbm_bytes / (1 << 20));
    std::vector<std::pair<std::string, size_t>> left(r.unfused.begin(), r.unfused.end());
    std::stable_sort(left.begin(), left.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    std::string left_text;
    for (size_t i = 0; i < left.size() && i < 6; ++i)
      left_text += (left_text.empty() ? "" : ", ") + left[i].first + " " + std::to_string(left[i].second);
    std::printf("fusion rate      %.0f%% of the input's kernels; left unfused: %s\n", 100 * r.fusion_rate,
                left_text.empty() ? "none" : left_text.c_str());
    if (!left_text.empty())
      std::printf("                 why a rule did not fire on them: geopt explain %s\n", o.model.c_str());
    if (opts.write_precision) std::printf("precision        %s\n", precision_text(r.precision).c_str());
    if (c.ran)
      std::printf(
          "check            max abs error %.3g over %zu output(s) on random inputs%s (tolerance %s): %s%s\n",
          c.max_abs, c.outputs, c.sizes.empty() ? "" : (" at " + c.sizes).c_str(),
          tolerance_text(tolerance, "original").c_str(), check_ok ? "ok" : "FAILED",
          check_ok ? "" : ("; worst at " + c.worst).c_str());
    else
      std::printf("check            %s\n", c.note.c_str());
    if (c.ran && opts.write_precision &&
        opts.cost.precision.mode != ascend::PrecisionMode::MustKeepOriginDtype)
      for (const OutputError& e : c.per_output)
        std::printf("                 %s\n", output_error_text(e).c_str());
    std::printf(
        "time             import %.1f ms, e-graph %.1f ms, saturation %.1f ms, extraction %.1f ms, check "
        "%.1f ms, write %.1f ms\n",
        import_ms, r.egraph_ms, r.saturate_ms, r.extract_ms, check_ms, write_ms);
    if (!o.output.empty() && check_ok) std::printf("written          %s\n", o.output.c_str());
  }
  if (!check_ok) {
    std::fprintf(stderr,
                 "geopt: error: the optimized model differs from the original beyond %s (worst at %s); "
                 "nothing written\n",
                 tolerance_text(tolerance, "original").c_str(), c.worst.c_str());
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
