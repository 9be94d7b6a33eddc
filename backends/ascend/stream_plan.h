#pragma once
// Stream assignment, as GE's logical stream allocator does it: a kernel
// continues its first producer's stream when that producer has not been
// continued yet, so independent branches land on different streams and can
// overlap. A view the memory plan aliases (a Reshape, a Split along an outer
// axis) launches no work: it stays on its producer's stream and shares its
// continuation. Every dependency between streams (data, and reuse of freed bytes)
// gets an event: recorded after the source kernel, waited on before the
// target. Events already implied by others are not emitted.
#include <cstddef>
#include <vector>

#include "ir/graph.h"
#include "memory_plan.h"

namespace geopt::ascend {

struct StreamEvent {
  size_t from = 0;  // positions in the execution order
  size_t to = 0;
};

struct StreamPlan {
  size_t stream_count = 1;
  std::vector<size_t> stream_of;                        // per position in the order
  std::vector<StreamEvent> events;                      // sorted by (to, from)
  std::vector<std::pair<size_t, size_t>> dependencies;  // (before, after) the events must honour
  size_t cross_stream_dependencies = 0;                 // before redundancy removal
};

struct StreamPlanOptions {
  size_t max_streams = 4;  // 1: --enable-single-stream
};

StreamPlan plan_streams(const Graph& graph, const std::vector<size_t>& order, const MemoryPlan& memory,
                        const StreamPlanOptions& options = {});

// Throws geopt::Error when a dependency between streams is not ordered by
// stream order and events, or an event points backwards (a possible cycle).
void validate_stream_plan(const StreamPlan& plan);

}  // namespace geopt::ascend
