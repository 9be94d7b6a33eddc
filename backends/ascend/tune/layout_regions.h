#pragma once
// The NC1HWC0 regions of an optimized model: its nodes joined by the values they pass in
// NC1HWC0 (a value's producer with each of its consumers; a value is in NC1HWC0 where its
// producer writes that format, or is an op of no format of its own, an elementwise op,
// writing a 5-D value from an NC1HWC0 input), each region with the input
// model's nodes it stands for (the provenance optimize records on fused nodes). Subgraph
// tuning tries each region kept in the model's own format (--keep_format) as a strategy
// setting, where the `layout` tag can only keep the whole model out of NC1HWC0.
#include <string>
#include <vector>

#include "ir/graph.h"

namespace geopt::ascend {

struct LayoutRegion {
  std::vector<std::string> nodes;        // the optimized model's, in graph order
  std::vector<std::string> input_nodes;  // the input model's nodes they stand for, in its order
};

// Largest first (by input nodes; ties by where the first input node is). Regions that stand for
// no node of `input` are left out.
std::vector<LayoutRegion> layout_regions(const Model& optimized, const Model& input);

}  // namespace geopt::ascend
