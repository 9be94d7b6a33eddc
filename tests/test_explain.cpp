// geopt explain: every reason a rule does not fire or is not kept, stated with
// the node, what was checked, the value found, the value required and the rule's
// location; provenance read back from optimized models; stage dumps.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "dsl/explain.h"
#include "dsl_support.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

struct Case {
  fs::path dir, rules, model;
};

Case write_case(const std::string& rule_text, const char* model_text) {
  Case c;
  c.dir = test::scratch_dir("explain");
  c.rules = c.dir / "r.gerule";
  c.model = c.dir / "m.onnx";
  std::ofstream(c.rules) << rule_text;
  onnx::ModelProto m = test::parse_text_model(model_text);
  for (int i = 0; i < m.graph().node_size(); ++i)
    if (m.graph().node(i).name().empty())
      m.mutable_graph()->mutable_node(i)->set_name("n" + std::to_string(i));
  test::save_model(m, c.model);
  return c;
}

std::string explain(const Case& c, std::vector<std::string> extra = {}) {
  std::vector<std::string> args{"explain", c.model.string(), "--rules", c.rules.string()};
  args.insert(args.end(), extra.begin(), extra.end());
  auto r = test::run_cli(args);
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  return r.out;
}

// A residual Add feeding LayerNorm: fusing saves a kernel, but only at epsilon 1e-5.
const char* kLayerNormModel = R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[2,8,64] x, float[2,8,64] r, float[64] s, float[64] b) => (float[2,8,64] y) {
      t = Add(x, r)
      y = LayerNormalization <epsilon = EPS> (t, s, b)
    })";

const char* kLayerNormRule = R"(rule LayerNormEps [fusion] {
  match %y = LayerNormalization(Add(%x, %r), %s, %b) { epsilon ~= 1e-5 +- 1e-9 }
  rewrite %y => ai.geopt.AddLayerNorm(%x, %r, %s, %b) { epsilon = 0.00001 }
}
)";

std::string with_eps(const char* eps) {
  std::string m = kLayerNormModel;
  m.replace(m.find("EPS"), 3, eps);
  return m;
}

}  // namespace

TEST_CASE("the eps case: explain names the node, the attribute, both values and the rule's location") {
  Case c = write_case(kLayerNormRule, with_eps("0.000001").c_str());
  std::string out = explain(c);
  INFO(out);
  CHECK(out.find("LayerNormEps @ n1: attribute 'epsilon' of LayerNormalization 'n1' is 9.99999997e-07, the "
                 "rule requires 1e-05 ± 1e-09 (" +
                 c.rules.string() + ":2:56)") != std::string::npos);
  CHECK(out.find("fired (sites kept / matched): none") != std::string::npos);
  CHECK(explain(c, {"--all"}).find("0 of 1 LayerNormalization node(s) matched") !=
        std::string::npos);  // the listing per rule

  Case ok = write_case(kLayerNormRule, with_eps("0.00001").c_str());
  std::string fired = explain(ok);
  INFO(fired);
  CHECK(fired.find("fired (sites kept / matched):\n  LayerNormEps 1/1\n") != std::string::npos);
  CHECK(explain(ok, {"--all"})
            .find("LayerNormEps: 1 of 1 LayerNormalization node(s) matched; 1 rewrite(s) in the e-graph, 1 "
                  "kept") != std::string::npos);
}

TEST_CASE("failure kinds: wrong op at depth 2, not a constant, a symbolic dim") {
  Case c = write_case(R"(rule Deep { match %y = Relu(Neg(Exp(%x))) rewrite %y => %x }
rule Konst { match %y = Add(%x, const %_c) rewrite %y => %x }
rule Sym { match %y = Sigmoid(%x) where dim(%x, 0) == 4 rewrite %y => %x })",
                      R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[batch,4] x, float[batch,4] w) => (float[batch,4] y) {
      a = Log(x)
      b = Neg(a)
      c = Relu(b)
      d = Add(c, w)
      y = Sigmoid(d)
    })");
  std::string out = explain(c);
  INFO(out);
  CHECK(out.find("Deep @ n2: Log 'n0' is Log, the rule expects Exp (" + c.rules.string() + ":1:33)") !=
        std::string::npos);
  CHECK(out.find("Konst @ n3: input 1 of Add 'n3' 'w' is not a constant (" + c.rules.string() + ":2:33)") !=
        std::string::npos);
  CHECK(out.find("Sym @ n4: where dim(%x, 0) == 4 fails: dim(%x, 0) is symbolic ('batch'), not a number (" +
                 c.rules.string() + ":3:41)") != std::string::npos);
}

