// geopt tune as a library call (AOE's two jobs, docs/TUNING.md): operator tuning measures
// each op signature's host tactics, subgraph tuning the strategy settings of one model;
// both file what they keep in a knowledge bank that compile reads.
#include <google/protobuf/util/message_differencer.h>
#include <nlohmann/json.hpp>

#include <chrono>
#include <cmath>
#include <set>

#include "ascend/compile.h"
#include "ascend/tune/layout_regions.h"
#include "ascend/tune/op_tuning.h"
#include "ascend/tune/plan_timing.h"
#include "banks.h"
#include "compile_pipeline.h"
#include "guard.h"
#include "json_text.h"
#include "settings.h"
#include "text_format.h"
#include "util/error.h"
#include "util/input_file.h"

namespace geopt::api {
namespace {

using Clock = std::chrono::steady_clock;
using json = nlohmann::ordered_json;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// AOE's --tune_ops_file: {"tune_ops_name": [...], "tune_ops_type": [...]}.
void read_tune_ops_file(const std::string& path, ascend::OpTuneOptions& t) {
  const std::string bytes = read_regular_file(path, 16 << 20, "the --tune_ops_file");
  json j;
  try {
    j = json::parse(bytes);
  } catch (const json::exception& e) {
    throw geopt::Error(path + ": --tune_ops_file is no JSON (" + e.what() + ")");
  }
  if (!j.is_object()) throw geopt::Error(path + ": --tune_ops_file is no JSON object");
  for (const auto& [key, value] : j.items()) {
    if (key != "tune_ops_name" && key != "tune_ops_type")
      throw geopt::Error(path + ": --tune_ops_file: unknown key \"" + as_text(key) +
                         "\" (tune_ops_name, tune_ops_type)");
    if (!value.is_array()) throw geopt::Error(path + ": --tune_ops_file: \"" + key + "\" is not a list");
    for (const auto& v : value) {
      if (!v.is_string() || v.get<std::string>().empty())
        throw geopt::Error(path + ": --tune_ops_file: \"" + key + "\" holds something other than a name");
      (key == "tune_ops_name" ? t.op_names : t.op_types).insert(v.get<std::string>());
    }
  }
  if (t.op_names.empty() && t.op_types.empty())
    throw geopt::Error(path + ": --tune_ops_file names no op (tune_ops_name and tune_ops_type are empty)");
}

// The model compiled as geopt compile would, with `disable` turned off and `max_streams`.
ascend::CompileResult compile_with(const Model& given, const CompileOptions& o,
                                   const ascend::HardwareProfile& profile) {
  std::unique_ptr<dsl::RuleSet> rules;
  if (o.optimize) rules = load_rules(o.rules);
  ascend::CompileOptions co = pipeline_options(o, given, rules.get(), profile);
  ascend::CompileResult r = ascend::compile(given, profile, co);
  if (!r.check_ok)
    throw geopt::Error("the plan's outputs differ from the model's (worst at " + r.check_worst +
                       "); tuning needs a plan that computes the model");
  return r;
}

std::string us_text(double us) {
  std::string t;
  appendf(t, "%.1f", us);
  return t;
}

TuneResult tune_operators(const ModelSource& source, const TuneOptions& opt, const CompileOptions& o,
                          const ascend::HardwareProfile& profile, const ascend::BankKey& key) {
  const auto started = Clock::now();
  const std::string file = ascend::KnowledgeBank::file_for(opt.bank_path, profile.soc_version, "op");
  ascend::KnowledgeBank bank = ascend::KnowledgeBank::load(file, true);
  ascend::OpTuneOptions t;
  t.key = key;
  t.model = source.name();
  t.reload = opt.reload;
  t.time_budget_s = opt.time_budget_s;
  t.thread_counts = opt.tune_threads;
  t.progress = opt.progress;
  // The bank on disk after each signature, so an interrupted run resumes (--reload); at
  // most every 2 s, as a large bank takes a while to write whole.
  auto saved = Clock::now() - std::chrono::seconds(10);
  t.checkpoint = [&](const ascend::KnowledgeBank& b) {
    if (seconds_since(saved) < 2) return;
    b.save(file);
    saved = Clock::now();
  };
  if (!opt.tune_ops_file.empty()) read_tune_ops_file(opt.tune_ops_file, t);
  if (opt.progress) opt.progress("compiling", 0, 1);
  const Model given = import_model(source, import_options(o.input_shape));
  const ascend::CompileResult compiled = compile_with(given, o, profile);
  if (opt.progress) opt.progress("compiling", 1, 1);
  const auto inputs = ascend::random_plan_inputs(compiled.plan, opt.seed);
  const ascend::OpTuneResult r = ascend::tune_operators(compiled.plan, inputs, bank, t);
  bank.save(file);

  TuneResult result;
  result.bank_file = file;
  json j;
  j["model"] = source.name();
  j["job_type"] = 2;
  j["bank"] = file;
  j["key"] = key.text();
  std::map<std::string, size_t> outcomes;
  json ops = json::array();
  std::string table;
  for (const ascend::TunedOp& op : r.ops) {
    const std::string outcome = ascend::outcome_name(op.outcome);
    ++outcomes[outcome];
    ops.push_back({{"op_type", op.op_type},
                   {"kernel", op.kernel},
                   {"kernels", op.kernels},
                   {"signature", op.signature},
                   {"candidates", op.candidates},
                   {"default_us", op.default_us},
                   {"tuned_us", op.tuned_us},
                   {"tactic", op.tactic},
                   {"outcome", outcome}});
    if (op.outcome == ascend::TunedOp::Outcome::not_reached ||
        op.outcome == ascend::TunedOp::Outcome::nothing_to_try)
      continue;
    appendf(table, "  %-16.16s %-28.28s x%-3zu %9s -> %9s us  %-14s %s\n", op.op_type.c_str(),
            op.kernel.c_str(), op.kernels, us_text(op.default_us).c_str(), us_text(op.tuned_us).c_str(),
            outcome.c_str(), op.tactic.empty() ? "(its own)" : op.tactic.c_str());
  }
  j["ops"] = ops;
  json counts = json::object();
  for (const auto& [name, n] : outcomes) counts[name] = n;
  j["outcomes"] = counts;
  j["plan"] = {{"untuned_ms", r.plan_default_ms},
               {"tuned_ms", r.plan_tuned_ms},
               {"check", r.plan_check},
               {"timings", r.plan_ratios}};
  j["budget_hit"] = r.budget_hit;
  j["seconds"] = seconds_since(started);
  result.report_json = json_text(j);
  std::string& text = result.report_text;
  appendf(text, "model            %s\n", source.name().c_str());
  appendf(text, "job              operator tuning (--job_type 2), %s\n", key.text().c_str());
  appendf(text, "signatures       %zu:", r.ops.size());
  for (const auto& [name, n] : outcomes) appendf(text, " %zu %s,", n, name.c_str());
  if (!outcomes.empty()) text.pop_back();
  text += "\n";
  text += table;
  if (r.plan_tuned_ms > 0)
    appendf(text, "whole plan       %.2f ms -> %.2f ms (%s; medians of interleaved runs)\n",
            r.plan_default_ms, r.plan_tuned_ms, r.plan_check.c_str());
  else
    appendf(text, "whole plan       %s\n", r.plan_check.c_str());
  for (const std::string& timing : r.plan_ratios) appendf(text, "                 %s\n", timing.c_str());
  if (r.budget_hit) appendf(text, "time budget      reached: run again with --reload to go on\n");
  appendf(text, "bank             %s\n", file.c_str());
  appendf(text, "time             %.1f s\n", seconds_since(started));
  return result;
}

// Subgraph tuning: the strategy settings extraction does not price, one at a time from
// the model's own: each rule tag whose rules the plan uses turned off, each NC1HWC0
// region kept in the model's format (where the plan has more than one: the `layout` tag
// covers one), the extraction mode, (judged on the simulator, where streams run side by
// side) the stream count, and the order kernels are issued in (GE's topological sorting
// modes against geopt's memory-aware order). A setting is kept where the plan gains
// beyond the noise: 3% on the host's interleaved medians, 1% simulated. A setting that
// makes the incumbent's plan again is not timed.
TuneResult tune_subgraphs(const ModelSource& source, const TuneOptions& opt, const CompileOptions& o,
                          const ascend::HardwareProfile& profile, const ascend::BankKey& key) {
  const auto started = Clock::now();
  const bool host = opt.tune_target == "host";
  const std::string file = ascend::KnowledgeBank::file_for(opt.bank_path, profile.soc_version, "model");
  ascend::KnowledgeBank bank = ascend::KnowledgeBank::load(file, true);
  const std::string signature = model_signature(source, o.input_shape);
  TuneResult result;
  result.bank_file = file;
  if (opt.reload && bank.find_model(key, signature)) {
    result.report_text = "model            " + source.name() + "\nbank             " + file +
                         ": already tuned for this machine (--reload); nothing measured\n";
    result.report_json =
        json_text(json{{"model", source.name()}, {"job_type", 1}, {"bank", file}, {"reloaded", true}});
    return result;
  }
  const Model given = import_model(source, import_options(o.input_shape));
  if (opt.progress) opt.progress("compiling", 0, 1);
  CompileOptions incumbent = o;
  ascend::CompileResult best = compile_with(given, incumbent, profile);
  if (opt.progress) opt.progress("compiling", 1, 1);
  const auto inputs = ascend::random_plan_inputs(best.plan, opt.seed);
  // The tags of the rules the plan kept, each a candidate to turn off.
  std::set<std::string> tags;
  if (best.optimized && o.optimize) {
    const std::unique_ptr<dsl::RuleSet> rules = load_rules(o.rules);
    for (const auto& rule : rules->rules())
      if (best.optimized->fused.count(rule.ast->name) || best.optimized->rewritten.count(rule.ast->name))
        tags.insert(rule.ast->tags.begin(), rule.ast->tags.end());
  }
  struct Candidate {
    std::string what;
    CompileOptions options;
  };
  std::vector<std::string> tag_list(tags.begin(), tags.end());
  std::vector<size_t> stream_counts;
  if (!host)
    for (size_t s : {size_t{1}, size_t{2}, size_t{4}})
      if (s != o.max_streams) stream_counts.push_back(s);
  // The order's name, "memory" for geopt's own (o's --topo_sorting_mode is checked by now).
  auto order_of = [](const CompileOptions& c) {
    return c.topo_sorting_mode.empty()
               ? std::string("memory")
               : ascend::topo_sorting_mode_name(ascend::parse_topo_sorting_mode(c.topo_sorting_mode)
                                                    .value_or(ascend::TopoSortingMode::memory_aware));
  };
  std::vector<std::string> orders;
  for (const char* mode : {"memory", "bfs", "dfs", "rdfs", "stable_rdfs"})
    if (mode != order_of(o)) orders.push_back(mode);
  // The NC1HWC0 regions, largest first; one region is what the `layout` tag tries.
  constexpr size_t kMostRegions = 8;
  std::vector<ascend::LayoutRegion> regions;
  if (best.optimized && o.optimize) {
    regions = ascend::layout_regions(best.model, given);
    if (regions.size() < 2) regions.clear();
    if (regions.size() > kMostRegions) regions.resize(kMostRegions);
  }
  std::vector<std::string> extractions;
  if (o.optimize)
    for (const char* mode : {"auto", "greedy", "exact"})
      if (mode != o.rules.extraction) extractions.push_back(mode);
  const size_t total =
      tag_list.size() + regions.size() + extractions.size() + stream_counts.size() + orders.size();
  const double default_measure = host ? 0 : best.profile.latency_us;
  double incumbent_measure = default_measure;
  double default_ms = 0;
  json tried = json::array();
  std::string table;
  bool budget_hit = false;
  size_t done = 0;
  auto consider = [&](const std::string& what, const CompileOptions& candidate) {
    if (opt.time_budget_s > 0 && seconds_since(started) > opt.time_budget_s) {
      budget_hit = true;
      return;
    }
    std::string outcome;
    double before = incumbent_measure, after = 0;
    bool host_wins = false;
    try {
      ascend::CompileResult c = compile_with(given, candidate, profile);
      if (google::protobuf::util::MessageDifferencer::Equals(c.plan, best.plan)) {  // no copy of the weights
        outcome = "the same plan";
        after = before;
      } else if (host) {
        const ascend::PlanTimes t = ascend::time_plans(best.plan, c.plan, inputs);
        before = t.a_ms, after = t.a_ms * t.b_over_a;  // the pairs' ratio, as operator tuning judges
        host_wins = t.b_wins();
        if (default_ms == 0) default_ms = t.a_ms;
      } else {
        after = c.profile.latency_us;
      }
      // On the host: 3% in the median pair, and three pairs in four (PlanTimes::b_wins).
      const bool gains = outcome.empty() && after < before * (host ? 0.97 : 0.99) && (!host || host_wins);
      if (outcome.empty()) outcome = gains ? "kept" : "no gain";
      if (gains) {
        incumbent = candidate;
        best = std::move(c);
        incumbent_measure = after;
      }
    } catch (const geopt::Error& e) {
      outcome = std::string("failed: ") + e.what();
    }
    tried.push_back({{"setting", what}, {"before", before}, {"after", after}, {"outcome", outcome}});
    if (outcome == "the same plan")
      appendf(table, "  %-48.48s %27s  %s\n", what.c_str(), "", outcome.c_str());
    else
      appendf(table, "  %-48.48s %10.2f -> %10.2f %s  %s\n", what.c_str(), before, after, host ? "ms" : "us",
              outcome.c_str());
    if (opt.progress) opt.progress("trying strategy settings", ++done, total);
  };
  if (opt.progress) opt.progress("trying strategy settings", 0, total);
  for (const std::string& tag : tag_list) {
    CompileOptions c = incumbent;
    c.rules.disable.push_back(tag);
    consider("rules tagged " + tag + " off", c);
  }
  for (const ascend::LayoutRegion& region : regions) {
    CompileOptions c = incumbent;
    c.rules.keep_format.insert(c.rules.keep_format.end(), region.input_nodes.begin(),
                               region.input_nodes.end());
    consider("region at " + region.input_nodes.front() + " (" + std::to_string(region.input_nodes.size()) +
                 " nodes) in NCHW",
             c);
  }
  for (const std::string& mode : extractions) {
    CompileOptions c = incumbent;
    c.rules.extraction = mode;
    consider(mode + " extraction", c);
  }
  for (size_t s : stream_counts) {
    CompileOptions c = incumbent;
    c.max_streams = s;
    consider("at most " + std::to_string(s) + " stream(s)", c);
  }
  for (const std::string& mode : orders) {
    CompileOptions c = incumbent;
    c.topo_sorting_mode = mode;
    consider("kernels in " + mode + " order", c);
  }
  if (host && default_ms == 0) default_ms = ascend::time_plans(best.plan, best.plan, inputs).a_ms;
  ascend::ModelEntry entry;
  entry.key = key;
  entry.model_signature = signature;
  entry.model = source.name();
  for (const std::string& d : incumbent.rules.disable)
    if (std::find(o.rules.disable.begin(), o.rules.disable.end(), d) == o.rules.disable.end())
      entry.disable.push_back(d);
  entry.max_streams = incumbent.max_streams;
  if (order_of(incumbent) != "memory") entry.topo_sorting_mode = order_of(incumbent);
  for (const std::string& k : incumbent.rules.keep_format)
    if (std::find(o.rules.keep_format.begin(), o.rules.keep_format.end(), k) == o.rules.keep_format.end())
      entry.keep_format.push_back(k);
  if (incumbent.rules.extraction != "auto") entry.extraction = incumbent.rules.extraction;
  entry.judged_by = host ? "host" : "simulated";
  entry.default_us = host ? default_ms * 1000 : default_measure;
  entry.tuned_us = host ? (incumbent_measure > 0 ? incumbent_measure : default_ms) * 1000 : incumbent_measure;
  bank.put(entry);
  bank.save(file);

  json j;
  j["model"] = source.name();
  j["job_type"] = 1;
  j["tune_target"] = opt.tune_target;
  j["bank"] = file;
  j["key"] = key.text();
  j["tried"] = tried;
  j["chosen"] = {{"disable", entry.disable},
                 {"max_streams", entry.max_streams},
                 {"topo_sorting_mode", order_of(incumbent)},
                 {"keep_format", entry.keep_format},
                 {"extraction", incumbent.rules.extraction}};
  j["default_us"] = entry.default_us;
  j["tuned_us"] = entry.tuned_us;
  j["budget_hit"] = budget_hit;
  j["seconds"] = seconds_since(started);
  result.report_json = json_text(j);
  std::string& text = result.report_text;
  appendf(text, "model            %s\n", source.name().c_str());
  appendf(text, "job              subgraph tuning (--job_type 1, judged %s), %s\n",
          host ? "by the plan on this host" : "by the simulator", key.text().c_str());
  appendf(text, "settings tried   %zu\n", tried.size());
  text += table;
  std::string chosen = "at most " + std::to_string(entry.max_streams) + " stream(s), " + order_of(incumbent) +
                       " order, " + incumbent.rules.extraction + " extraction; off:";
  for (const auto& d : entry.disable) chosen += " " + d;
  if (entry.disable.empty()) chosen += " nothing";
  if (!entry.keep_format.empty())
    chosen += "; " + std::to_string(entry.keep_format.size()) + " node(s) kept in their format";
  appendf(text, "chosen           %s\n", chosen.c_str());
  appendf(text, "plan             %.1f us -> %.1f us (%s)\n", entry.default_us, entry.tuned_us,
          host ? "host median" : "simulated");
  if (budget_hit) appendf(text, "time budget      reached: the settings not tried keep the model's own\n");
  appendf(text, "bank             %s\n", file.c_str());
  appendf(text, "time             %.1f s\n", seconds_since(started));
  return result;
}

}  // namespace

TuneResult tune(const ModelSource& source, const TuneOptions& opt) {
  return guarded([&] {
    if (opt.job_type != 1 && opt.job_type != 2)
      throw geopt::UsageError("--job_type " + std::to_string(opt.job_type) +
                              ": 1 (subgraph tuning) or 2 (operator tuning)");
    if (opt.bank_path.empty())
      throw geopt::UsageError("tune needs a knowledge bank to write: --output DIR, or TUNE_BANK_PATH");
    if (opt.tune_target != "host" && opt.tune_target != "simulated")
      throw geopt::UsageError("--tune_target " + opt.tune_target + ": host or simulated");
    if (!(opt.time_budget_s >= 0) || !std::isfinite(opt.time_budget_s))
      throw geopt::UsageError("--time_budget must be a number of seconds >= 0");
    if (opt.job_type == 1 && !opt.tune_ops_file.empty())
      throw geopt::UsageError("--tune_ops_file selects ops for operator tuning (--job_type 2)");
    if (opt.job_type == 1 && opt.tune_threads)
      throw geopt::UsageError("--tune_threads is a knob of operator tuning (--job_type 2)");
    const CompileOptions& c = opt.compile;
    if (!c.dynamic_batch_size.empty() || !c.dynamic_image_size.empty() || !c.dynamic_dims.empty() ||
        !c.input_shape_range.empty())
      throw geopt::UsageError("tune measures static shapes: give --input_shape, not a dynamic-shape option");
    const ascend::HardwareProfile profile = load_profile(c.target);
    const ascend::BankKey key = bank_key(profile);
    CompileOptions o = c;
    o.output.clear();
    o.op_bank_path.clear();  // tuning starts from the kernels' own tactics
    if (opt.job_type == 1) o.mdl_bank_path.clear();
    load_compile_banks(source, profile, o);  // a model bank's settings apply to operator tuning
    return opt.job_type == 2 ? tune_operators(source, opt, o, profile, key)
                             : tune_subgraphs(source, opt, o, profile, key);
  });
}

}  // namespace geopt::api
