// The starter rules on real exported models, the automaton's sharing, and rule
// switching (names, tags, switch files), including edits to rule files on disk.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

using test::matches_per_rule;

size_t nlohmann_json_size(const std::string& json, const std::string& key) {
  return nlohmann::json::parse(json).at(key).size();
}

}  // namespace

TEST_CASE("the shipped rules match every instance in the example models") {
  auto rules = test::load_rules({test::shipped_rules()});
  // Counted from the exports (python onnx): a LayerNorm chain per pair of ReduceMeans
  // in the opset-13 BERT/GPT-2 (LLaMA's ReduceMeans are RMSNorms), one GELU per Erf,
  // one attention per Softmax (GPT-2's through a Where mask, each layer's slice of the
  // causal mask folded by the canonical forms' folds), a tanh GELU per Tanh (its x*x*x as Pow: CubeIsPow), an
  // RMSNorm per LLaMA norm, every op with constant inputs (FoldConstants: the position and token-type
  // embedding lookups), every MatMul by a weight with a bias Add (12 in BERT: Q, K, V, output, two FFN layers
  // per layer; 8 in GPT-2),
  // GPT-2's single Identity (the tied LM head), the canonical forms' sites at the model's own nodes
  // (attention's scale moved out of Q's projection, K^T as a swap of the heads-first K), the algebra rules'
  // sites (Div by a constant: attention's scale and GELU's sqrt(2); Div by a Sqrt: every primitive
  // LayerNorm/RMSNorm; a scaled input to a projection), the Q/K/V projections of BERT and LLaMA (without
  // bias: QKVMerge on the MatMuls; GPT-2's is packed), every MatMul by a 2-D weight (MatMulToFractalNZ:
  // BERT's 12, GPT-2's 8 and its LM head, LLaMA's 15), every Conv (all carry a bias: the exporter folded
  // BatchNorm into them; the activation and layout rules match the FusedConv it becomes), LLaMA's rotary
  // halves (two Slices with steps of 1 per rotary embedding: SliceUnitStepsDropped); opset-17 models use
  // LayerNormalization.
  const std::map<std::string, std::map<std::string, int>> expected = {
      {"bert_tiny_op13",
       {{"LayerNormFusion", 5},
        {"GeluErf", 2},
        {"AttentionFusion", 2},
        {"MatMulBias", 12},
        {"GemmTransposedBIsFusedMatMul", 1},
        {"FoldConstants", 2},
        {"QKVMerge", 2},
        {"DivByConstantIsMul", 4},
        {"DivBySqrtIsMulRsqrt", 5},
        {"ScaleBeforeMatMulIntoWeight", 2},
        {"ScaleOutOfMatMulLeft", 2},
        {"KeyTransposeAsSwapLast", 2},
        {"MatMulToFractalNZ", 12}}},
      {"bert_tiny_op17",
       {{"GeluErf", 2},
        {"AttentionFusion", 2},
        {"MatMulBias", 12},
        {"GemmTransposedBIsFusedMatMul", 1},
        {"LayerNormalizationIsLayerNorm", 5},
        {"FoldConstants", 2},
        {"QKVMerge", 2},
        {"DivByConstantIsMul", 4},
        {"ScaleBeforeMatMulIntoWeight", 2},
        {"ScaleOutOfMatMulLeft", 2},
        {"KeyTransposeAsSwapLast", 2},
        {"MatMulToFractalNZ", 12}}},
      {"bert_tiny_dynamic_seq_op17",
       {{"GeluErf", 2},
        {"AttentionFusion", 2},
        {"MatMulBias", 12},
        {"GemmTransposedBIsFusedMatMul", 1},
        {"LayerNormalizationIsLayerNorm", 5},
        {"QKVMerge", 2},
        {"DivByConstantIsMul", 4},
        {"ScaleBeforeMatMulIntoWeight", 2},
        {"ScaleOutOfMatMulLeft", 2},
        {"KeyTransposeAsSwapLast", 2},
        {"CastToSameType", 1},
        {"MatMulToFractalNZ", 12}}},
      {"gpt2_tiny_op13",
       {{"LayerNormFusion", 5},
        {"IdentityIsNothing", 1},
        {"MatMulBias", 8},
        {"GeluTanh", 2},
        {"CubeIsPow", 2},
        {"AttentionFusionWhereMask", 2},
        {"FoldConstants", 2},
        {"DivByConstantIsMul", 2},
        {"DivBySqrtIsMulRsqrt", 5},
        {"ScaleBeforeMatMulIntoWeight", 2},
        {"ScaleOutOfMatMulLeft", 2},
        {"KeyTransposeAsSwapLast", 2},
        {"MatMulToFractalNZ", 9}}},
      {"gpt2_tiny_op17",
       {{"IdentityIsNothing", 1},
        {"MatMulBias", 8},
        {"LayerNormalizationIsLayerNorm", 5},
        {"GeluTanh", 2},
        {"CubeIsPow", 2},
        {"AttentionFusionWhereMask", 2},
        {"FoldConstants", 2},
        {"DivByConstantIsMul", 2},
        {"ScaleBeforeMatMulIntoWeight", 2},
        {"ScaleOutOfMatMulLeft", 2},
        {"KeyTransposeAsSwapLast", 2},
        {"MatMulToFractalNZ", 9}}},
      {"llama_tiny_op13",
       {{"AttentionFusion", 2},
        {"RMSNormFusion", 5},
        {"SwiGLUFusion", 2},
        {"RotaryEmbeddingFusion", 4},
        {"QKVMerge", 2},
        {"DivByConstantIsMul", 2},
        {"DivBySqrtIsMulRsqrt", 5},
        {"MatMulToFractalNZ", 15},
        {"SliceUnitStepsDropped", 8}}},
      {"llama_tiny_op17",
       {{"AttentionFusion", 2},
        {"RMSNormFusion", 5},
        {"SwiGLUFusion", 2},
        {"RotaryEmbeddingFusion", 4},
        {"QKVMerge", 2},
        {"DivByConstantIsMul", 2},
        {"DivBySqrtIsMulRsqrt", 5},
        {"MatMulToFractalNZ", 15},
        {"SliceUnitStepsDropped", 8}}},
      {"resnet18_narrow_op13", {{"ConvBias", 20}, {"GemmTransposedBIsFusedMatMul", 1}}},
      {"mobilenetv2_half_op13", {{"ConvBias", 52}, {"GemmTransposedBIsFusedMatMul", 1}}},
  };
  for (const auto& [name, want] : expected) {
    const std::string& rule_name = name;  // a lambda (INFO) cannot name a structured binding in clang 14
    INFO(rule_name);
    Model model = import_onnx(test::examples_dir() / (name + ".onnx"));
    CHECK(matches_per_rule(*rules, model) == want);
  }
}

