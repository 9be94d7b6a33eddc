// Equality saturation and the optimize pipeline: what fires, what stops it,
// determinism, cost-driven and feasibility-driven extraction, numerical checks.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "dsl/rule_run.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "ir/graph_text.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

std::unique_ptr<dsl::RuleSet> rules_from(const std::string& text) {
  fs::path dir = test::scratch_dir("sat-rules");
  std::ofstream(dir / "r.gerule") << text;
  return test::load_rules({(dir / "r.gerule").string()});
}

using test::count_op;

double max_error(const Model& a, const Model& b) { return test::max_output_error(a, b); }

}  // namespace

TEST_CASE("saturation finds every starter-rule site in BERT and stops saturated") {
  auto rules = test::load_rules({test::shipped_rules()});
  Model model = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  GraphEGraph geg = egraph_from_graph(*model.graph);
  dsl::SaturationReport r = dsl::saturate(geg.egraph, *rules, ascend::op_registry(), model.opsets);
  CHECK(r.stop == dsl::StopReason::Saturated);
  CHECK(r.per_rule["LayerNormFusion"].matched == 5);
  CHECK(r.per_rule["GeluErf"].matched == 2);
  CHECK(r.per_rule["LayerNormFusion"].applied == 5);
  CHECK(r.per_rule["AddLayerNormFusion"].matched == 5);  // on the LayerNorms the first iteration made
  CHECK(r.per_iteration.back().applied == 0);            // the last iteration found nothing new
  CHECK(r.per_iteration.size() == r.iterations);
}

TEST_CASE("limits stop a blow-up, and the backoff scheduler throttles the rule") {
  // Associativity (with commutative matching) generates every bracketing of a sum.
  auto rules =
      rules_from("rule Assoc { match %y = Add(Add(%a, %b), %c) rewrite %y => Add(%a, Add(%b, %c)) }");
  Model m = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[2] a, float[2] b, float[2] c, float[2] d, float[2] e, float[2] f, float[2] h) => (float[2] y) {
      s1 = Add(a, b) s2 = Add(s1, c) s3 = Add(s2, d) s4 = Add(s3, e) s5 = Add(s4, f) y = Add(s5, h)
    })"),
                              "sum.onnx");
  {
    GraphEGraph geg = egraph_from_graph(*m.graph);
    dsl::SaturationReport r =
        dsl::saturate(geg.egraph, *rules, ascend::op_registry(), m.opsets, {30, 300, 10.0}, {100000, 5});
    CHECK(r.stop == dsl::StopReason::NodeLimit);
    CHECK(geg.egraph.node_count() > 300);
  }
  {
    GraphEGraph geg = egraph_from_graph(*m.graph);
    dsl::SaturationReport r =
        dsl::saturate(geg.egraph, *rules, ascend::op_registry(), m.opsets, {3, 1000000, 10.0}, {100000, 5});
    CHECK(r.stop == dsl::StopReason::IterationLimit);
    CHECK(r.iterations == 3);
  }
  {
    GraphEGraph geg = egraph_from_graph(*m.graph);
    dsl::SaturationReport r =
        dsl::saturate(geg.egraph, *rules, ascend::op_registry(), m.opsets, {6, 1000000, 10.0}, {8, 2});
    CHECK(r.per_rule["Assoc"].banned >= 1);  // more than 8 matches in an iteration: banned, limit doubles
  }
  // Whatever stopped it, the extracted program still computes the sum.
  GraphEGraph geg = egraph_from_graph(*m.graph);
  dsl::saturate(geg.egraph, *rules, ascend::op_registry(), m.opsets, {4, 5000, 10.0}, {});
  auto cost = ascend::egraph_cost(ascend::load_profile("Ascend910B1"), {});
  Model back = extraction_to_model(m, geg, extract_best(geg.egraph, geg.roots, cost));
  CHECK(count_op(back, "Add") == 6);
  CHECK(max_error(m, back) <= 1e-6);
}

TEST_CASE("optimize is deterministic: the same input gives a byte-identical model") {
  auto rules = test::load_rules({test::shipped_rules()});
  auto profile = ascend::load_profile("Ascend910B1");
  fs::path dir = test::scratch_dir("determinism");
  for (int i = 0; i < 2; ++i) {
    Model m = import_onnx(test::examples_dir() / "gpt2_tiny_op13.onnx");
    export_onnx(ascend::optimize(m, *rules, profile).model, dir / ("out" + std::to_string(i) + ".onnx"));
  }
  CHECK(test::read_file(dir / "out0.onnx") == test::read_file(dir / "out1.onnx"));
}

