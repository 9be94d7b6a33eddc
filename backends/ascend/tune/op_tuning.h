#pragma once
// Operator tuning (AOE's OPAT; geopt tune --job_type 2). For each distinct op signature
// of a compiled plan, the host tactics its kernel honours (engine/eval/host_tactic.h) are
// measured on this machine, one knob at a time: the conv layout, then its algorithm,
// then the channel-move strategy, then (when asked) the thread count. Each candidate is timed against the
// incumbent interleaved (rounds in rotated order), and replaces it only when it wins beyond the run-to-run
// spread: its median at least `min_gain` below the incumbent's, and its upper quartile below the incumbent's
// lower quartile. Every signature measured is filed in the knowledge bank (its tactic, or none where the
// kernel's own choice held). Last, the whole plan runs with and without this run's tactics, interleaved;
// tactics that do not pay there are taken back (those of the thread count first, then all).
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "eval/host_tensor.h"
#include "plan.pb.h"
#include "tune/knowledge_bank.h"

namespace geopt::ascend {

struct OpTuneOptions {
  BankKey key;
  std::string model;  // named in the bank's entries
  // --tune_ops_file: only these kernels (both empty: all); an op type bare or with its
  // domain ("ai.geopt::FusedConv"). A name no kernel has is an error.
  std::set<std::string> op_names, op_types;
  bool reload = false;  // resume: signatures the bank holds for the key are not measured again
  // 0: none. Measuring stops once it has run this long (one signature at least is
  // measured); the signatures not reached keep their tactic, and --reload goes on.
  double time_budget_s = 0;
  // Also try fewer threads per kernel, and then the whole plan on one thread. Off by
  // default: on EfficientNet-B0 the thread switches one run kept made the plan 2.5%
  // faster on a quiet machine and 13% slower once the cores were shared (docs/TUNING.md).
  bool thread_counts = false;
  int rounds = 7;          // interleaved rounds per comparison
  double min_gain = 0.03;  // a switch saves at least this share of the incumbent's median
  std::function<void(std::string_view stage, size_t done, size_t total)> progress;
  std::function<void(const KnowledgeBank&)> checkpoint;  // after each signature (the bank written)
};

struct TunedOp {
  enum class Outcome { switched, kept, from_bank, not_reached, taken_back, nothing_to_try };
  std::string signature, op_type;
  std::string kernel;  // its first kernel's name
  size_t kernels = 0;  // kernels of the plan with this signature
  size_t candidates = 0;
  double default_us = 0, tuned_us = 0;
  std::string tactic;  // the chosen one ("" the kernel's own)
  Outcome outcome = Outcome::kept;
};

struct OpTuneResult {
  std::vector<TunedOp> ops;  // in plan order of their first kernel
  // The whole plan, medians over interleaved blocks (ms): untuned, and with the tactics kept.
  double plan_default_ms = 0, plan_tuned_ms = 0;
  std::string plan_check;  // what the whole-plan check kept ("every switch", ...)
  // What each of its timings read (the pairs' ratios' median and upper quartile).
  std::vector<std::string> plan_ratios;
  bool budget_hit = false;
};

std::string outcome_name(TunedOp::Outcome outcome);

// Tunes `plan` (static shapes) on `inputs`, filing into `bank`. Throws geopt::Error on a
// plan it cannot run.
OpTuneResult tune_operators(const plan::Plan& plan, const std::map<std::string, HostTensor>& inputs,
                            KnowledgeBank& bank, const OpTuneOptions& options);

// Stamps each kernel of `plan` (its gears' and bodies' too) whose signature the bank
// holds under `key` with that tactic (Kernel.host_tactic, tactic_source "bank").
// Returns how many kernels took one.
size_t apply_op_bank(plan::Plan& plan, const KnowledgeBank& bank, const BankKey& key);

}  // namespace geopt::ascend
