#include "passes/sink_into_branches.h"
#include "ops/op_traits.h"

#include <onnx/onnx_pb.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "onnx/captures.h"
#include "onnx/proto_types.h"
#include "passes/control_flow_types.h"
#include "util/error.h"

namespace geopt {
namespace {

constexpr const char* kBranches[] = {"then_branch", "else_branch"};
// Readers moved into one If at most: a bound on the work, far above what models need.
constexpr size_t kMostMoved = 64;

Attribute* attribute(Node& n, const char* name) {
  for (Attribute& a : n.attributes)
    if (a.name == name) return &a;
  return nullptr;
}

// For each output of If n, whether its branches give it two different static shapes
// (throws where a branch cannot be typed).
std::vector<bool> branch_dependent(const Node& n, const Model& model, const OpRegistry& ops) {
  std::vector<bool> differs(n.outputs().size(), false);
  auto [then_types, else_types] = branch_output_types(n, model, ops);
  for (size_t i = 0; i < differs.size() && i < then_types.size() && i < else_types.size(); ++i) {
    const ValueType& a = then_types[i];
    const ValueType& b = else_types[i];
    differs[i] =
        a.shape && b.shape && a.shape->is_static() && b.shape->is_static() && !(*a.shape == *b.shape);
  }
  return differs;
}

// A reader of an output of If n that may move into its branches: not control flow itself,
// and every other input of it computed before n (or a graph input or a constant), so the
// branches can capture it. Null when there is none.
Node* movable_reader(const Graph& g, const Node& n, const Value& v) {
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < g.nodes().size(); ++i) position[g.nodes()[i].get()] = i;
  const size_t at = position.at(&n);
  for (const Use& u : v.uses()) {
    Node* reader = u.node;
    if (is_control_flow(*reader)) continue;
    const bool ready = std::all_of(reader->inputs().begin(), reader->inputs().end(), [&](const Value* in) {
      return !in || in->producer() == &n || !in->producer() || position.at(in->producer()) < at;
    });
    if (ready) return reader;
  }
  return nullptr;
}

// A name no body of n defines and the enclosing graph does not hold.
std::string fresh_name(const Graph& g, const std::vector<std::set<std::string>>& defined,
                       const std::string& base) {
  for (size_t k = 0;; ++k) {
    std::string name = base + (k ? "_" + std::to_string(k) : "");
    if (g.find_value(name)) continue;
    if (std::none_of(defined.begin(), defined.end(), [&](const auto& d) { return d.count(name) > 0; }))
      return name;
  }
}

// Moves `reader` of If n's outputs into both branches; returns the If that replaces n.
// Null (nothing changed) where a branch defines a name the reader reads from outside.
Node* move_reader(Model& model, Node* n, Node* reader) {
  Graph& g = *model.graph;
  std::vector<onnx::GraphProto> bodies(2);
  std::vector<std::set<std::string>> defined(2);
  for (size_t b = 0; b < 2; ++b) {
    const Attribute* a = n->attr(kBranches[b]);
    if (!a || a->kind != AttrKind::Graph || a->opaque.size() != 1 || !bodies[b].ParseFromString(a->opaque[0]))
      return nullptr;
    defined[b] = names_defined(a->opaque[0]);
  }
  // The reader's inputs from outside the If, as captures (by their names).
  std::vector<Value*> inputs = n->inputs();
  Attribute captures = n->attr(kCapturesAttr) ? *n->attr(kCapturesAttr) : Attribute{};
  captures.name = kCapturesAttr;
  captures.kind = AttrKind::Strings;
  const size_t first_capture = inputs.size() - captures.strings.size();
  for (const Value* in : reader->inputs()) {
    if (!in || in->producer() == n) continue;
    if (defined[0].count(in->name()) || defined[1].count(in->name())) return nullptr;  // shadowed
    const auto named = std::find(captures.strings.begin(), captures.strings.end(), in->name());
    if (named != captures.strings.end() &&
        inputs[first_capture + static_cast<size_t>(named - captures.strings.begin())] == in)
      continue;
    if (named != captures.strings.end()) return nullptr;  // the name captures another value
    captures.strings.push_back(in->name());
    inputs.push_back(const_cast<Value*>(in));
  }
  // The reader's copy in each branch, its outputs the branch's new outputs.
  std::vector<std::string> out_names;
  for (const Value* out : reader->outputs())
    out_names.push_back(out ? fresh_name(g, defined, out->name() + "_in_branch") : "");
  for (size_t b = 0; b < 2; ++b) {
    onnx::NodeProto* copy = bodies[b].add_node();
    copy->set_op_type(reader->op_type);
    copy->set_domain(reader->domain);
    if (!reader->name.empty()) copy->set_name(fresh_name(g, defined, reader->name + "_in_branch"));
    for (const Value* in : reader->inputs())
      copy->add_input(!in                   ? ""
                      : in->producer() == n ? bodies[b].output(static_cast<int>(in->producer_output())).name()
                                            : in->name());
    for (const std::string& name : out_names) copy->add_output(name);
    for (const Attribute& a : reader->attributes) onnx_io::attribute_to_proto(a, copy->add_attribute());
    for (size_t k = 0; k < out_names.size(); ++k) {
      if (out_names[k].empty()) continue;
      onnx::ValueInfoProto* o = bodies[b].add_output();
      o->set_name(out_names[k]);
      ValueType dtype_only;
      dtype_only.dtype = reader->outputs()[k]->type.dtype;
      onnx_io::value_type_to_proto(dtype_only, o->mutable_type());
    }
  }
  // The If's outputs: those still read (or graph outputs) and the reader's.
  const std::vector<Value*> graph_outputs = g.outputs();
  auto kept = [&](const Value* v) {
    if (!v) return false;
    if (std::find(graph_outputs.begin(), graph_outputs.end(), v) != graph_outputs.end()) return true;
    return std::any_of(v->uses().begin(), v->uses().end(), [&](const Use& u) { return u.node != reader; });
  };
  std::vector<Value*> old_outputs;
  for (size_t i = n->outputs().size(); i-- > 0;) {
    if (kept(n->outputs()[i])) continue;
    for (auto& body : bodies) body.mutable_output()->DeleteSubrange(static_cast<int>(i), 1);
  }
  for (Value* v : n->outputs())
    if (kept(v)) old_outputs.push_back(v);
  for (Value* v : reader->outputs())
    if (v) old_outputs.push_back(v);
  // A new If with new output values that take over the old ones' uses and names.
  std::vector<Value*> new_outputs;
  for (Value* old : old_outputs) {
    Value* v = g.add_value(g.unique_name(old->name() + "_sunk"));
    v->type = old->type;
    if (old->producer() == reader) v->type.shape.reset();  // now a branch result: typed again later
    new_outputs.push_back(v);
  }
  Node* moved = g.add_node("If", "", "", inputs, new_outputs);  // named as n once n is gone
  for (const Attribute& a : n->attributes) {
    if (a.name == kCapturesAttr) continue;
    moved->attributes.push_back(a);
  }
  for (size_t b = 0; b < 2; ++b) attribute(*moved, kBranches[b])->opaque[0] = bodies[b].SerializeAsString();
  if (!captures.strings.empty()) moved->attributes.push_back(captures);
  for (size_t k = 0; k < old_outputs.size(); ++k) {
    g.replace_all_uses(old_outputs[k], new_outputs[k]);
    const std::string name = old_outputs[k]->name();
    g.rename_value(old_outputs[k], g.unique_name(name + "_replaced"));
    g.rename_value(new_outputs[k], name);
  }
  g.remove_node(reader);
  const std::string name = n->name;
  g.remove_node(n);
  if (!name.empty()) g.rename_node(moved, name);
  if (!g.topological_sort()) throw InternalError("moving a reader into an If's branches made a cycle");
  return moved;
}

}  // namespace

size_t sink_readers_into_branches(Model& model, const OpRegistry& ops) {
  Graph& g = *model.graph;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes())
    if (control_flow_of(*n) == ControlFlow::If) nodes.push_back(n.get());
  size_t moved_total = 0;
  for (Node* n : nodes) {
    for (size_t moved = 0; moved < kMostMoved; ++moved) {
      std::vector<bool> differs;
      try {
        differs = branch_dependent(*n, model, ops);
      } catch (const Error&) {
        break;  // a branch that cannot be typed here: the If stays as it is
      }
      Node* reader = nullptr;
      for (size_t i = 0; i < differs.size() && !reader; ++i)
        if (differs[i] && n->outputs()[i]) reader = movable_reader(g, *n, *n->outputs()[i]);
      if (!reader) break;
      spdlog::debug("sink: {} moves into the branches of {}", reader->describe(), n->describe());
      Node* replaced = move_reader(model, n, reader);
      if (!replaced) break;
      n = replaced;
      ++moved_total;
    }
  }
  return moved_total;
}

}  // namespace geopt