TEST_CASE("optimize keeps every example model's outputs and never raises its modeled latency" *
          doctest::test_suite("sweep")) {
  auto rules = test::load_rules({test::shipped_rules()});
  auto profile = ascend::load_profile("Ascend910B1");
  for (const auto& path : test::example_models()) {
    INFO(path.filename().string());
    Model m = import_onnx(path);
    ascend::OptimizeResult r = ascend::optimize(m, *rules, profile);
    CHECK(r.after.latency_us <= r.before.latency_us);
    CHECK(max_error(m, r.model) <= 1e-4);
    fs::path out = test::scratch_dir("opt") / "m.onnx";
    export_onnx(r.model, out);
    CHECK(import_onnx(out).graph->nodes().size() == r.model.graph->nodes().size());  // passes the checker
  }
  Model bert = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  ascend::OptimizeResult r = ascend::optimize(bert, *rules, profile);
  // The LayerNorms and GELUs are absorbed further: into AddLayerNorm and FusedMatMul.
  CHECK(r.selected["AddLayerNormFusion"] == 5);
  CHECK(r.selected["FusedMatMulGelu"] == 2);
  CHECK(r.selected["AttentionFusion"] == 2);
  CHECK(count_op(r.model, "AddLayerNorm") == 5);
  CHECK(count_op(r.model, "LayerNorm") == 0);
  CHECK(r.after.kernels < r.before.kernels);
}

TEST_CASE("the fusion rate counts kernels: an op of constants folded when the plan is built is none") {
  // A layer scale after a conv folds into its weights: Mul(W, gamma) of 76,800 weights is
  // past the e-graph's materialising cap, so it stays an op of constants, computed when the
  // plan is built. It is no kernel left unfused, and the conv and the Mul fused.
  auto rules = test::load_rules({test::shipped_rules()});
  onnx::ModelProto proto = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,300,4,4] x) => (float[1,256,4,4] y) {
      c = Conv <kernel_shape = [1, 1]> (x, w, b)
      y = Mul(c, gamma)
    })");
  auto add = [&](const char* name, std::vector<int64_t> dims, auto value) {
    onnx::TensorProto& t = *proto.mutable_graph()->add_initializer();
    t.set_name(name);
    t.set_data_type(onnx::TensorProto::FLOAT);
    int64_t count = 1;
    for (int64_t d : dims) {
      t.add_dims(d);
      count *= d;
    }
    for (int64_t i = 0; i < count; ++i) t.add_float_data(value(i));
  };
  add("w", {256, 300, 1, 1}, [](int64_t i) { return static_cast<float>(i % 7) * 0.01f - 0.03f; });
  add("b", {256}, [](int64_t i) { return static_cast<float>(i % 5) * 0.1f; });
  add("gamma", {1, 256, 1, 1}, [](int64_t i) { return i % 2 ? 4.0f : 0.25f; });
  Model m = import_onnx_proto(proto, "layer_scale.onnx");
  ascend::OptimizeResult r = ascend::optimize(m, *rules, ascend::load_profile("Ascend910B1"));
  CHECK(count_op(r.model, "Mul") == 1);  // of the weights, at compile time
  CHECK(r.after.kernels == 1);
  CHECK(r.unfused.empty());
  CHECK(r.fusion_rate == doctest::Approx(1.0));
  CHECK(max_error(m, r.model) <= 1e-4);
}

TEST_CASE("a fusion is picked where it fits the UB and refused, with the reason, where it does not") {
  auto rules = rules_from(R"(rule AddLayerNormFusion [fusion] {
  match %y = LayerNormalization(Add(%x, %r), %g, %b) { epsilon == %e }
  rewrite %y => ai.geopt.AddLayerNorm(%x, %r, %g, %b) { epsilon = %e }
})");
  Model m = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[4,16384] x, float[4,16384] r, float[16384] g, float[16384] b) => (float[4,16384] y) {
      s = Add(x, r)
      y = LayerNormalization <epsilon = 0.00001> (s, g, b)
    })"),
                              "aln.onnx");
  ascend::OptimizeOptions opts;
  opts.cost.precision.mode =
      geopt::ascend::PrecisionMode::MustKeepOriginDtype;  // f32 rows: 512 KiB of working set
  ascend::OptimizeResult big =
      ascend::optimize(m, *rules, ascend::load_profile("Ascend910B1", {{"buffers.ub", "1048576"}}), opts);
  CHECK(big.selected["AddLayerNormFusion"] == 1);
  CHECK(count_op(big.model, "AddLayerNorm") == 1);
  ascend::OptimizeResult small = ascend::optimize(m, *rules, ascend::load_profile("Ascend910B1"), opts);
  CHECK(small.saturation.per_rule["AddLayerNormFusion"].matched == 1);
  CHECK(small.selected.count("AddLayerNormFusion") == 0);
  CHECK(count_op(small.model, "AddLayerNorm") == 0);
  CHECK(count_op(small.model, "LayerNormalization") == 1);
  // The reason, from the cost model, on the fused kernel the rule proposed.
  ascend::KernelCost c = ascend::cost_of(ascend::work_of(*big.model.graph->nodes()[0], opts.cost),
                                         ascend::load_profile("Ascend910B1"));
  CHECK(c.reason == "ai.geopt::AddLayerNorm: working set 512 KiB exceeds UB 192 KiB on Ascend910B1");
}

