// geopt compile as a library call: optimize, plan memory and streams, lower, check,
// write, report; for static shapes, gears (ATC's dynamic_*) or ranges.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>

#include <spdlog/spdlog.h>

#include "ascend/compile.h"
#include "ascend/dynamic_compile.h"
#include "ascend/plan_file.h"
#include "banks.h"
#include "compile_pipeline.h"
#include "eval/numerical_check.h"
#include "guard.h"
#include "json_text.h"
#include "model_handles.h"
#include "plan_reports.h"
#include "report_text.h"
#include "settings.h"
#include "stage_dump.h"
#include "text_format.h"
#include "util/error.h"

namespace geopt::api {
namespace {

std::string human(double bytes) {
  std::string t;
  if (bytes >= (1 << 20))
    appendf(t, "%.2f MiB", bytes / (1 << 20));
  else
    appendf(t, "%.1f KiB", bytes / 1024);
  return t;
}

std::string check_text(const ascend::CompileResult& c, const Tolerance& tolerance) {
  if (!c.checked) return "off (--no-check)";
  std::string note;
  appendf(note,
          "plan executor vs reference on the original: max abs error %.3g over %zu output(s), in-order "
          "and adversarial schedules (tolerance %s): %s",
          c.max_abs, c.outputs, tolerance_text(tolerance, "reference").c_str(), c.check_ok ? "ok" : "FAILED");
  if (!c.check_ok) note += "; worst at " + c.check_worst;
  return note;
}

nlohmann::ordered_json optimized_json(const ascend::OptimizeResult& r) {
  nlohmann::ordered_json j;
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
  return j;
}

nlohmann::ordered_json report_json(const ascend::CompileResult& c, const ascend::CompileOptions& co) {
  const Tolerance tolerance = *co.check_tolerance;
  nlohmann::ordered_json j = c.optimized ? optimized_json(*c.optimized) : nlohmann::ordered_json::object();
  const auto& memory = c.memory;
  const auto& streams = c.streams;
  const auto& sim = c.profile;
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
  if (c.checked && !tolerance.basis.empty()) j["check"]["tolerance_basis"] = tolerance.basis;
  j["time_ms"] = {{"optimize", c.optimize_ms}, {"memory_plan", c.memory_ms}, {"lower", c.lower_ms}};
  return j;
}

std::string optimized_text(const ascend::OptimizeResult& r, const ascend::CompileOptions& co) {
  auto listed = [](const std::map<std::string, size_t>& rules) {
    std::string text;
    for (const auto& [name, n] : rules) text += (text.empty() ? "" : ", ") + name + " x" + std::to_string(n);
    return text.empty() ? std::string("nothing") : text;
  };
  std::string t;
  if (r.saturation.stop != dsl::StopReason::Saturated)
    appendf(t, "saturation       stopped at its %s after %d iteration(s)\n",
            dsl::stop_reason_name(r.saturation.stop), r.saturation.iterations);
  appendf(t, "fused            %s\n", listed(r.fused).c_str());
  appendf(t, "rewritten        %s\n", listed(r.rewritten).c_str());
  appendf(t, "kernels          %s (fusion rate %.0f%%)\n", kernel_counts(r.before, r.after).c_str(),
          100 * r.fusion_rate);
  appendf(t, "modeled latency  %.1f us -> %.1f us (one stream)\n", r.before.latency_us, r.after.latency_us);
  if (co.optimize.write_precision) appendf(t, "precision        %s\n", precision_text(r.precision).c_str());
  return t;
}

std::string report_text(const ascend::CompileResult& c, const ascend::CompileOptions& co) {
  const auto& memory = c.memory;
  const auto& streams = c.streams;
  const auto& sim = c.profile;
  std::string t = c.optimized ? optimized_text(*c.optimized, co) : "";
  appendf(t, "memory           pool %s (LOAD %s, %.3fx); without reuse %s; reuse rate %.0f%%\n",
          human(memory.pool_bytes).c_str(), human(memory.load_bytes).c_str(),
          memory.load_bytes ? double(memory.pool_bytes) / double(memory.load_bytes) : 1.0,
          human(memory.no_reuse_bytes).c_str(), 100 * memory.reuse_rate());
  appendf(t, "                 strategy %s; %zu views, %zu in place; weights %s\n", memory.strategy.c_str(),
          memory.views, memory.in_place, human(memory.weight_bytes).c_str());
  if (!co.memory.no_reuse.empty())
    appendf(t, "                 OP_NO_REUSE_MEM: %zu buffer(s) kept apart\n", memory.kept_apart);
  appendf(t, "streams          %zu stream(s), %zu event(s) for %zu cross-stream dependencies%s\n",
          streams.stream_count, streams.events.size(), streams.cross_stream_dependencies,
          c.stream_note.c_str());
  appendf(t, "simulated        %.1f us on %zu stream(s) (one stream %.1f us, critical path %.1f us)\n",
          sim.latency_us, streams.stream_count, sim.one_stream_us, sim.critical_path_us);
  appendf(
      t,
      "metrics          fusion rate %.0f%%, memory reuse %.0f%%, layout transforms %.1f%% of kernel time, "
      "Cube %.1f%%, Vector %.1f%%\n",
      100 * sim.fusion_rate, 100 * sim.memory_reuse_rate, 100 * sim.layout_transform_share,
      100 * sim.cube_utilization, 100 * sim.vector_utilization);
  appendf(t, "check            %s\n", check_text(c, *co.check_tolerance).c_str());
  if (c.checked && co.optimize.write_precision &&
      co.optimize.cost.precision.mode != ascend::PrecisionMode::MustKeepOriginDtype)
    for (const OutputError& e : c.output_errors)
      appendf(t, "                 %s\n", output_error_text(e).c_str());
  appendf(t, "time             optimize %.1f ms, lower %.1f ms (memory plan %.1f ms)\n", c.optimize_ms,
          c.lower_ms, c.memory_ms);
  return t;
}

std::string check_failed(const ascend::CompileResult& c, const ascend::CompileOptions& co,
                         const std::string& where) {
  return where + "the plan's outputs differ from the original model's beyond " +
         tolerance_text(*co.check_tolerance, "reference") + " (worst at " + c.check_worst +
         "); nothing written";
}

nlohmann::ordered_json banks_json(const CompileBanks& b, size_t bank_kernels) {
  nlohmann::ordered_json j;
  j["key"] = b.key.text();
  if (!b.op_file.empty())
    j["op_bank"] = {{"file", b.op_file},
                    {"kernels_tuned", bank_kernels},
                    {"entries_for_other_machines", b.op_other_keys}};
  if (!b.model_file.empty()) {
    nlohmann::ordered_json m = {{"file", b.model_file}, {"entries_for_other_machines", b.model_other_keys}};
    if (b.model_entry)
      m["applied"] = {
          {"disable", b.model_entry->disable},
          {"max_streams", b.model_entry->max_streams},
          {"topo_sorting_mode", b.model_entry->topo_sorting_mode.empty() ? std::string("memory")
                                                                         : b.model_entry->topo_sorting_mode},
          {"keep_format", b.model_entry->keep_format},
          {"extraction",
           b.model_entry->extraction.empty() ? std::string("auto") : b.model_entry->extraction}};
    else
      m["applied"] = nullptr;
    j["model_bank"] = m;
  }
  return j;
}

std::string banks_text(const CompileBanks& b, size_t bank_kernels) {
  std::string t;
  if (!b.op_file.empty())
    appendf(t,
            "op bank          %s: %zu kernel(s) took a tuned tactic; %zu entr%s for other machines ignored\n",
            b.op_file.c_str(), bank_kernels, b.op_other_keys, b.op_other_keys == 1 ? "y" : "ies");
  if (!b.model_file.empty()) {
    std::string applied = "nothing filed for this model";
    if (b.model_entry) {
      applied = "max streams " + std::to_string(b.model_entry->max_streams) + ", order " +
                (b.model_entry->topo_sorting_mode.empty() ? "memory" : b.model_entry->topo_sorting_mode) +
                ", off:";
      for (const auto& d : b.model_entry->disable) applied += " " + d;
      if (b.model_entry->disable.empty()) applied += " none";
      if (!b.model_entry->keep_format.empty())
        applied += ", " + std::to_string(b.model_entry->keep_format.size()) + " node(s) kept in their format";
      if (!b.model_entry->extraction.empty()) applied += ", extraction " + b.model_entry->extraction;
    }
    appendf(t, "model bank       %s: %s; %zu entr%s for other machines ignored\n", b.model_file.c_str(),
            applied.c_str(), b.model_other_keys, b.model_other_keys == 1 ? "y" : "ies");
  }
  return t;
}

// What one compile made, whichever its kind.
struct Made {
  plan::Plan plan;
  bool ok = true;
  std::string error;
  nlohmann::ordered_json json;
  std::string text;
  Summary summary;
  size_t bank_kernels = 0;      // kernels that took a tactic from the op bank (all gears)
  ascend::PlanProfile profile;  // simulated (a plan of gears: its first gear's)
};

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
    throw geopt::UsageError(
        "--dynamic_batch_size, --dynamic_image_size, --dynamic_dims and --input_shape_range are exclusive: "
        "give one");
  if (d.range && !o.input_shape.empty())
    throw geopt::UsageError("--input_shape_range gives every dynamic input's dims; leave out --input_shape");
  return d;
}

Made compile_gears(const CompileOptions& o, const Model& given, const ascend::CompileOptions& co,
                   const ascend::HardwareProfile& profile, ascend::GearKind kind, const std::string& text) {
  const std::vector<ascend::InputShapes> gears = ascend::parse_gears(given, o.input_shape, kind, text);
  ascend::GearedCompileResult g = ascend::compile_gears(given, gears, profile, co);
  Made m;
  auto list = nlohmann::ordered_json::array();
  appendf(m.text, "gears            %zu, each optimized and planned at its own shapes\n", g.gears.size());
  for (size_t i = 0; i < g.gears.size(); ++i) {
    const std::string name = g.plan.gears(static_cast<int>(i)).name();
    nlohmann::ordered_json one;
    one["gear"] = i;
    one["input_shape"] = name;
    one.update(report_json(g.gears[i], co));
    list.push_back(one);
    appendf(m.text, "\ngear %zu           %s\n", i, name.c_str());
    m.text += report_text(g.gears[i], co);
    m.bank_kernels += g.gears[i].bank_kernels;
    if (m.ok && !g.gears[i].check_ok) {
      m.ok = false;
      m.error = check_failed(g.gears[i], co, "gear " + name + ": ");
    }
  }
  m.json["gears"] = list;
  m.json["weights"] = {{"shared_bytes", g.plan.weight_bytes()}, {"gears_summed_bytes", g.gear_weight_bytes}};
  appendf(m.text, "\nweights          %s, shared by the %zu gears (%s if each kept its own)\n",
          human(double(g.plan.weight_bytes())).c_str(), g.gears.size(),
          human(double(g.gear_weight_bytes)).c_str());
  if (!g.gears.empty() && g.gears.front().optimized) m.summary = summary_of(*g.gears.front().optimized);
  if (!g.gears.empty()) m.profile = g.gears.front().profile;
  m.plan = std::move(g.plan);
  return m;
}

Made compile_range(const ModelSource& source, const CompileOptions& o, Model given,
                   const ascend::CompileOptions& co, const ascend::HardwareProfile& profile) {
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
  if (fixes) {
    ImportOptions fixing;
    fixing.input_shapes = fixed;
    given = import_model(source, fixing);
  }
  ascend::RangeCompileResult rc = ascend::compile_range(given, ranges, profile, co);
  ascend::CompileResult& c = rc.compiled;
  Made m;
  const std::string range = ascend::input_ranges_text(given, ranges);
  m.json["input_shape_range"] = range;
  m.json.update(report_json(c, co));
  auto at = nlohmann::ordered_json::array();
  appendf(m.text, "range            %s: one plan, planned and priced at the upper bound\n", range.c_str());
  m.text += report_text(c, co);
  for (size_t i = 0; i < rc.checked_at.size(); ++i) {
    const std::string shapes = ascend::input_shapes_text(given, rc.checked_at[i]);
    at.push_back({{"input_shape", shapes}, {"load_bytes", rc.load_at[i]}});
    appendf(m.text, "at               %s: LOAD %s, the pool %.3fx of it%s\n", shapes.c_str(),
            human(double(rc.load_at[i])).c_str(),
            rc.load_at[i] ? double(c.memory.pool_bytes) / double(rc.load_at[i]) : 1.0,
            c.checked ? ", checked" : "");
  }
  m.json["sizes"] = at;
  m.ok = c.check_ok;
  if (!m.ok) m.error = check_failed(c, co, "");
  if (c.optimized) m.summary = summary_of(*c.optimized);
  m.bank_kernels = c.bank_kernels;
  m.profile = c.profile;
  m.plan = std::move(c.plan);
  return m;
}

Made compile_static(const Model& given, const ascend::CompileOptions& co,
                    const ascend::HardwareProfile& profile, std::vector<std::string>& warnings) {
  ascend::CompileResult c = ascend::compile(given, profile, co);
  // GE ignores names it does not find; a typo should not pass unseen.
  for (const auto& name : c.memory.no_reuse_unmatched) {
    warnings.push_back("OP_NO_REUSE_MEM: no kernel of the compiled graph is named or typed '" + name +
                       "' (plan dump lists them)");
    spdlog::warn("{}", warnings.back());
  }
  Made m;
  m.json = report_json(c, co);
  m.text = report_text(c, co);
  m.bank_kernels = c.bank_kernels;
  m.profile = c.profile;
  m.ok = c.check_ok;
  if (!m.ok) m.error = check_failed(c, co, "");
  if (c.optimized) m.summary = summary_of(*c.optimized);
  m.plan = std::move(c.plan);
  return m;
}

// A plan written over its own model would destroy the model (and its external data's
// anchor): refused before anything is read.
void refuse_output_over_model(const ModelSource& source, const std::string& output) {
  namespace fs = std::filesystem;
  if (output.empty() || source.path.empty()) return;
  std::error_code ec;
  if (fs::equivalent(source.path, output, ec) ||
      fs::path(output).lexically_normal() == fs::path(source.path).lexically_normal())
    throw geopt::Error("-o " + output + " is the model itself; write the plan elsewhere (e.g. " +
                       fs::path(source.path).replace_extension(".plan").string() + ")");
}

}  // namespace

