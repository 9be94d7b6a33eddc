// Each pattern feature on small graphs: what matches, what does not, and why.
#include <doctest/doctest.h>

#include <fstream>

#include "ascend/device_ops/device_ops.h"
#include "dsl/rule_run.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

struct Fixture {
  std::unique_ptr<dsl::RuleSet> rules;
  Model model;
  std::string dir;  // stripped from reasons, so they read "r.gerule:1:2"
};

// Tries rule 0 at the node named `node`; returns "" on a match, else the reason.
std::string try_at(Fixture& f, const std::string& node, test::NodeMatch* out = nullptr) {
  test::NodeMatch m = test::match_at(*f.rules, f.model, node);
  if (out) *out = m;
  std::string reason = m.reason;
  for (size_t at; (at = reason.find(f.dir + "/")) != std::string::npos;) reason.erase(at, f.dir.size() + 1);
  return reason;
}

// The model with rule 0 applied once at the value named `root`, nothing else.
Model apply_once(const Fixture& f, const std::string& root) {
  auto m = dsl::apply_once(f.model, *f.rules, ascend::op_registry(), 0, root, test::default_cost());
  REQUIRE(m);
  return std::move(*m);
}

onnx::ModelProto named(onnx::ModelProto m) {
  for (int i = 0; i < m.graph().node_size(); ++i)
    if (m.graph().node(i).name().empty())
      m.mutable_graph()->mutable_node(i)->set_name("n" + std::to_string(i));
  return m;
}

Fixture setup_named(const std::string& rule_text, const char* model_text) {
  fs::path dir = test::scratch_dir("features");
  std::ofstream(dir / "r.gerule") << rule_text;
  return Fixture{test::load_rules({(dir / "r.gerule").string()}),
                 import_onnx_proto(named(test::parse_text_model(model_text)), dir / "m.onnx"), dir.string()};
}

}  // namespace

TEST_CASE("several roots: three MatMuls that share an input") {
  auto f = setup_named(
      "rule QKV { match MatMul(%x, const %_wq) as %q, MatMul(%x, const %_wk) as %k, MatMul(%x, const %_wv) "
      "as %v\n"
      "  rewrite %q => %q rewrite %k => %k rewrite %v => %v }",
      R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,4] x) => (float[2,3] a, float[2,3] b, float[2,3] c) {
      wq = Constant <value = float[4,3] {1,2,3,4,5,6,7,8,9,10,11,12}> ()
      wk = Constant <value = float[4,3] {1,2,3,4,5,6,7,8,9,10,11,14}> ()
      wv = Constant <value = float[4,3] {1,2,3,4,5,6,7,8,9,10,11,13}> ()
      a = MatMul(x, wq)
      b = MatMul(x, wk)
      c = MatMul(x, wv)
    })");
  test::NodeMatch m;
  CHECK(try_at(f, "n3", &m) == "");
  REQUIRE(m.roots.size() == 3);
  CHECK(m.roots[1] == "n4");
  CHECK(m.roots[2] == "n5");
  CHECK(m.values.at("%v") == "c");
  // The three roots are written alike: taken in graph order, a triple is found once,
  // from its first MatMul, not from n4 or n5 in some other order.
  CHECK(try_at(f, "n4") == "no node matches root 3 (r.gerule:1:78)");
  CHECK(try_at(f, "n5") == "no node matches root 2 (r.gerule:1:48)");
}

TEST_CASE("variadic inputs: Concat(%a, ...) and the input count without `...`") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] a, float[2] b, float[2] c) => (float[6] y) { y = Concat <axis = 0> (a, b, c) })";
  auto f = setup_named("rule C { match %y = Concat(%a, ...) { axis == 0 } rewrite %y => %a }", model);
  CHECK(try_at(f, "n0") == "");
  auto g = setup_named("rule C { match %y = Concat(%a) rewrite %y => %a }", model);
  CHECK(try_at(g, "n0") == "Concat 'n0' has input 1 ('b'), the rule allows 1 (r.gerule:1:21)");
  auto h = setup_named("rule C { match %y = Concat(%a, %_b, %a) rewrite %y => %a }", model);
  CHECK(try_at(h, "n0") == "%a is 'a' but here it would be 'c' (r.gerule:1:37)");
}

