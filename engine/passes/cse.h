#pragma once
// Common subexpressions in an IR graph, as the e-graph's hash-consing has them: equal
// constants become one, then nodes computing the same op of the same inputs become
// one. The direct rule driver runs it so that an exporter's duplicated `x - mean`
// (ONNX Runtime's "Sub duplicated" LayerNorm variant) is the one shared value a
// pattern's `let` expects. Random ops and graph outputs are left alone.
#include <cstddef>

#include "ir/graph.h"

namespace geopt {

struct CseReport {
  size_t constants = 0;  // constants merged into an equal one
  size_t nodes = 0;      // nodes merged into an equal one
};

// Redirects the uses of each duplicate to the first of its kind; the duplicates are
// left dead (remove_dead_code removes them).
CseReport eliminate_common_subexpressions(Graph& g);

}  // namespace geopt
