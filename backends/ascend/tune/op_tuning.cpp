#include "tune/op_tuning.h"

#include <onnx/onnx_pb.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <set>

#include "device_ops/device_ops.h"
#include "eval/host_tactic.h"
#include "eval/kernel.h"
#include "plan_executor.h"
#include "tune/op_signature.h"
#include "tune/plan_timing.h"
#include "util/error.h"
#include "util/text.h"

namespace geopt::ascend {
namespace {

using Clock = std::chrono::steady_clock;

// Times `candidates` interleaved: a warm-up call each (a primitive is made on its first
// call), then `rounds` rounds, each running every candidate `calls` times, starting one
// candidate later each round so no candidate always follows the same one.
std::vector<Spread> measure(const PlanExecutor::KernelTimer& time, const std::vector<HostTactic>& candidates,
                            int rounds) {
  double slowest = 0;
  for (const HostTactic& t : candidates) {
    time(t);
    slowest = std::max(slowest, time(t));
  }
  // About a millisecond of each candidate per round: short kernels get more samples.
  const int calls = std::clamp(static_cast<int>(1e-3 / std::max(slowest, 1e-7)), 1, 16);
  std::vector<std::vector<double>> samples(candidates.size());
  const size_t n = candidates.size();
  for (int r = 0; r < rounds; ++r)
    for (size_t i = 0; i < n; ++i) {
      const size_t c = (i + static_cast<size_t>(r)) % n;
      for (int k = 0; k < calls; ++k) samples[c].push_back(time(candidates[c]));
    }
  std::vector<Spread> out;
  for (auto& s : samples) out.push_back(spread_of(std::move(s)));
  return out;
}

// The conv geometry a kernel's attributes give: whether Winograd applies, as the
// kernel decides it (kernels/conv.cpp).
bool dense_3x3(const plan::Kernel& k) {
  std::vector<int64_t> kernel_shape, strides, dilations;
  int64_t group = 1;
  for (const std::string& bytes : k.attributes()) {
    onnx::AttributeProto a;
    if (!a.ParseFromString(bytes)) continue;
    if (a.name() == "kernel_shape") kernel_shape.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "strides") strides.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "dilations") dilations.assign(a.ints().begin(), a.ints().end());
    if (a.name() == "group") group = a.i();
  }
  auto ones = [](const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
  };
  return kernel_shape == std::vector<int64_t>{3, 3} && group == 1 && ones(strides) && ones(dilations);
}

// One knob's alternatives to the incumbent, in the order the search tries the knobs.
std::vector<std::vector<HostTactic>> knob_stages(const plan::Kernel& k, unsigned knobs, int team) {
  std::vector<std::vector<HostTactic>> stages;
  const bool conv = (knobs & kTacticConv) && k.inputs_size() > 0 &&
                    (k.inputs(0).dims_size() == 4 || k.inputs(0).dims_size() == 5);
  if (conv) {
    std::vector<HostTactic> layouts;
    for (const auto& [layout, name] : conv_layout_names())
      if (layout != ConvLayout::automatic) layouts.push_back(HostTactic{.conv_layout = layout});
    stages.push_back(layouts);
    std::vector<HostTactic> algorithms{HostTactic{.conv_algorithm = ConvAlgorithm::direct}};
    if (dense_3x3(k)) algorithms.push_back(HostTactic{.conv_algorithm = ConvAlgorithm::winograd});
    stages.push_back(algorithms);
  }
  if (knobs & kTacticMoves) {
    std::vector<HostTactic> moves;
    for (const auto& [how, name] : channel_moves_names())
      if (how != ChannelMoves::automatic) moves.push_back(HostTactic{.moves = how});
    stages.push_back(moves);
  }
  // A product whose B is a weight: packed once (its own choice) against read where it lies.
  if ((knobs & kTacticPacking) && k.inputs_size() > 1 && k.inputs(1).region() == plan::WEIGHT)
    stages.push_back({HostTactic{.packing = WeightPacking::plain}});
  if (team > 1) {
    std::vector<HostTactic> threads{HostTactic{.threads = 1}};
    if (team >= 4) threads.push_back(HostTactic{.threads = team / 2});
    stages.push_back(threads);
  }
  return stages;
}

// The incumbent with one knob of `alternative` applied (the knob its stage varies).
HostTactic with_knob(HostTactic incumbent, const HostTactic& alternative) {
  if (alternative.conv_layout != ConvLayout::automatic) incumbent.conv_layout = alternative.conv_layout;
  if (alternative.conv_algorithm != ConvAlgorithm::automatic)
    incumbent.conv_algorithm = alternative.conv_algorithm;
  if (alternative.moves != ChannelMoves::automatic) incumbent.moves = alternative.moves;
  if (alternative.threads != 0) incumbent.threads = alternative.threads;
  if (alternative.packing != WeightPacking::automatic) incumbent.packing = alternative.packing;
  return incumbent;
}

