// geopt optimize as a library call: import, optimize, check, write, report.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "eval/compare.h"
#include "eval/numerical_check.h"
#include "guard.h"
#include "json_text.h"
#include "model_handles.h"
#include "onnx/export.h"
#include "report_text.h"
#include "settings.h"
#include "stage_dump.h"
#include "text_format.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace geopt::api {
namespace {

struct CheckResult {
  bool ran = false, ok = true;
  double max_abs = 0;
  std::string worst;
  size_t outputs = 0;
  std::string sizes;  // the open dims' sizes the check drew
  std::string note;
  std::vector<OutputError> per_output;
};

CheckResult check(const Model& original, const Model& optimized, const CheckOptions& o,
                  const Tolerance& tolerance, int64_t model_bytes) {
  CheckResult c;
  if (!o.enabled) {
    c.note = "off (--no-check)";
    return c;
  }
  if (model_bytes > o.size_cap_mb << 20) {
    c.note = "skipped: the model is over " + std::to_string(o.size_cap_mb) + " MB (--check-size-cap)";
    return c;
  }
  NumericalCheck n =
      check_same_outputs(ascend::op_registry(), original, optimized, tolerance, 0, check_inputs(o, original));
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

// Everything one optimize run measured, for its two reports.
struct Run {
  std::string model;
  const ascend::HardwareProfile* profile;
  std::string precision;
  ascend::OptimizeOptions opts;
  const ascend::OptimizeResult* r;
  CheckResult c;
  Tolerance tolerance;
  double import_ms = 0, check_ms = 0, write_ms = 0;
  std::string written;
};

nlohmann::ordered_json rules_json(const ascend::OptimizeResult& r) {
  auto rules = nlohmann::ordered_json::object();
  for (const auto& [name, s] : r.saturation.per_rule) {
    auto sel = r.selected.find(name);
    auto bans = nlohmann::ordered_json::array();
    for (const auto& [in, back] : s.bans) bans.push_back({{"banned_in", in}, {"back_in", back}});
    rules[name] = {{"matched", s.matched},
                   {"applied", s.applied},
                   {"selected", sel == r.selected.end() ? 0 : sel->second},
                   {"banned", s.banned},
                   {"bans", bans},
                   {"refused", s.refused},
                   {"search_ms", s.search_ms},
                   {"apply_ms", s.apply_ms}};
    if (!s.refusal.empty()) rules[name]["refusal"] = s.refusal;
  }
  return rules;
}

std::string report_json(const Run& run) {
  const ascend::OptimizeResult& r = *run.r;
  const CheckResult& c = run.c;
  const bool check_ok = !c.ran || c.ok;
  nlohmann::ordered_json j;
  j["model"] = run.model;
  j["soc_version"] = run.profile->soc_version;
  j["profile_file"] = run.profile->source;
  j["precision_mode"] = run.precision;
  j["saturation"] = {{"stop", dsl::stop_reason_name(r.saturation.stop)},
                     {"iterations", r.saturation.iterations},
                     {"enodes", r.enodes},
                     {"eclasses", r.eclasses}};
  j["extraction"] = {
      {"method", r.extraction_method}, {"optimal", r.extraction_optimal}, {"steps", r.extraction_steps}};
  j["rules"] = rules_json(r);
  j["nodes"] = {{"before", r.nodes_before}, {"after", r.nodes_after}};
  j["kernels"] = {{"before", r.before.kernels}, {"after", r.after.kernels}};
  j["body_kernels"] = {{"before", r.before.body_kernels}, {"after", r.after.body_kernels}};
  j["latency_us"] = {{"before", r.before.latency_us}, {"after", r.after.latency_us}};
  j["hbm_bytes"] = {{"before", r.before.hbm_bytes}, {"after", r.after.hbm_bytes}};
  j["check"] = c.ran ? nlohmann::ordered_json{{"max_abs_error", c.max_abs}, {"atol", run.tolerance.atol},
                                              {"rtol", run.tolerance.rtol}, {"worst", c.worst},
                                              {"sizes", c.sizes},           {"ok", check_ok}}
                     : nlohmann::ordered_json{{"skipped", c.note}};
  j["precision"] = precision_json(r.precision);
  if (c.ran) j["check"]["outputs"] = output_errors_json(c.per_output);
  if (c.ran && !run.tolerance.basis.empty()) j["check"]["tolerance_basis"] = run.tolerance.basis;
  if (c.ran && run.tolerance.min_cosine > 0) j["check"]["min_cosine"] = run.tolerance.min_cosine;
  j["fusion_rate"] = r.fusion_rate;
  j["unfused"] = r.unfused;
  for (const auto& [k, v] : r.model.metadata)
    if (k == "geopt.provenance") {  // geopt's own record; a model's own text under that key is not reported
      auto provenance = nlohmann::ordered_json::parse(v, nullptr, false);
      if (!provenance.is_discarded()) j["provenance"] = std::move(provenance);
    }
  j["time_ms"] = {{"import", run.import_ms},    {"egraph", r.egraph_ms}, {"saturation", r.saturate_ms},
                  {"extraction", r.extract_ms}, {"check", run.check_ms}, {"write", run.write_ms}};
  if (!run.written.empty()) j["written"] = run.written;
  return json_text(j);
}

std::string rules_text(const ascend::OptimizeResult& r) {
  std::string t;
  appendf(t, "rules            %-30s %8s %8s\n", "", "matched", "selected");
  for (const auto& [name, s] : r.saturation.per_rule) {
    if (s.matched == 0 && !r.selected.count(name) && !s.refused) continue;
    auto sel = r.selected.find(name);
    std::string note = ban_note(s, r.saturation.iterations);
    if (s.refused) note += "  (" + std::to_string(s.refused) + " rewrite(s) refused: see the warning)";
    appendf(t, "                 %-30s %8zu %8zu%s\n", name.c_str(), s.matched,
            sel == r.selected.end() ? 0 : sel->second, note.c_str());
  }
  return t;
}

std::string report_text(const Run& run) {
  const ascend::OptimizeResult& r = *run.r;
  const CheckResult& c = run.c;
  const bool check_ok = !c.ran || c.ok;
  std::string t;
  appendf(t, "model            %s\n", run.model.c_str());
  appendf(t, "profile          %s (%s)\n", run.profile->soc_version.c_str(), run.precision.c_str());
  appendf(t, "saturation       stopped: %s after %d iteration(s); %zu e-nodes in %zu e-classes\n",
          dsl::stop_reason_name(r.saturation.stop), r.saturation.iterations, r.enodes, r.eclasses);
  appendf(t, "extraction       %s%s\n", r.extraction_method.c_str(),
          r.extraction_optimal ? " (optimal)" : "");
  t += rules_text(r);
  appendf(t, "nodes            %zu -> %zu\n", r.nodes_before, r.nodes_after);
  appendf(t, "kernels          %s\n", kernel_counts(r.before, r.after).c_str());
  const double speedup = r.after.latency_us > 0 ? r.before.latency_us / r.after.latency_us : 0;
  appendf(t, "modeled latency  %.1f us -> %.1f us (%.2fx)\n", r.before.latency_us, r.after.latency_us,
          speedup);
  appendf(t, "HBM traffic      %.2f MiB -> %.2f MiB\n", r.before.hbm_bytes / (1 << 20),
          r.after.hbm_bytes / (1 << 20));
  std::vector<std::pair<std::string, size_t>> left(r.unfused.begin(), r.unfused.end());
  std::stable_sort(left.begin(), left.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string left_text;
  for (size_t i = 0; i < left.size() && i < 6; ++i)
    left_text += (left_text.empty() ? "" : ", ") + left[i].first + " " + std::to_string(left[i].second);
  appendf(t, "fusion rate      %.0f%% of the input's kernels; left unfused: %s\n", 100 * r.fusion_rate,
          left_text.empty() ? "none" : left_text.c_str());
  if (!left_text.empty())
    appendf(t, "                 why a rule did not fire on them: geopt explain %s\n", run.model.c_str());
  if (run.opts.write_precision) appendf(t, "precision        %s\n", precision_text(r.precision).c_str());
  if (c.ran)
    appendf(
        t, "check            max abs error %.3g over %zu output(s) on random inputs%s (tolerance %s): %s%s\n",
        c.max_abs, c.outputs, c.sizes.empty() ? "" : (" at " + c.sizes).c_str(),
        tolerance_text(run.tolerance, "original").c_str(), check_ok ? "ok" : "FAILED",
        check_ok ? "" : ("; worst at " + c.worst).c_str());
  else
    appendf(t, "check            %s\n", c.note.c_str());
  if (c.ran && run.opts.write_precision &&
      run.opts.cost.precision.mode != ascend::PrecisionMode::MustKeepOriginDtype)
    for (const OutputError& e : c.per_output)
      appendf(t, "                 %s\n", output_error_text(e).c_str());
  appendf(t,
          "time             import %.1f ms, e-graph %.1f ms, saturation %.1f ms, extraction %.1f ms, check "
          "%.1f ms, write %.1f ms\n",
          run.import_ms, r.egraph_ms, r.saturate_ms, r.extract_ms, run.check_ms, run.write_ms);
  if (!run.written.empty()) appendf(t, "written          %s\n", run.written.c_str());
  return t;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

Summary summary_of(const ascend::OptimizeResult& r) {
  Summary s;
  s.kernels_before = r.before.kernels;
  s.kernels_after = r.after.kernels;
  s.latency_us_before = r.before.latency_us;
  s.latency_us_after = r.after.latency_us;
  s.fused = r.fused;
  return s;
}

OptimizeResult optimize(const ModelSource& source, const OptimizeOptions& o) {
  return guarded([&] {
    auto rules = load_rules(o.rules);
    const ascend::HardwareProfile profile = load_profile(o.target);
    Run run;
    run.model = source.name();
    run.profile = &profile;
    run.precision = o.target.precision_mode.value_or("force_fp16");
    auto phase = std::chrono::steady_clock::now();
    Model input = import_model(source, import_options(o.input_shape));
    run.import_ms = ms_since(phase);
    if (!o.dump_graph.empty()) dump_stage(o.dump_graph, "1_import", input);
    std::error_code ec;
    const int64_t bytes = source.path.empty()
                              ? static_cast<int64_t>(source.bytes.size())
                              : static_cast<int64_t>(std::filesystem::file_size(source.path, ec));
    run.opts = optimize_options(o.target, o.rules, profile, &input);
    ascend::OptimizeResult r = ascend::optimize(input, *rules, profile, run.opts);
    run.r = &r;
    // Layouts are assigned by the same extraction, so this stage is also the layout stage.
    if (!o.dump_graph.empty()) dump_stage(o.dump_graph, "2_saturation_extraction_layout", r.model);
    // The check runs the model as given.
    phase = std::chrono::steady_clock::now();
    run.tolerance = check_tolerance(o.check, run.opts.cost.precision, run.opts.write_precision, input);
    run.c = check(input, r.model, o.check, run.tolerance, bytes);
    run.check_ms = ms_since(phase);
    OptimizeResult result;
    result.check_ok = !run.c.ran || run.c.ok;
    phase = std::chrono::steady_clock::now();
    if (result.check_ok && !o.output.empty()) {
      export_onnx(r.model, o.output);
      run.written = o.output;
    }
    run.write_ms = ms_since(phase);
    if (!o.compile_stat.empty()) write_compile_stat(o.compile_stat, r);
    result.report_json = report_json(run);
    result.report_text = report_text(run);
    if (!result.check_ok)
      result.error = "the optimized model differs from the original beyond " +
                     tolerance_text(run.tolerance, "original") + " (worst at " + run.c.worst +
                     "); nothing written";
    result.summary = summary_of(r);
    auto impl = std::make_shared<OptimizedModel::Impl>();
    impl->model = std::move(r.model);
    result.model = OptimizedModel(std::move(impl));
    return result;
  });
}

OptimizedModel::OptimizedModel() = default;
OptimizedModel::~OptimizedModel() = default;
OptimizedModel::OptimizedModel(const OptimizedModel&) = default;
OptimizedModel& OptimizedModel::operator=(const OptimizedModel&) = default;
OptimizedModel::OptimizedModel(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

void OptimizedModel::save(const std::string& path) const {
  guarded([&] {
    if (!impl_) throw geopt::Error("no model: this OptimizedModel holds none");
    export_onnx(impl_->model, path);
  });
}

std::string OptimizedModel::serialized() const {
  return guarded([&] {
    if (!impl_) throw geopt::Error("no model: this OptimizedModel holds none");
    onnx::ModelProto proto = model_to_proto(impl_->model);
    if (proto.ByteSizeLong() > size_t{INT32_MAX})
      throw geopt::Error(
          "the optimized model is over 2 GB, more than one protobuf message holds; save() it "
          "to a file (its weights go to external data)");
    return proto.SerializeAsString();
  });
}

std::string version() { return GEOPT_VERSION; }

ModelSource ModelSource::file(std::string path) { return {.path = std::move(path), .bytes = {}}; }
ModelSource ModelSource::serialized(std::string bytes) { return {.path = {}, .bytes = std::move(bytes)}; }
std::string ModelSource::name() const { return path.empty() ? "<bytes>" : path; }

}  // namespace geopt::api