TEST_CASE("geopt optimize: report, check, fusion_result.json") {
  fs::path dir = test::scratch_dir("optimize-cli");
  auto r = test::run_cli({"optimize", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "-o",
                          (dir / "out.onnx").string(), "--export-compile-stat",
                          (dir / "fusion_result.json").string()});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("stopped: saturated") != std::string::npos);
  CHECK(r.out.find("left unfused: ") != std::string::npos);
  CHECK(r.out.find("why a rule did not fire on them: geopt explain ") != std::string::npos);
  CHECK(r.out.find(": ok") != std::string::npos);
  auto json = test::run_cli({"optimize", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--json"});
  REQUIRE(json.exit_code == 0);
  const auto optimized = nlohmann::json::parse(json.out);
  CHECK(optimized["saturation"]["stop"] == "saturated");
  CHECK(optimized["kernels"]["before"] == 110);
  CHECK(optimized["kernels"]["after"] == 22);  // the two embedding lookups of constants run at compile time;
                                               // the pooler fused; Q, K and V one product per layer
  CHECK(!optimized["unfused"].contains(
      "Transpose"));  // the attention heads' split and merge, absorbed by FlashAttention
  CHECK(optimized["check"]["ok"] == true);
  auto stat = nlohmann::json::parse(test::read_file(dir / "fusion_result.json"));
  CHECK(stat["session_and_graph_id_0_0"]["graph_fusion"]["LayerNormFusion"]["match_times"] == "5");
  // Kept in the form AddLayerNormFusion made of it (GE counts both passes' effects).
  CHECK(stat["session_and_graph_id_0_0"]["graph_fusion"]["LayerNormFusion"]["effect_times"] == "5");
  CHECK(stat["session_and_graph_id_0_0"]["graph_fusion"]["AddLayerNormFusion"]["effect_times"] == "5");
  CHECK(fs::exists(dir / "out.onnx"));
  auto slow = test::run_cli({"optimize", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--json",
                             "--profile-set", "memory.hbm_gbps=100"});
  REQUIRE(slow.exit_code == 0);
  auto fast = test::run_cli({"optimize", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--json"});
  const auto fast_rules = nlohmann::json::parse(fast.out)["rules"];
  CHECK(fast_rules["AddLayerNormFusion"]["matched"] == 5);
  CHECK(fast_rules["AddLayerNormFusion"]["selected"] == 5);
  CHECK(fast_rules["LayerNormFusion"]["selected"] == 5);
  CHECK(nlohmann::json::parse(slow.out)["latency_us"]["before"].get<double>() >
        nlohmann::json::parse(fast.out)["latency_us"]["before"].get<double>());
  CHECK(test::run_cli({"optimize", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--profile-set",
                       "memory.nope=1"})
            .exit_code == 2);
  auto j = test::run_cli({"optimize", (test::examples_dir() / "gpt2_tiny_op13.onnx").string(), "--json",
                          "--disable", "fusion", "--disable", "folding", "--disable", "canonical",
                          "--disable", "algebra", "--disable", "layout", "--disable", "elimination"});
  REQUIRE(j.exit_code == 0);
  auto report = nlohmann::json::parse(j.out);
  CHECK(report["kernels"]["before"] ==
        106);  // ops of constants (a shape computation) run at compile time, not counted
  CHECK(report["kernels"]["after"] == 106);  // no rule ran
  CHECK(report["check"]["ok"] == true);
  CHECK(test::run_cli({"optimize", "nope.onnx"}).exit_code == 1);
}

namespace {

// Conv(3->20) -> Relu -> Conv(20->24), 3x3, padded, on a 32x32 image, random weights.
Model conv_relu_conv() {
  Model m;
  m.opsets = {{"", 13}};
  Graph& g = *m.graph;
  g.name = "conv_relu_conv";
  auto weights = [&](const std::string& name, std::vector<int64_t> dims, uint64_t seed) {
    auto t = std::make_shared<Tensor>();
    t->name = name;
    t->dtype = DType::F32;
    t->dims = dims;
    HostTensor h = random_inputs(
                       [&] {
                         Model tmp;
                         Value* v = tmp.graph->add_value("w");
                         v->type = {DType::F32, Shape(std::vector<Dim>(dims.begin(), dims.end())), {}};
                         tmp.graph->add_input(v);
                         return tmp;
                       }(),
                       seed)
                       .at("w");
    t->data = BufferSlice(std::string(reinterpret_cast<const char*>(h.raw()), h.nbytes()));
    Value* v = g.add_value(name);
    v->type = {DType::F32, Shape(std::vector<Dim>(dims.begin(), dims.end())), {}};
    g.add_initializer(v, t);
    return v;
  };
  Value* x = g.add_value("x");
  x->type = {DType::F32, Shape{1, 3, 32, 32}, {}};
  g.add_input(x);
  Value* w1 = weights("w1", {20, 3, 3, 3}, 1);
  Value* b1 = weights("b1", {20}, 2);
  Value* w2 = weights("w2", {24, 20, 3, 3}, 3);
  Value* b2 = weights("b2", {24}, 4);
  auto conv = [&](const char* name, Value* in, Value* w, Value* b, Value* out) {
    Node* n = g.add_node("Conv", "", name, {in, w, b}, {out});
    n->attributes = {Attribute::make_int("group", 1), Attribute::make_ints("strides", {1, 1}),
                     Attribute::make_ints("pads", {1, 1, 1, 1}), Attribute::make_ints("dilations", {1, 1}),
                     Attribute::make_ints("kernel_shape", {3, 3})};
  };
  Value* c1 = g.add_value("c1");
  c1->type = {DType::F32, Shape{1, 20, 32, 32}, {}};
  Value* r = g.add_value("r");
  r->type = c1->type;
  Value* y = g.add_value("y");
  y->type = {DType::F32, Shape{1, 24, 32, 32}, {}};
  conv("/conv1/Conv", x, w1, b1, c1);
  g.add_node("Relu", "", "/relu/Relu", {c1}, {r});
  conv("/conv2/Conv", r, w2, b2, y);
  g.add_output(y);
  return m;
}

}  // namespace

TEST_CASE(
    "layout: Conv -> Relu -> Conv runs in NC1HWC0, the first conv reading its 3-channel input as given, and "
    "converts back once") {
  auto rules =
      test::load_rules({test::shipped_rules() + "/conv.gerule", test::shipped_rules() + "/layout.gerule"});
  // The Relu stays a separate kernel here, to show it moving into NC1HWC0.
  for (const char* r : {"FusedConvRelu", "FusedConvRelu6", "FusedConvResidual", "FusedConvResidualRelu"})
    rules->set_enabled(r, false);
  auto profile = ascend::load_profile("Ascend910B1");
  Model m = conv_relu_conv();
  ascend::OptimizeResult best = ascend::optimize(m, *rules, profile);
  CHECK(count_op(best.model, "TransData") == 1);
  CHECK(count_op(best.model, "FusedConv") == 2);
  CHECK(best.selected["ConvReadsNCHWInput"] == 1);
  CHECK(count_op(best.model, "Relu") == 1);
  for (const auto& n : best.model.graph->nodes())
    if (n->op_type == "FusedConv")
      CHECK(n->attr("data_format")->s == "NC1HWC0");
    else if (n->op_type == "Relu")
      CHECK(n->input(0)->type.shape->rank() == 5);  // the Relu runs in NC1HWC0
  CHECK(max_error(m, best.model) <= 1e-4);

  // The modeled cost proves it: the plan that converts around every op (each conv
  // rewritten on its own, nothing moved or cancelled) and staying in NCHW both cost more.
  for (const char* r :
       {"ReluThroughTransData", "TransDataRoundTrip", "TransDataPairCancels", "ConvReadsNCHWInput"})
    rules->set_enabled(r, false);
  // Each conv rewritten once, alone: a FusedConv (ConvBias), then in NC1HWC0.
  Model per_op = conv_relu_conv();
  for (const char* rule : {"ConvBias", "ConvToNC1HWC0"})
    for (const char* value : {"c1", "y"}) {
      int index = 0;
      while (rules->rules()[static_cast<size_t>(index)].ast->name != rule) ++index;
      auto next = dsl::apply_once(per_op, *rules, ascend::op_registry(), index, value,
                                  ascend::egraph_cost(profile, {}));
      REQUIRE(next);
      per_op = std::move(*next);
    }
  CHECK(count_op(per_op, "TransData") == 4);
  const double per_op_us = ascend::cost_of_graph(*per_op.graph, profile).latency_us;
  CHECK(best.after.latency_us < per_op_us);
  CHECK(best.after.latency_us < best.before.latency_us);
  // Left to itself with the moves disabled, the extractor keeps NCHW, the cheaper of the two.
  CHECK(count_op(ascend::optimize(m, *rules, profile).model, "TransData") == 0);
  MESSAGE("modeled: NCHW " << best.before.latency_us << " us, conversions around every op " << per_op_us
                           << " us, one conversion in and one out " << best.after.latency_us << " us");
}
