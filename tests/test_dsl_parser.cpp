// The .gerule grammar: every construct parses into the expected AST, and each
// syntax error is reported at its file:line:col with a message that says what
// was expected, without hiding the errors after it.
#include <doctest/doctest.h>

#include "dsl/parser.h"

using namespace geopt::dsl;

namespace {

ParseResult parse(const std::string& text) { return parse_rules(text, "t.gerule"); }

std::string errors_of(const ParseResult& r) {
  std::string s;
  for (const auto& e : r.errors) s += e.loc.to_string() + ": " + e.message + "\n";
  return s;
}

}  // namespace

TEST_CASE("a full rule parses into its parts") {
  auto r = parse(R"(# LayerNorm from primitives
rule LayerNormFusion [fusion, norm] {
  doc "LayerNorm exported as primitive ops."
  enabled false
  let %d = Sub(%x, ReduceMean(%x) { axes == [-1] })
  let %var = ReduceMean(Pow(%d, 2.0)) { axes == [-1], keepdims == 1 }
  match %y = Add(Mul(Div(%d, Sqrt(Add(%var, const %eps))), %gamma), %beta)
  where %eps in 1e-12 .. 1e-3, rank(%x) >= 2, dim(%x, -1) % 16 == 0, dtype(%x) in {f32, f16}
  where %eps ~= 1e-5 +- 1e-9, is_const(%gamma)
  rewrite %y => ai.geopt.LayerNorm(%x, %gamma, %beta) { epsilon = %eps, axis = -1 }
  test "chain" {
    model """<ir_version: 8, opset_import: ["" : 13]> g (float[2] x) => (float[2] y) { y = Relu(x) }"""
    expect count(ai.geopt.LayerNorm) == 1
    expect fired(LayerNormFusion) >= 1
    expect outputs_equal tolerance 1e-5
  }
}
)");
  INFO(errors_of(r));
  REQUIRE(r.errors.empty());
  REQUIRE(r.file.rules.size() == 1);
  const Rule& rule = r.file.rules[0];
  CHECK(rule.name == "LayerNormFusion");
  CHECK(rule.loc.line == 2);
  CHECK(rule.tags == std::vector<std::string>{"fusion", "norm"});
  CHECK(rule.doc == "LayerNorm exported as primitive ops.");
  CHECK_FALSE(rule.enabled);
  REQUIRE(rule.lets.size() == 2);
  CHECK(rule.lets[0].var == "%d");
  CHECK(rule.lets[1].pattern->op == "ReduceMean");
  CHECK(rule.lets[1].pattern->attrs.size() == 2);
  CHECK(rule.lets[1].pattern->attrs[1].name == "keepdims");
  CHECK(rule.lets[1].pattern->args[0]->args[1]->kind == Pattern::Kind::Number);
  CHECK(rule.lets[1].pattern->args[0]->args[1]->number == 2.0);
  REQUIRE(rule.roots.size() == 1);
  const Pattern& root = *rule.roots[0];
  CHECK(root.op == "Add");
  CHECK(root.var == "%y");
  CHECK(root.loc.line == 7);
  CHECK(root.loc.column == 14);
  const Pattern& inner_add = *root.args[0]->args[0]->args[1]->args[0];
  CHECK(inner_add.op == "Add");
  CHECK(inner_add.args[1]->kind == Pattern::Kind::Const);
  CHECK(inner_add.args[1]->var == "%eps");
  REQUIRE(rule.where.size() == 6);
  CHECK(rule.where[0].is_range);
  CHECK(rule.where[0].lo == 1e-12);
  CHECK(rule.where[2].lhs.kind == Term::Kind::Dim);
  CHECK(rule.where[2].lhs.axis == -1);
  CHECK(rule.where[2].lhs.modulo == 16);
  CHECK(rule.where[3].set.size() == 2);
  CHECK(rule.where[4].op == CmpOp::Approx);
  CHECK(rule.where[4].tolerance == 1e-9);
  CHECK(rule.where[5].kind == Predicate::Kind::IsConst);
  REQUIRE(rule.rewrites.size() == 1);
  CHECK(rule.rewrites[0].target == "%y");
  CHECK(rule.rewrites[0].replacement->domain == "ai.geopt");
  CHECK(rule.rewrites[0].replacement->op == "LayerNorm");
  CHECK(rule.rewrites[0].replacement->attrs[0].var == "%eps");
  CHECK(rule.rewrites[0].replacement->attrs[1].value->number == -1);
  REQUIRE(rule.tests.size() == 1);
  CHECK(rule.tests[0].model_text.find("Relu") != std::string::npos);
  REQUIRE(rule.tests[0].expectations.size() == 3);
  CHECK(rule.tests[0].expectations[0].op == "LayerNorm");
  CHECK(rule.tests[0].expectations[1].cmp == CmpOp::Ge);
  CHECK(rule.tests[0].expectations[2].tolerance == 1e-5);
}