TEST_CASE("optimizing with the starter rules fuses BERT and keeps its outputs") {
  auto rules = test::load_rules({test::shipped_rules()});
  Model original = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  ascend::OptimizeResult r = ascend::optimize(original, *rules, ascend::load_profile("Ascend910B1"));
  const Model& model = r.model;
  CHECK(r.selected["LayerNormFusion"] == 5);
  CHECK(r.selected["AddLayerNormFusion"] == 5);  // every LayerNorm follows a residual Add
  CHECK(r.selected["GeluErf"] == 2);
  CHECK(r.selected["MatMulBias"] == 12);
  CHECK(r.selected["FusedMatMulGelu"] == 2);
  CHECK(test::count_op(model, "AddLayerNorm") == 5);
  CHECK(model.graph->find_node("/layers.0/attn_out/FusedMatMul") !=
        nullptr);  // named after the module it replaced
  CHECK(model.opset_version("ai.geopt") == 1);
  auto feeds = random_inputs(original, 3);
  NamedTensors a = Evaluator(original, ascend::op_registry()).run(feeds),
               b = Evaluator(model, ascend::op_registry()).run(feeds);
  for (size_t i = 0; i < a.size(); ++i) {
    CHECK(a[i].first == b[i].first);  // output names survive
    CHECK(diff(b[i].second, a[i].second).max_abs <= 1e-4);
  }
}

TEST_CASE("shared predicates are asked once per node, however many rules share them") {
  Model model = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  fs::path dir = test::scratch_dir("variants");
  auto asked_with = [&](int variants) {
    std::ofstream(dir / "variants.gerule") << test::layernorm_variants(variants);
    auto rules =
        test::load_rules({test::shipped_rules() + "/norm.gerule", (dir / "variants.gerule").string()});
    size_t asked = 0;
    std::map<std::string, int> counts = matches_per_rule(*rules, model, &asked);
    CHECK(counts["LayerNormFusion"] == 5);  // the variants never match, the real rule always does
    for (const auto& count : counts) CHECK_MESSAGE(count.first.rfind("LayerNormAxis", 0) != 0, count.first);
    return asked;
  };
  size_t one = asked_with(1), hundred = asked_with(100);
  MESSAGE("predicates asked: " << one << " with 1 variant, " << hundred << " with 100");
  CHECK(hundred <= one + one / 10);  // the variants add answers to shared questions, not questions
}

