// E-graph invariants (congruence after rebuild, hash-consing, nothing lost,
// determinism) and extraction on small e-graphs whose best answer is known.
#include <doctest/doctest.h>

#include "ascend/device_ops/device_ops.h"
#include "egraph/extract.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "ir/graph_text.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;

namespace {

OpSignature op(const std::string& name) { return OpSignature{"", name, {}, 1, ""}; }

ClassId leaf(EGraph& g, uint32_t i) {
  return g.add_input(i, ClassData{{DType::F32, Shape{4}, {}}, nullptr, "in" + std::to_string(i), ""});
}

// Costs by op name; inputs cost nothing.
NodeCost costs(std::map<std::string, double> table) {
  return [table](const EGraph& g, ClassId, const ENode& n) {
    if (n.kind != ENode::Kind::Op) return 0.0;
    auto it = table.find(g.signature(n.op).op_type);
    return it == table.end() ? 1.0 : it->second;
  };
}

}  // namespace

TEST_CASE("hash-consing returns the existing class for an existing e-node") {
  EGraph g;
  ClassId a = leaf(g, 0), b = leaf(g, 1);
  ClassId f1 = g.add_op(op("Add"), {a, b});
  ClassId f2 = g.add_op(op("Add"), {a, b});
  CHECK(f1 == f2);
  CHECK(g.add_op(op("Add"), {b, a}) != f1);  // operand order matters to the e-graph; rules add commutativity
  CHECK(g.node_count() == 4);
}

TEST_CASE("congruence holds after rebuild, and no e-node is lost") {
  EGraph g;
  ClassId a = leaf(g, 0), b = leaf(g, 1);
  ClassId fa = g.add_op(op("Relu"), {a});
  ClassId fb = g.add_op(op("Relu"), {b});
  ClassId gfa = g.add_op(op("Neg"), {fa});
  ClassId gfb = g.add_op(op("Neg"), {fb});
  size_t nodes_before = g.node_count();
  g.merge(a, b);
  CHECK_FALSE(g.clean());
  g.rebuild();
  CHECK(g.clean());
  CHECK(g.find(fa) == g.find(fb));    // Relu(a) == Relu(b) once a == b
  CHECK(g.find(gfa) == g.find(gfb));  // and up the chain
  // The two inputs stay as two e-nodes in one class; the congruent Relus and Negs collapse.
  CHECK(g.eclass(a).nodes.size() == 2);
  CHECK(g.eclass(fa).nodes.size() == 1);
  CHECK(g.node_count() == nodes_before - 2);
  CHECK(g.class_count() == 3);
  CHECK(g.lookup(ENode{ENode::Kind::Op, g.intern(op("Relu")), {b}, nullptr}) == g.find(fa));
}

TEST_CASE("building the same e-graph twice is deterministic") {
  auto build = [] {
    GraphEGraph geg = egraph_from_graph(*import_onnx(test::examples_dir() / "gpt2_tiny_op13.onnx").graph);
    std::string dump;
    for (ClassId c : geg.egraph.class_ids()) {
      dump += std::to_string(c) + ":";
      for (const ENode& n : geg.egraph.eclass(c).nodes) {
        dump += std::to_string(static_cast<int>(n.kind)) + "/" + std::to_string(n.op);
        for (ClassId ch : n.children) dump += "," + std::to_string(ch);
        dump += ";";
      }
    }
    return dump;
  };
  CHECK(build() == build());
}

// root = Add(X, Y). X = {A(S) cost 1, B cost 6}; Y = {C(S) cost 1, D cost 6}; S costs 8.
// Tree costs: A(S) = 9 > B = 6, so a tree extractor picks B and D: 1 + 6 + 6 = 13.
// As a DAG, A and C share S: 1 + 1 + 1 + 8 = 11.
struct SharedSubterm {
  EGraph g;
  ClassId x, root;
  NodeCost cost = costs({{"S", 8}, {"A", 1}, {"B", 6}, {"C", 1}, {"D", 6}, {"Add", 1}});
  SharedSubterm() {
    ClassId in = leaf(g, 0);
    ClassId s = g.add_op(op("S"), {in});
    x = g.add_op(op("A"), {s});
    g.merge(x, g.add_op(op("B"), {in}));
    ClassId y = g.add_op(op("C"), {s});
    g.merge(y, g.add_op(op("D"), {in}));
    g.rebuild();
    root = g.add_op(op("Add"), {x, y});
  }
};