TEST_CASE("output selection, variadic rests, wildcards, absent attributes, multi-root, fold") {
  auto r = parse(R"(
rule QKV { match MatMul(%x, %wq) as %q, MatMul(%x, %wk) as %k, MatMul(%x, %wv) as %v
  rewrite %q => Split(MatMul(%x, Concat(%wq, %wk, %wv) { axis = 1 }))[0] }
rule Fold [folding] { match *(const ...) fold max_elements = 4096 }
rule Cat { match Concat(%a, ...) { axis == 1 } rewrite => %a }
rule Drop [elimination] { match Dropout(%x, ...) { !training_mode } rewrite => %x }
rule Second { match Split(%x)[1] rewrite => %x }
)");
  INFO(errors_of(r));
  REQUIRE(r.errors.empty());
  REQUIRE(r.file.rules.size() == 5);
  CHECK(r.file.rules[0].roots.size() == 3);
  CHECK(r.file.rules[0].roots[2]->var == "%v");
  CHECK(r.file.rules[0].rewrites[0].replacement->output_index == 0);
  CHECK(r.file.rules[0].rewrites[0].replacement->args[0]->args[1]->attrs[0].name == "axis");
  const Pattern& fold = *r.file.rules[1].roots[0];
  CHECK(fold.op == "*");
  REQUIRE(fold.rest);
  CHECK(fold.rest->kind == Pattern::Kind::Const);
  CHECK(r.file.rules[1].fold);
  CHECK(r.file.rules[1].fold_max_elements == 4096);
  CHECK(r.file.rules[2].roots[0]->rest_any);
  CHECK(r.file.rules[3].roots[0]->attrs[0].absent);
  CHECK(r.file.rules[4].roots[0]->output_index == 1);
}

TEST_CASE("nested patterns parse in time linear in their depth") {
  // Each argument is read once: a grammar that tried `P...` and then `P` again
  // doubled the time with every level (depth 40 would never finish).
  for (int depth : {10, 40, 200}) {
    std::string pattern = "%x";
    for (int i = 0; i < depth; ++i) pattern = "Relu(" + pattern + ")";
    std::string rest = "%y";
    for (int i = 0; i < depth; ++i) rest = "Neg(" + rest + ")";
    auto r = parse("rule Deep { match Concat(" + pattern + ", " + rest + "...) rewrite => %x }");
    INFO("depth " << depth << ": " << errors_of(r));
    REQUIRE(r.errors.empty());
    const Pattern* p = r.file.rules[0].roots[0]->args[0].get();
    int levels = 0;
    for (; p->kind == Pattern::Kind::Op; p = p->args[0].get()) ++levels;
    CHECK(levels == depth);
    REQUIRE(r.file.rules[0].roots[0]->rest);
    CHECK(r.file.rules[0].roots[0]->rest->op == "Neg");
  }
  auto misplaced = parse("rule R { match Concat(%a..., %b) rewrite => %a }");
  CHECK(errors_of(misplaced).find("`...` must be the last argument") != std::string::npos);
}

TEST_CASE("syntax errors name file:line:col and what was expected, and later errors still show") {
  auto r = parse(R"(rule A {
  match Add(%a %b)
}
rule B [fusion {
}
rule C {
  match Relu(%x)
  rewrite %x ai.geopt.Gelu(%x)
}
rule D { match Relu(%x) rewrite => %x }
rule E {
  match Relu(%x) { alpha 0.5 }
}
rule F {
  match Relu(%x)
  where %x ~= 1.0
})");
  REQUIRE(r.errors.size() == 5);
  CHECK(r.errors[0].loc.to_string() == "t.gerule:2:16");
  CHECK(r.errors[0].message == "expected `,` or `)` in the op's arguments");
  CHECK(r.errors[1].loc.to_string() == "t.gerule:4:16");
  CHECK(r.errors[1].message == "expected `]` closing the tag list");
  CHECK(r.errors[2].loc.to_string() == "t.gerule:8:14");
  CHECK(r.errors[2].message == "expected `=>` after `rewrite` (rewrite %value => Replacement)");
  CHECK(r.errors[3].loc.to_string() == "t.gerule:12:26");
  CHECK(r.errors[3].message.find("expected `==`") == 0);
  CHECK(r.errors[4].loc.to_string() == "t.gerule:16:12");
  CHECK(r.errors[4].message.find("explicit tolerance") != std::string::npos);
  // Rule D, between broken ones, still parses.
  bool found_d = false;
  for (const auto& rule : r.file.rules) found_d = found_d || rule.name == "D";
  CHECK(found_d);
}

