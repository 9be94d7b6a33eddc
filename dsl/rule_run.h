#pragma once
// The one way rules rewrite a model: the model's e-graph, equality saturation
// with the rules, extraction of the cheapest program under the caller's cost
// (the Ascend cost model in every geopt command; dsl/ knows no hardware), and the
// program back as a model. optimize, compile, `rules apply`, the rules' in-file
// tests and explain's re-check all call this.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "dsl/ematcher.h"
#include "dsl/saturation.h"
#include "egraph/extract.h"

namespace geopt::dsl {

struct RuleRunOptions {
  SaturationLimits limits;
  BackoffConfig backoff;
  size_t exact_limit = 40;  // exact extraction up to this many classes with a choice
  ExtractionMode extraction = ExtractionMode::automatic;
};

struct RuleRun {
  Model model;  // the extracted program, with every new op's domain imported
  GraphEGraph egraph;
  SaturationReport saturation;
  Extraction extraction;
  NodeCost cost;  // the caller's, memoized
  // The rule sites whose rewrite the result kept (GE's effect_times): a site with an
  // e-node in the chosen program, or a fusion kept in another form (a layout rewrite
  // of the fused value covering the same input nodes).
  std::set<std::pair<int32_t, int32_t>> kept_sites;
  std::map<std::string, size_t> selected;  // per rule: kept sites
  // Each node of `model` made from a rule's e-node: (rule, site).
  std::map<std::string, std::pair<int32_t, int32_t>> origins;
  double egraph_ms = 0, saturate_ms = 0, extract_ms = 0;
};

// The program an extraction selects, as a model whose imports include every new op's domain.
Model extracted_model(const Model& input, const GraphEGraph& geg, const Extraction& x,
                      std::map<std::string, std::pair<int32_t, int32_t>>* origins = nullptr);

RuleRun run_rules(const Model& input, const RuleSet& rules, const OpRegistry& ops, const NodeCost& cost,
                  const RuleRunOptions& options = {});

// Every match of one rule on an e-graph, each root class once, at most `limit` roots.
std::vector<EMatch> rule_matches(const RuleSet& rules, int rule, const GraphEGraph& geg,
                                 const std::vector<OpsetImport>& opsets, size_t limit = SIZE_MAX);

// The program with one site's rewrite taken, everything else as `cost` prefers: every
// class holding one of its e-nodes chooses it, the value it rewrote does not choose the
// e-node it matched (a rewrite into a value that was there makes no e-node), and a
// fold's class (`folded`) chooses its constant. nullopt when no such program exists
// (the rewrite is cyclic there).
std::optional<Model> program_with_site(const Model& input, const GraphEGraph& geg, const NodeCost& cost,
                                       const SiteRecord& site, std::optional<ClassId> folded);

// The model with one match of `rule` applied once, at the match whose root value is
// named `root`, and nothing else rewritten: what the soundness check runs. nullopt
// when the rule does not match there or its rewrite cannot be taken.
std::optional<Model> apply_once(const Model& model, const RuleSet& rules, const OpRegistry& ops, int rule,
                                const std::string& root, const NodeCost& cost);

}  // namespace geopt::dsl
