// One rule engine: a rule matches, misses, rewrites and is refused the same way in
// every command (rules match / test / apply, explain, optimize, compile), and every
// command's rewriting stops at its limits and says which.
#include <doctest/doctest.h>

#include <onnx/onnx_pb.h>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "dsl/saturation.h"
#include "dsl_support.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

fs::path write_model(const fs::path& dir, const char* text) {
  fs::path p = dir / "m.onnx";
  std::ofstream out(p, std::ios::binary);
  test::parse_text_model(text).SerializeToOstream(&out);
  return p;
}

std::string rule_file(const fs::path& dir, const std::string& text) {
  fs::create_directories(dir / "rules");
  std::ofstream(dir / "rules" / "r.gerule") << text;
  return (dir / "rules").string();
}

const char* kTwoRootModel = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[2,3] w) => (float[2,3] a, float[2,3] p, float[2,3] q) {
      c = Constant <value = float[2,3] {1, 2, 3, 4, 5, 6}> ()
      a = Relu(x)
      p = Mul(x, w)
      q = Mul(x, c)
    })";

}  // namespace

TEST_CASE("a two-root rule matches the same sites in rules match, rules test, explain and optimize") {
  // The first Mul of x reads a graph input: a matcher that took the first structural
  // candidate for the second root and only then checked `where` would find nothing.
  fs::path dir = test::scratch_dir("two_roots");
  const std::string rules = rule_file(dir, std::string(R"(rule TwoRoots {
  match Relu(%x) as %_a, Mul(%x, %c) as %b where is_const(%c)
  rewrite %b => Mul(%c, %x)
  test "the constant product" {
    model """)") + kTwoRootModel + R"("""
    expect matched(TwoRoots) == 1
    expect outputs_equal
  }
})");
  const std::string model = write_model(dir, kTwoRootModel).string();
  auto match = test::run_cli({"rules", "--rules", rules, "match", model, "--json"});
  REQUIRE(match.exit_code == 0);
  CHECK(nlohmann::json::parse(match.out)["TwoRoots"].size() == 1);
  auto tested = test::run_cli({"rules", "--rules", rules, "test", rules, "--json"});
  CHECK(tested.exit_code == 0);
  CHECK(nlohmann::json::parse(tested.out)["tests"][0]["passed"] ==
        true);  // its expect matched(TwoRoots) == 1 held
  auto explained = test::run_cli({"explain", model, "--rules", rules, "--json"});
  REQUIRE(explained.exit_code == 0);
  size_t explained_matches = 0;
  const nlohmann::json explained_json =
      nlohmann::json::parse(explained.out);  // the range must outlive the loop
  for (const auto& r : explained_json["rules"])
    for (const auto& s : r["sites"]) explained_matches += s["matched"].get<bool>();
  CHECK(explained_matches == 1);
  auto optimized = test::run_cli({"optimize", model, "--rules", rules, "--json"});
  REQUIRE(optimized.exit_code == 0);
  CHECK(nlohmann::json::parse(optimized.out)["rules"]["TwoRoots"]["matched"] == 1);
}

TEST_CASE(
    "a type-changing rewrite is refused by every command, naming the rule, its location and both types") {
  fs::path dir = test::scratch_dir("refused");
  const std::string rules = rule_file(dir, R"(rule ReluIsShape {
  match %y = Relu(%x)
  rewrite %y => Shape(%x)
  test "a relu" {
    model """<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (float[2,3] y) { y = Relu(x) }"""
    expect outputs_equal
  }
})");
  const std::string model = write_model(dir, R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) { y = Relu(x) })")
                                .string();
  auto names_it = [](const std::string& text) {
    return text.find("rule ReluIsShape (") != std::string::npos &&
           text.find("r.gerule:1:1) refused at 'y'") != std::string::npos &&
           text.find("gives i64") != std::string::npos && text.find("is f32") != std::string::npos;
  };
  auto tested = test::run_cli({"rules", "--rules", rules, "test", rules});
  CHECK(tested.exit_code == 1);  // a refused rewrite fails the rule's test
  CHECK(names_it(tested.out));
  for (const std::vector<std::string>& cmd :
       std::vector<std::vector<std::string>>{{"rules", "--rules", rules, "apply", model},
                                             {"optimize", model, "--rules", rules},
                                             {"compile", model, "--rules", rules},
                                             {"explain", model, "--rules", rules}}) {
    auto r = test::run_cli(cmd);
    INFO(cmd[0] << ": " << r.err);
    CHECK(r.exit_code == 0);
    CHECK(names_it(r.err));
  }
  auto j = test::run_cli({"optimize", model, "--rules", rules, "--json"});
  CHECK(nlohmann::json::parse(j.out)["rules"]["ReluIsShape"]["refused"] == 1);
}

