// Graph preparation: shape computations fold into constants and types are
// re-inferred downstream; what the model computes does not change.
#include <doctest/doctest.h>

#include "ascend/device_ops/device_ops.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "passes/static_shapes.h"
#include "test_support.h"
#include "util/error.h"

namespace geopt {
namespace {

namespace fs = std::filesystem;

Model import_text(const char* text, const std::string& name, const ImportOptions& options = {}) {
  fs::path dir = test::scratch_dir("static-shapes");
  test::save_model(test::parse_text_model(text), dir / (name + ".onnx"));
  return import_onnx(dir / (name + ".onnx"), options);
}

size_t count_op(const Model& m, const std::string& op) {
  size_t n = 0;
  for (const auto& node : m.graph->nodes()) n += node->op_type == op;
  return n;
}

TEST_CASE(
    "a Shape -> Gather -> Range -> Expand chain folds once the input is fixed, and the result is unchanged") {
  const char* text = R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[B,S] x) => (float[B,S] y) {
      shape = Shape(x)
      one = Constant <value = int64 {1}> ()
      zero = Constant <value = int64 {0}> ()
      seq = Gather <axis = 0> (shape, one)
      pos = Range(zero, seq, one)
      posf = Cast <to = 1> (pos)
      wide = Expand(posf, shape)
      y = Add(x, wide)
    })";
  ImportOptions fixed;
  fixed.input_shapes = {{"x", {2, 7}}};
  Model original = import_text(text, "range", fixed);
  Model m = import_text(text, "range", fixed);
  CHECK(!m.graph->find_value("pos")->type.shape->is_static());  // ONNX calls its length unk__0
  StaticShapeReport report = propagate_static_shapes(m, ascend::op_registry());
  CHECK(report.dynamic.empty());
  // Shape, both Constants, Gather, Range, Cast and Expand are constants now; Add is left.
  CHECK(report.folded == 7);
  CHECK(m.graph->nodes().size() == 1);
  CHECK(m.graph->nodes()[0]->op_type == "Add");
  CHECK(m.graph->find_value("wide")->type.to_string() == "f32[2,7]");
  auto feeds = random_inputs(original, 3);
  TensorDiff d = diff(Evaluator(m, ascend::op_registry()).run(feeds)[0].second,
                      Evaluator(original, ascend::op_registry()).run(feeds)[0].second);
  CHECK(d.comparable);
  CHECK(d.max_abs == 0);
}

TEST_CASE(
    "without fixed inputs nothing depending on symbolic dims folds, and the dynamic values are listed") {
  Model m = import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[B,4] x) => (float[B,4] y) {
      shape = Shape(x)
      y = Reshape(x, shape)
    })",
                        "symbolic");
  StaticShapeReport report = propagate_static_shapes(m, ascend::op_registry());
  CHECK(report.folded == 0);
  CHECK(count_op(m, "Shape") == 1);
  CHECK(report.dynamic == std::vector<std::string>{"x", "y"});
}

TEST_CASE("Shape honours start and end, Size folds, graph outputs stay computed") {
  Model m = import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,3,5,7] x) => (int64[2] inner, float[2,3,5,7] y) {
      inner = Shape <start = 1, end = -1> (x)
      mid = Shape <start = -3, end = 3> (x)
      n = Size(x)
      f = ReduceProd <keepdims = 0> (mid)
      c = Cast <to = 1> (f)
      nf = Cast <to = 1> (n)
      sum = Add(c, nf)
      y = Add(x, sum)
    })",
                        "shape_attrs");
  StaticShapeReport report = propagate_static_shapes(m, ascend::op_registry());
  CHECK(report.dynamic.empty());
  CHECK(count_op(m, "Shape") == 1);  // `inner` is a graph output
  CHECK(count_op(m, "Size") == 0);
  CHECK(count_op(m, "ReduceProd") == 0);
  const Value* sum = m.graph->find_value("sum");
  REQUIRE(sum->initializer);
  CHECK(sum->initializer->to_vector<float>() == std::vector<float>{225.0f});  // 3*5 + 210
  CHECK(count_op(m, "Add") == 1);
  auto feeds = random_inputs(m, 1);
  NamedTensors out = Evaluator(m, ascend::op_registry()).run(feeds);
  CHECK(out[0].second.ints() == std::vector<int64_t>{3, 5});
}

TEST_CASE("folding is capped: a constant expanded past max_elements stays a node, but its type is inferred") {
  Model m = import_text(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1000,100] x) => (float[1000,100] y) {
      v = Constant <value = float {2.0}> ()
      shape = Constant <value = int64[2] {1000, 100}> ()
      big = Expand(v, shape)
      y = Mul(x, big)
    })",
                        "capped");
  StaticShapeOptions capped;
  capped.max_elements = 50000;
  StaticShapeReport report = propagate_static_shapes(m, ascend::op_registry(), capped);
  CHECK(count_op(m, "Expand") == 1);
  CHECK(m.graph->find_value("big")->type.to_string() == "f32[1000,100]");
  CHECK(report.folded == 2);  // the two Constants
  StaticShapeOptions roomy;
  roomy.max_elements = 200000;
  StaticShapeReport uncapped = propagate_static_shapes(m, ascend::op_registry(), roomy);
  CHECK(uncapped.folded == 1);
  CHECK(count_op(m, "Expand") == 0);
}

}  // namespace
}  // namespace geopt
