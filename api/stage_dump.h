#pragma once
// Stage dumps for --dump-graph (like GE's DUMP_GE_GRAPH): the graph as ONNX
// (opens in Netron), as Graphviz DOT, and as SVG when Graphviz's `dot` is installed.
#include <string>
#include <unordered_map>

#include "ir/graph.h"

namespace geopt::api {

// Writes DIR/STAGE.onnx, .dot (and .svg). `notes` add a line per node: to the
// DOT label, and to the node's doc_string in the ONNX file (Netron shows it).
void dump_stage(const std::string& dir, const std::string& stage, Model& model,
                const std::unordered_map<const Node*, std::string>& notes = {});

}  // namespace geopt::api