TEST_CASE("a rule that grows without end stops every command at its limit, and the report names it") {
  fs::path dir = test::scratch_dir("grows");
  const std::string rules = rule_file(dir, R"(rule ReluGrows {
  match %y = Relu(%x)
  rewrite %y => Relu(Neg(Neg(%x)))
  test "a relu" {
    model """<ir_version: 8, opset_import: ["" : 13]>
      g (float[2,3] x) => (float[2,3] y) { y = Relu(x) }"""
    expect outputs_equal
  }
})");
  const std::string model = write_model(dir, R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) { y = Relu(x) })")
                                .string();
  // 30 iterations: the default (256) can meet the 5 s time limit first in a sanitizer build.
  auto tested = test::run_cli({"rules", "--rules", rules, "test", rules, "--iter-limit", "30"});
  CHECK(tested.out.find("saturation stopped at its iteration limit") != std::string::npos);
  CHECK(test::run_cli({"rules", "--rules", rules, "apply", model, "--iter-limit", "30"})
            .out.find("stopped at its iteration limit") != std::string::npos);
  CHECK(test::run_cli({"explain", model, "--rules", rules, "--iter-limit", "30"})
            .out.find("saturation stopped at its iteration limit") != std::string::npos);
  CHECK(nlohmann::json::parse(
            test::run_cli({"optimize", model, "--rules", rules, "--iter-limit", "30", "--json"})
                .out)["saturation"]["stop"] == "iteration limit");
  CHECK(nlohmann::json::parse(
            test::run_cli({"compile", model, "--rules", rules, "--iter-limit", "30", "--json"})
                .out)["saturation"]["stop"] == "iteration limit");
  auto small = test::run_cli({"optimize", model, "--rules", rules, "--node-limit", "20", "--json"});
  CHECK(nlohmann::json::parse(small.out)["saturation"]["stop"] == "e-node limit");
}

TEST_CASE("optimize and compile keep the model's quantization annotations") {
  fs::path dir = test::scratch_dir("quant_annotation");
  onnx::ModelProto proto = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) { d = Dropout(x) y = Relu(d) })");
  auto* qa = proto.mutable_graph()->add_quantization_annotation();
  qa->set_tensor_name("y");
  auto* kv = qa->add_quant_parameter_tensor_names();
  kv->set_key("SCALE_TENSOR");
  kv->set_value("y_scale");
  {
    std::ofstream out(dir / "m.onnx", std::ios::binary);
    proto.SerializeToOstream(&out);
  }
  auto opt = test::run_cli({"optimize", (dir / "m.onnx").string(), "-o", (dir / "out.onnx").string()});
  REQUIRE(opt.exit_code == 0);
  auto comp = test::run_cli({"compile", (dir / "m.onnx").string(), "--dump-graph", (dir / "dump").string()});
  REQUIRE(comp.exit_code == 0);
  for (const fs::path& p : {dir / "out.onnx", dir / "dump" / "3_saturation_extraction_layout.onnx"}) {
    INFO(p);
    onnx::ModelProto back;
    std::ifstream in(p, std::ios::binary);
    REQUIRE(back.ParseFromIstream(&in));
    REQUIRE(back.graph().quantization_annotation_size() == 1);
    CHECK(back.graph().quantization_annotation(0).tensor_name() == "y");
    CHECK(back.graph().quantization_annotation(0).quant_parameter_tensor_names(0).value() == "y_scale");
  }
}

TEST_CASE("a model whose nodes have no names (onnx.helper's default) reports what fused, node by node") {
  const fs::path dir = test::scratch_dir("unnamed_nodes");
  // SiLU as onnxruntime's static quantizer leaves it: eight kernels, three after fusion.
  const std::string model = write_model(dir, R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,8,4,4] x) => (float[1,8,4,4] y) {
      s = Constant <value = float {0.047}> ()
      z = Constant <value = uint8 {117}> ()
      ss = Constant <value = float {0.0039}> ()
      zs = Constant <value = uint8 {0}> ()
      so = Constant <value = float {0.031}> ()
      zo = Constant <value = uint8 {9}> ()
      q = QuantizeLinear(x, s, z)
      d = DequantizeLinear(q, s, z)
      g1 = Sigmoid(d)
      gq = QuantizeLinear(g1, ss, zs)
      gd = DequantizeLinear(gq, ss, zs)
      p = Mul(d, gd)
      pq = QuantizeLinear(p, so, zo)
      y = DequantizeLinear(pq, so, zo)
    })")
                                .string();
  auto o = test::run_cli({"optimize", model, "--json", "-o", (dir / "out.onnx").string()});
  REQUIRE_MESSAGE(o.exit_code == 0, o.out << o.err);
  const auto j = nlohmann::json::parse(o.out);
  CHECK(j["kernels"]["before"] == 8);
  CHECK(j["kernels"]["after"] == 3);
  // The Sigmoid, Mul and the four QuantizeLinear and DequantizeLinear between them became one table.
  CHECK(j["fusion_rate"].get<double>() == doctest::Approx(6.0 / 8));
  const Model out = import_onnx(dir / "out.onnx");
  for (const auto& n : out.graph->nodes()) CHECK(!n->name.empty());
  // Each imported node is named after its op, apart from the others.
  const Model in = import_onnx(model);
  std::set<std::string> names;
  for (const auto& n : in.graph->nodes()) names.insert(n->name);
  CHECK(names.size() == in.graph->nodes().size());
  CHECK(names.count("Sigmoid") == 1);
  CHECK(names.count("QuantizeLinear") + names.count("QuantizeLinear_1") + names.count("QuantizeLinear_2") ==
        3);
}

