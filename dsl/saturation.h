#pragma once
// Equality saturation: every iteration matches all enabled rules over the
// e-graph (through the automaton), applies every match by adding the rewrite's
// e-nodes and merging them with the matched value, then rebuilds. No rule is
// applied greedily: all alternatives stay side by side until extraction.
// Limits on iterations, e-nodes and time stop it (the report says which), and
// a backoff scheduler (egg's) throttles a rule that matches too often.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "dsl/ematcher.h"
#include "ops/op_registry.h"

namespace geopt::dsl {

// Input nodes that the rules carrying `tag` leave as they are: a match whose pattern
// covers one of them (directly, or through a node another rule made from it) is not
// applied. geopt's --keep_format: the `layout` rules keep a region in the model's format.
struct NodeExclusion {
  std::string tag;
  std::set<std::string> nodes;
};

struct SaturationLimits {
  // One iteration moves a layout conversion one op further: a 150-layer CNN needs about
  // 80 to carry its NC1HWC0 from the first conv to the last. The e-node and time limits
  // bound what an exploding rule set costs.
  int iterations = 256;
  size_t enodes = 50000;
  double seconds = 5.0;
  // After the first iteration, search only near what changed (egg's incremental
  // matching); off, every rule searches everywhere every iteration (the tests check
  // both find the same).
  bool incremental = true;
  // Check the e-graph's invariants after every rebuild (EGraph::check_invariants): tests.
  bool check_invariants = false;
  // Non-empty: only the rules carrying one of these tags apply (the canonical forms that
  // `rules match` and explain add to a model before matching).
  std::vector<std::string> only_tags = {};
  std::vector<NodeExclusion> exclusions = {};
};

// egg's BackoffScheduler: a rule with more matches than its limit in one
// iteration is banned for a while; both numbers double each time.
struct BackoffConfig {
  size_t match_limit = 1000;
  int ban_length = 5;
};

enum class StopReason { Saturated, IterationLimit, NodeLimit, TimeLimit };
const char* stop_reason_name(StopReason r);

struct RuleRunStats {
  size_t matched = 0;  // distinct sites matched (GE's match_times)
  size_t applied = 0;  // matches that changed the e-graph
  size_t banned = 0;   // times the scheduler banned the rule
  // Each ban: the iteration whose matches it dropped, and the first iteration it searches
  // again (1-based; past `iterations` when the run stopped first).
  std::vector<std::pair<int, int>> bans;
  size_t refused = 0;   // rewrites refused: ONNX's inference rejects what they make, or its type differs
  std::string refusal;  // the first refusal: rule, location, value, both types
  double search_ms = 0, apply_ms = 0;
};

struct IterationStats {
  size_t enodes = 0, classes = 0, applied = 0;
  double search_ms = 0, apply_ms = 0, rebuild_ms = 0;
};

// One applied match: which rule, the e-nodes' site id, the value it rewrote, and
// the input-graph nodes its pattern covered.
struct SiteRecord {
  int rule = -1;
  int32_t site = -1;
  ClassId target = 0;            // the last rewrite's
  std::vector<ClassId> targets;  // every rewrite's (QKVMerge rewrites three values)
  std::vector<std::string> replaced;
  ENode matched_root;   // the e-node the match was rooted at
  std::string refusal;  // set when the rewrite was refused (why)
  // The sites whose e-nodes the match read (it rewrote what they made): (rule, site).
  std::vector<std::pair<int32_t, int32_t>> built_on;
};

struct SaturationReport {
  StopReason stop = StopReason::Saturated;
  int iterations = 0;
  std::map<std::string, RuleRunStats> per_rule;
  std::vector<IterationStats> per_iteration;
  std::vector<SiteRecord> sites;
  double total_ms = 0;
};

// Folds (rules marked `fold`) run the kernels of `ops`.
SaturationReport saturate(EGraph& egraph, const RuleSet& rules, const OpRegistry& ops,
                          const std::vector<OpsetImport>& opsets, const SaturationLimits& limits = {},
                          const BackoffConfig& backoff = {});

// Applies one match to the e-graph; true when it added or merged something.
// `record`, when given, receives what was applied. `site_replaced` maps each site
// (rule, site) to the input nodes it replaced: read to follow a match through nodes
// other rules made, and filled for this one. A match `exclusions` covers is not applied.
bool apply_ematch(EGraph& egraph, const RuleSet& rules, const OpRegistry& ops, const EMatcher& matcher,
                  const EMatch& match, SiteRecord* record = nullptr,
                  std::map<std::pair<int, int32_t>, std::vector<std::string>>* site_replaced = nullptr,
                  const std::vector<NodeExclusion>* exclusions = nullptr);

}  // namespace geopt::dsl
