// Every shipped rule is sound: instantiated on its tests' graphs (where it fires)
// at several batch sizes, with random inputs at their usual scale and larger, the
// rewritten graph computes what the original computes within the rule's declared
// tolerance. A rule no test makes fire would go unchecked: that fails too.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "dsl/soundness.h"
#include "dsl_support.h"
#include "test_support.h"

namespace geopt {
namespace {

namespace fs = std::filesystem;

TEST_CASE("every shipped rule is sound on random shapes and inputs") {
  auto rules = test::load_rules({test::shipped_rules()});
  size_t instances = 0, batch_variants = 0;
  for (const auto& r : dsl::check_soundness(*rules)) {
    INFO(r.rule);
    CHECK(r.checked());
    for (const auto& c : r.cases) {
      INFO(c.test << " (" << c.shapes << "): " << c.failure);
      CHECK(c.passed);
      ++instances;
      batch_variants += c.shapes != "as written";
    }
  }
  MESSAGE(instances << " instances checked, " << batch_variants << " of them at another batch size");
  CHECK(batch_variants > 0);
}

TEST_CASE("the soundness check catches an unsound rule") {
  fs::path dir = test::scratch_dir("unsound");
  std::ofstream(dir / "bad.gerule") << R"(rule ReluIsIdentity {
  match %y = Relu(%x)
  rewrite %y => %x
  test "passes on positive inputs only" {
    model """<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (float[2,3] y) { a = Abs(x) y = Relu(a) }"""
    expect outputs_equal
  }
  test "would fail" {
    model """<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (float[2,3] y) { a = Neg(x) r = Relu(a) y = Neg(r) }"""
    expect outputs_equal
  }
})";
  auto rules = test::load_rules({(dir / "bad.gerule").string()});
  auto result = dsl::check_soundness(*rules);
  REQUIRE(result.size() == 1);
  CHECK(result[0].checked());
  CHECK_FALSE(result[0].passed());
  size_t failed = 0;
  for (const auto& c : result[0].cases) failed += !c.passed;
  CHECK(failed >= 1);
  CHECK(result[0].cases.front().passed);  // Relu(Abs(x)) is Abs(x): that instance is sound
}

}  // namespace
}  // namespace geopt