ascend::CompileOptions pipeline_options(const CompileOptions& o, const Model& given,
                                        const dsl::RuleSet* rules, const ascend::HardwareProfile& profile) {
  ascend::CompileOptions co;
  co.rules = rules;
  co.optimize = optimize_options(o.target, o.rules, profile, &given);
  co.memory.reuse = !o.disable_reuse_memory;
  for (const auto& name : o.op_no_reuse_mem)
    if (!name.empty()) co.memory.no_reuse.insert(name);
  co.single_stream = o.enable_single_stream;
  if (o.max_streams < 1 || o.max_streams > 64) throw geopt::UsageError("max_streams must be from 1 to 64");
  co.max_streams = o.max_streams;
  if (!o.topo_sorting_mode.empty()) {
    const auto mode = ascend::parse_topo_sorting_mode(o.topo_sorting_mode);
    if (!mode)
      throw geopt::UsageError("--topo_sorting_mode '" + as_text(o.topo_sorting_mode) +
                              "': 0 (BFS), 1 (DFS), 2 (reverse DFS) or 3 (stable reverse DFS)");
    co.topo_sorting_mode = *mode;
  }
  co.check = o.check.enabled;
  co.check_tolerance =
      check_tolerance(o.check, co.optimize.cost.precision, co.optimize.write_precision, given);
  co.check_inputs = check_inputs(o.check, given);
  if (!o.dump_graph.empty())
    co.dump = [dir = o.dump_graph](const std::string& stage, Model& m,
                                   const std::unordered_map<const Node*, std::string>& notes) {
      dump_stage(dir, stage, m, notes);
    };
  return co;
}