TEST_CASE("attribute defaults, absent attributes, bound attributes") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,1] y, float[2,3] z) {
      y = ReduceMean <axes = [-1]> (x)
      z = Softmax <axis = 1> (x)
    })";
  auto f = setup_named("rule R { match %y = ReduceMean(%x) { keepdims == 1, !keepdims } rewrite %y => %x }",
                       model);
  CHECK(try_at(f, "n0") == "");  // keepdims is not set: its default, 1, applies
  auto g = setup_named("rule R { match %y = ReduceMean(%x) { keepdims == 0 } rewrite %y => %x }", model);
  CHECK(try_at(g, "n0") ==
        "attribute 'keepdims' of ReduceMean 'n0' is 1, the rule requires == 0 (r.gerule:1:38)");
  auto h = setup_named(
      "rule R { match %z = Softmax(%x) { axis == %a } rewrite %z => LogSoftmax(%x) { axis = %a } }", model);
  test::NodeMatch m;
  CHECK(try_at(h, "n1", &m) == "");
  CHECK(m.attrs.at("%a").i == 1);
  Model rewritten = apply_once(h, "z");
  const Node* ls = nullptr;
  for (const auto& n : rewritten.graph->nodes())
    if (n->op_type == "LogSoftmax") ls = n.get();
  REQUIRE(ls);
  CHECK(ls->attr("axis")->i == 1);
}

TEST_CASE("where: rank, dims (static, modulo, symbolic) and dtypes") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4,32] x, float[batch,40] s, double[4,32] d) => (float[4,32] y, float[batch,40] t, double[4,32] u) {
      y = Relu(x)
      t = Relu(s)
      u = Relu(d)
    })";
  auto f = setup_named(
      "rule R { match %y = Relu(%x) where rank(%x) == 2, dim(%x, -1) % 16 == 0, dim(%x, 0) == 4, dtype(%x) "
      "in {f32, f16}\n"
      "  rewrite %y => %x }",
      model);
  CHECK(try_at(f, "n0") == "");
  CHECK(try_at(f, "n1") == "where dim(%x, -1) % 16 == 0 fails: dim(%x, -1) % 16 is 8 (r.gerule:1:51)");
  auto g = setup_named("rule R { match %y = Relu(%x) where dim(%x, 0) == 4 rewrite %y => %x }", model);
  CHECK(try_at(g, "n1") ==
        "where dim(%x, 0) == 4 fails: dim(%x, 0) is symbolic ('batch'), not a number (r.gerule:1:36)");
  CHECK(try_at(f, "n2") == "where dtype(%x) in {f32, f16} fails: dtype(%x) is f64 (r.gerule:1:91)");
}

TEST_CASE("output selection: Split(%x)[1]") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[2] a, float[2] b) {
      p, q = Split(x)
      a = Neg(p)
      b = Neg(q)
    })";
  auto f = setup_named("rule R { match %y = Neg(Split(%x)[1]) rewrite %y => %x }", model);
  CHECK(try_at(f, "n2") == "");
  CHECK(try_at(f, "n1") == "input 0 of Neg 'n1' is output 0 of Split 'n0', the rule expects output 1");
}

TEST_CASE("constants: const, numbers, and values that are not constant") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x, float[4] w) => (float[4] a, float[4] b, float[4] c) {
      two = Constant <value = float[4] {2, 2, 2, 2}> ()
      mixed = Constant <value = float[4] {2, 2, 2, 3}> ()
      a = Pow(x, two)
      b = Pow(x, mixed)
      c = Pow(x, w)
    })";
  auto f = setup_named("rule R { match %y = Pow(%x, 2.0) rewrite %y => Mul(%x, %x) }", model);
  CHECK(try_at(f, "n2") == "");
  CHECK(try_at(f, "n3") ==
        "input 1 of Pow 'n3' 'mixed' is not one repeated value, the rule requires 2 (r.gerule:1:29)");
  CHECK(try_at(f, "n4") == "input 1 of Pow 'n4' 'w' is not a constant (r.gerule:1:29)");
}

