// The IR's own invariants: dtypes, symbolic shapes, producer/use links, ordering.
#include <doctest/doctest.h>

#include <cmath>

#include "ascend/device_ops/device_ops.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "ir/graph.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;

TEST_CASE("dtypes have ONNX's numbering, sizes and names") {
  CHECK(static_cast<int>(DType::F32) == 1);
  CHECK(static_cast<int>(DType::BF16) == 16);
  CHECK(dtype_size(DType::F16) == 2);
  CHECK(dtype_size(DType::BF16) == 2);
  CHECK(dtype_size(DType::I8) == 1);
  CHECK(dtype_size(DType::I64) == 8);
  CHECK(dtype_size(DType::Bool) == 1);
  CHECK(dtype_size(DType::String) == 0);
  CHECK(dtype_name(DType::BF16) == "bf16");
  CHECK(parse_dtype("float16") == DType::F16);
  CHECK(parse_dtype("u8") == DType::U8);
  CHECK_FALSE(parse_dtype("float8").has_value());
  CHECK(is_float(DType::BF16));
  CHECK_FALSE(is_float(DType::I32));
  CHECK(is_integer(DType::U64));
}

TEST_CASE("shapes mix static, symbolic and unknown dims") {
  Shape s{Dim::symbol("batch"), 3, Dim(), 224};
  CHECK(s.rank() == 4);
  CHECK(s[0].is_symbolic());
  CHECK(s[1].is_static());
  CHECK(s[2].is_unknown());
  CHECK(s.to_string() == "[batch,3,?,224]");
  CHECK_FALSE(s.is_static());
  CHECK_FALSE(s.element_count().has_value());
  Shape t{2, 3, 4};
  CHECK(t.element_count() == 24);
  CHECK(Shape{}.element_count() == 1);  // a scalar has one element
  CHECK(Shape{Dim::symbol("seq")} == Shape{Dim::symbol("seq")});
  CHECK_FALSE(Shape{Dim::symbol("seq")} == Shape{Dim::symbol("batch")});
}

TEST_CASE("graph keeps producers and uses consistent") {
  Graph g;
  Value* x = g.add_value("x");
  Value* y = g.add_value("y");
  Value* z = g.add_value("z");
  g.add_input(x);
  Node* relu = g.add_node("Relu", "", "relu", {x}, {y});
  Node* add = g.add_node("Add", "ai.onnx", "add", {y, x}, {z});
  g.add_output(z);
  CHECK(add->domain.empty());  // "ai.onnx" is normalized to ""
  CHECK(y->producer() == relu);
  CHECK(z->producer_output() == 0);
  REQUIRE(x->uses().size() == 2);
  CHECK(x->uses()[0] == Use{relu, 0});
  CHECK(x->uses()[1] == Use{add, 1});

  g.set_input(add, 1, y);  // rewire: Add(y, y)
  CHECK(x->uses().size() == 1);
  CHECK(y->uses().size() == 2);

  CHECK_THROWS_AS(g.remove_node(relu), InternalError);  // y is still used
  g.set_input(add, 0, x);
  g.set_input(add, 1, x);
  g.remove_node(relu);
  CHECK(g.nodes().size() == 1);
  CHECK(y->producer() == nullptr);
  CHECK(x->uses().size() == 2);
  CHECK(g.find_node("add") == add);
  CHECK(g.find_node("relu") == nullptr);
}

TEST_CASE("value names are unique and unique_name avoids clashes") {
  Graph g;
  g.add_value("t");
  CHECK_THROWS_AS(g.add_value("t"), Error);
  CHECK(g.unique_name("t") == "t_1");
  CHECK(g.unique_name("u") == "u");
}

TEST_CASE("a second producer for one value is rejected") {
  Graph g;
  Value* x = g.add_value("x");
  Value* y = g.add_value("y");
  g.add_node("Relu", "", "a", {x}, {y});
  CHECK_THROWS_WITH_AS(g.add_node("Relu", "", "b", {x}, {y}),
                       doctest::Contains("already produced by Relu 'a'"), Error);
}

