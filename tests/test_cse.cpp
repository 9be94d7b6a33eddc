// Common subexpressions: the e-graph of a graph (what every rule and command matches
// on) hash-conses equal constants and equal nodes into one, never two random draws, and
// the program read back computes what the input did.
#include <doctest/doctest.h>

#include "ascend/device_ops/device_ops.h"
#include "egraph/extract.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;

TEST_CASE("equal constants and the nodes reading them merge, chains included") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y, float[4] z) {
      a = Constant <value = float[4] {1, 2, 3, 4}> ()
      b = Constant <value = float[4] {1, 2, 3, 4}> ()
      c = Constant <value = float[4] {1, 2, 3, 5}> ()
      p = Add(x, a)
      q = Add(x, b)
      r = Relu(p)
      s = Relu(q)
      t = Add(x, c)
      u = Mul(r, s)
      y = Add(u, t)
      z = Relu(q)
    })";
  Model original = import_onnx_proto(test::parse_text_model(text), "m.onnx");
  const GraphEGraph geg = egraph_from_graph(*original.graph);
  const NodeCost one = [](const EGraph&, ClassId, const ENode&) { return 1.0; };
  Model model = extraction_to_model(original, geg, extract_original(geg.egraph, geg.roots, one));
  CHECK(test::count_op(model, "Add") == 3);        // q is p; y's and t's stay
  CHECK(test::count_op(model, "Relu") == 1);       // s is r, and so is the output z
  CHECK(model.graph->initializers().size() == 2);  // b is a; c differs in one element
  auto feeds = random_inputs(original, 5);
  NamedTensors want = Evaluator(original, ascend::op_registry()).run(feeds),
               got = Evaluator(model, ascend::op_registry()).run(feeds);
  for (size_t i = 0; i < want.size(); ++i) CHECK(diff(got[i].second, want[i].second).max_abs == 0);
}

TEST_CASE("random ops, other attributes and other inputs do not merge") {
  Model model = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[2,3] w) => (float[2,3] y) {
      n1 = RandomNormalLike(x)
      n2 = RandomNormalLike(x)
      s1 = Softmax <axis = 0> (x)
      s2 = Softmax <axis = 1> (x)
      a = Add(x, w)
      b = Add(w, x)
      m = Add(n1, n2)
      k = Add(s1, s2)
      c = Add(a, b)
      d = Add(m, k)
      y = Add(c, d)
    })"),
                                  "m.onnx");
  // Every node is its own class: the draws, the other axes, the operand orders.
  const GraphEGraph geg = egraph_from_graph(*model.graph);
  CHECK(geg.egraph.class_count() == model.graph->nodes().size() + model.graph->inputs().size());
}
