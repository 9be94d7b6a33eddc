// The ai.geopt fused-op schemas: exported models that use them pass ONNX's
// checker, and ONNX shape inference derives their output types.
#include <doctest/doctest.h>

#include "ir/graph_text.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

Value* input(Graph& g, const std::string& name, Shape shape) {
  Value* v = g.add_value(name);
  v->type = {DType::F32, std::move(shape), {}};
  g.add_input(v);
  return v;
}

}  // namespace

TEST_CASE("a model of ai.geopt fused ops exports, checks and infers shapes") {
  Model m;
  m.opsets = {{"", 17}, {std::string(kGeoptDomain), 1}};
  Graph& g = *m.graph;
  g.name = "fused";
  Value* x = input(g, "x", {Dim::symbol("batch"), 8, 32});
  Value* r = input(g, "r", {Dim::symbol("batch"), 8, 32});
  Value* gamma = input(g, "gamma", {32});
  Value* w = input(g, "w", {32, 16});
  Value* q = input(g, "q", {1, 2, 8, 16});
  Value* k = input(g, "k", {1, 2, 10, 16});
  Value* v = input(g, "v", {1, 2, 10, 24});
  Value* img = input(g, "img", {1, 3, 16, 16});
  Value* kern = input(g, "kern", {4, 3, 3, 3});

  // Outputs declare only dtype and rank (ONNX needs both); shape inference finds the dims.
  auto out = [&](const char* name, size_t rank) {
    Value* o = g.add_value(name);
    o->type = {DType::F32, Shape(std::vector<Dim>(rank)), {}};
    return o;
  };
  Value* ln = out("ln", 3);
  Value* rms = out("rms", 3);
  Value* aln = out("aln", 3);
  Value* sum = out("sum", 3);
  Value* gelu = out("gelu", 3);
  Value* mm = out("mm", 3);
  Value* attn = out("attn", 4);
  Value* conv = out("conv", 4);
  g.add_node("LayerNorm", kGeoptDomain, "ln", {x, gamma}, {ln})
      ->attributes.push_back(Attribute::make_float("epsilon", 1e-5f));
  g.add_node("RMSNorm", kGeoptDomain, "rms", {x, gamma}, {rms});
  g.add_node("AddLayerNorm", kGeoptDomain, "aln", {x, r, gamma}, {aln, sum});
  g.add_node("Gelu", kGeoptDomain, "gelu", {x}, {gelu})
      ->attributes.push_back(Attribute::make_string("approximate", "tanh"));
  g.add_node("FusedMatMul", kGeoptDomain, "mm", {x, w}, {mm})
      ->attributes.push_back(Attribute::make_string("activation", "Relu"));
  g.add_node("FlashAttention", kGeoptDomain, "attn", {q, k, v}, {attn});
  Node* c = g.add_node("FusedConv", kGeoptDomain, "conv", {img, kern}, {conv});
  c->attributes.push_back(Attribute::make_ints("pads", {1, 1, 1, 1}));
  c->attributes.push_back(Attribute::make_ints("strides", {2, 2}));
  for (Value* o : {ln, rms, aln, sum, gelu, mm, attn, conv}) g.add_output(o);

  fs::path p = test::scratch_dir("geopt-ops") / "fused.onnx";
  export_onnx(m, p);
  Model back = import_onnx(p);  // runs onnx::checker and strict shape inference
  auto type = [&](const char* name) { return back.graph->find_value(name)->type.to_string(); };
  CHECK(type("ln") == "f32[batch,8,32]");
  CHECK(type("rms") == "f32[batch,8,32]");
  CHECK(type("aln") == "f32[batch,8,32]");
  CHECK(type("sum") == "f32[batch,8,32]");
  CHECK(type("gelu") == "f32[batch,8,32]");
  CHECK(type("mm") == "f32[batch,8,16]");
  CHECK(type("attn") == "f32[1,2,8,24]");
  CHECK(type("conv") == "f32[1,4,8,8]");
}

TEST_CASE("exporting a graph output of unknown type is refused, leaving no file") {
  Model m;
  m.opsets = {{"", 13}};
  Value* x = m.graph->add_value("x");
  x->type = {DType::F32, Shape{2}, {}};
  m.graph->add_input(x);
  Value* y = m.graph->add_value("y");
  m.graph->add_node("Relu", "", "relu", {x}, {y});
  m.graph->add_output(y);
  fs::path p = test::scratch_dir("untyped") / "m.onnx";
  CHECK_THROWS_WITH_AS(export_onnx(m, p), doctest::Contains("graph output 'y' has no type"), Error);
  CHECK_FALSE(fs::exists(p));
  CHECK(fs::is_empty(p.parent_path()));
}

TEST_CASE("an unknown op in the ai.geopt domain is rejected like a standard one") {
  onnx::ModelProto m = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2] x) => (float[2] y) {
      y = ai.geopt.NoSuchFusion(x)
    })");
  fs::path p = test::scratch_dir("geopt-unknown") / "m.onnx";
  test::save_model(m, p);
  CHECK_THROWS_WITH_AS(import_onnx(p),
                       doctest::Contains("unknown operator 'NoSuchFusion' in domain 'ai.geopt'"), Error);
}

TEST_CASE("ops of other custom domains are kept with unknown output types") {
  onnx::ModelProto m = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13, "com.vendor" : 1]>
    g (float[2] x) => (float[2] y) {
      t = com.vendor.Mystery(x)
      y = Relu(t)
    })");
  fs::path p = test::scratch_dir("vendor") / "m.onnx";
  test::save_model(m, p);
  Model ir = import_onnx(p);
  REQUIRE(ir.graph->nodes().size() == 2);
  CHECK(ir.graph->nodes()[0]->domain == "com.vendor");
  fs::path out = p.parent_path() / "out.onnx";
  export_onnx(ir, out);
  CHECK(to_text(import_onnx(out)) == to_text(ir));
}
