// The .gerule checker: each error class is reported at its location.
#include <doctest/doctest.h>

#include "dsl/checker.h"
#include "dsl/parser.h"

using namespace geopt::dsl;

namespace {

// Parses (must succeed) and checks; returns "line:col message" lines.
std::vector<std::string> check(const std::string& text) {
  ParseResult r = parse_rules(text, "c.gerule");
  REQUIRE_MESSAGE(r.errors.empty(), r.errors.at(0).message);
  std::vector<Diagnostic> out;
  check_rules({&r.file}, out);
  std::vector<std::string> lines;
  for (const auto& d : out)
    lines.push_back(std::to_string(d.loc.line) + ":" + std::to_string(d.loc.column) + " " + d.message);
  return lines;
}

}  // namespace

TEST_CASE("a correct rule has no errors") {
  CHECK(check("rule A { match %y = Relu(%x) rewrite %y => %x }").empty());
}

TEST_CASE("unknown ops and domains") {
  auto e = check(
      "rule A {\n  match %y = Frobnicate(%x)\n  rewrite %y => ai.geopt.NoSuchOp(%x)\n}\nrule B { match %y = "
      "com.vendor.Op(%x) rewrite %y => %x }");
  REQUIRE(e.size() == 3);
  CHECK(e[0] == "2:14 unknown op 'Frobnicate' (not in ONNX's schemas or the ai.geopt catalog)");
  CHECK(e[1] == "3:17 unknown op 'ai.geopt.NoSuchOp' (not in ONNX's schemas or the ai.geopt catalog)");
  CHECK(e[2] == "5:21 unknown domain 'com.vendor' (known: ai.onnx, ai.onnx.ml, ai.geopt)");
}

TEST_CASE("unknown and mistyped attributes, in patterns and in rewrites") {
  auto e = check(R"(rule A {
  match %y = ReduceMean(%x) { axis == 1, keepdims == "yes", axes == [0.5] }
  rewrite %y => ai.geopt.LayerNorm(%x, %x) { epsilon = "small", gamma = 1 }
})");
  REQUIRE(e.size() == 5);
  CHECK(e[0] == "2:31 ReduceMean has no attribute 'axis'");
  CHECK(e[1] == "2:42 attribute 'keepdims' of ReduceMean is int, the rule compares it with \"yes\"");
  CHECK(e[2] == "2:61 attribute 'axes' of ReduceMean is ints, the rule compares it with [0.5]");
  CHECK(e[3] == "3:46 attribute 'epsilon' of LayerNorm is float, got \"small\"");
  CHECK(e[4] == "3:65 LayerNorm has no attribute 'gamma'");
}

TEST_CASE("unbound and unused variables") {
  auto e = check(R"(rule A {
  let %unused = Relu(%x)
  match %y = Add(%a, %b)
  where rank(%q) == 2
  rewrite %y => Mul(%a, %c)
})");
  REQUIRE(e.size() == 5);
  CHECK(e[0] == "4:9 unbound variable %q");
  CHECK(e[1] == "5:25 unbound variable %c");
  CHECK(e[2] == "3:22 variable %b is bound but never used (name it %_b to mark it unused)");
  CHECK(e[3] == "2:3 let %unused is never used");
  CHECK(e[4] == "2:22 variable %x is bound but never used (name it %_x to mark it unused)");
  CHECK(check("rule A { match %y = Add(%a, %_b) rewrite %y => %a }").empty());
}

TEST_CASE("arities: pattern inputs, rewrite inputs and output indices") {
  auto e = check(R"(rule A {
  match %y = Relu(%x, %_z)
  rewrite %y => Add(%x)
}
rule B {
  match %y = Relu(%x)[2]
  rewrite %y => Split(%x)[0]
})");
  REQUIRE(e.size() == 3);
  CHECK(e[0] == "2:14 Relu takes at most 1 inputs, the pattern gives 2");
  CHECK(e[1] == "3:17 Add takes 2..2 inputs, the rewrite gives 1");
  CHECK(e[2] == "6:14 Relu has 1 output(s); [2] is out of range");
}

TEST_CASE("duplicate names, missing rewrites, several roots without a target, unknown rules in tests") {
  auto e = check(R"(rule A { match %y = Relu(%x) rewrite %y => %x }
rule A { match %y = Neg(%x) rewrite %y => %x }
rule B { match %_y = Relu(%x) where rank(%x) == 1 }
rule C { match MatMul(%x, %w1) as %p, MatMul(%x, %w2) as %q rewrite => Add(%p, %q) }
rule D { match %y = Relu(%x) rewrite %y => %x
  test "t" { model """x""" expect fired(Nope) == 1 expect count(NoOp) == 0 } })");
  REQUIRE(e.size() == 7);
  CHECK(e[0] == "2:1 duplicate rule name 'A' (first defined at c.gerule:1:1)");
  CHECK(e[1] == "3:1 rule B has neither `rewrite` nor `fold`");
  CHECK(e[2] == "4:61 with several roots, name the value to replace: rewrite %v => ...");
  CHECK(e[3].find("variable %w1") != std::string::npos);
  CHECK(e[4].find("variable %w2") != std::string::npos);
  CHECK(e[5] == "6:35 test expects unknown rule 'Nope'");
  CHECK(e[6] == "6:59 test counts unknown op 'NoOp'");
}

