// Every shipped rule is sound: applied once at each site of its tests' graphs, at
// several batch sizes, with random inputs at their usual scale and larger and the
// constants it binds drawn at random, the rewritten graph computes what the original
// computes within the rule's declared tolerance. A rule no test makes fire would go
// unchecked: that fails too. And unsound rules are caught, with what shows it.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "ascend/device_ops/device_ops.h"
#include "dsl/soundness.h"
#include "dsl_support.h"
#include "test_support.h"

namespace geopt {
namespace {

namespace fs = std::filesystem;

TEST_CASE("every shipped rule is sound on random shapes and inputs") {
  auto rules = test::load_rules({test::shipped_rules()});
  size_t instances = 0, batch_variants = 0;
  for (const auto& r : dsl::check_soundness(*rules, ascend::op_registry(), test::default_cost())) {
    INFO(r.rule);
    CHECK(r.checked());
    for (const auto& c : r.cases) {
      INFO(c.test << " (" << c.shapes << "): " << c.failure);
      CHECK(c.passed);
      ++instances;
      batch_variants += c.shapes.rfind("batch", 0) == 0;
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
  auto result = dsl::check_soundness(*rules, ascend::op_registry(), test::default_cost());
  REQUIRE(result.size() == 1);
  CHECK(result[0].checked());
  CHECK_FALSE(result[0].passed());
  size_t failed = 0;
  for (const auto& c : result[0].cases) failed += !c.passed;
  CHECK(failed >= 1);
  CHECK(result[0].cases.front().passed);  // Relu(Abs(x)) is Abs(x): that instance is sound
}

TEST_CASE("a rule applied an even number of times is still caught: each site is rewritten once") {
  fs::path dir = test::scratch_dir("unsound_swap");
  std::ofstream(dir / "swap.gerule") << R"(rule SubSwap {
  match %y = Sub(%a, %b)
  rewrite %y => Sub(%b, %a)
  test "a difference" {
    model """<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] a, float[2,3] b) => (float[2,3] y) { y = Sub(a, b) }"""
    expect outputs_equal
  }
})";
  auto rules = test::load_rules({(dir / "swap.gerule").string()});
  auto result = dsl::check_soundness(*rules, ascend::op_registry(), test::default_cost());
  REQUIRE(result.size() == 1);
  CHECK(result[0].checked());
  CHECK_FALSE(result[0].passed());
  for (const auto& c : result[0].cases) CHECK_FALSE(c.passed);
}

TEST_CASE("a rule sound only for its test's constants is caught, naming the constants") {
  fs::path dir = test::scratch_dir("unsound_clip");
  std::ofstream(dir / "clip.gerule") << R"(rule ClipOfRelu {
  match %y = Clip(Relu(%x), const %lo, const %hi)
  rewrite %y => Clip(%x, %lo, %hi)
  test "a Relu6 after a Relu" {
    model """<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (float[2,3] y) {
        lo = Constant <value = float {0}> ()
        hi = Constant <value = float {6}> ()
        r = Relu(x)
        y = Clip(r, lo, hi)
      }"""
    expect outputs_equal
  }
})";
  auto rules = test::load_rules({(dir / "clip.gerule").string()});
  auto result = dsl::check_soundness(*rules, ascend::op_registry(), test::default_cost());
  REQUIRE(result.size() == 1);
  CHECK_FALSE(result[0].passed());
  const dsl::SoundnessCase* failing = nullptr;
  for (const auto& c : result[0].cases)
    if (!c.passed && !failing) failing = &c;
  REQUIRE(failing);
  CHECK(failing->shapes.find("constants drawn: %hi = [") != std::string::npos);
  CHECK(failing->shapes.find("%lo = [-") !=
        std::string::npos);  // a negative lower bound is what Relu would have clipped
  // With the guard the rule needs, every draw it still takes is sound.
  std::string text = test::read_file(dir / "clip.gerule");
  text.insert(text.find("  rewrite"), "  where %lo in 0 .. 1e30\n");
  test::write_file(dir / "clip.gerule", text);
  auto guarded = test::load_rules({(dir / "clip.gerule").string()});
  auto fixed = dsl::check_soundness(*guarded, ascend::op_registry(), test::default_cost());
  REQUIRE(fixed.size() == 1);
  CHECK(fixed[0].checked());
  CHECK(fixed[0].passed());
}

}  // namespace
}  // namespace geopt