TEST_CASE("fold evaluates an all-constant op into an initializer, under a size cap") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) {
      a = Constant <value = float[2,3] {1, 2, 3, 4, 5, 6}> ()
      b = Constant <value = float[3] {10, 20, 30}> ()
      c = Add(a, b)
      s = Shape(c)
      r = Reshape(c, s)
      y = Mul(x, r)
    })";
  auto f = setup_named("rule Fold [folding] { match *(const ...) fold max_elements = 64 }", model);
  Model original = import_onnx_proto(named(test::parse_text_model(model)), "m.onnx");
  dsl::RuleRun run = dsl::run_rules(f.model, *f.rules, ascend::op_registry(), test::default_cost());
  CHECK(run.saturation.per_rule["Fold"].applied == 3);  // c, s, r (a and b are constants already)
  REQUIRE(run.model.graph->nodes().size() == 1);
  CHECK(run.model.graph->nodes()[0]->op_type == "Mul");
  auto feeds = random_inputs(original, 2);
  CHECK(diff(Evaluator(run.model, ascend::op_registry()).run(feeds)[0].second,
             Evaluator(original, ascend::op_registry()).run(feeds)[0].second)
            .max_abs == 0);

  // The cap stops folds that grow the constants; one no larger than its inputs runs past it.
  const char* growing = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[3,2] x) => (float[3,2] y) {
      a = Constant <value = float[2,3] {1, 2, 3, 4, 5, 6}> ()
      t = Transpose <perm = [1, 0]> (a)
      s = Constant <value = int64[2] {3, 2}> ()
      b = Constant <value = float[1] {10}> ()
      e = Expand(b, s)
      u = Add(t, e)
      y = Mul(x, u)
    })";
  auto capped = setup_named("rule Fold [folding] { match *(const ...) fold max_elements = 4 }", growing);
  Model capped_model =
      dsl::run_rules(capped.model, *capped.rules, ascend::op_registry(), test::default_cost()).model;
  CHECK(test::count_op(capped_model, "Transpose") == 0);  // 6 elements out of 6 in: folds past the cap of 4
  CHECK(test::count_op(capped_model, "Expand") == 1);     // 6 out of 3 in: over the cap, left alone
  CHECK(test::count_op(capped_model, "Add") == 1);
  auto uncapped = setup_named("rule Fold [folding] { match *(const ...) fold max_elements = 64 }", growing);
  CHECK(dsl::run_rules(uncapped.model, *uncapped.rules, ascend::op_registry(), test::default_cost())
            .model.graph->nodes()
            .size() == 1);
}

TEST_CASE("where: shape(%a) == shape(%b), zeros(%c) and is_static(%v)") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[batch,3,4] x, float[2,3,4] z) => (float[batch,3,4] y, float[2,12] t) {
      s = Constant <value = int64[3] {0, 3, 4}> ()
      y = Reshape(x, s)
      f = Constant <value = int64[2] {2, 12}> ()
      t = Reshape(z, f)
    })";
  auto f = setup_named(
      "rule R { match %y = Reshape(%x, const %_s) where shape(%x) == shape(%y) rewrite %y => %x }", model);
  CHECK(try_at(f, "n1") == "");  // the same symbol is the same size
  CHECK(try_at(f, "n3") ==
        "where shape(%x) == shape(%y) fails: shape(%x) is [2,3,4], shape(%y) is [2,12] (r.gerule:1:50)");
  auto z =
      setup_named("rule R { match %y = Reshape(%x, const %s) where zeros(%s) == 0 rewrite %y => %x }", model);
  CHECK(try_at(z, "n1") == "where zeros(%s) == 0 fails: zeros(%s) is 1 (r.gerule:1:49)");
  CHECK(try_at(z, "n3") == "");
  auto st =
      setup_named("rule R { match %y = Reshape(%x, const %_s) where is_static(%x) rewrite %y => %x }", model);
  CHECK(try_at(st, "n1") == "where is_static(%x) fails: the shape of %x is f32[batch,3,4] (r.gerule:1:50)");
  CHECK(try_at(st, "n3") == "");
}