TEST_CASE("failure kinds after matching: rejected by cost, infeasible, disabled, stopped by a limit") {
  Case cost = write_case(
      "rule Wasteful { match %y = Neg(%x) rewrite %y => Sub(Sub(%x, %x), %x) }",
      R"(<ir_version: 8, opset_import: ["" : 13]> g (float[64] x) => (float[64] y) { a = Neg(x) y = Relu(a) })");
  CHECK(explain(cost).find("Wasteful @ n0: rewritten, not kept: rejected by cost") != std::string::npos);

  Case big = write_case(R"(rule AddLN [fusion] {
  match %y = LayerNormalization(Add(%x, %r), %g, %b) { epsilon == %e }
  rewrite %y => ai.geopt.AddLayerNorm(%x, %r, %g, %b) { epsilon = %e }
})",
                        R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[4,16384] x, float[4,16384] r, float[16384] g, float[16384] b) => (float[4,16384] y) {
      s = Add(x, r)
      y = LayerNormalization(s, g, b)
    })");
  CHECK(explain(big, {"--precision-mode", "must_keep_origin_dtype"})
            .find("AddLN @ n1: rewritten, not kept: infeasible: ai.geopt::AddLayerNorm: working set 512 KiB "
                  "exceeds UB 192 KiB on Ascend910B1") != std::string::npos);
  CHECK(explain(big, {"--precision-mode", "must_keep_origin_dtype", "--profile-set", "buffers.ub=1048576",
                      "--all"})
            .find("1 rewrite(s) in the e-graph, 1 kept") != std::string::npos);

  Case off = write_case(kLayerNormRule, with_eps("0.00001").c_str());
  CHECK(explain(off, {"--disable", "LayerNormEps"}).find("LayerNormEps @ n1: the rule is disabled") !=
        std::string::npos);
  CHECK(
      explain(off, {"--iter-limit", "0"})
          .find(
              "LayerNormEps @ n1: matched, but saturation stopped (iteration limit after 0 iteration(s))") !=
      std::string::npos);
}

