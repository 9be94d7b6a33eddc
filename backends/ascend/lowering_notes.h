#pragma once
// How each kernel was lowered, one line per node, for the lowering stage of
// --dump-graph (GE's DUMP_GE_GRAPH writes the same facts as node attributes):
// its step in the execution order, its stream, the events it waits on and
// records, and where its outputs live in the activation pool.
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"
#include "memory_plan.h"
#include "stream_plan.h"

namespace geopt::ascend {

std::unordered_map<const Node*, std::string> lowering_notes(const Graph& graph,
                                                            const std::vector<size_t>& order,
                                                            const MemoryPlan& memory,
                                                            const StreamPlan& streams);

}  // namespace geopt::ascend
