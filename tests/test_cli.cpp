// The geopt binary: subcommands, exit codes, text and JSON reports.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include <limits>

#include "test_support.h"

using geopt::test::run_cli;
namespace fs = std::filesystem;

TEST_CASE("geopt --version and --help") {
  auto v = run_cli({"--version"});
  CHECK(v.exit_code == 0);
  CHECK(v.out.find("geopt 0.1.0") == 0);
  auto h = run_cli({"--help"});
  CHECK(h.exit_code == 0);
  CHECK(h.out.find("info") != std::string::npos);
  auto ih = run_cli({"info", "--help"});
  CHECK(ih.exit_code == 0);
  CHECK(ih.out.find("--json") != std::string::npos);
}

TEST_CASE("usage errors exit 2 with a message") {
  auto r = run_cli({"info", "--no-such-flag", "x.onnx"});
  CHECK(r.exit_code == 2);
  CHECK(r.err.find("--no-such-flag") != std::string::npos);
  CHECK(run_cli({}).exit_code == 2);              // no subcommand
  CHECK(run_cli({"frobnicate"}).exit_code == 2);  // unknown subcommand
  CHECK(run_cli({"--log-level", "loud", "info", "m"}).exit_code == 2);
}

TEST_CASE("geopt info prints the model's interface and op mix") {
  auto r = run_cli({"info", (geopt::test::examples_dir() / "bert_tiny_op13.onnx").string()});
  REQUIRE(r.exit_code == 0);
  CHECK(r.out.find("pytorch") != std::string::npos);
  CHECK(r.out.find("ai.onnx 13") != std::string::npos);
  CHECK(r.out.find("input_ids") != std::string::npos);
  CHECK(r.out.find("i64[1,16]") != std::string::npos);
  CHECK(r.out.find("last_hidden_state") != std::string::npos);
  CHECK(r.out.find("f32[1,16,64]") != std::string::npos);
  CHECK(r.out.find("ReduceMean") != std::string::npos);
  CHECK(r.err.empty());
}

