#include "egraph/extract.h"

#include <algorithm>
#include <functional>
#include <set>

#include "util/error.h"

namespace geopt {
namespace {

// Classes reached from the roots through the e-nodes `nodes_of` gives for each class.
template <class NodesOf>
std::set<ClassId> walk(const EGraph& g, const std::vector<ClassId>& roots, NodesOf nodes_of) {
  std::set<ClassId> seen;
  std::vector<ClassId> stack;
  for (ClassId r : roots) stack.push_back(g.find(r));
  while (!stack.empty()) {
    ClassId c = stack.back();
    stack.pop_back();
    if (seen.count(c)) continue;
    const std::vector<const ENode*> nodes = nodes_of(c);
    if (nodes.empty()) continue;
    seen.insert(c);
    for (const ENode* n : nodes)
      for (ClassId child : n->children)
        if (child != kAbsent) stack.push_back(g.find(child));
  }
  return seen;
}

std::set<ClassId> reachable(const EGraph& g, const std::vector<ClassId>& roots) {
  return walk(g, roots, [&](ClassId c) {
    std::vector<const ENode*> all;
    for (const ENode& n : g.eclass(c).nodes) all.push_back(&n);
    return all;
  });
}

// The classes a selection computes: reachable from the roots through chosen nodes.
std::set<ClassId> selected_classes(const EGraph& g, const std::vector<ClassId>& roots, const std::map<ClassId, size_t>& choice) {
  return walk(g, roots, [&](ClassId c) {
    auto it = choice.find(c);
    return it == choice.end() ? std::vector<const ENode*>{} : std::vector<const ENode*>{&g.eclass(c).nodes.at(it->second)};
  });
}

}  // namespace

void reuse_selected(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost, Extraction& x) {
  for (int pass = 0; pass < 8; ++pass) {
    bool improved = false;
    const std::set<ClassId> selected = selected_classes(g, roots, x.choice);
    for (ClassId c : selected) {
      const auto& nodes = g.eclass(c).nodes;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (i == x.choice.at(c)) continue;
        bool computed_already = true;
        for (ClassId ch : nodes[i].children) computed_already = computed_already && (ch == kAbsent || selected.count(g.find(ch)));
        if (!computed_already) continue;
        auto trial = x.choice;
        trial[c] = i;
        const double trial_cost = dag_cost(g, roots, trial, cost);  // infinite when it closes a cycle
        if (trial_cost < x.cost - 1e-9) {
          x.choice = std::move(trial);
          x.cost = trial_cost;
          improved = true;
          break;
        }
      }
    }
    if (!improved) break;
  }
}

double dag_cost(const EGraph& g, const std::vector<ClassId>& roots, const std::map<ClassId, size_t>& choice, const NodeCost& cost) {
  std::map<ClassId, int> state;  // 1 visiting, 2 done
  double total = 0;
  std::function<bool(ClassId)> visit = [&](ClassId c) {
    c = g.find(c);
    int& s = state[c];
    if (s == 2) return true;
    if (s == 1) return false;  // a cycle
    s = 1;
    auto it = choice.find(c);
    if (it == choice.end()) return false;
    const ENode& n = g.eclass(c).nodes.at(it->second);
    total += cost(g, c, n);
    for (ClassId child : n.children)
      if (child != kAbsent && !visit(child)) return false;
    state[c] = 2;
    return true;
  };
  for (ClassId r : roots)
    if (!visit(r)) return kInfeasible;
  return total;
}

Extraction extract_greedy_tree(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost) {
  std::map<ClassId, double> best;
  Extraction x;
  x.method = "greedy tree";
  auto ids = g.class_ids();
  for (bool changed = true; changed;) {  // Bellman-Ford style fixpoint
    changed = false;
    for (ClassId c : ids) {
      const auto& nodes = g.eclass(c).nodes;
      for (size_t i = 0; i < nodes.size(); ++i) {
        double total = cost(g, c, nodes[i]);
        for (ClassId child : nodes[i].children) {
          if (child == kAbsent) continue;
          auto it = best.find(g.find(child));
          total = it == best.end() ? kInfeasible : total + it->second;
        }
        auto cur = best.find(c);
        if (total < kInfeasible && (cur == best.end() || total < cur->second)) {
          best[c] = total;
          x.choice[c] = i;
          changed = true;
        }
      }
    }
  }
  x.cost = dag_cost(g, roots, x.choice, cost);
  return x;
}