TEST_CASE("a shared subterm makes the greedy tree extractor wrong and the exact one right") {
  SharedSubterm t;
  EGraph& g = t.g;
  const ClassId x = t.x, root = t.root;
  const NodeCost& cost = t.cost;
  Extraction tree = extract_greedy_tree(g, {root}, cost);
  Extraction exact = extract_exact(g, {root}, cost);
  CHECK(tree.cost == 13);
  CHECK(exact.cost == 11);
  CHECK(exact.optimal);
  CHECK(g.signature(g.eclass(x).nodes[exact.choice.at(g.find(x))].op).op_type == "A");
  CHECK(extract_greedy_dag(g, {root}, cost).cost >= exact.cost);
  Extraction best = extract_best(g, {root}, cost);
  CHECK(best.cost == 11);
  CHECK(best.method == "exact (branch and bound)");
}

TEST_CASE("extraction modes: greedy never searches, exact searches any size from the greedy program") {
  // The shared-subterm e-graph above, where the heuristic and the optimum differ, then a
  // chain of 4000 classes, searched to its end (a frame per class) within its budget.
  SharedSubterm t;
  const EGraph& g = t.g;
  const ClassId root = t.root;
  const NodeCost& cost = t.cost;
  const Extraction greedy = extract_best(g, {root}, cost, 40, ExtractionMode::greedy);
  CHECK(greedy.method.rfind("exact", 0) != 0);
  CHECK(!greedy.optimal);
  const Extraction exact = extract_best(g, {root}, cost, 0, ExtractionMode::exact);  // exact_limit unused
  CHECK(exact.optimal);
  CHECK(exact.cost == 11);
  CHECK(exact.cost <= greedy.cost);
  CHECK(parse_extraction_mode("exact") == ExtractionMode::exact);
  CHECK(!parse_extraction_mode("ilp"));

  EGraph chain;
  ClassId at = leaf(chain, 0);
  for (int i = 0; i < 4000; ++i) {
    ClassId next = chain.add_op(op("F"), {at});
    chain.merge(next, chain.add_op(op("G"), {at}));
    at = next;
  }
  chain.rebuild();
  auto chain_cost = costs({{"F", 2}, {"G", 1}});
  const Extraction deep = extract_best(chain, {at}, chain_cost, 40, ExtractionMode::exact);
  const Extraction heuristic = extract_best(chain, {at}, chain_cost, 40, ExtractionMode::greedy);
  CHECK(deep.cost == 4000);
  CHECK(deep.explored > 4000);
  CHECK(deep.cost <= heuristic.cost);
}

TEST_CASE("the greedy DAG extractor counts a shared child once") {
  // root = Add(P, Q), P = {Mul(S, S) cost 1, Big cost 5}, Q = {Neg(S) cost 1, Big2 cost 5}, S = {Exp cost 4}.
  // Tree: Mul(S,S) = 1 + 4 + 4 = 9 > 5, picks Big; DAG: Mul pulls {Mul, S} = 5, ties Big; at the root
  // the union {Add, Mul, Neg, S} = 1 + 1 + 1 + 4 = 7 beats Big + Big2 = 11.
  EGraph g;
  ClassId in = leaf(g, 0);
  ClassId s = g.add_op(op("Exp"), {in});
  ClassId p = g.add_op(op("Mul"), {s, s});
  g.merge(p, g.add_op(op("Big"), {in}));
  ClassId q = g.add_op(op("Neg"), {s});
  g.merge(q, g.add_op(op("Big2"), {in}));
  g.rebuild();
  ClassId root = g.add_op(op("Add"), {p, q});
  auto cost = costs({{"Exp", 4}, {"Mul", 1}, {"Big", 5}, {"Neg", 1}, {"Big2", 5}, {"Add", 1}});
  CHECK(extract_greedy_tree(g, {root}, cost).cost == 1 + 5 + 1 + 4);
  CHECK(extract_exact(g, {root}, cost).cost == 7);
}