TEST_CASE("BERT with the LayerNorm rule broken: every LayerNorm site with its reason, in under 50 lines") {
  fs::path dir = test::scratch_dir("broken-ln");
  std::string text = test::read_file(fs::path(test::shipped_rules()) / "norm.gerule");
  const std::string from = "where %eps in 0 .. 1e-3", to = "where %eps ~= 1e-5 +- 1e-9";
  REQUIRE(text.find(from) != std::string::npos);
  text.replace(text.find(from), from.size(), to);
  test::write_file(dir / "norm.gerule", text);
  fs::copy(fs::path(test::shipped_rules()) / "activation.gerule", dir / "activation.gerule");
  fs::copy(fs::path(test::shipped_rules()) / "elimination.gerule", dir / "elimination.gerule");
  auto r = test::run_cli(
      {"explain", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--rules", dir.string()});
  REQUIRE(r.exit_code == 0);
  size_t lines = std::count(r.out.begin(), r.out.end(), '\n');
  CHECK(lines < 50);
  size_t sites = 0;
  for (size_t at = 0; (at = r.out.find("fails: %eps is 9.99999996e-13", at)) != std::string::npos; ++at)
    ++sites;
  CHECK(sites == 5);  // the embedding LayerNorm and two per layer
  CHECK(
      r.out.find(
          "LayerNormFusion @ /emb_norm/Add_1: where %eps ~= 1e-05 +- 1e-09 fails: %eps is 9.99999996e-13") !=
      std::string::npos);
  auto verbose = test::run_cli({"explain", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--rules",
                                dir.string(), "--verbose"});
  CHECK(std::count(verbose.out.begin(), verbose.out.end(), '\n') > lines);
}

TEST_CASE("provenance: an optimized model tells what made each fused node") {
  fs::path dir = test::scratch_dir("provenance");
  auto opt = test::run_cli({"optimize", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "-o",
                            (dir / "out.onnx").string(), "--dump-graph", (dir / "dump").string()});
  REQUIRE(opt.exit_code == 0);
  // The LayerNorm chain was fused, then fused again with the residual Add before it:
  // the provenance follows both rewrites back to the input's nodes.
  auto r = test::run_cli({"explain", (dir / "out.onnx").string(), "--node", "/emb_norm/AddLayerNorm"});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("/emb_norm/AddLayerNorm was made by rule AddLayerNormFusion, replacing: ") !=
        std::string::npos);
  CHECK(r.out.find("/emb_norm/ReduceMean") != std::string::npos);
  CHECK(r.out.find("/Add_1") != std::string::npos);
  auto n = test::run_cli(
      {"explain", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--node", "/emb_norm/Sqrt"});
  CHECK(n.out.find("fused by AddLayerNormFusion into /emb_norm/AddLayerNorm") != std::string::npos);
  // The LayerNorm the chain became is what AddLayerNormFusion fused further: kept in that form.
  CHECK(n.out.find("fused by LayerNormFusion, kept in the form a later rewrite made of it") !=
        std::string::npos);
  // Stage dumps: ONNX that imports, DOT with fused nodes filled and labelled with their rule.
  for (const char* stage : {"1_import", "2_saturation_extraction_layout"}) {
    CHECK_NOTHROW(import_onnx(dir / "dump" / (std::string(stage) + ".onnx")));
    CHECK(fs::exists(dir / "dump" / (std::string(stage) + ".dot")));
  }
  std::string dot = test::read_file(dir / "dump" / "2_saturation_extraction_layout.dot");
  CHECK(dot.find("fillcolor") != std::string::npos);
  CHECK(dot.find("[AddLayerNormFusion]") != std::string::npos);
}

TEST_CASE("explain --json and a bad --rule") {
  auto r = test::run_cli(
      {"explain", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--json", "--rule", "GeluErf"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  REQUIRE(j["rules"].size() == 1);
  CHECK(j["rules"][0]["rule"] == "GeluErf");
  size_t matched = 0;
  for (const auto& s : j["rules"][0]["sites"]) matched += s["matched"].get<bool>();
  CHECK(matched == 2);
  CHECK(j["fusion_rate"].get<double>() > 0);
  auto bad =
      test::run_cli({"explain", (test::examples_dir() / "bert_tiny_op13.onnx").string(), "--rule", "Nope"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("no rule named 'Nope'") != std::string::npos);
}

TEST_CASE(
    "explain's default is one screen per model (what fired, the nearest misses ranked, the commands for the "
    "rest), and --all lists every rule") {
  // One model per architecture (the opset-17 twins print the same; this runs twice in CI).
  for (const char* name :
       {"bert_tiny_op13.onnx", "gpt2_tiny_op13.onnx", "llama_tiny_op13.onnx", "vit_tiny_op13.onnx",
        "mobilenetv2_half_op13.onnx", "resnet18_narrow_op13.onnx", "conv_dynamic_hw_op13.onnx"}) {
    const fs::path model = test::examples_dir() / name;
    INFO(name);
    auto summary = test::run_cli({"explain", model.string()});
    REQUIRE_MESSAGE(summary.exit_code == 0, summary.err);
    const size_t lines = static_cast<size_t>(std::count(summary.out.begin(), summary.out.end(), '\n'));
    CHECK(lines <= 60);
    CHECK(summary.out.find("fired (sites kept / matched):") != std::string::npos);
    CHECK(summary.out.find("details: geopt explain " + model.string() + " --rule NAME") != std::string::npos);
    if (std::string(name) != "bert_tiny_op13.onnx") continue;
    auto all = test::run_cli({"explain", model.string(), "--all"});
    REQUIRE(all.exit_code == 0);
    CHECK(static_cast<size_t>(std::count(all.out.begin(), all.out.end(), '\n')) > lines);
  }
  // Ranked: on BERT the near misses of the input come before those met after other rules.
  auto bert = test::run_cli({"explain", (test::examples_dir() / "bert_tiny_op13.onnx").string()});
  const size_t misses = bert.out.find("near misses, the closest first"),
               first_after = bert.out.find("(after the other rules rewrote the graph)");
  REQUIRE(misses != std::string::npos);
  CHECK(bert.out.find("RotaryEmbeddingFusion @ /layers.0/Add:", misses) < first_after);
}