// Classes children-first (post-order over every e-node's children; cycles cut where
// they close), so a bottom-up pass sees most children settled already.
std::vector<ClassId> children_first(const EGraph& g) {
  // Iterative DFS: model depth (thousands of layers) must not bound the native stack.
  std::vector<ClassId> order;
  std::set<ClassId> done, open;
  struct Frame {
    ClassId id;
    std::vector<ClassId> children;
    std::size_t next = 0;
  };
  for (ClassId root : g.class_ids()) {
    std::vector<Frame> stack;
    auto push = [&](ClassId c) {
      c = g.find(c);
      if (done.count(c) || !open.insert(c).second) return;
      Frame f{c, {}, 0};
      for (const ENode& n : g.eclass(c).nodes)
        for (ClassId child : n.children)
          if (child != kAbsent) f.children.push_back(child);
      stack.push_back(std::move(f));
    };
    push(root);
    while (!stack.empty()) {
      Frame& top = stack.back();
      if (top.next < top.children.size()) {
        push(top.children[top.next++]);
        continue;
      }
      open.erase(top.id);
      done.insert(top.id);
      order.push_back(top.id);
      stack.pop_back();
    }
  }
  return order;
}

Extraction extract_greedy_dag(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost) {
  // For each class, the classes (with their chosen node's cost) its best choice pulls in.
  std::map<ClassId, std::map<ClassId, double>> sets;
  std::map<ClassId, double> totals;
  Extraction x;
  x.method = "greedy DAG";
  auto ids = children_first(g);
  for (int round = 0; round < 1000; ++round) {
    bool changed = false;
    for (ClassId c : ids) {
      const auto& nodes = g.eclass(c).nodes;
      for (size_t i = 0; i < nodes.size(); ++i) {
        double own = cost(g, c, nodes[i]);
        if (own == kInfeasible) continue;
        std::map<ClassId, double> set;
        bool ok = true;
        for (ClassId child : nodes[i].children) {
          if (child == kAbsent) continue;
          auto it = sets.find(g.find(child));
          if (it == sets.end() || it->second.count(c)) {  // not yet reachable, or a cycle through c
            ok = false;
            break;
          }
          set.insert(it->second.begin(), it->second.end());
        }
        if (!ok) continue;
        set[c] = own;
        double total = 0;
        for (const auto& [k, v] : set) total += v;
        auto cur = totals.find(c);
        if (cur == totals.end() || total < cur->second - 1e-12) {
          totals[c] = total;
          sets[c] = std::move(set);
          x.choice[c] = i;
          changed = true;
        }
      }
    }
    if (!changed) break;
  }
  x.cost = dag_cost(g, roots, x.choice, cost);
  return x;
}

Extraction extract_original(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost) {
  Extraction x;
  x.method = "the input program";
  for (ClassId c : reachable(g, roots)) {
    const auto& nodes = g.eclass(c).nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].origin < 0) {
        x.choice[c] = i;
        break;
      }
  }
  x.cost = dag_cost(g, roots, x.choice, cost);
  return x;
}

