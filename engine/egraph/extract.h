#pragma once
// Extraction: one e-node per needed e-class, minimizing the cost of the whole
// DAG (a value used twice is paid once). A greedy tree extractor pays shared
// subterms once per use, so it is only the baseline. The DAG-aware heuristic
// (in the spirit of extraction-gym's faster-greedy-dag) tracks the set of
// classes each choice pulls in; the exact extractor is branch and bound,
// seeded with the heuristic, for e-graphs small enough. Nodes of infinite cost
// (infeasible kernels) are never picked; cyclic selections are refused.
//
// Every extractor here runs in time near-linear in the e-graph on real models: the
// DAG heuristic compares a class's alternatives by walking only the classes where
// their programs differ (until every walk meets), and the improvement passes price
// a switch by what it adds and drops (egraph/selection.h).
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include "egraph/selection.h"

namespace geopt {

struct Extraction {
  Choice choice;              // class id -> index of the chosen e-node in eclass(c).nodes (kNoChoice: none)
  double cost = kInfeasible;  // DAG cost: every chosen node reachable from the roots, once
  std::string method;
  bool optimal = false;  // proven (exact search finished)
  size_t explored = 0;   // search states (exact)
  size_t steps = 0;      // classes visited (extraction_steps) by extract_best
};

Extraction extract_greedy_tree(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost);
Extraction extract_greedy_dag(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost);
// Improves a selection where a class can switch to an alternative whose children
// the selection computes already (a projection of a tuple that is chosen anyway:
// AddLayerNorm's Sum instead of a separate Add): greedy passes price each class
// alone and cannot see that sharing. Keeps only switches that lower the DAG cost.
void reuse_selected(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost, Extraction& x);
// Improves a selection where one switch adds work that other classes can then share
// (QKVMerge: one MatMul whose three pieces the Q, K and V classes read): the switch
// and the switches it makes pay near the added work are priced together and kept when
// the whole lowers the DAG cost. Greedy passes and reuse_selected price one switch at
// a time, and a switch that adds shared work never pays alone.
void share_work(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost, Extraction& x);
// The input program: in every class, the e-node that came from the input graph.
Extraction extract_original(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost);
// Exact; gives up (optimal = false, the best found returned) past `budget` search
// states. Starts from `seed` where given, else from the better of the DAG heuristic and
// the input program.
Extraction extract_exact(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost,
                         size_t budget = 200000, const Extraction* seed = nullptr);

// How extract_best chooses (geopt's --extraction, a knob geopt tune --job_type 1 tries):
//   automatic  exact on small e-graphs, the DAG heuristic (or the input program) above;
//   greedy     the DAG heuristic (or the input program) whatever the size;
//   exact      branch and bound on any size from the heuristic's program, within a
//              state budget that shrinks as the e-graph grows: never worse than greedy.
enum class ExtractionMode { automatic, greedy, exact };
const char* extraction_mode_name(ExtractionMode m);  // "auto", "greedy", "exact"
std::optional<ExtractionMode> parse_extraction_mode(std::string_view name);
// In `automatic` mode: exact when the reachable e-graph is small (at most `exact_limit`
// classes with a choice and 8 times as many classes in all), else the better of the DAG
// heuristic and the input program (the heuristic can pick both layouts of one value and
// so compute it twice; the input program is always there to fall back on). The other
// modes as ExtractionMode says.
Extraction extract_best(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost,
                        size_t exact_limit = 40, ExtractionMode mode = ExtractionMode::automatic);

// The DAG cost of a selection (infinite when it is cyclic or incomplete).
double dag_cost(const EGraph& g, const std::vector<ClassId>& roots, const Choice& choice,
                const NodeCost& cost);

// Builds the extracted program as an IR model: the original's inputs, outputs and
// metadata, with names kept where a class came from a named value or node.
// `origins`, when given, receives for each output node made from a rule's e-node
// its (rule, site) (ENode::origin, ENode::site).
Model extraction_to_model(const Model& original, const GraphEGraph& geg, const Extraction& x,
                          std::map<std::string, std::pair<int32_t, int32_t>>* origins = nullptr);

}  // namespace geopt