struct Choice {
  HostTactic tactic;
  double default_us = 0, tuned_us = 0;
  double threads_ratio = 1;  // the thread-count step's share of tuned_us / default_us
  size_t candidates = 0;
};

// The kernel's own tactic's median is `default_us`; each stage's winner is priced by its
// ratio to that stage's incumbent (measured side by side), so `tuned_us` is the default's
// time times those ratios: comparisons within a stage are what the noise policy trusts.
Choice choose(const plan::Kernel& k, unsigned knobs, int team, const PlanExecutor::KernelTimer& time,
              const OpTuneOptions& o) {
  Choice c;
  HostTactic incumbent;
  double ratio = 1;
  for (const auto& stage : knob_stages(k, knobs, team)) {
    std::vector<HostTactic> candidates{incumbent};
    for (const HostTactic& alt : stage) {
      const HostTactic t = with_knob(incumbent, alt);
      if (std::find(candidates.begin(), candidates.end(), t) == candidates.end()) candidates.push_back(t);
    }
    if (candidates.size() < 2) continue;
    const std::vector<Spread> s = measure(time, candidates, o.rounds);
    if (c.candidates == 0) c.default_us = s[0].median * 1e6;
    c.candidates += candidates.size() - 1;
    size_t best = 0;
    for (size_t i = 1; i < s.size(); ++i)
      if (s[i].median < s[best].median) best = i;
    const bool beyond_noise =
        best != 0 && s[best].median < s[0].median * (1 - o.min_gain) && s[best].q3 < s[0].q1;
    if (beyond_noise) {
      const double step = s[best].median / s[0].median;
      if (candidates[best].threads != incumbent.threads) c.threads_ratio = step;
      incumbent = candidates[best];
      ratio *= step;
    }
  }
  c.tactic = incumbent;
  c.tuned_us = c.default_us * ratio;
  return c;
}

// --tune_ops_file's selection: a kernel by its name, or by its op type, bare or with its
// domain as plan dump prints it ("FusedConv", "ai.geopt::FusedConv").
bool wanted(const plan::Kernel& k, const OpTuneOptions& o, std::set<std::string>& matched) {
  if (o.op_names.empty() && o.op_types.empty()) return true;
  bool hit = false;
  auto take = [&](const std::set<std::string>& names, const std::string& name) {
    if (names.count(name)) hit = true, matched.insert(name);
  };
  take(o.op_names, k.name());
  take(o.op_types, k.op_type());
  if (!k.domain().empty()) take(o.op_types, k.domain() + "::" + k.op_type());
  return hit;
}

void for_each_plan(plan::Plan& p, const std::function<void(plan::Kernel&)>& f) {
  for (auto& g : *p.mutable_gears()) for_each_plan(*g.mutable_plan(), f);
  for (auto& k : *p.mutable_kernels()) {
    f(k);
    for (auto& b : *k.mutable_bodies()) for_each_plan(*b.mutable_plan(), f);
  }
}

}  // namespace

std::string outcome_name(TunedOp::Outcome outcome) {
  switch (outcome) {
    case TunedOp::Outcome::switched:
      return "switched";
    case TunedOp::Outcome::kept:
      return "kept";
    case TunedOp::Outcome::from_bank:
      return "from the bank";
    case TunedOp::Outcome::not_reached:
      return "not reached";
    case TunedOp::Outcome::taken_back:
      return "taken back";
    case TunedOp::Outcome::nothing_to_try:
      return "nothing to try";
  }
  return "?";
}

size_t apply_op_bank(plan::Plan& plan, const KnowledgeBank& bank, const BankKey& key) {
  size_t applied = 0;
  for_each_plan(plan, [&](plan::Kernel& k) {
    if (k.bodies_size()) return;
    const OpEntry* e = bank.find_op(key, op_signature(k));
    if (!e || e->tactic.empty()) return;
    k.set_host_tactic(e->tactic);
    k.set_tactic_source("bank");
    ++applied;
  });
  return applied;
}