Extraction extract_exact(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost, size_t budget) {
  Extraction seed = extract_greedy_dag(g, roots, cost);
  if (Extraction input = extract_original(g, roots, cost); input.cost < seed.cost) seed = input;  // the better bound
  Extraction best = seed;
  best.method = "exact (branch and bound)";
  std::map<ClassId, double> min_cost;
  for (ClassId c : reachable(g, roots)) {
    double m = kInfeasible;
    for (const ENode& n : g.eclass(c).nodes) m = std::min(m, cost(g, c, n));
    min_cost[c] = m;
  }
  std::map<ClassId, size_t> choice;
  std::set<ClassId> needed;
  for (ClassId r : roots) needed.insert(g.find(r));
  size_t explored = 0;
  bool exhausted = true;
  std::function<void(double)> search = [&](double so_far) {
    if (++explored > budget) {
      exhausted = false;
      return;
    }
    // Lower bound: what is chosen plus the cheapest node of each needed, undecided class.
    double bound = so_far;
    ClassId next = kAbsent;
    for (ClassId c : needed)
      if (!choice.count(c)) {
        bound += min_cost[c];
        if (next == kAbsent) next = c;
      }
    if (bound >= best.cost) return;
    if (next == kAbsent) {
      double total = dag_cost(g, roots, choice, cost);  // refuses cycles
      if (total < best.cost) {
        best.cost = total;
        best.choice = choice;
      }
      return;
    }
    const auto& nodes = g.eclass(next).nodes;
    std::vector<size_t> order(nodes.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return cost(g, next, nodes[a]) < cost(g, next, nodes[b]); });
    for (size_t i : order) {
      double c = cost(g, next, nodes[i]);
      if (c == kInfeasible) continue;
      choice[next] = i;
      std::vector<ClassId> added;
      for (ClassId child : nodes[i].children)
        if (child != kAbsent && needed.insert(g.find(child)).second) added.push_back(g.find(child));
      search(so_far + c);
      for (ClassId a : added) needed.erase(a);
      choice.erase(next);
      if (!exhausted) return;
    }
  };
  search(0);
  best.explored = explored;
  best.optimal = exhausted;
  if (!exhausted) best.method = "exact (gave up after " + std::to_string(budget) + " states; best found)";
  return best;
}

Extraction extract_best(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost, size_t exact_limit) {
  size_t with_choice = 0;
  auto live = reachable(g, roots);
  for (ClassId c : live) with_choice += g.eclass(c).nodes.size() > 1;
  // The search's bound only sees classes already reached, so it prunes late on big graphs.
  if (with_choice <= exact_limit && live.size() <= 8 * std::max<size_t>(exact_limit, 1)) {
    Extraction x = extract_exact(g, roots, cost, 20000);
    if (!x.optimal) reuse_selected(g, roots, cost, x);
    return x;
  }
  Extraction x = extract_greedy_dag(g, roots, cost);
  reuse_selected(g, roots, cost, x);
  x.method = "greedy DAG (" + std::to_string(with_choice) + " classes with a choice; gap to the optimum unknown)";
  Extraction input = extract_original(g, roots, cost);
  if (input.cost <= x.cost) {
    input.method = "the input program (the greedy DAG heuristic found nothing cheaper; " + std::to_string(with_choice) +
                   " classes with a choice)";
    return input;
  }
  return x;
}

