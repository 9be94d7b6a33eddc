#pragma once
// The order kernels are issued in (memory plans and streams are built on it): by
// default a topological order that keeps the bytes alive low, so large intermediates
// die early; or one of GE's traversals (ATC's --topo_sorting_mode). Deterministic:
// ties go to the node that came first.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace geopt::ascend {

// Bytes of a value with a static shape; throws geopt::Error naming the value
// when its shape or dtype is not static.
size_t static_bytes(const Value& v);

// Indices into graph.nodes() in issue order.
std::vector<size_t> memory_aware_order(const Graph& graph);

// GE's graph traversals, numbered as ATC's --topo_sorting_mode numbers them, and geopt's
// own (the default, which ATC has not).
enum class TopoSortingMode {
  memory_aware = -1,  // the order above
  bfs = 0,            // level by level: nodes in the order they become ready
  dfs = 1,            // each node's consumers before the rest (ATC's default)
  rdfs = 2,           // from the outputs back: each output's inputs, depth first, then it
  stable_rdfs = 3,    // the graph's own node order, where it is one (else the earliest ready node)
};

// "0".."3" as ATC takes them, or the names "bfs", "dfs", "rdfs", "stable_rdfs", "memory"
// (geopt's default); nullopt for anything else.
std::optional<TopoSortingMode> parse_topo_sorting_mode(const std::string& text);
std::string topo_sorting_mode_name(TopoSortingMode mode);

std::vector<size_t> execution_order(const Graph& graph, TopoSortingMode mode);

}  // namespace geopt::ascend