CompileResult compile(const ModelSource& source, const CompileOptions& given_options) {
  return guarded([&] {
    refuse_output_over_model(source, given_options.output);
    const DynamicChoice dynamic = dynamic_choice(given_options);
    const ascend::HardwareProfile profile = load_profile(given_options.target);
    CompileOptions o = given_options;
    const CompileBanks banks = load_compile_banks(source, profile, o);
    Model given = import_model(source, import_options(o.input_shape));
    if (!o.dump_graph.empty()) dump_stage(o.dump_graph, "1_import", given);
    std::unique_ptr<dsl::RuleSet> rules;
    if (o.optimize) rules = load_rules(o.rules);
    ascend::CompileOptions co = pipeline_options(o, given, rules.get(), profile);
    if (banks.op_bank) co.op_bank = &*banks.op_bank, co.bank_key = banks.key;
    CompileResult result;
    Made m = dynamic.gears   ? compile_gears(o, given, co, profile, *dynamic.gears, dynamic.gear_text)
             : dynamic.range ? compile_range(source, o, std::move(given), co, profile)
                             : compile_static(given, co, profile, result.warnings);
    auto impl = std::make_shared<Plan::Impl>();
    impl->plan = std::move(m.plan);
    impl->source = "<compiled>";
    result.plan = Plan(std::move(impl));
    std::string written;
    if (m.ok && !o.output.empty()) written = result.plan.save(o.output, o.external_weights);
    nlohmann::ordered_json j;
    j["model"] = source.name();
    j["soc_version"] = profile.soc_version;
    j["profile_file"] = profile.source;
    j.update(m.json);
    j["tuning_hints"] = tuning_hints_json(m.profile, source.name());
    for (const auto& h : j["tuning_hints"])
      m.text += "tune hint        " + h["hint"].get<std::string>() + "\n";
    if (!banks.op_file.empty() || !banks.model_file.empty()) {
      j["tuning"] = banks_json(banks, m.bank_kernels);
      m.text += banks_text(banks, m.bank_kernels);
    }
    if (!written.empty()) j["written"] = written;
    result.report_json = json_text(j);
    const std::string precision = o.target.precision_mode.value_or("force_fp16");
    result.report_text = "model            " + source.name() + "\n" + "profile          " +
                         profile.soc_version + " (" + precision + ")\n" + m.text;
    if (!written.empty()) result.report_text += "written          " + written + "\n";
    result.check_ok = m.ok;
    result.error = m.error;
    result.summary = m.summary;
    return result;
  });
}

}  // namespace geopt::api
