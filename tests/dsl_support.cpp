#include "dsl_support.h"

#include <doctest/doctest.h>

#include "dsl/diagnostic.h"

namespace geopt::test {

std::unique_ptr<dsl::RuleSet> load_rules(const std::vector<std::string>& paths) {
  std::vector<dsl::Diagnostic> errors;
  auto set = dsl::RuleSet::load(paths, errors);
  REQUIRE_MESSAGE(set, dsl::format_diagnostics(errors));
  return set;
}

std::string shipped_rules() { return std::string(GEOPT_SOURCE_DIR_STR) + "/rules"; }

std::string layernorm_variants(int count) {
  std::string text;
  for (int k = 1; k <= count; ++k) {
    std::string a = std::to_string(k);
    text += "rule LayerNormAxis" + a + " [generated] {\n"
            "  let %d = Sub(%x, ReduceMean(%x) { axes == [" + a + "], keepdims == 1 })\n"
            "  let %var = ReduceMean(Pow(%d, 2.0)) { axes == [" + a + "], keepdims == 1 }\n"
            "  match %y = Add(Mul(Div(%d, Sqrt(Add(%var, const %eps))), %gamma), %beta)\n"
            "  rewrite %y => ai.geopt.LayerNorm(%x, %gamma, %beta) { axis = " + a + ", epsilon = %eps }\n"
            "}\n";
  }
  return text;
}

}  // namespace geopt::test