Model extraction_to_model(const Model& original, const GraphEGraph& geg, const Extraction& x,
                          std::map<std::string, std::pair<int32_t, int32_t>>* origins) {
  const EGraph& g = geg.egraph;
  Model m;
  m.ir_version = original.ir_version;
  m.opsets = original.opsets;
  m.producer_name = original.producer_name;
  m.producer_version = original.producer_version;
  m.domain = original.domain;
  m.model_version = original.model_version;
  m.doc_string = original.doc_string;
  m.metadata = original.metadata;
  m.opaque_functions = original.opaque_functions;
  Graph& out = *m.graph;
  const Graph& src = *original.graph;
  out.name = src.name;
  out.doc_string = src.doc_string;
  std::map<ClassId, Value*> values;
  for (size_t i = 0; i < src.inputs().size(); ++i) {
    const Value* v = src.inputs()[i];
    Value* nv = out.add_value(v->name());
    nv->type = v->type;
    nv->doc_string = v->doc_string;
    out.add_input(nv);
    if (v->initializer) out.add_initializer(nv, v->initializer);
    values[g.find(geg.inputs[i])] = nv;
  }
  // Output names are reserved for the classes of the graph outputs.
  std::map<ClassId, std::string> reserved;
  for (size_t i = 0; i < geg.roots.size(); ++i) reserved.emplace(g.find(geg.roots[i]), src.outputs()[i]->name());
  auto name_for = [&](ClassId c, const std::string& fallback) {
    auto r = reserved.find(c);
    if (r != reserved.end() && !out.find_value(r->second)) return r->second;
    const std::string& n = g.eclass(c).data.name;
    bool taken_by_output = false;
    for (const auto& [rc, rn] : reserved) taken_by_output = taken_by_output || (rn == n && rc != c);
    if (!n.empty() && !taken_by_output && !out.find_value(n)) return n;
    return out.unique_name(fallback);
  };
  std::map<ClassId, Node*> tuple_nodes;
  std::function<Value*(ClassId)> build = [&](ClassId c) -> Value* {
    c = g.find(c);
    if (auto it = values.find(c); it != values.end()) return it->second;
    auto ch = x.choice.find(c);
    if (ch == x.choice.end()) throw Error("internal: extraction chose nothing for class " + std::to_string(c));
    const EClass& ec = g.eclass(c);
    const ENode& n = ec.nodes.at(ch->second);
    switch (n.kind) {
      case ENode::Kind::Input: {
        Value* v = values.at(g.find(geg.inputs.at(n.op)));
        values[c] = v;
        return v;
      }
      case ENode::Kind::Const: {
        Value* v = out.add_value(name_for(c, "const"));
        v->type = ec.data.type;
        out.add_initializer(v, g.constant_ptr(n.constant));
        values[c] = v;
        return v;
      }
      case ENode::Kind::Proj: {
        ClassId tuple = g.find(n.children.at(0));
        Node* node = tuple_nodes.count(tuple) ? tuple_nodes.at(tuple) : nullptr;
        if (!node) {
          build(tuple);  // creates the node and all of its outputs
          node = tuple_nodes.at(tuple);
        }
        Value* v = node->output(n.op);
        if (out.find_value(name_for(c, v->name())) == nullptr) out.rename_value(v, name_for(c, v->name()));
        if (v->type.dtype == DType::Undefined) v->type = ec.data.type;
        values[c] = v;
        return v;
      }
      case ENode::Kind::Op: {
        const OpSignature& sig = g.signature(n.op);
        std::vector<Value*> inputs;
        for (ClassId child : n.children) inputs.push_back(child == kAbsent ? nullptr : build(child));
        std::string node_name = ec.data.node_name.empty() ? "" : ec.data.node_name;
        if (!node_name.empty() && out.find_node(node_name)) node_name = out.unique_name(node_name);
        std::vector<Value*> outs;
        if (sig.num_outputs == 1) {
          outs.push_back(out.add_value(name_for(c, (node_name.empty() ? sig.op_type : node_name) + "_output")));
          outs.back()->type = ec.data.type;
        } else {
          for (size_t k = 0; k < sig.num_outputs; ++k)
            outs.push_back(out.add_value(out.unique_name((node_name.empty() ? sig.op_type : node_name) + "_output_" + std::to_string(k))));
        }
        if (node_name.empty() && n.origin >= 0) node_name = out.unique_name(sig.op_type);
        Node* node = out.add_node(sig.op_type, sig.domain, node_name, inputs, outs);
        node->attributes = sig.attributes;
        if (origins && n.origin >= 0) (*origins)[node->name] = {n.origin, n.site};
        if (sig.num_outputs == 1) {
          values[c] = outs[0];
          return outs[0];
        }
        tuple_nodes[c] = node;
        return nullptr;  // a tuple has no single value
      }
    }
    return nullptr;
  };
  for (size_t i = 0; i < geg.roots.size(); ++i) {
    Value* v = build(geg.roots[i]);
    out.add_output(v);
  }
  if (!out.topological_sort()) throw Error("internal: the extracted graph has a cycle");
  return m;
}

}  // namespace geopt