TEST_CASE("where-clause terms and kinds") {
  auto e = check(R"(rule A {
  match %y = Add(%x, const %c) { }
  where dtype(%x) in {f32, float99}, %x > 1, dtype(%x) < f32
  rewrite %y => ai.geopt.LayerNorm(%x, %c) { epsilon = %x }
})");
  REQUIRE(e.size() == 4);
  CHECK(e[0] == "3:9 set element float99 does not fit dtype(%x)");
  CHECK(e[1] == "3:38 %x is a tensor value; bind it with `const %x` to use its value");
  CHECK(e[2] == "3:46 compare dtype(...) with ==, != or `in {..}`");
  CHECK(e[3] == "4:46 %x is a tensor value; bind it with `const %x` to use its value");
}

TEST_CASE("constants in rewrites and shape comparisons") {
  auto e = check(R"(rule A {
  match %y = Relu(%x) { }
  where shape(%x) == 3, shape(%x) < shape(%y)
  rewrite %y => Add(%x, Mul(const float99 [1], const dtype(%z) %x))
})");
  REQUIRE(e.size() == 5);
  CHECK(e[0] == "3:9 compare shape(...) with another shape(...), by == or !=");
  CHECK(e[1] == "3:25 compare shape(...) with another shape(...), by == or !=");
  CHECK(e[2] == "4:29 'float99' is not a numeric dtype name (f32, f16, bf16, i64, ...)");
  CHECK(e[3] == "4:48 unbound variable %z");
  CHECK(e[4] == "4:48 %x is a tensor value; bind it with `const %x` to use its value");
  CHECK(check("rule B { match %y = Relu(%x) where shape(%x) == shape(%y) rewrite %y => Reshape(%x, const i64 "
              "[dim(%x, 0), -1]) }")
            .empty());
}

TEST_CASE("a product of bound scalars gives a float attribute, of bound variables only") {
  CHECK(check(R"(rule A {
  match %y = ai.geopt.FlashAttention(Mul(%q, const %c), %k, %v) { scale == %s }
  rewrite %y => ai.geopt.FlashAttention(%q, %k, %v) { scale = %s * %c }
})")
            .empty());
  auto e = check(R"(rule B {
  match %y = ai.geopt.FlashAttention(Mul(%q, const %c), %k, %v) { scale == %s }
  rewrite %y => ai.geopt.FlashAttention(%q, %k, %v) { causal = %s * %c, scale = %s * %nope }
})");
  REQUIRE(e.size() == 2);
  CHECK(e[0] == "3:55 attribute 'causal' of FlashAttention is int; `%a * %b` gives a float");
  CHECK(e[1] == "3:73 unbound variable %nope");
}

TEST_CASE("list variables: bound inside `...`, used only spliced") {
  CHECK(check("rule A { match %y = Concat(Relu(%xs)...) { axis == 1 } rewrite %y => Relu(Concat(%xs...) { "
              "axis = 1 }) }")
            .empty());
  CHECK(check("rule A { match %y = Concat(Relu(%x), Relu(%xs) { } ...) rewrite %y => Concat(%x, %xs...) { "
              "axis = 0 } }")
            .empty());
  auto e = check(R"(rule A {
  match %y = Concat(ai.geopt.TransData(%xs) { channels == %cs }...)
  where rank(%xs) == 4
  rewrite %y => Concat(%xs) { axis = 1 }
}
rule B { match %y = Concat(Relu(%x)...) rewrite %y => Concat(%y...) { axis = 1 } }
rule C { match %y = Add(%x, Concat(Neg(%x)...)) rewrite %y => %x }
rule D { match %y = Concat(ai.geopt.TransData(%xs) { channels == %cs }...) rewrite %y => ai.geopt.ChannelMove(%xs...) { channels = [%xs...] } }
rule E { match %y = Concat(Relu(%xs)...) rewrite %y => %xs... }
)");
  std::string all;
  for (const auto& line : e) all += line + "\n";
  INFO(all);
  CHECK(all.find("3:9 %xs is a list variable") != std::string::npos);   // in where
  CHECK(all.find("4:24 %xs is a list variable") != std::string::npos);  // bare in a rewrite
  CHECK(all.find("%y... splices a list variable, but %y is bound once") != std::string::npos);
  CHECK(all.find("variable %x is bound both inside and outside a `...` pattern") != std::string::npos);
  CHECK(all.find("%xs holds tensor values; in a list, splice attributes or `const` scalars") !=
        std::string::npos);
  CHECK(all.find("%xs... splices inputs: it stands among an op's inputs") != std::string::npos);
}

TEST_CASE("a splice leaves the fixed inputs checked") {
  auto e = check("rule A { match %y = Concat(Relu(%xs)...) rewrite %y => Relu(%y, %y, %xs...) }");
  REQUIRE(e.size() == 1);
  CHECK(e[0].find("Relu takes 1..1 inputs, the rewrite gives 2 and a splice") != std::string::npos);
}

TEST_CASE("`_` leaves an optional input of a rewrite's op absent, and stands for nothing else") {
  CHECK(
      check("rule A { match %y = Clip(%x, %lo, %hi) rewrite %y => Clip(Clip(%x, %lo, _), _, %hi) }").empty());
  auto e = check(
      "rule B { match %y = Relu(%_x) rewrite %y => _ }\n"
      "rule C { match %y = Relu(%x) rewrite %y => Add(_, %x) }");
  REQUIRE(e.size() == 2);
  CHECK(e[0] == "1:45 `_` leaves an input absent: it stands among an op's inputs, not for a value");
  CHECK(e[1] == "2:48 input 0 of Add is required: `_` cannot leave it absent");
}
