#include "passes/inline_if.h"
#include "ops/op_traits.h"

#include <spdlog/spdlog.h>

#include <unordered_map>
#include <unordered_set>

#include "ir/value.h"
#include "onnx/captures.h"
#include "onnx/import.h"
#include "util/error.h"

namespace geopt {
namespace {

bool constant_truth(const Tensor& t) {
  if (t.element_count() != 1) throw Error("an If condition must hold one element");
  for (std::byte b : t.bytes())
    if (b != std::byte{0}) return true;
  return false;
}

// Replaces If node `n` of g by the nodes of its branch `attr`.
void inline_branch(Graph& g, Node* n, const char* attr) {
  const Attribute* a = n->attr(attr);
  if (!a || a->kind != AttrKind::Graph || a->opaque.size() != 1)
    throw Error(n->describe() + ": needs the graph attribute '" + attr + "'");
  std::unique_ptr<Graph> branch = import_subgraph(a->opaque[0], n->describe() + " " + attr);
  if (branch->outputs().size() != n->outputs().size())
    throw Error(n->describe() + ": " + attr + " has " + std::to_string(branch->outputs().size()) +
                " outputs for the node's " + std::to_string(n->outputs().size()));
  std::unordered_map<const Value*, Value*> map;
  // References to the enclosing graph: the If's captured inputs, by the names the branch uses.
  const size_t k = capture_count(*n), first = n->inputs().size() - k;
  if (const Attribute* names = n->attr(kCapturesAttr))
    for (size_t i = 0; i < k; ++i)
      if (Value* inner = branch->find_value(names->strings[i]);
          inner && !inner->producer() && !inner->initializer)
        map[inner] = n->input(first + i);
  const std::string prefix = (n->name.empty() ? std::string("If") : n->name) + "/" + attr + "/";
  for (const Value* v : branch->initializers()) {
    Value* outer = g.add_value(g.unique_name(prefix + v->name()));
    outer->type = v->type;
    g.add_initializer(outer, v->initializer);
    map[v] = outer;
  }
  for (const auto& bn : branch->nodes()) {
    std::vector<Value*> ins, outs;
    for (const Value* in : bn->inputs()) {
      if (!in) {
        ins.push_back(nullptr);
        continue;
      }
      auto it = map.find(in);
      if (it == map.end())
        throw Error(n->describe() + ": " + attr + " reads '" + in->name() +
                    "', which the If does not capture");
      ins.push_back(it->second);
    }
    for (const Value* out : bn->outputs()) {
      if (!out) {
        outs.push_back(nullptr);
        continue;
      }
      Value* v = g.add_value(g.unique_name(prefix + out->name()));
      v->type = out->type;
      map[out] = v;
      outs.push_back(v);
    }
    Node* copy = g.add_node(bn->op_type, bn->domain, bn->name.empty() ? "" : g.unique_name(prefix + bn->name),
                            ins, outs);
    copy->attributes = bn->attributes;
    copy->doc_string = bn->doc_string;
  }
  // The If's outputs keep their names (they may be graph outputs): the branch's results
  // take over their uses, then their names.
  std::unordered_set<const Value*> taken;
  for (size_t i = 0; i < n->outputs().size(); ++i) {
    Value* old = n->outputs()[i];
    if (!old) continue;
    auto it = map.find(branch->outputs()[i]);
    if (it == map.end())
      throw Error(n->describe() + ": " + attr + " output '" + branch->outputs()[i]->name() +
                  "' is never computed");
    Value* result = it->second;
    if (result->producer() == nullptr || result->initializer || !taken.insert(result).second) {
      // A branch that returns an outer value, a constant or one value twice: an Identity
      // gives each output a value of its own.
      Value* copy = g.add_value(g.unique_name(old->name() + "_inlined"));
      copy->type = old->type;
      g.add_node("Identity", "", "", {result}, {copy});
      result = copy;
    }
    if (result->type.dtype == DType::Undefined) result->type = old->type;
    g.replace_all_uses(old, result);
    const std::string name = old->name();
    g.rename_value(old, g.unique_name(name + "_replaced"));
    g.rename_value(result, name);
  }
}

}  // namespace

size_t inline_constant_ifs(Model& model, bool remove_dead_code) {
  Graph& g = *model.graph;
  std::vector<Node*> ifs;
  for (const auto& n : g.nodes())
    if (control_flow_of(*n) == ControlFlow::If && n->input(0) && g.constant_value(n->input(0)))
      ifs.push_back(n.get());
  if (ifs.empty()) return 0;
  for (Node* n : ifs) {
    const bool cond = constant_truth(*g.constant_value(n->input(0)));
    spdlog::debug("inline: {} takes its {} branch", n->describe(), cond ? "then" : "else");
    inline_branch(g, n, cond ? "then_branch" : "else_branch");
  }
  // The Ifs, now unread (only after the loop: it frees nodes `ifs` points at); what only
  // they read stays when the caller keeps dead code.
  if (remove_dead_code)
    g.remove_dead_code();
  else
    for (Node* n : ifs) g.remove_node(n);
  if (!g.topological_sort()) throw InternalError("inlining an If made a cycle");
  return ifs.size();
}

}  // namespace geopt