TEST_CASE("%c[i]: an element of a bound constant or ints attribute, in where and in a rewrite's list") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,4] x) => (float[1,2,6,8] y, float[1,2,6,4] z) {
      roi = Constant <value = float[0] {}> ()
      s = Constant <value = float[4] {1, 1, 2, 2}> ()
      y = Resize(x, roi, s)
      t = Constant <value = float[4] {1, 1, 2, 1}> ()
      z = Resize(x, roi, t)
    })";
  auto f = setup_named(
      "rule R { match %y = Resize(%x, const %_r, const %s) where %s[0] == 1, %s[3] == 2\n"
      "  rewrite %y => Tile(%x, const i64 [%s[0], %s[1], %s[2], %s[3]]) }",
      model);
  CHECK(try_at(f, "n2") == "");
  CHECK(try_at(f, "n4") == "where %s[3] == 2 fails: %s[3] is 1 (r.gerule:1:71)");
  Model rewritten = apply_once(f, "y");
  const Tensor* repeats = nullptr;
  for (const auto& n : rewritten.graph->nodes())
    if (n->op_type == "Tile") repeats = n->input(1)->initializer.get();
  REQUIRE(repeats);
  CHECK(repeats->to_vector<int64_t>() == std::vector<int64_t>{1, 1, 2, 2});
  auto outside = setup_named(
      "rule R { match %y = Resize(%x, const %_r, const %s) where %s[4] == 1 rewrite %y => %x }", model);
  CHECK(try_at(outside, "n2") == "where %s[4] == 1 fails: %s[4] is outside %s (4 elements) (r.gerule:1:59)");
  auto attr =
      setup_named("rule R { match %y = Transpose(%x) { perm == %p } where %p[1] == 2 rewrite %y => %x }",
                  R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,4] x) => (float[2,4,3] y) { y = Transpose <perm = [0, 2, 1]> (x) })");
  CHECK(try_at(attr, "n0") == "");
  // A value that is neither a constant nor an attribute has no elements to read.
  fs::path dir = test::scratch_dir("features");
  std::ofstream(dir / "bad.gerule") << "rule R { match %y = Relu(%x) where %x[0] == 1 rewrite %y => %x }";
  std::vector<dsl::Diagnostic> errors;
  CHECK_FALSE(dsl::RuleSet::load({(dir / "bad.gerule").string()}, errors));
  CHECK(dsl::format_diagnostics(errors).find(
            "%x[i] needs an attribute bound with `== %x` or a constant bound with `const %x`") !=
        std::string::npos);
}

TEST_CASE("const in a rewrite: a tensor made at each match, typed, one per match however often written") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3,4] x) => (float[2,12] y) {
      y = Flatten <axis = 1> (x)
    })";
  // The same `const` twice is one initializer, so the two Reshapes of x are one node.
  auto f = setup_named(
      "rule R { match %y = Flatten(%x) { axis == %a }\n"
      "  rewrite %y => Add(Reshape(%x, const i64 [dim(%x, 0), -1]), Mul(Reshape(%x, const i64 [dim(%x, 0), "
      "-1]), const dtype(%x) %a)) }",
      model);
  Model original = import_onnx_proto(named(test::parse_text_model(model)), "m.onnx");
  Model rewritten = apply_once(f, "y");
  CHECK(test::count_op(rewritten, "Reshape") == 1);
  const Tensor* shape = nullptr;
  const Tensor* scale = nullptr;
  for (const Value* v : rewritten.graph->initializers())
    (v->initializer->dtype == DType::I64 ? shape : scale) = v->initializer.get();
  REQUIRE(rewritten.graph->initializers().size() == 2);
  REQUIRE(shape);
  REQUIRE(scale);
  CHECK(shape->to_vector<int64_t>() == std::vector<int64_t>{2, -1});
  CHECK(scale->dtype == DType::F32);
  CHECK(scale->dims.empty());
  CHECK(scale->to_vector<float>() == std::vector<float>{1.0f});
  auto feeds = random_inputs(original, 3);
  HostTensor want = Evaluator(original, ascend::op_registry()).run(feeds)[0].second,
             got = Evaluator(rewritten, ascend::op_registry()).run(feeds)[0].second;
  for (int64_t i = 0; i < want.size(); ++i) CHECK(got.data<float>()[i] == 2 * want.data<float>()[i]);
}

TEST_CASE("a rewrite hides no pattern: every rule sees every form the e-graph holds") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4] x) => (float[4] y) {
      c = Constant <value = float {2}> ()
      d = Div(x, c)
      y = Relu(d)
    })";
  // AsMul rewrites the Div that ReluOfHalf reads; a greedy driver applying it first
  // would hide the pattern. In the e-graph the Div stays beside its Mul form.
  auto f = setup_named(
      "rule AsMul { match %y = Div(%x, const %c) rewrite %y => Mul(%x, Reciprocal(%c)) }\n"
      "rule ReluOfHalf { match %y = Relu(Div(%x, 2.0)) rewrite %y => Div(Relu(%x), const f32 2) }\n",
      model);
  dsl::RuleRun run = dsl::run_rules(f.model, *f.rules, ascend::op_registry(), test::default_cost());
  CHECK(run.saturation.per_rule["ReluOfHalf"].matched == 1);
  CHECK(run.saturation.per_rule["AsMul"].matched == 2);  // the input's Div and the one ReluOfHalf made
  Model original = import_onnx_proto(named(test::parse_text_model(model)), "m.onnx");
  auto feeds = random_inputs(original, 4);
  CHECK(diff(Evaluator(run.model, ascend::op_registry()).run(feeds)[0].second,
             Evaluator(original, ascend::op_registry()).run(feeds)[0].second)
            .max_abs <= 1e-6);
}

