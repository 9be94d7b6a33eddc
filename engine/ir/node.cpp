#include "ir/node.h"

#include <onnx/onnx_pb.h>

#include "ops/op_traits.h"

namespace geopt {

const Attribute* Node::attr(std::string_view attr_name) const {
  for (const auto& a : attributes)
    if (a.name == attr_name) return &a;
  return nullptr;
}

namespace {

// Whether a body draws random values: a random op (or a Dropout in training mode) in it
// or in a body nested in it.
bool graph_draws(const onnx::GraphProto& g) {
  for (const auto& n : g.node()) {
    if (is_onnx_domain(n.domain())) {
      if (standard_op_traits(n.domain(), n.op_type()).random) return true;
      if (n.op_type() == "Dropout" && n.input_size() > 2 && !n.input(2).empty()) return true;
    }
    for (const auto& a : n.attribute()) {
      if (a.has_g() && graph_draws(a.g())) return true;
      for (const auto& sub : a.graphs())
        if (graph_draws(sub)) return true;
    }
  }
  return false;
}

}  // namespace

bool Node::is_nondeterministic() const {
  if (!domain.empty()) return false;
  if (op_type == "Dropout") return input(2) != nullptr;
  if (standard_op_traits(domain, op_type).random) return true;
  // A control-flow node whose body draws is a draw too: never folded or merged.
  if (control_flow_of(*this) != ControlFlow::None)
    for (const auto& a : attributes)
      if (a.kind == AttrKind::Graph)
        for (const auto& bytes : a.opaque) {
          onnx::GraphProto g;
          if (g.ParseFromString(bytes) && graph_draws(g)) return true;
        }
  return false;
}

std::string Node::describe() const {
  std::string op = domain.empty() ? op_type : domain + "::" + op_type;
  if (!name.empty()) return op + " '" + name + "'";
  return op + " (unnamed node #" + std::to_string(index_hint_) + ")";
}

}  // namespace geopt