TEST_CASE("topological sort is stable and detects cycles") {
  Graph g;
  Value* x = g.add_value("x");
  Value* a = g.add_value("a");
  Value* b = g.add_value("b");
  Value* c = g.add_value("c");
  g.add_input(x);
  // Added out of order: c = Add(a, b) before a and b exist as outputs.
  g.add_node("Add", "", "n_add", {a, b}, {c});
  g.add_node("Relu", "", "n_a", {x}, {a});
  g.add_node("Neg", "", "n_b", {x}, {b});
  REQUIRE(g.topological_sort());
  CHECK(g.nodes()[0]->name == "n_a");
  CHECK(g.nodes()[1]->name == "n_b");
  CHECK(g.nodes()[2]->name == "n_add");

  Graph cyc;
  Value* p = cyc.add_value("p");
  Value* q = cyc.add_value("q");
  cyc.add_node("Relu", "", "r1", {q}, {p});
  cyc.add_node("Relu", "", "r2", {p}, {q});
  CHECK_FALSE(cyc.topological_sort());
  CHECK(cyc.nodes()[0]->name == "r1");  // order unchanged on failure
}

TEST_CASE("tensors reference their bytes without copying") {
  auto owner = std::make_shared<StringBuffer>(std::string("\x01\x00\x00\x00\x02\x00\x00\x00", 8));
  Tensor t;
  t.dtype = DType::I32;
  t.dims = {2};
  t.data = BufferSlice(owner, 0, 8);
  CHECK(t.bytes().data() == owner->bytes().data());
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>{1, 2});
  CHECK(t.element_count() == 2);
  CHECK_THROWS_AS(BufferSlice(owner, 4, 8), InternalError);
}

TEST_CASE("attribute identity keys are equal exactly when the values are") {
  std::vector<Attribute> values = {
      Attribute::make_float("a", 0.0f),
      Attribute::make_float("a", -0.0f),
      Attribute::make_float("a", 1e-5f),
      Attribute::make_float("a", std::nextafter(1e-5f, 1.0f)),
      Attribute::make_int("a", 12),
      Attribute::make_int("a", -12),
      Attribute::make_ints("a", {1, 2}),
      Attribute::make_ints("a", {12}),
      Attribute::make_ints("a", {}),
      Attribute::make_floats("a", {}),
      Attribute::make_floats("a", {1.5f, 2.0f}),
      Attribute::make_string("a", "1,2"),
      Attribute::make_string("a", "ab"),
      Attribute::make_string("a", ""),
  };
  Attribute strings;
  strings.name = "a";
  strings.kind = AttrKind::Strings;
  strings.strings = {"a", "b"};
  values.push_back(strings);
  strings.strings = {"ab"};
  values.push_back(strings);
  strings.strings = {"a,", "b"};
  values.push_back(strings);
  values.push_back(Attribute{});  // unset
  for (size_t i = 0; i < values.size(); ++i)
    for (size_t j = 0; j < values.size(); ++j) {
      INFO(values[i].to_string() << " against " << values[j].to_string());
      CHECK((values[i].identity_key() == values[j].identity_key()) == (i == j));
      CHECK(values[i].same_value(values[j]) == (i == j));
    }
  Attribute renamed = Attribute::make_ints("b", {1, 2});  // the name is not part of the value
  CHECK(renamed.identity_key() == values[6].identity_key());
}

TEST_CASE("attributes render for reports") {
  CHECK(Attribute::make_float("epsilon", 1e-5f).to_string() == "epsilon=9.99999975e-06");
  CHECK(Attribute::make_ints("axes", {-1}).to_string() == "axes=[-1]");
  CHECK(Attribute::make_string("mode", "constant").to_string() == "mode=\"constant\"");
  Node n;
  n.attributes.push_back(Attribute::make_int("keepdims", 1));
  REQUIRE(n.attr("keepdims") != nullptr);
  CHECK(n.attr("keepdims")->i == 1);
  CHECK(n.attr("axis") == nullptr);
}

TEST_CASE("a cloned model computes the same, shares its constants, and changes apart from the original") {
  Model original = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  Model copy = original.clone();
  CHECK(copy.graph->nodes().size() == original.graph->nodes().size());
  CHECK(copy.opsets == original.opsets);
  REQUIRE(copy.graph->initializers().size() == original.graph->initializers().size());
  CHECK(copy.graph->initializers()[0]->initializer ==
        original.graph->initializers()[0]->initializer);  // the same bytes
  auto feeds = random_inputs(original, 4);
  NamedTensors a = Evaluator(original, ascend::op_registry()).run(feeds),
               b = Evaluator(copy, ascend::op_registry()).run(feeds);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); ++i) CHECK(diff(b[i].second, a[i].second).max_abs == 0);
  Node* first = const_cast<Node*>(copy.graph->nodes()[0].get());
  copy.graph->rename_node(first, "renamed");
  copy.graph->remove_dead_code();
  CHECK(original.graph->nodes()[0]->name != "renamed");
  CHECK(original.graph->find_node("renamed") == nullptr);
}