TEST_CASE("attributes computed from bound scalars: n / %a and %a * %b, of attributes and of constants") {
  fs::path dir = test::scratch_dir("computed-attrs");
  std::ofstream(dir / "r.gerule") << R"(rule Ratio {
  match %y = ai.geopt.FlashAttention(%q, %k, %v) { scale == %s }
  where %s != 0
  rewrite %y => ai.geopt.FlashAttention(%q, %k, %v) { scale = 2 / %s }
}
rule Product {
  match %y = ai.geopt.FlashAttention(Mul(%q, const %c), %k, %v) { scale == %s }
  where rank(%c) == 0
  rewrite %y => ai.geopt.FlashAttention(%q, %k, %v) { scale = %s * %c }
}
)";
  auto rules = test::load_rules({(dir / "r.gerule").string()});
  Model model =
      import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17, "ai.geopt" : 1]>
      g (float[1,2,8,4] q, float[1,2,8,4] k, float[1,2,8,4] v) => (float[1,2,8,4] y) {
        c = Constant <value = float {3.0}> ()
        qs = Mul(q, c)
        y = ai.geopt.FlashAttention <scale = 0.25> (qs, k, v)
      })"),
                        "m.onnx");
  auto scale_after = [&](int rule) {
    auto out = dsl::apply_once(model, *rules, ascend::op_registry(), rule, "y", test::default_cost());
    REQUIRE(out);
    for (const auto& n : out->graph->nodes())
      if (n->op_type == "FlashAttention") return static_cast<double>(n->attr("scale")->f);
    return -1.0;
  };
  CHECK(scale_after(0) == doctest::Approx(8.0));   // 2 / 0.25: the attribute divided, not copied
  CHECK(scale_after(1) == doctest::Approx(0.75));  // 0.25 * 3
}

TEST_CASE(
    "symbolic dims: one symbol is one size, and a condition on a dim with a known range is proven at every "
    "size in it") {
  const char* model = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,seq,16] x, float[1,seq,16] r, float[1,len,16] q) => (float[1,seq,16] y, float[1,seq,16] z) {
      y = Add(x, r)
      z = Add(x, q)
    })";
  auto same =
      setup_named("rule S { match %y = Add(%a, %b) where dim(%a, 1) == dim(%b, 1) rewrite %y => %y }", model);
  CHECK(try_at(same, "n0") == "");
  CHECK(try_at(same, "n1") ==
        "where dim(%a, 1) == dim(%b, 1) fails: dim(%a, 1) is symbolic ('seq'), dim(%b, 1) is symbolic "
        "('len'): not the same symbol, so not known to be one size (r.gerule:1:39)");

  auto bound = setup_named(
      "rule B { match %y = Add(%a, %_b) where dim(%a, 1) <= 512, dim(%a, 1) % 1 == 0 rewrite %y => %y }",
      model);
  CHECK(try_at(bound, "n0") ==
        "where dim(%a, 1) <= 512 fails: dim(%a, 1) is symbolic ('seq'), not a number (r.gerule:1:40)");
  bound.model.graph->dim_ranges["seq"] = {1, 128};
  CHECK(try_at(bound, "n0") == "");  // every size from 1 to 128 is at most 512
  bound.model.graph->dim_ranges["seq"] = {256, 1024};
  CHECK(try_at(bound, "n0") ==
        "where dim(%a, 1) <= 512 fails: dim(%a, 1) is symbolic ('seq', 256~1024), and at seq = 513 it does "
        "not hold (r.gerule:1:40)");

  auto aligned =
      setup_named("rule A { match %y = Add(%a, %_b) where dim(%a, 1) % 16 == 0 rewrite %y => %y }", model);
  aligned.model.graph->dim_ranges["seq"] = {16, 16};
  CHECK(try_at(aligned, "n0") == "");
  aligned.model.graph->dim_ranges["seq"] = {1, 128};
  CHECK(try_at(aligned, "n0") ==
        "where dim(%a, 1) % 16 == 0 fails: dim(%a, 1) is symbolic ('seq', 1~128), and at seq = 1 it does not "
        "hold (r.gerule:1:40)");
  aligned.model.graph->dim_ranges["seq"] = {1, 100000};
  CHECK(try_at(aligned, "n0").find("too many sizes to check each") != std::string::npos);
}
