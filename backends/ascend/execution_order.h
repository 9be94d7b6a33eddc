#pragma once
// The order kernels are issued in: a topological order that keeps the bytes
// alive low, so large intermediates die early (memory plans and streams are
// built on it). Deterministic: ties go to the node that came first.
#include <cstddef>
#include <vector>

#include "ir/graph.h"

namespace geopt::ascend {

// Bytes of a value with a static shape; throws geopt::Error naming the value
// when its shape or dtype is not static.
size_t static_bytes(const Value& v);

// Indices into graph.nodes() in issue order.
std::vector<size_t> memory_aware_order(const Graph& graph);

}  // namespace geopt::ascend
