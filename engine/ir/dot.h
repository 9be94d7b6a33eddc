#pragma once
// Graphviz DOT of a graph, for stage dumps: ops as boxes labelled with op type
// and name, fused ops (the ai.geopt domain) filled and labelled with the rule
// that made them, edges labelled with their tensor type. Initializers are left
// out to keep real models readable.
#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace geopt {

// `notes`: an extra label line per node (the lowering stage: step, stream, events, offsets).
std::string to_dot(const Graph& graph, const std::unordered_map<const Node*, std::string>& notes = {});

}  // namespace geopt