TEST_CASE("infeasible e-nodes are never picked, and cycles are refused") {
  EGraph g;
  ClassId in = leaf(g, 0);
  ClassId unfused = g.add_op(op("Relu"), {g.add_op(op("Conv"), {in})});
  g.merge(unfused, g.add_op(op("FusedConv"), {in}));
  g.rebuild();
  auto cost = costs({{"Conv", 10}, {"Relu", 2}, {"FusedConv", kInfeasible}});
  for (const Extraction& x : {extract_greedy_tree(g, {unfused}, cost), extract_greedy_dag(g, {unfused}, cost),
                              extract_exact(g, {unfused}, cost)}) {
    CHECK(x.cost == 12);
    CHECK(g.signature(g.eclass(unfused).nodes[x.choice.at(g.find(unfused))].op).op_type == "Relu");
  }
  // x = Neg(Neg(x)) makes a cycle through the Negs: only the input itself is a valid choice.
  EGraph c;
  ClassId a = leaf(c, 0);
  ClassId n1 = c.add_op(op("Neg"), {a});
  ClassId n2 = c.add_op(op("Neg"), {n1});
  c.merge(a, n2);
  c.rebuild();
  for (const Extraction& x : {extract_greedy_dag(c, {n1}, costs({})), extract_exact(c, {n1}, costs({}))}) {
    CHECK(x.cost == 1);  // Neg(input): the cycle through the other Neg is never taken
    CHECK(dag_cost(c, {n1}, x.choice, costs({})) == 1);
  }
}

TEST_CASE("every example model survives import -> e-graph -> extraction unchanged") {
  for (const auto& path : test::example_models()) {
    INFO(path.filename().string());
    Model original = import_onnx(path);
    GraphEGraph geg = egraph_from_graph(*original.graph);
    Extraction x = extract_best(geg.egraph, geg.roots, costs({}));
    REQUIRE(x.cost < kInfeasible);
    Model back = extraction_to_model(original, geg, x);
    // Hash-consing merges identical computations (CSE): never more nodes, every kept node keeps its name.
    CHECK(back.graph->nodes().size() <= original.graph->nodes().size());
    for (size_t i = 0; i < original.graph->outputs().size(); ++i)
      CHECK(back.graph->outputs()[i]->name() == original.graph->outputs()[i]->name());
    for (const auto& n : back.graph->nodes()) CHECK(original.graph->find_node(n->name) != nullptr);
    auto feeds = random_inputs(original, 4);
    NamedTensors a = Evaluator(original, ascend::op_registry()).run(feeds),
                 b = Evaluator(back, ascend::op_registry()).run(feeds);
    for (size_t i = 0; i < a.size(); ++i) CHECK(diff(b[i].second, a[i].second).max_abs == 0);
  }
}

TEST_CASE("equal constants are one class, so the ops reading them are one e-node (CSE)") {
  EGraph g;
  auto tensor = [](std::vector<float> v) {
    auto t = HostTensor::from_vector(DType::F32, {static_cast<int64_t>(v.size())}, v).to_constant("c");
    return std::shared_ptr<const Tensor>(std::move(t));
  };
  ClassId x = leaf(g, 0);
  ClassId c1 = g.add_constant(tensor({1, 2, 3, 4}));
  ClassId c2 = g.add_constant(tensor({1, 2, 3, 4}));
  ClassId c3 = g.add_constant(tensor({1, 2, 3, 5}));
  CHECK(c1 == c2);
  CHECK(c1 != c3);
  CHECK(g.add_op(op("Add"), {x, c1}) == g.add_op(op("Add"), {x, c2}));
  CHECK(g.add_op(op("Add"), {x, c1}) != g.add_op(op("Add"), {x, c3}));
  // Same bytes, other dims or dtype: not equal.
  auto reshaped = std::make_shared<Tensor>(*tensor({1, 2, 3, 4}));
  reshaped->dims = {2, 2};
  CHECK(g.add_constant(reshaped) != c1);
}