TEST_CASE("diagnostics print the source line with a caret") {
  std::string text = "rule A {\n  match Add(%a %b)\n}\n";
  auto r = parse(text);
  REQUIRE(r.errors.size() == 1);
  CHECK(format_diagnostic(r.errors[0], text) ==
        "t.gerule:2:16: error: expected `,` or `)` in the op's arguments\n"
        "      match Add(%a %b)\n"
        "    " +
            std::string(15, ' ') + "^\n");
}

TEST_CASE("a rule without match, an unknown item and an unterminated rule are reported") {
  auto r = parse("rule A { doc \"x\" }\nrule B { frobnicate }\nrule C { match Relu(%x)\n");
  REQUIRE(r.errors.size() == 3);
  CHECK(r.errors[0].message == "rule A has no `match`");
  CHECK(r.errors[0].loc.to_string() == "t.gerule:1:1");
  CHECK(r.errors[1].loc.to_string() == "t.gerule:2:10");
  CHECK(r.errors[1].message.find("expected a rule item") == 0);
  CHECK(r.errors[2].loc.line == 4);
  CHECK(parse_rule_file("/no/such/file.gerule").errors.at(0).message == "cannot read the rule file");
}

TEST_CASE("`_` among a rewrite's inputs parses as an absent input, and `_name` is still an op") {
  auto ok = parse("rule A { match %y = Clip(%x, %lo, %hi) rewrite %y => Clip(%x, _, %hi) }");
  REQUIRE(ok.errors.empty());
  const Replacement& clip = *ok.file.rules[0].rewrites[0].replacement;
  REQUIRE(clip.args.size() == 3);
  CHECK(clip.args[0]->kind == Replacement::Kind::Var);
  CHECK(clip.args[1]->kind == Replacement::Kind::Absent);
  CHECK(clip.args[2]->var == "%hi");
  auto named = parse("rule B { match %y = Relu(%x) rewrite %y => _Op(%x) }");
  REQUIRE(named.errors.empty());
  CHECK(named.file.rules[0].rewrites[0].replacement->op == "_Op");
}

TEST_CASE("a constant in a rewrite parses, and one without a type or value says what it needs") {
  auto ok = parse(
      "rule A { match %y = Relu(%x) rewrite %y => Reshape(%x, const i64 [dim(%x, 0), -1]) }\n"
      "rule B { match %y = Relu(%x) { alpha == %a } rewrite %y => Add(%x, const dtype(%x) %a) }");
  REQUIRE(ok.errors.empty());
  const Replacement& shape = *ok.file.rules[0].rewrites[0].replacement->args[1];
  CHECK(shape.kind == Replacement::Kind::Const);
  CHECK(shape.const_dtype == "i64");
  CHECK(shape.const_is_list);
  REQUIRE(shape.const_items.size() == 2);
  CHECK(shape.const_items[0].term->kind == Term::Kind::Dim);
  CHECK(*shape.const_items[1].number == -1);
  const Replacement& eps = *ok.file.rules[1].rewrites[0].replacement->args[1];
  CHECK(eps.const_dtype_of == "%x");
  CHECK_FALSE(eps.const_is_list);
  CHECK(eps.const_items.at(0).var == "%a");
  auto bad = parse(
      "rule C { match %y = Relu(%x) rewrite %y => Add(%x, const [1]) }\n"
      "rule D { match %y = Relu(%x) rewrite %y => Add(%x, const f32) }");
  REQUIRE(bad.errors.size() == 2);
  CHECK(bad.errors[0].message ==
        "expected the constant's element type after `const` (f32, i64, ... or dtype(%v))");
  CHECK(bad.errors[1].message == "expected the constant's value: a [list], a number or a bound %var");
}