OpTuneResult tune_operators(const plan::Plan& plan, const std::map<std::string, HostTensor>& inputs,
                            KnowledgeBank& bank, const OpTuneOptions& o) {
  const auto started = Clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - started).count(); };
  if (plan.gears_size() || plan.input_ranges_size())
    throw Error("tuning times static shapes: compile the model without --dynamic_* or --input_shape_range");
  OpTuneResult r;
  // The signatures to tune, in plan order, and how many kernels share each.
  std::map<std::string, size_t> index;
  std::vector<size_t> op_of(static_cast<size_t>(plan.kernels_size()), SIZE_MAX);  // kernel -> r.ops
  std::vector<size_t> first_kernel;                                               // r.ops -> its first kernel
  std::set<std::string> matched;
  for (int i = 0; i < plan.kernels_size(); ++i) {
    const plan::Kernel& k = plan.kernels(i);
    if (k.bodies_size() || !wanted(k, o, matched)) continue;
    const std::string sig = op_signature(k);
    auto [it, fresh] = index.emplace(sig, r.ops.size());
    if (fresh) {
      TunedOp t;
      t.signature = sig;
      t.op_type = k.op_type();
      t.kernel = k.name();
      r.ops.push_back(t);
      first_kernel.push_back(static_cast<size_t>(i));
    }
    op_of[static_cast<size_t>(i)] = it->second;
    ++r.ops[it->second].kernels;
  }
  // A name the selection gives that no kernel has is a typo, not a request to tune nothing.
  for (const std::set<std::string>* names : {&o.op_names, &o.op_types})
    for (const std::string& name : *names)
      if (!matched.count(name))
        throw Error(
            "--tune_ops_file: '" + escaped(name.substr(0, 200)) +
            "' is the name or op type of no kernel of the compiled plan (geopt plan dump lists them)");
  std::vector<double> threads_ratio(r.ops.size(), 1);
  const int team = default_kernel_threads();
  size_t done = 0;
  bool measured_any = false;  // a run measures one signature at least, however short its budget
  std::vector<size_t> switched;
  if (o.progress) o.progress("measuring op tactics", 0, r.ops.size());
  const PlanExecutor executor(plan, op_registry());
  executor.run_probed(inputs, [&](size_t k, const PlanExecutor::KernelTimer& time) {
    const size_t op = op_of[k];
    if (op == SIZE_MAX || first_kernel[op] != k) return;  // a signature's first kernel decides
    TunedOp& t = r.ops[op];
    const std::string& sig = t.signature;
    if (o.reload && bank.find_op(o.key, sig)) {
      const OpEntry& e = *bank.find_op(o.key, sig);
      t.tactic = e.tactic, t.default_us = e.default_us, t.tuned_us = e.tuned_us;
      t.outcome = TunedOp::Outcome::from_bank;
    } else if (o.time_budget_s > 0 && measured_any && elapsed() > o.time_budget_s) {
      t.outcome = TunedOp::Outcome::not_reached;
      r.budget_hit = true;
    } else {
      const plan::Kernel& pk = plan.kernels(static_cast<int>(k));
      const KernelInfo* info = op_registry().find(pk.domain(), pk.op_type());
      const Choice c = choose(pk, info ? info->tactic_knobs : 0, o.thread_counts ? team : 1, time, o);
      measured_any = measured_any || c.candidates > 0;
      t.candidates = c.candidates;
      t.default_us = c.default_us;
      t.tuned_us = c.tuned_us;
      threads_ratio[op] = c.threads_ratio;
      t.tactic = tactic_text(c.tactic);
      t.outcome = !t.candidates      ? TunedOp::Outcome::nothing_to_try
                  : t.tactic.empty() ? TunedOp::Outcome::kept
                                     : TunedOp::Outcome::switched;
      if (t.candidates) {
        if (!t.tactic.empty()) switched.push_back(op);
        bank.put(OpEntry{o.key, sig, t.op_type, t.tactic, t.default_us, t.tuned_us, o.model});
        if (o.checkpoint) o.checkpoint(bank);
      }
    }
    if (o.progress) o.progress("measuring op tactics", ++done, r.ops.size());
  });
  if (o.progress && done < r.ops.size()) o.progress("measuring op tactics", r.ops.size(), r.ops.size());

  // The whole plan with this run's tactics against none: a kernel timed alone may gain
  // what the plan loses (a thread count that leaves the next kernel's data in the other
  // core's cache). What does not pay there is taken back.
  plan::Plan untuned = plan;
  for_each_plan(untuned, [](plan::Kernel& k) { k.clear_host_tactic(), k.clear_tactic_source(); });
  auto take_back = [&](bool threads_only) {
    size_t n = 0;
    for (size_t i : switched) {
      TunedOp& t = r.ops[i];
      if (t.outcome != TunedOp::Outcome::switched) continue;
      HostTactic tactic = parse_tactic(t.tactic);
      if (threads_only && tactic.threads == 0) continue;
      if (threads_only) {
        tactic.threads = 0;
        t.tactic = tactic_text(tactic);
        t.tuned_us /= threads_ratio[i];  // the other steps' gain stands
      } else {
        t.tactic.clear();
      }
      if (t.tactic.empty()) {
        t.outcome = TunedOp::Outcome::taken_back;
        t.tuned_us = t.default_us;
      }
      bank.put(OpEntry{o.key, t.signature, t.op_type, t.tactic, t.default_us, t.tuned_us, o.model});
      ++n;
    }
    return n;
  };
  if (o.progress) o.progress("checking the whole plan", 0, 1);
  r.plan_check = "nothing to check: no tactic differs from the kernels' own";
  // This run's switches only: the bank's other entries (other models', --reload's) were
  // checked by the runs that filed them.
  auto this_run = [&] {
    KnowledgeBank mine;
    for (size_t i : switched)
      if (r.ops[i].outcome == TunedOp::Outcome::switched)
        mine.put(OpEntry{o.key, r.ops[i].signature, r.ops[i].op_type, r.ops[i].tactic, 0, 0, o.model});
    return mine;
  };
  for (bool threads_taken_back = false;;) {
    plan::Plan tuned = untuned;
    if (apply_op_bank(tuned, this_run(), o.key) == 0) {
      if (threads_taken_back) {
        r.plan_check = "every switch taken back: the plan did not win in three pairs in four";
        r.plan_tuned_ms = r.plan_default_ms;
      }
      break;
    }
    const PlanTimes times = time_plans(untuned, tuned, inputs);
    // The tuned time as the untuned median times the pairs' ratio, as for kernels.
    r.plan_default_ms = times.a_ms, r.plan_tuned_ms = times.a_ms * times.b_over_a;
    char measured[160];
    std::snprintf(
        measured, sizeof measured, "%s: tuned/untuned %.3f, the pairs' median, %.3f, their upper quartile",
        threads_taken_back ? "without the thread counts" : "every switch", times.b_over_a, times.b_over_a_q3);
    r.plan_ratios.push_back(measured);
    // Kept only where the plan gains beyond the pairs' spread: kernels timed alone
    // gained, and a tuned plan that merely matches the untuned one, or wins in half the
    // pairs, is not worth the risk of the noise.
    if (times.b_wins()) {
      r.plan_check = threads_taken_back ? "kept without the thread-count switches" : "every switch kept";
      break;
    }
    if (!threads_taken_back && take_back(true) > 0) {
      threads_taken_back = true;
      continue;
    }
    take_back(false);
    r.plan_check = "every switch taken back: the plan did not win in three pairs in four";
    r.plan_tuned_ms = r.plan_default_ms;
    break;
  }
  // With thread counts searched, the whole plan on one thread too. Where a team's
  // parallel regions cost more than the small kernels gain (a virtual machine's), only
  // the whole plan shows it: each region wakes the other thread, and no kernel timed
  // alone pays for that. ShuffleNet v2 ran 2.8-3.0 ms on one thread against 3.2-3.4 ms on
  // two on dev-2c-z, where its kernels timed alone kept their team.
  if (o.thread_counts && team > 1) {
    KnowledgeBank kept = this_run(), single;
    plan::Plan current = untuned;
    apply_op_bank(current, kept, o.key);
    std::vector<size_t> filed;
    for (size_t i = 0; i < r.ops.size(); ++i) {
      const TunedOp& t = r.ops[i];
      if (t.outcome == TunedOp::Outcome::not_reached || t.outcome == TunedOp::Outcome::from_bank) continue;
      HostTactic tactic = parse_tactic(t.outcome == TunedOp::Outcome::switched ? t.tactic : std::string());
      tactic.threads = 1;
      single.put(OpEntry{o.key, t.signature, t.op_type, tactic_text(tactic), 0, 0, o.model});
      filed.push_back(i);
    }
    plan::Plan one_thread = untuned;
    if (!filed.empty() && apply_op_bank(one_thread, single, o.key) > 0) {
      const PlanTimes times = time_plans(current, one_thread, inputs);
      char measured[160];
      std::snprintf(
          measured, sizeof measured,
          "every kernel on one thread: against the above %.3f, the pairs' median, %.3f, their upper "
          "quartile",
          times.b_over_a, times.b_over_a_q3);
      r.plan_ratios.push_back(measured);
      if (times.b_wins()) {
        const double before_ms = r.plan_tuned_ms > 0 ? r.plan_tuned_ms : times.a_ms;
        if (r.plan_default_ms == 0) r.plan_default_ms = times.a_ms;
        r.plan_tuned_ms = before_ms * times.b_over_a;
        r.plan_check += "; then every kernel on one thread, kept";
        for (size_t i : filed) {
          TunedOp& t = r.ops[i];
          t.tactic = single.find_op(o.key, t.signature)->tactic;
          t.outcome = TunedOp::Outcome::switched;
          t.tuned_us = t.default_us * times.b_over_a;  // the plan's ratio: no kernel was timed so alone
          bank.put(OpEntry{o.key, t.signature, t.op_type, t.tactic, t.default_us, t.tuned_us, o.model});
        }
      }
    }
  }
  if (o.checkpoint) o.checkpoint(bank);
  if (o.progress) o.progress("checking the whole plan", 1, 1);
  return r;
}

}  // namespace geopt::ascend