TEST_CASE("explain and optimize report the same fusion rate on every example model" *
          doctest::test_suite("sweep")) {
  for (const auto& entry : fs::directory_iterator(test::examples_dir())) {
    if (entry.path().extension() != ".onnx") continue;
    INFO(entry.path().filename());
    auto o = test::run_cli({"optimize", entry.path().string(), "--json", "--no-check"});
    auto e = test::run_cli({"explain", entry.path().string(), "--json"});
    REQUIRE(o.exit_code == 0);
    REQUIRE(e.exit_code == 0);
    CHECK(nlohmann::json::parse(o.out)["fusion_rate"] == nlohmann::json::parse(e.out)["fusion_rate"]);
  }
}

TEST_CASE(
    "incremental search finds exactly what a full search finds, and every rebuild keeps the e-graph's "
    "invariants") {
  auto rules = test::load_rules({test::shipped_rules()});
  for (const char* name : {"bert_tiny_op13", "gpt2_tiny_op17", "llama_tiny_op13", "resnet18_narrow_op13",
                           "mobilenetv2_half_op13", "vit_tiny_op13"}) {
    INFO(name);
    Model model = import_onnx(test::examples_dir() / (std::string(name) + ".onnx"));
    dsl::SaturationLimits incremental, full;
    incremental.check_invariants = full.check_invariants = true;
    // What is found must not depend on the machine's speed (a sanitizer build under load
    // runs past the default 5 s).
    incremental.seconds = full.seconds = 600;
    full.incremental = false;
    GraphEGraph a = egraph_from_graph(*model.graph), b = egraph_from_graph(*model.graph);
    dsl::SaturationReport ra =
        dsl::saturate(a.egraph, *rules, ascend::op_registry(), model.opsets, incremental);
    dsl::SaturationReport rb = dsl::saturate(b.egraph, *rules, ascend::op_registry(), model.opsets, full);
    CHECK(ra.stop == dsl::StopReason::Saturated);
    CHECK(rb.stop == dsl::StopReason::Saturated);
    CHECK(a.egraph.node_count() == b.egraph.node_count());
    CHECK(a.egraph.class_count() == b.egraph.class_count());
    for (const auto& per_rule : rb.per_rule)
      CHECK_MESSAGE(ra.per_rule.at(per_rule.first).matched == per_rule.second.matched, per_rule.first);
  }
}

TEST_CASE(
    "one_use on a graph as written counts every consumer, on the e-graph not the match's own alternatives") {
  fs::path dir = test::scratch_dir("one_use");
  std::ofstream(dir / "r.gerule") << "rule AddRelu { match %y = Add(Relu(%x) as %t, %w) where one_use(%t) "
                                     "rewrite %y => Add(%w, Relu(%x)) }\n";
  auto rules = test::load_rules({(dir / "r.gerule").string()});
  // t feeds the Add twice over: directly and through the Sigmoid that makes w.
  Model shared = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x) => (float[2,3] y) { t = Relu(x) w = Sigmoid(t) y = Add(t, w) })"),
                                   "m.onnx");
  CHECK(test::matches_per_rule(*rules, shared).count("AddRelu") == 0);
  Model alone = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2,3] x, float[2,3] w) => (float[2,3] y) { t = Relu(x) y = Add(t, w) })"),
                                  "m.onnx");
  CHECK(test::matches_per_rule(*rules, alone).at("AddRelu") == 1);
  // In the e-graph the primitive LayerNorm chain beside the fused LayerNorm reads the
  // residual sum too; it is no second consumer, so the sum still fuses into AddLayerNorm.
  auto shipped = test::load_rules({test::shipped_rules()});
  Model bert = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  CHECK(
      ascend::optimize(bert, *shipped, ascend::load_profile("Ascend910B1")).selected["AddLayerNormFusion"] ==
      5);
}