TEST_CASE("rules switch off by name, by tag, and by a TOML switch file") {
  Model model = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  auto rules = test::load_rules({test::shipped_rules()});
  CHECK(rules->set_enabled("LayerNormFusion", false));
  // Rules tagged algebra or layout, not fusion: on whatever else is switched.
  const std::map<std::string, int> algebra = {{"DivByConstantIsMul", 4},          {"DivBySqrtIsMulRsqrt", 5},
                                              {"ScaleBeforeMatMulIntoWeight", 2}, {"ScaleOutOfMatMulLeft", 2},
                                              {"KeyTransposeAsSwapLast", 2},      {"MatMulToFractalNZ", 12}};
  auto with_algebra = [&](std::map<std::string, int> m) {
    m.insert(algebra.begin(), algebra.end());
    return m;
  };
  CHECK(matches_per_rule(*rules, model) == with_algebra({{"GeluErf", 2},
                                                         {"AttentionFusion", 2},
                                                         {"MatMulBias", 12},
                                                         {"GemmTransposedBIsFusedMatMul", 1},
                                                         {"FoldConstants", 2},
                                                         {"QKVMerge", 2}}));
  CHECK(rules->set_enabled("fusion", false));
  CHECK(matches_per_rule(*rules, model) ==
        with_algebra({{"FoldConstants", 2}}));  // [folding], [algebra] and [layout] rules
  CHECK_FALSE(rules->set_enabled("NoSuchRule", true));

  fs::path dir = test::scratch_dir("switch");
  std::ofstream(dir / "on.toml") << "[tags]\nfusion = \"on\"\n[rules]\nGeluErf = \"off\"\n";
  rules->apply_switch_file((dir / "on.toml").string());
  CHECK(matches_per_rule(*rules, model) == with_algebra({{"LayerNormFusion", 5},
                                                         {"AttentionFusion", 2},
                                                         {"MatMulBias", 12},
                                                         {"GemmTransposedBIsFusedMatMul", 1},
                                                         {"FoldConstants", 2},
                                                         {"QKVMerge", 2}}));

  std::ofstream(dir / "bad.toml") << "[rules]\nLayerNormFusion = \"maybe\"\n";
  CHECK_THROWS_WITH_AS(rules->apply_switch_file((dir / "bad.toml").string()),
                       doctest::Contains("bad.toml:2: LayerNormFusion must be \"on\" or \"off\""), Error);
  std::ofstream(dir / "unknown.toml") << "[rules]\nNope = \"off\"\n";
  CHECK_THROWS_WITH_AS(rules->apply_switch_file((dir / "unknown.toml").string()),
                       doctest::Contains("no rule name 'Nope'"), Error);
  std::ofstream(dir / "broken.toml") << "[rules\n";
  CHECK_THROWS_WITH_AS(rules->apply_switch_file((dir / "broken.toml").string()),
                       doctest::Contains("broken.toml:1:"), Error);
}

TEST_CASE("editing a rule file on disk changes what matches, with no rebuild") {
  fs::path dir = test::scratch_dir("edit");
  fs::copy(test::shipped_rules(), dir / "rules");
  const std::string model = (test::examples_dir() / "bert_tiny_op13.onnx").string();
  auto before = test::run_cli({"rules", "match", model, "--rules", (dir / "rules").string(), "--json"});
  REQUIRE(before.exit_code == 0);
  CHECK(nlohmann_json_size(before.out, "LayerNormFusion") == 5);
  // BERT's epsilon is 1e-12: require at least 1e-6 and the rule stops matching.
  std::string text = test::read_file(dir / "rules" / "norm.gerule");
  auto at = text.find("where %eps in 0 .. 1e-3");
  REQUIRE(at != std::string::npos);
  text.replace(at, std::string("where %eps in 0 .. 1e-3").size(), "where %eps in 1e-6 .. 1e-3");
  test::write_file(dir / "rules" / "norm.gerule", text);
  auto after = test::run_cli({"rules", "match", model, "--rules", (dir / "rules").string(), "--json"});
  REQUIRE(after.exit_code == 0);
  CHECK(nlohmann_json_size(after.out, "LayerNormFusion") == 0);
  CHECK(nlohmann_json_size(after.out, "GeluErf") == 2);
}
