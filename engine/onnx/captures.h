#pragma once
// Control-flow bodies (If branches, Loop and Scan bodies) read values of the graphs
// around them by name. In geopt's IR those values are explicit: each control-flow node
// lists them after its own inputs, and its attribute kCapturesAttr names them as its
// bodies refer to them. So every pass sees them as inputs (uses, dead code, the
// e-graph, memory lifetimes, stream events); export drops them again and, where a pass
// renamed a captured value, renames the bodies' references to match.
#include <map>
#include <set>
#include <string>

#include "ir/graph.h"

namespace onnx {
class GraphProto;
}

namespace geopt {

inline constexpr const char* kCapturesAttr = "geopt.captures";

// The names a body (and the bodies nested in it) uses without defining.
std::set<std::string> outer_names(const onnx::GraphProto& body);
// Appends the captured values of every control-flow node of g as inputs. In a body
// (`outer_refs`), a name g does not define becomes a value with no producer first (an
// outer-scope reference of g itself); in a model's graph every name must resolve.
void make_captures_explicit(Graph& g, bool outer_refs = false);
// How many trailing inputs of n are captures (0 for other nodes).
size_t capture_count(const Node& n);
// Every name a body and the bodies nested in it define (inputs, initializers, node outputs).
std::set<std::string> names_defined(const std::string& serialized_body);
// A serialized body with its references to the enclosing graph renamed (old -> new);
// names the body defines itself shadow outer ones and are left alone.
std::string rename_outer_references(const std::string& serialized_body,
                                    const std::map<std::string, std::string>& renames);

}  // namespace geopt