TEST_CASE("extraction falls back to the input program when the heuristic's choice costs more") {
  // Each activation of the shared product has a fused form that reads the large input
  // again: cheaper one at a time (one launch fewer), dearer all together. Greedy
  // choices, made class by class, take all three; the input program reads x once.
  fs::path dir = test::scratch_dir("fallback");
  std::string text;
  for (const char* act : {"Relu", "Sigmoid", "Tanh"})
    text +=
        std::string("rule Fused") + act + " { match %y = " + act +
        "(Add(MatMul(%a, %w), const %b)) rewrite %y => ai.geopt.FusedMatMul(%a, %w, %b) { activation = \"" +
        act + "\" } }\n";
  std::ofstream(dir / "r.gerule") << text;
  auto rules = test::load_rules({(dir / "r.gerule").string()});
  Model model = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4096,4096] x, float[4096,16] w) => (float[4096,16] r, float[4096,16] s, float[4096,16] t) {
      b = Constant <value = float[16] {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}> ()
      m = MatMul(x, w)
      h = Add(m, b)
      r = Relu(h)
      s = Sigmoid(h)
      t = Tanh(h)
    })"),
                                  "m.onnx");
  ascend::OptimizeOptions options;
  options.exact_limit = 0;  // the greedy heuristic
  ascend::OptimizeResult r = ascend::optimize(model, *rules, ascend::load_profile("Ascend910B1"), options);
  INFO(r.extraction_method);
  CHECK(r.saturation.per_rule.at("FusedRelu").matched == 1);
  CHECK(r.extraction_method.rfind("the input program", 0) == 0);
  CHECK(r.after.latency_us <= r.before.latency_us);
  CHECK(r.selected.empty());
  // The exact extractor finds the same program.
  options.exact_limit = 40;
  ascend::OptimizeResult exact =
      ascend::optimize(model, *rules, ascend::load_profile("Ascend910B1"), options);
  CHECK(exact.selected.empty());
  CHECK(exact.after.latency_us == doctest::Approx(r.after.latency_us));
}

TEST_CASE("a rule rooted at an op with several outputs rewrites the output it names, never the op's tuple") {
  // Swin's Dropout(p = 0, training on) has a mask output nobody reads, and an opset-17
  // LayerNormalization may list its mean and inverse deviation.
  auto rules = test::load_rules({test::shipped_rules()});
  for (const char* text : {R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[4] x) => (float[4] y) {
        s = Softmax(x)
        r = Constant <value = float {0.0}> ()
        t = Constant <value = bool {1}> ()
        d, m = Dropout(s, r, t)
        y = Neg(d)
      })",
                           R"(<ir_version: 8, opset_import: ["" : 17]>
      g (float[2,8] x, float[8] gamma, float[8] beta) => (float[2,8] y, float[2,1] mean) {
        n, mean, inv = LayerNormalization <axis = -1, epsilon = 0.00001> (x, gamma, beta)
        y = Relu(n)
      })"}) {
    Model model = import_onnx_proto(test::parse_text_model(text), "m.onnx");
    ascend::OptimizeResult r = ascend::optimize(model, *rules, ascend::load_profile("Ascend910B1"));
    CHECK(test::max_output_error(model, r.model) <= 1e-5);
    CHECK(test::count_op(r.model, "Dropout") == 0);
  }
}

TEST_CASE("a rewrite whose value would change shape is refused, naming both shapes") {
  // The mask broadcasts the scores to a batch of 3; FlashAttention's output keeps Q's batch of 1.
  auto rules = test::load_rules({test::shipped_rules()});
  Model model = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
      g (float[1,2,8,4] q, float[1,2,8,4] k, float[1,2,8,4] v, float[3,2,8,8] mask) => (float[3,2,8,4] y) {
        kt = Transpose <perm = [0, 1, 3, 2]> (k)
        s = MatMul(q, kt)
        sm = Add(s, mask)
        p = Softmax <axis = -1> (sm)
        y = MatMul(p, v)
      })"),
                                  "m.onnx");
  ascend::OptimizeResult r = ascend::optimize(model, *rules, ascend::load_profile("Ascend910B1"));
  CHECK(test::count_op(r.model, "FlashAttention") == 0);
  CHECK(test::max_output_error(model, r.model) <= 1e-5);
  const auto& stats = r.saturation.per_rule.at("AttentionFusion");
  CHECK(stats.refused >= 1);
  CHECK(stats.refusal.find("gives f32[1,2,8,4], the value it would replace ('y') is f32[3,2,8,4]") !=
        std::string::npos);
}
