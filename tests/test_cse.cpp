// Common-subexpression elimination on IR graphs: equal constants and equal nodes merge,
// random ops and graph outputs do not, and the result computes what the input did.
#include <doctest/doctest.h>

#include "eval/compare.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "passes/cse.h"
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
  Model model = import_onnx_proto(test::parse_text_model(text), "m.onnx");
  CseReport r = eliminate_common_subexpressions(*model.graph);
  CHECK(r.constants == 1);  // b is a; c differs in one element
  CHECK(r.nodes == 2);      // q is p, then s is r; z stays (a graph output)
  model.graph->remove_dead_code();
  CHECK(test::count_op(model, "Add") == 3);
  CHECK(test::count_op(model, "Relu") == 2);
  CHECK(test::count_op(model, "Constant") == 2);
  auto feeds = random_inputs(original, 5);
  NamedTensors want = Evaluator(original).run(feeds), got = Evaluator(model).run(feeds);
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
    })"), "m.onnx");
  CseReport r = eliminate_common_subexpressions(*model.graph);
  CHECK(r.nodes == 0);
  CHECK(r.constants == 0);
}