TEST_CASE("geopt info --json agrees with the model") {
  auto r =
      run_cli({"info", "--json", (geopt::test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx").string()});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["opsets"]["ai.onnx"] == 17);
  REQUIRE(j["inputs"].size() == 2);
  CHECK(j["inputs"][0]["name"] == "input_ids");
  CHECK(j["inputs"][0]["dtype"] == "i64");
  CHECK(j["inputs"][0]["shape"] == nlohmann::json::array({"batch", "seq"}));
  CHECK(j["symbolic_dims"] == nlohmann::json::array({"batch", "seq"}));
  CHECK(j["op_histogram"]["LayerNormalization"] == 5);  // embedding LN + 2 per layer
  CHECK(j["op_histogram"]["Erf"] == 2);                 // one GELU per layer
  size_t total = 0;
  for (const auto& [op, n] : j["op_histogram"].items()) total += n.get<size_t>();
  CHECK(total == j["node_count"].get<size_t>());
  // Pinned from ONNX's Python API: initializers plus Constant-node tensors.
  CHECK(j["parameter_count"] == 112385);
  CHECK(j["parameter_bytes"] == 449760);
  CHECK(j["initializer_count"] == 39);
}

TEST_CASE("geopt info on bad input exits 1 with a one-line error") {
  fs::path dir = geopt::test::scratch_dir("cli-bad");
  geopt::test::write_file(
      dir / "cut.onnx",
      geopt::test::read_file(geopt::test::examples_dir() / "gpt2_tiny_op13.onnx").substr(0, 5000));
  auto r = run_cli({"info", (dir / "cut.onnx").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("geopt: error: ") == 0);
  CHECK(r.err.find("cut.onnx") != std::string::npos);
  CHECK(r.out.empty());
  auto missing = run_cli({"info", (dir / "absent.onnx").string()});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("cannot open") != std::string::npos);
}

TEST_CASE("geopt run compares with torch's reference and writes .npy outputs") {
  fs::path m = geopt::test::examples_dir() / "gpt2_tiny_op13";
  fs::path out = geopt::test::scratch_dir("run-out");
  auto r = run_cli({"run", m.string() + ".onnx", "--input",
                    "input_ids=" + (m / "inputs" / "input_ids.npy").string(), "--compare",
                    (m / "outputs").string(), "--output-dir", out.string(), "--threads", "1", "--json"});
  REQUIRE(r.exit_code == 0);
  const auto report = nlohmann::json::parse(r.out);
  CHECK(report["within_tolerance"] == true);
  CHECK(report["outputs"][0]["name"] == "logits");
  CHECK(report["outputs"][0]["shape"] == "f32[1,16,512]");
  CHECK(report["outputs"][0]["cosine"].get<double>() > 0.9999);
  CHECK(fs::exists(out / "logits.npy"));

  // Comparing against a different model's outputs fails with exit 1.
  fs::path other = geopt::test::examples_dir() / "llama_tiny_op13" / "outputs";
  auto bad = run_cli({"run", m.string() + ".onnx", "--random-inputs", "--compare", other.string()});
  CHECK(bad.exit_code == 1);
  CHECK(bad.out.find("FAIL") != std::string::npos);
  CHECK(bad.err.find("beyond 0.0001 + 0.0001 x |reference|") != std::string::npos);
  CHECK(bad.out.find("(worst at [") != std::string::npos);
}

TEST_CASE("geopt run --random-inputs is deterministic per seed and checks its arguments") {
  fs::path model = geopt::test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx";
  auto a = run_cli({"run", model.string(), "--random-inputs", "--seed", "3", "--dim", "seq=5", "--json"});
  auto b = run_cli({"run", model.string(), "--random-inputs", "--seed", "3", "--dim", "seq=5", "--json"});
  REQUIRE(a.exit_code == 0);
  auto ja = nlohmann::json::parse(a.out), jb = nlohmann::json::parse(b.out);
  CHECK(ja["outputs"][0]["shape"] == "f32[1,5,64]");
  fs::path d1 = geopt::test::scratch_dir("seed"), d2 = geopt::test::scratch_dir("seed");
  CHECK(run_cli({"run", model.string(), "--random-inputs", "--seed", "3", "--output-dir", d1.string()})
            .exit_code == 0);
  CHECK(run_cli({"run", model.string(), "--random-inputs", "--seed", "3", "--output-dir", d2.string()})
            .exit_code == 0);
  CHECK(geopt::test::read_file(d1 / "pooled.npy") == geopt::test::read_file(d2 / "pooled.npy"));

  auto missing = run_cli({"run", model.string()});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("input 'input_ids' is not given") != std::string::npos);
  auto bad_dim = run_cli({"run", model.string(), "--random-inputs", "--dim", "seq"});
  CHECK(bad_dim.exit_code == 1);
  CHECK(bad_dim.err.find("expected NAME=VALUE") != std::string::npos);
  auto bad_shape =
      run_cli({"run", model.string(), "--input",
               "input_ids=" +
                   (geopt::test::examples_dir() / "resnet18_narrow_op13" / "inputs" / "image.npy").string(),
               "--random-inputs"});
  CHECK(bad_shape.exit_code == 1);
  CHECK(bad_shape.err.find("input 'input_ids': expected dtype i64, got f32") != std::string::npos);
}

TEST_CASE("geopt rules check reports a broken file with its location and a caret, exit 1") {
  fs::path dir = geopt::test::scratch_dir("rules-cli");
  geopt::test::write_file(dir / "bad.gerule",
                          "rule A {\n  match %y = Relu(%x)\n  rewrite %y %x\n}\nrule B { match %y = Frob(%x) "
                          "rewrite %y => %x }\n");
  auto r = run_cli({"rules", "check", (dir / "bad.gerule").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("bad.gerule:3:14: error: expected `=>` after `rewrite`") != std::string::npos);
  CHECK(r.err.find("      rewrite %y %x\n") != std::string::npos);
  CHECK(r.err.find("    " + std::string(13, ' ') + "^\n") != std::string::npos);
  CHECK(r.err.find("bad.gerule:5:21: error: unknown op 'Frob'") != std::string::npos);
  auto ok = run_cli({"rules", "check"});
  CHECK(ok.exit_code == 0);
  CHECK(ok.out.find("rules in") != std::string::npos);
}

TEST_CASE("geopt rules list, test and --dump-automaton") {
  auto list = run_cli({"rules", "list", "--json"});
  REQUIRE(list.exit_code == 0);
  auto j = nlohmann::json::parse(list.out);
  bool found = false;
  for (const auto& r : j)
    if (r["name"] == "LayerNormFusion") {
      found = true;
      CHECK(r["location"].get<std::string>().find("norm.gerule:3:1") != std::string::npos);
      CHECK(r["enabled"] == true);
    }
  CHECK(found);
  auto off = run_cli({"rules", "list", "--disable", "fusion"});
  CHECK(off.out.find("LayerNormFusion") != std::string::npos);
  CHECK(off.out.find(" off ") != std::string::npos);
  auto bad_disable = run_cli({"rules", "list", "--disable", "Nope"});
  CHECK(bad_disable.exit_code == 1);
  CHECK(bad_disable.err.find("no rule or tag has that name") != std::string::npos);

  fs::path dir = geopt::test::scratch_dir("rules-test");
  geopt::test::write_file(dir / "t.gerule", R"(rule R { match %y = Neg(%x) rewrite %y => %x
  test "claims too much" {
    model """<ir_version: 8, opset_import: ["" : 13]> g (float[2] x) => (float[2] y) { n = Neg(x) y = Relu(n) }"""
    expect count(Neg) == 0
    expect outputs_equal
  }
})");
  auto t = run_cli({"rules", "test", (dir / "t.gerule").string(), "--json"});
  CHECK(t.exit_code == 1);  // Neg(x) is not x: the numeric check catches the wrong rule
  const auto tested = nlohmann::json::parse(t.out);
  CHECK(tested["passed"] == 0);
  CHECK(tested["failed"] == 1);
  REQUIRE(tested["tests"].size() == 1);
  CHECK(tested["tests"][0]["rule"] == "R");
  CHECK(tested["tests"][0]["test"] == "claims too much");
  CHECK(tested["tests"][0]["passed"] == false);
  REQUIRE(tested["tests"][0]["failures"].size() == 1);
  CHECK(tested["tests"][0]["failures"][0].get<std::string>().find("t.gerule:5:12: output 'y' differs") !=
        std::string::npos);
  auto text = run_cli({"rules", "test", (dir / "t.gerule").string()});  // the default report says the same
  CHECK(text.exit_code == 1);
  CHECK(text.out.find("t.gerule:5:12: output 'y' differs") != std::string::npos);
  // With --soundness, the rule is found unsound on other inputs too, with what differed.
  auto sound = run_cli({"rules", "test", (dir / "t.gerule").string(), "--soundness", "--json"});
  CHECK(sound.exit_code == 1);
  const auto verdicts = nlohmann::json::parse(sound.out)["soundness"];
  CHECK(verdicts["unsound"] == 1);
  CHECK(verdicts["rules"][0]["verdict"] == "unsound");
  CHECK(!verdicts["rules"][0]["failing"].empty());

  auto dump = run_cli({"rules", "--dump-automaton"});
  CHECK(dump.exit_code == 0);
  CHECK(dump.out.find("ask op@root") != std::string::npos);
  CHECK(dump.out.find("accept LayerNormFusion#") != std::string::npos);
}

TEST_CASE(
    "geopt compile writes a plan that geopt run checks against torch and the original, and plan dump reads "
    "it") {
  fs::path m = geopt::test::examples_dir() / "bert_tiny_op13";
  fs::path dir = geopt::test::scratch_dir("compile");
  fs::path plan = dir / "bert.plan";
  auto c = run_cli({"compile", m.string() + ".onnx", "-o", plan.string(), "--json"});
  REQUIRE(c.exit_code == 0);
  const auto report = nlohmann::json::parse(c.out);
  CHECK(report["fused"] == nlohmann::json({{"AddLayerNormFusion", 5},
                                           {"AttentionFusion", 2},
                                           {"AttentionScaleIntoFlashAttention", 2},
                                           {"FusedMatMulGelu", 2},
                                           {"FusedMatMulTanh", 1},
                                           {"GeluErf", 2},
                                           {"GemmTransposedBIsFusedMatMul", 1},
                                           {"LayerNormFusion", 5},
                                           {"MatMulBias", 12},
                                           {"QKVMergeBiased", 2}}));
  // Layouts and canonical forms apart from fusions: the attention's head split and merge
  // absorbed (FlashAttentionSequenceFirst), its scale moved onto Q on the way; the merged
  // projection's pieces, [1, S, H] at batch 1, need no Reshape back.
  CHECK(report["rewritten"] == nlohmann::json({{"DivByConstantIsMul", 4},
                                               {"FlashAttentionSequenceFirst", 2},
                                               {"KeyTransposeAsSwapLast", 2},
                                               {"MatMulWeightsToFractalNZ", 9},
                                               {"ReshapeToSameShape", 6},
                                               {"ScaleIntoMatMulLeft", 2}}));
  CHECK(report["memory"]["reuse_rate"].get<double>() > 0.5);
  CHECK(report["check"]["ok"] == true);
  CHECK(report["check"]["atol"].get<double>() == 1e-4);
  CHECK(report["check"]["rtol"].get<double>() == 1e-4);
  CHECK(report["fusion_rate"].get<double>() ==
        doctest::Approx(98.0 / 110));  // 98 of the 110 kernels as given
  REQUIRE(fs::exists(plan));
  auto text =
      run_cli({"compile", m.string() + ".onnx", "-o", (dir / "text.plan").string()});  // the default report
  CHECK(text.exit_code == 0);
  CHECK(text.out.find("AddLayerNormFusion x5") != std::string::npos);
  CHECK(text.out.find("in-order and adversarial schedules (tolerance 0.0001 + 0.0001 x |reference|): ok") !=
        std::string::npos);

  auto torch =
      run_cli({"run", plan.string(), "--input", "input_ids=" + (m / "inputs" / "input_ids.npy").string(),
               "--input", "attention_mask=" + (m / "inputs" / "attention_mask.npy").string(), "--compare",
               (m / "outputs").string(), "--json"});
  REQUIRE(torch.exit_code == 0);
  const auto against_torch = nlohmann::json::parse(torch.out);
  CHECK(against_torch["within_tolerance"] == true);
  CHECK(against_torch["outputs"][1]["name"] == "pooled");
  CHECK(against_torch["outputs"][1]["shape"] == "f32[1,64]");
  auto original =
      run_cli({"run", plan.string(), "--random-inputs", "--compare", m.string() + ".onnx", "--json"});
  REQUIRE(original.exit_code == 0);
  CHECK(nlohmann::json::parse(original.out)["within_tolerance"] == true);

  auto dump = run_cli({"plan", "dump", plan.string()});
  CHECK(dump.exit_code == 0);
  CHECK(dump.out.find("Ascend910B1") != std::string::npos);
  auto json = run_cli({"plan", "dump", plan.string(), "--json"});
  REQUIRE(json.exit_code == 0);
  auto j = nlohmann::json::parse(json.out);
  CHECK(j["magic"] == "geopt.plan");
  CHECK(j["soc_version"] == "Ascend910B1");
  CHECK(j["kernels"].size() >= report["kernels"]["after"].get<size_t>());  // and the views
  size_t waits = 0;
  for (const auto& k : j["kernels"]) waits += k.value("wait_events", nlohmann::json::array()).size();
  CHECK(waits == j["events"].size());  // each event is waited on once
  CHECK(j["events"].size() == report["streams"]["events"].get<size_t>());

  fs::path trace = dir / "trace.json";
  auto prof = run_cli({"profile", plan.string(), "--trace", trace.string()});
  CHECK(prof.exit_code == 0);
  CHECK(prof.out.find("critical path") != std::string::npos);
  auto t = nlohmann::json::parse(geopt::test::read_file(trace));
  // One slice per kernel, a flow start and end per event, the process and stream names.
  size_t slices = 0, flows = 0;
  for (const auto& e : t["traceEvents"]) {
    slices += e["ph"] == "X";
    flows += e["ph"] == "s" || e["ph"] == "f";
  }
  CHECK(slices == j["kernels"].size());
  CHECK(flows == 2 * j["events"].size());
  CHECK(t["metadata"]["fusion_rate"].get<double>() > 0.5);

  // The host profile of the plan's run: every kernel counted once per run, under its op type.
  auto host = run_cli({"run", plan.string(), "--random-inputs", "--repeat", "3", "--profile", "--json"});
  REQUIRE_MESSAGE(host.exit_code == 0, host.err);
  std::map<std::string, double> kernels_by_op;
  for (const auto& k : j["kernels"]) {
    const std::string domain = k.value("domain", "");
    kernels_by_op[(domain.empty() ? "" : domain + "::") + k["op_type"].get<std::string>()] += 1;
  }
  std::map<std::string, double> profiled;
  const auto host_report = nlohmann::json::parse(host.out);
  for (const auto& [op, row] : host_report["profile"].items()) {
    profiled[op] = row["calls_per_run"].get<double>();
    CHECK(row["ms_per_run"].get<double>() >= 0.0);
  }
  CHECK(profiled == kernels_by_op);
  // ...and each kernel by its name, slowest first, under the same op types.
  std::map<std::string, double> by_kernel;
  double last = std::numeric_limits<double>::infinity();
  for (const auto& k : host_report["profile_kernels"]) {
    by_kernel[k["op"].get<std::string>()] += k["calls_per_run"].get<double>();
    CHECK(k["ms_per_run"].get<double>() <= last);
    last = k["ms_per_run"].get<double>();
  }
  CHECK(by_kernel == kernels_by_op);

  // One stream and no reuse, as ATC's debugging options ask.
  auto single = run_cli(
      {"compile", m.string() + ".onnx", "--enable-single-stream", "--disable-reuse-memory", "--json"});
  REQUIRE_MESSAGE(single.exit_code == 0, single.err);
  auto s = nlohmann::json::parse(single.out);
  CHECK(s["streams"]["count"] == 1);
  CHECK(s["streams"]["events"] == 0);
  CHECK(s["memory"]["pool_bytes"] == s["memory"]["no_reuse_bytes"]);
  CHECK(s["check"]["ok"] == true);
}

TEST_CASE(
    "geopt compile --input_shape compiles the dynamic example, and --dump-graph writes every stage, lowering "
    "annotated") {
  fs::path dir = geopt::test::scratch_dir("compile-dump");
  auto c = run_cli({"compile", (geopt::test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx").string(),
                    "--input_shape", "input_ids:2,9;attention_mask:2,9", "-o", (dir / "d.plan").string(),
                    "--dump-graph", (dir / "dump").string()});
  REQUIRE(c.exit_code == 0);
  CHECK(c.out.find("in-order and adversarial schedules (tolerance 0.0001 + 0.0001 x |reference|): ok") !=
        std::string::npos);
  CHECK(fs::exists(dir / "d.plan"));
  for (const char* stage : {"1_import", "2_static_shapes", "3_saturation_extraction_layout", "4_lowering"}) {
    INFO(stage);
    CHECK(fs::exists(dir / "dump" / (std::string(stage) + ".onnx")));
    CHECK(fs::exists(dir / "dump" / (std::string(stage) + ".dot")));
  }
  // Shape computations are gone after the static-shapes stage.
  CHECK(geopt::test::read_file(dir / "dump" / "1_import.dot").find("label=\"Range\\n") != std::string::npos);
  CHECK(geopt::test::read_file(dir / "dump" / "2_static_shapes.dot").find("label=\"Range\\n") ==
        std::string::npos);
  std::string lowered = geopt::test::read_file(dir / "dump" / "4_lowering.dot");
  CHECK(lowered.find("step 1, stream 0") != std::string::npos);
  CHECK(lowered.find(", waits e0") != std::string::npos);
  CHECK(lowered.find(", records e0") != std::string::npos);
  CHECK(lowered.find(" at pool+0 (") != std::string::npos);
  // The same notes are the ONNX nodes' doc strings (Netron shows them).
  CHECK(geopt::test::read_file(dir / "dump" / "4_lowering.onnx").find("step 1, stream 0") !=
        std::string::npos);

  // Weights beside the plan, as plans over 2 GB need them; run and plan dump read them.
  auto side = run_cli({"compile", (geopt::test::examples_dir() / "bert_tiny_op13.onnx").string(),
                       "--external-weights", "-o", (dir / "w.plan").string()});
  REQUIRE_MESSAGE(side.exit_code == 0, side.err);
  CHECK(side.out.find("w.plan (weights in ") != std::string::npos);
  CHECK(fs::exists(dir / "w.plan.weights"));
  auto ran = run_cli({"run", (dir / "w.plan").string(), "--random-inputs", "--compare",
                      (geopt::test::examples_dir() / "bert_tiny_op13.onnx").string()});
  CHECK(ran.exit_code == 0);
  auto dump = run_cli({"plan", "dump", (dir / "w.plan").string()});
  CHECK(dump.out.find(" B in w.plan.weights") != std::string::npos);
}

TEST_CASE("geopt compile and geopt run on bad input: clear errors, exit 1, nothing written") {
  fs::path dir = geopt::test::scratch_dir("compile-bad");
  auto dynamic =
      run_cli({"compile", (geopt::test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx").string(), "-o",
               (dir / "d.plan").string()});
  CHECK(dynamic.exit_code == 1);
  CHECK(dynamic.err.find("a plan needs static shapes, but ") != std::string::npos);
  CHECK(dynamic.err.find("('input_ids', 'attention_mask', ") != std::string::npos);
  CHECK(dynamic.err.find("--input_shape, e.g. \"input_ids:<batch>,<seq>;attention_mask:<batch>,<seq>\"") !=
        std::string::npos);
  CHECK(!fs::exists(dir / "d.plan"));
  auto bad_shape =
      run_cli({"compile", (geopt::test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx").string(),
               "--input_shape", "input_ids:1,sixteen"});
  CHECK(bad_shape.exit_code == 2);
  CHECK(bad_shape.err.find("'sixteen' is not a dimension") != std::string::npos);
  geopt::test::write_file(dir / "junk.plan", "not a plan at all");
  auto junk = run_cli({"run", (dir / "junk.plan").string(), "--random-inputs"});
  CHECK(junk.exit_code == 1);
  CHECK(junk.err.find("junk.plan: not a") != std::string::npos);
  auto dump = run_cli({"plan", "dump", (dir / "missing.plan").string()});
  CHECK(dump.exit_code == 1);
  CHECK(dump.err.find("missing.plan: cannot open") != std::string::npos);
}

TEST_CASE("the weight layouts an optimized model leaves to compile time are computed by geopt compile") {
  fs::path dir = geopt::test::scratch_dir("weight-layouts");
  fs::path optimized = dir / "resnet18.onnx";
  REQUIRE(run_cli({"optimize", (geopt::test::examples_dir() / "resnet18_narrow_op13.onnx").string(), "-o",
                   optimized.string()})
              .exit_code == 0);
  auto info = run_cli({"info", optimized.string(), "--json"});
  REQUIRE(info.exit_code == 0);
  // Weights over 65536 elements keep their FRACTAL_Z layout as a TransData of the weight
  // (folded when compiled), next to the one conversion in and one out.
  CHECK(nlohmann::json::parse(info.out)["op_histogram"]["ai.geopt::TransData"].get<int>() > 2);
  for (bool reoptimize : {false, true}) {
    INFO("optimize again: " << reoptimize);
    fs::path plan = dir / (reoptimize ? "again.plan" : "as_given.plan");
    std::vector<std::string> args = {"compile", optimized.string(), "-o", plan.string()};
    if (!reoptimize) args.push_back("--no-optimize");
    auto c = run_cli(args);
    REQUIRE(c.exit_code == 0);
    CHECK(c.out.find("check            plan executor vs reference on the original") != std::string::npos);
    auto dump = nlohmann::json::parse(run_cli({"plan", "dump", plan.string(), "--json"}).out);
    int transdata = 0;
    for (const auto& k : dump["kernels"]) transdata += k["op_type"] == "TransData";
    CHECK(transdata ==
          1);  // only the activations' conversion out runs (the first conv reads the image as given)
  }
}

TEST_CASE(
    "geopt compile takes GE's memory options: --disable_reuse_memory=1, OP_NO_REUSE_MEM from the "
    "environment, and warns of a name it does not find") {
  const std::string model = (geopt::test::examples_dir() / "resnet18_narrow_op13.onnx").string();
  auto pool = [](const geopt::test::CliResult& r) {
    return nlohmann::json::parse(r.out)["memory"]["pool_bytes"].get<size_t>();
  };
  auto shared = run_cli({"compile", model, "--json"});
  REQUIRE(shared.exit_code == 0);
  auto none = run_cli({"compile", model, "--json", "--disable_reuse_memory=1"});
  REQUIRE(none.exit_code == 0);
  CHECK(pool(none) == nlohmann::json::parse(none.out)["memory"]["no_reuse_bytes"].get<size_t>());
  CHECK(pool(none) > pool(shared));
  auto off = run_cli({"compile", model, "--json", "--disable_reuse_memory=0"});
  CHECK(pool(off) == pool(shared));
  auto apart = run_cli({"compile", model, "--json", "--op_no_reuse_mem", "MaxPool,Typo"});
  REQUIRE(apart.exit_code == 0);
  auto j = nlohmann::json::parse(apart.out);
  CHECK(j["memory"]["kept_apart"] == 1);
  CHECK(j["memory"]["no_reuse_unmatched"] == nlohmann::json::array({"Typo"}));
  CHECK(pool(apart) > pool(shared));
  CHECK(apart.err.find("OP_NO_REUSE_MEM: no kernel of the compiled graph is named or typed 'Typo'") !=
        std::string::npos);
  // With reuse off every buffer is apart already: the names still count as found.
  auto off_apart =
      run_cli({"compile", model, "--json", "--disable_reuse_memory=1", "--op_no_reuse_mem", "MaxPool"});
  REQUIRE(off_apart.exit_code == 0);
  CHECK(nlohmann::json::parse(off_apart.out)["memory"]["no_reuse_unmatched"].empty());
  CHECK(off_apart.err.find("OP_NO_REUSE_MEM") == std::string::npos);
  // The environment variable, as GE reads it; the option wins over it.
  setenv("OP_NO_REUSE_MEM", "MaxPool", 1);
  auto env = run_cli({"compile", model, "--json"});
  auto both = run_cli({"compile", model, "--json", "--op_no_reuse_mem", "Typo"});
  unsetenv("OP_NO_REUSE_MEM");
  REQUIRE(env.exit_code == 0);
  CHECK(nlohmann::json::parse(env.out)["memory"]["kept_apart"] == 1);
  CHECK(nlohmann::json::parse(both.out)["memory"]["kept_apart"] == 0);
}
