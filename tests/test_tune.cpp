// Auto-tuning (geopt tune, docs/TUNING.md): host tactics computing what the kernels' own
// choices compute, the knowledge bank written by tune and read by compile, and every
// way a bank, a plan's tactic or a tune_ops_file can be wrong.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <set>

#include "ascend/device_ops/device_ops.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "ascend/tune/knowledge_bank.h"
#include "ascend/tune/op_signature.h"
#include "ascend/tune/plan_timing.h"
#include "eval/compare.h"
#include "eval/host_tactic.h"
#include "eval/kernel.h"
#include "test_support.h"
#include "util/error.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace geopt {
namespace {

const fs::path kResNet = test::examples_dir() / "resnet18_narrow_op13.onnx";
const fs::path kMobileNet = test::examples_dir() / "mobilenetv2_half_op13.onnx";

fs::path compiled(const fs::path& model, const std::string& tag, const std::vector<std::string>& extra = {}) {
  const fs::path plan = test::scratch_dir(tag) / "model.plan";
  std::vector<std::string> args{"compile", model.string(), "-o", plan.string(), "--no-check"};
  args.insert(args.end(), extra.begin(), extra.end());
  const test::CliResult r = test::run_cli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return plan;
}

std::vector<std::pair<std::string, HostTensor>> run_plan(const plan::Plan& p,
                                                         const std::map<std::string, HostTensor>& inputs) {
  const ascend::PlanExecutor e(p, ascend::op_registry());
  return e.run(inputs);
}

bool is_conv(const plan::Kernel& k) {
  return k.op_type() == std::string("FusedConv") || k.op_type() == "Conv";
}

}  // namespace

TEST_CASE("a host tactic reads back as written, and an unknown knob or value is refused by name") {
  for (const auto& [algorithm, a_name] : conv_algorithm_names())
    for (const auto& [layout, l_name] : conv_layout_names())
      for (const auto& [moves, m_name] : channel_moves_names())
        for (int threads : {0, 1, 3})
          for (const auto& [packing, p_name] : weight_packing_names()) {
            const HostTactic t{algorithm, layout, moves, threads, packing};
            CHECK(parse_tactic(tactic_text(t)) == t);
          }
  CHECK(tactic_text({}).empty());
  CHECK(tactic_text(HostTactic{ConvAlgorithm::winograd, ConvLayout::nhwc, ChannelMoves::words, 1,
                               WeightPacking::plain}) ==
        "algorithm=winograd,layout=nhwc,moves=words,threads=1,packing=plain");
  CHECK_THROWS_WITH_AS(parse_tactic("packing=nz"), doctest::Contains("packing 'nz' is none of auto, plain"),
                       Error);
  CHECK_THROWS_WITH_AS(parse_tactic("layout=nchw8c"), doctest::Contains("layout 'nchw8c' is none of"), Error);
  CHECK_THROWS_WITH_AS(parse_tactic("unroll=4"), doctest::Contains("unknown knob 'unroll'"), Error);
  CHECK_THROWS_WITH_AS(parse_tactic("threads=0"), doctest::Contains("not a count from 1"), Error);
  CHECK_THROWS_WITH_AS(parse_tactic("threads=99999"), doctest::Contains("not a count from 1"), Error);
  CHECK_THROWS_WITH_AS(parse_tactic("threads"), doctest::Contains("is not KNOB=VALUE"), Error);
}

TEST_CASE(
    "every conv tactic computes what the conv's own choice computes (ResNet-18 and MobileNetV2 plans)") {
  for (const fs::path& model : {kResNet, kMobileNet}) {
    CAPTURE(model);
    const plan::Plan untuned = ascend::read_plan(compiled(model, "tactics"));
    const auto inputs = ascend::random_plan_inputs(untuned, 3);
    const auto reference = run_plan(untuned, inputs);
    size_t convs = 0;
    for (const auto& k : untuned.kernels()) convs += is_conv(k);
    REQUIRE(convs >= 10);
    for (const auto& [algorithm, a_name] : conv_algorithm_names())
      for (const auto& [layout, l_name] : conv_layout_names()) {
        // geopt's own loops run in the caller's layout only: with another, the kernels are
        // direct's, already run.
        if (algorithm == ConvAlgorithm::geopt && layout != ConvLayout::automatic &&
            layout != ConvLayout::caller)
          continue;
        const std::string tactic =
            tactic_text(HostTactic{.conv_algorithm = algorithm, .conv_layout = layout, .threads = 1});
        CAPTURE(tactic);
        plan::Plan tuned = untuned;
        for (auto& k : *tuned.mutable_kernels())
          if (is_conv(k)) k.set_host_tactic(tactic);
        ascend::check_plan(tuned, "tuned");
        const OutputsDiff d = diff_outputs(run_plan(tuned, inputs), reference, Tolerance{1e-4, 1e-4});
        CHECK(d.within());
        CHECK(d.max_abs < 1e-4);
      }
  }
}

TEST_CASE(
    "both channel-move tactics give the same bytes (ShuffleNet v2's and DenseNet-121's NC1HWC0 moves)") {
  for (const std::string name : {"shufflenet_v2_x1_0_op17.onnx", "densenet121_op17.onnx"}) {
    CAPTURE(name);
    const plan::Plan untuned = ascend::read_plan(compiled(test::zoo_dir() / name, "moves"));
    const auto inputs = ascend::random_plan_inputs(untuned, 5);
    size_t moves = 0;
    std::vector<std::vector<std::pair<std::string, HostTensor>>> outputs;
    for (const char* how : {"moves=words", "moves=permute"}) {
      plan::Plan tuned = untuned;
      for (auto& k : *tuned.mutable_kernels())
        if (ascend::op_registry().find(k.domain(), k.op_type())->tactic_knobs & kTacticMoves) {
          k.set_host_tactic(how);
          ++moves;
        }
      outputs.push_back(run_plan(tuned, inputs));
    }
    CHECK(moves >= 2 * 8);  // each tactic's
    if (!__builtin_cpu_supports("avx512f")) {
      MESSAGE("no AVX-512 here: moves=permute runs the word loop, so both sides are the same code");
      continue;
    }
    const OutputsDiff d = diff_outputs(outputs[1], outputs[0], Tolerance{0, 0});
    CHECK(d.within());
    CHECK(d.max_abs == 0);
  }
}

TEST_CASE(
    "a product's weight read where it lies (packing=plain) gives what the packed weight gives (BERT-tiny, "
    "LLaMA-tiny)") {
  for (const std::string name : {"bert_tiny_op17.onnx", "llama_tiny_op17.onnx"}) {
    CAPTURE(name);
    const fs::path untuned_path = compiled(test::examples_dir() / name, "packing");
    const plan::Plan untuned = ascend::read_plan(untuned_path);
    plan::Plan plain = untuned;
    size_t products = 0;
    for (auto& k : *plain.mutable_kernels())
      if ((ascend::op_registry().find(k.domain(), k.op_type())->tactic_knobs & kTacticPacking) &&
          k.inputs_size() > 1 && k.inputs(1).region() == plan::WEIGHT) {
        k.set_host_tactic("packing=plain");
        ++products;
      }
    CHECK(products >= 7);  // BERT-tiny's 9 products; LLaMA-tiny's 5 and its 2 SwiGLUs
    const fs::path plain_path = test::scratch_dir("packing-plain") / "plain.plan";
    ascend::write_plan(plain, plain_path);

    // A weight is packed from its second product on: each side runs twice, the second run compared.
    const auto inputs = ascend::random_plan_inputs(untuned, 7);
    auto second_run = [&](const plan::Plan& p) {
      const ascend::PlanExecutor e(p, ascend::op_registry());
      e.run(inputs);
      return e.run(inputs);
    };
    const OutputsDiff d = diff_outputs(second_run(plain), second_run(untuned), Tolerance{1e-5, 1e-5});
    CHECK_MESSAGE(d.within(), d.worst);

    // `geopt run --profile` names the packed weight on one side only.
    auto packed_and_plain = [](const fs::path& plan) {
      const test::CliResult ran = test::run_cli(
          {"run", plan.string(), "--random-inputs", "--profile", "--warmup", "1", "--repeat", "1", "--json"});
      INFO(ran.err);
      REQUIRE(ran.exit_code == 0);
      std::pair<int, int> counts{0, 0};
      const json report = json::parse(ran.out);  // kept: a range-for over a temporary's items() dangles
      for (const char* op : {"ai.geopt::FusedMatMul", "ai.geopt::SwiGLU"}) {
        if (!report.at("profile").contains(op)) continue;
        for (const auto& item : report.at("profile").at(op).at("implementations").items()) {
          const std::string implementation = item.key();
          CAPTURE(implementation);
          CHECK(implementation.rfind("oneDNN ", 0) == 0);
          (implementation.find(", B packed") != std::string::npos ? counts.first : counts.second) += 1;
        }
      }
      return counts;
    };
    const auto own = packed_and_plain(untuned_path), kept_plain = packed_and_plain(plain_path);
    CHECK(own.first > 0);
    CHECK(kept_plain.first == 0);
    CHECK(kept_plain.second > 0);
  }
}

TEST_CASE("a kernel's signature holds its shapes, layouts and attributes, not its name or weights") {
  const plan::Plan p = ascend::read_plan(compiled(kResNet, "signature"));
  std::set<std::string> signatures;
  size_t kernels = 0;
  for (const auto& k : p.kernels()) {
    if (!is_conv(k)) continue;
    ++kernels;
    const std::string s = ascend::op_signature(k);
    CHECK(s.find(k.name()) == std::string::npos);
    CHECK(s.find("kernel_shape=[") != std::string::npos);
    signatures.insert(s);
  }
  // ResNet-18's basic blocks repeat their 3x3 convs: fewer signatures than convs.
  CHECK(signatures.size() < kernels);
  CHECK(signatures.size() >= 4);
}

TEST_CASE(
    "geopt tune --job_type 2 files a tactic per signature, and compile --op_bank_path takes them, measuring "
    "nothing") {
  const fs::path dir = test::scratch_dir("tune-op");
  const fs::path bank = dir / "bank";
  const test::CliResult t = test::run_cli(
      {"tune", kMobileNet.string(), "--job_type", "2", "--output", bank.string(), "--json", "--no-check"});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  const json report = json::parse(t.out);
  const fs::path file = bank / "Ascend910B1" / "op_bank.json";
  CHECK(report["bank"] == file.string());
  REQUIRE(fs::exists(file));
  const ascend::KnowledgeBank b = ascend::KnowledgeBank::load(file.string(), false);
  // Every signature measured is filed, with a tactic or with none (the kernel's own held).
  size_t measured = 0;
  for (const auto& op : report["ops"]) {
    if (op["candidates"].get<int>() == 0) continue;
    ++measured;
    CHECK(op["default_us"].get<double>() > 0);
    CHECK(op["tuned_us"].get<double>() > 0);
    CHECK(op["tuned_us"].get<double>() <= op["default_us"].get<double>() * 1.0001);
  }
  CHECK(measured >= 10);
  CHECK(b.ops().size() == measured);
  CHECK(report["plan"]["check"].get<std::string>().size() > 0);

  // A bank entry's tactic reaches every kernel of its signature, and the plan still
  // computes the model (compile's check runs the tuned plan).
  ascend::KnowledgeBank edited = b;
  const ascend::OpEntry* conv = nullptr;
  for (const auto& e : b.ops())
    if (e.op_type == "FusedConv") conv = &e;
  REQUIRE(conv);
  ascend::OpEntry forced = *conv;
  forced.tactic = "layout=nhwc,threads=1";
  edited.put(forced);
  const fs::path edited_file = dir / "edited.json";
  edited.save(edited_file.string());
  const fs::path plan = dir / "tuned.plan";
  const test::CliResult c = test::run_cli(
      {"compile", kMobileNet.string(), "-o", plan.string(), "--op_bank_path", edited_file.string()});
  INFO(c.out);
  REQUIRE(c.exit_code == 0);
  CHECK(c.out.find("op bank          " + edited_file.string()) != std::string::npos);
  const plan::Plan p = ascend::read_plan(plan);
  size_t from_bank = 0, forced_kernels = 0;
  for (const auto& k : p.kernels()) {
    if (k.tactic_source() == "bank") ++from_bank;
    if (ascend::op_signature(k) == forced.signature) {
      ++forced_kernels;
      CHECK(k.host_tactic() == forced.tactic);
      CHECK(k.tactic_source() == "bank");
    }
  }
  CHECK(forced_kernels >= 1);
  CHECK(c.out.find(std::to_string(from_bank) + " kernel(s) took a tuned tactic") != std::string::npos);
  const test::CliResult dump = test::run_cli({"plan", "dump", plan.string()});
  CHECK(dump.out.find("tactic layout=nhwc,threads=1 (from the knowledge bank)") != std::string::npos);

  // --tune_threads adds the thread count to each signature's search, where there is a team.
  const test::CliResult threads =
      test::run_cli({"tune", kMobileNet.string(), "--output", (dir / "threads").string(), "--tune_threads",
                     "--json", "--no-check"});
  REQUIRE(threads.exit_code == 0);
  const json with_threads = json::parse(threads.out);
  size_t without = 0, with = 0;
  for (const auto& op : report["ops"]) without += op["candidates"].get<size_t>();
  for (const auto& op : with_threads["ops"]) with += op["candidates"].get<size_t>();
  const int team = default_kernel_threads();  // 1 thread fewer, and half the team from 4 up
  CHECK(with == without + with_threads["ops"].size() * static_cast<size_t>(team >= 4 ? 2 : team > 1 ? 1 : 0));
  // And the whole plan on one thread, timed against what the check kept (with a team).
  const json timings = with_threads["plan"]["timings"];
  const bool one_thread_timed = std::any_of(timings.begin(), timings.end(), [](const json& t) {
    return t.get<std::string>().starts_with("every kernel on one thread");
  });
  CHECK(one_thread_timed == (team > 1));

  // --reload measures nothing the bank holds.
  const test::CliResult again = test::run_cli(
      {"tune", kMobileNet.string(), "--output", bank.string(), "--reload", "--json", "--no-check"});
  REQUIRE(again.exit_code == 0);
  const json reloaded = json::parse(again.out);
  for (const auto& op : reloaded["ops"])
    if (op["candidates"].get<int>() > 0) FAIL("measured again under --reload: " << op["signature"]);
  CHECK(reloaded["outcomes"]["from the bank"].get<size_t>() == measured);
}

TEST_CASE("entries filed for another machine are ignored and counted") {
  const fs::path dir = test::scratch_dir("tune-other-key");
  const plan::Plan p = ascend::read_plan(compiled(kResNet, "tune-other-key-plan"));
  ascend::KnowledgeBank bank;
  for (const auto& k : p.kernels())
    if (is_conv(k))
      bank.put(ascend::OpEntry{{"Ascend910B1", "0.1.0", "an-isa-no-machine-has", 2},
                               ascend::op_signature(k),
                               k.op_type(),
                               "threads=1",
                               10,
                               5,
                               "elsewhere.onnx"});
  const fs::path file = dir / "bank.json";
  bank.save(file.string());
  const test::CliResult c =
      test::run_cli({"compile", kResNet.string(), "--op_bank_path", file.string(), "--json"});
  REQUIRE(c.exit_code == 0);
  const json j = json::parse(c.out);
  CHECK(j["tuning"]["op_bank"]["kernels_tuned"] == 0);
  CHECK(j["tuning"]["op_bank"]["entries_for_other_machines"] == bank.ops().size());
}

TEST_CASE("a bank that is not one is refused whole, with exit 1, and tune leaves it as it was") {
  const fs::path dir = test::scratch_dir("tune-bad-bank");
  struct Case {
    const char* name;
    std::string bytes;
    const char* says;
  };
  std::string random_bytes;
  uint32_t x = 12345;
  for (int i = 0; i < 4096; ++i) random_bytes += static_cast<char>((x = x * 1664525u + 1013904223u) >> 24);
  const std::vector<Case> cases{
      {"random", random_bytes, "it is no JSON"},
      {"array", "[1, 2]", "it is no JSON object"},
      {"format", R"({"format": "trt-timing-cache", "version": 1})", "\"format\" is not"},
      {"version", R"({"format": "geopt-knowledge-bank", "version": 7})", "of version 7"},
      {"tactic",
       R"json({"format": "geopt-knowledge-bank", "version": 1, "op_entries": [{"soc_version": "Ascend910B1",
          "geopt_version": "0.1.0", "isa": "avx2", "threads": 2, "signature": "Conv()", "op_type": "Conv",
          "tactic": "layout=sideways", "default_us": 1, "tuned_us": 1, "model": "m"}]})json",
       "op entry 0: host tactic 'layout=sideways'"},
      {"time",
       R"json({"format": "geopt-knowledge-bank", "version": 1, "op_entries": [{"soc_version": "Ascend910B1",
          "geopt_version": "0.1.0", "isa": "avx2", "threads": 2, "signature": "Conv()", "op_type": "Conv",
          "tactic": "", "default_us": -1, "tuned_us": 1, "model": "m"}]})json",
       "\"default_us\" is no time"},
      {"threads",
       R"json({"format": "geopt-knowledge-bank", "version": 1, "op_entries": [{"soc_version": "Ascend910B1",
          "geopt_version": "0.1.0", "isa": "avx2", "threads": 0, "signature": "Conv()", "op_type": "Conv",
          "tactic": "", "default_us": 1, "tuned_us": 1, "model": "m"}]})json",
       "\"threads\" is 0"},
  };
  for (const Case& k : cases) {
    CAPTURE(k.name);
    const fs::path file = dir / (std::string(k.name) + ".json");
    test::write_file(file, k.bytes);
    const test::CliResult c =
        test::run_cli({"compile", kResNet.string(), "--op_bank_path", file.string(), "--no-check"});
    CHECK(c.exit_code == 1);
    CHECK(c.err.find(file.string() + ": not a geopt knowledge bank") != std::string::npos);
    CHECK(c.err.find(k.says) != std::string::npos);
    const test::CliResult t =
        test::run_cli({"tune", kResNet.string(), "--output", file.string(), "--no-check"});
    CHECK(t.exit_code == 1);
    CHECK(test::read_file(file) == k.bytes);
  }
  const test::CliResult missing =
      test::run_cli({"compile", kResNet.string(), "--op_bank_path", (dir / "none").string()});
  CHECK(missing.exit_code == 1);
  CHECK(missing.err.find("none: no knowledge bank there") != std::string::npos);
  // A bank folder with no bank for this soc version (never tuned for it) is an empty bank.
  fs::create_directories(dir / "empty");
  const test::CliResult empty =
      test::run_cli({"compile", kResNet.string(), "--op_bank_path", (dir / "empty").string(), "--no-check"});
  CHECK(empty.exit_code == 0);
  CHECK(empty.out.find("0 kernel(s) took a tuned tactic") != std::string::npos);
}

TEST_CASE("a plan whose kernel names an unknown tactic is refused on load, naming the kernel") {
  const fs::path plan_file = compiled(kResNet, "tune-hostile-plan");
  plan::Plan p = ascend::read_plan(plan_file);
  for (const char* tactic : {"layout=diagonal", "threads=4096", "algorithm=fft"}) {
    CAPTURE(tactic);
    plan::Plan bad = p;
    bad.mutable_kernels(0)->set_host_tactic(tactic);
    const fs::path out = plan_file.parent_path() / "bad.plan";
    ascend::write_plan(bad, out);
    const test::CliResult r = test::run_cli({"run", out.string(), "--random-inputs"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("kernel 0 (") != std::string::npos);
    CHECK(r.err.find(std::string("host tactic '") + tactic) != std::string::npos);
  }
  plan::Plan bad = p;
  bad.mutable_kernels(0)->set_tactic_source("the moon");
  const fs::path out = plan_file.parent_path() / "bad_source.plan";
  ascend::write_plan(bad, out);
  const test::CliResult r = test::run_cli({"run", out.string(), "--random-inputs"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("tactic source 'the moon'") != std::string::npos);
}

TEST_CASE("--tune_ops_file tunes the kernels it names only, and a wrong one is refused") {
  const fs::path dir = test::scratch_dir("tune-ops-file");
  const fs::path ops = dir / "ops.json";
  test::write_file(ops, R"({"tune_ops_type": ["ai.geopt::FusedConv"]})");  // as plan dump prints it
  const test::CliResult t = test::run_cli({"tune", kResNet.string(), "--output", (dir / "bank").string(),
                                           "--tune_ops_file", ops.string(), "--json", "--no-check"});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  const json j = json::parse(t.out);
  REQUIRE(!j["ops"].empty());
  for (const auto& op : j["ops"]) CHECK(op["op_type"] == "FusedConv");
  for (const auto& wrong : std::vector<std::pair<std::string, std::string>>{
           {"{\"tune_ops_kind\": []}", "unknown key \"tune_ops_kind\""},
           {"{\"tune_ops_name\": [3]}", "holds something other than a name"},
           {"{}", "names no op"},
           {"{\"tune_ops_type\": [\"FusedKonv\"]}", "'FusedKonv' is the name or op type of no kernel"},
           {"not json", "is no JSON"}}) {
    const std::string& bytes = wrong.first;  // named: clang 14's doctest lambdas cannot capture a binding
    const std::string& says = wrong.second;
    CAPTURE(bytes);
    test::write_file(ops, bytes);
    const test::CliResult bad = test::run_cli(
        {"tune", kResNet.string(), "--output", (dir / "bank2").string(), "--tune_ops_file", ops.string()});
    CHECK(bad.exit_code == 1);
    CHECK(bad.err.find(says) != std::string::npos);
    CHECK(!fs::exists(dir / "bank2"));
  }
}

TEST_CASE("a time budget ends tuning early and leaves a bank that --reload goes on from") {
  const fs::path dir = test::scratch_dir("tune-budget");
  // A budget the first signature's measurement exceeds: one measured, the rest not reached.
  const test::CliResult t = test::run_cli({"tune", kResNet.string(), "--output", (dir / "bank").string(),
                                           "--time_budget", "0.000001", "--json", "--no-check"});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  const json j = json::parse(t.out);
  CHECK(j["budget_hit"] == true);
  const size_t measured = j["outcomes"].value("kept", size_t{0}) +
                          j["outcomes"].value("switched", size_t{0}) +
                          j["outcomes"].value("taken back", size_t{0});
  const size_t not_reached = j["outcomes"]["not reached"].get<size_t>();
  CHECK(measured >= 1);
  CHECK(not_reached >= 1);
  const test::CliResult again = test::run_cli(
      {"tune", kResNet.string(), "--output", (dir / "bank").string(), "--reload", "--json", "--no-check"});
  REQUIRE(again.exit_code == 0);
  const json k = json::parse(again.out);
  CHECK(k["budget_hit"] == false);
  CHECK(k["outcomes"]["from the bank"].get<size_t>() == measured);
  CHECK(k["outcomes"].value("not reached", size_t{0}) == 0);
  CHECK(k["ops"].size() == j["ops"].size());
}

TEST_CASE(
    "geopt tune --job_type 1 files the model's strategy settings, and compile --mdl_bank_path applies them") {
  const fs::path dir = test::scratch_dir("tune-model");
  const fs::path bank = dir / "bank";
  const test::CliResult t = test::run_cli({"tune", kResNet.string(), "--job_type", "1", "--tune_target",
                                           "simulated", "--output", bank.string(), "--json", "--no-check"});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  const json j = json::parse(t.out);
  CHECK(!j["tried"].empty());
  CHECK(j["tuned_us"].get<double>() <= j["default_us"].get<double>());
  const fs::path file = bank / "Ascend910B1" / "model_bank.json";
  REQUIRE(fs::exists(file));
  const test::CliResult c =
      test::run_cli({"compile", kResNet.string(), "--mdl_bank_path", bank.string(), "--json", "--no-check"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  const json cj = json::parse(c.out);
  REQUIRE(cj["tuning"]["model_bank"]["applied"].is_object());
  CHECK(cj["tuning"]["model_bank"]["applied"]["disable"] == j["chosen"]["disable"]);
  CHECK(cj["tuning"]["model_bank"]["applied"]["max_streams"] == j["chosen"]["max_streams"]);
  CHECK(cj["tuning"]["model_bank"]["applied"]["topo_sorting_mode"] == j["chosen"]["topo_sorting_mode"]);
  std::set<std::string> orders;  // each of GE's orders was tried against geopt's own
  for (const json& t : j["tried"])
    if (t["setting"].get<std::string>().ends_with(" order")) orders.insert(t["setting"].get<std::string>());
  CHECK(orders.size() == 4);
  // The simulated latency compile reports is the one tuning filed.
  CHECK(cj["profile"]["latency_us"].get<double>() == doctest::Approx(j["tuned_us"].get<double>()));
}

TEST_CASE("compile names each metric past the seed's threshold and the tuning job for it") {
  for (const fs::path& model : {kResNet, kMobileNet, test::examples_dir() / "bert_tiny_op13.onnx"}) {
    CAPTURE(model);
    const test::CliResult c = test::run_cli({"compile", model.string(), "--json", "--no-check"});
    REQUIRE(c.exit_code == 0);
    const json j = json::parse(c.out);
    const json& p = j["profile"];
    std::set<std::string> expected;
    if (p["fusion_rate"].get<double>() < 0.5) expected.insert("fusion rate");
    if (p["memory_reuse_rate"].get<double>() < 0.6) expected.insert("memory reuse");
    if (p["layout_transform_share"].get<double>() > 0.2) expected.insert("layout transforms");
    const double cube = p["cube_utilization"].get<double>(), vector = p["vector_utilization"].get<double>();
    if (cube > 0 && cube < 0.7) expected.insert("Cube utilisation");
    if (vector > 0 && vector < 0.6) expected.insert("Vector utilisation");
    std::set<std::string> named;
    for (const auto& h : j["tuning_hints"]) {
      named.insert(h["metric"].get<std::string>());
      CHECK(h["command"].get<std::string>().find("geopt tune " + model.string() + " --job_type ") == 0);
    }
    CHECK(named == expected);
  }
}

}  // namespace geopt

namespace geopt {
namespace {

// A super-resolution net (ESPCN's shape): two convs, a pixel shuffle (DepthToSpace, which
// no layout rule moves a conversion through), two convs. So two NC1HWC0 regions, named
// "head_*" and "tail_*". Weights are random initializers.
fs::path two_region_model(const fs::path& dir) {
  onnx::ModelProto m = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17]>
    g (float[1,3,24,24] x, float[16,3,3,3] w1, float[16] b1, float[16,16,3,3] w2, float[16] b2,
       float[16,4,3,3] w3, float[16] b3, float[3,16,3,3] w4, float[3] b4) => (float[1,3,48,48] y) {
      a = Conv <pads = [1, 1, 1, 1]> (x, w1, b1)
      ar = Relu (a)
      c = Conv <pads = [1, 1, 1, 1]> (ar, w2, b2)
      cr = Relu (c)
      d = DepthToSpace <blocksize = 2> (cr)
      e = Conv <pads = [1, 1, 1, 1]> (d, w3, b3)
      er = Relu (e)
      y = Conv <pads = [1, 1, 1, 1]> (er, w4, b4)
    })");
  const char* names[] = {"head_conv1", "head_relu1", "head_conv2", "head_relu2",
                         "shuffle",    "tail_conv1", "tail_relu1", "tail_conv2"};
  for (int i = 0; i < m.graph().node_size(); ++i) m.mutable_graph()->mutable_node(i)->set_name(names[i]);
  uint32_t state = 12345;
  auto* g = m.mutable_graph();
  for (int i = g->input_size(); i-- > 1;) {  // every input but x becomes a weight
    const onnx::ValueInfoProto& in = g->input(i);
    onnx::TensorProto* t = g->add_initializer();
    t->set_name(in.name());
    t->set_data_type(onnx::TensorProto::FLOAT);
    int64_t n = 1;
    for (const auto& d : in.type().tensor_type().shape().dim()) {
      t->add_dims(d.dim_value());
      n *= d.dim_value();
    }
    for (int64_t k = 0; k < n; ++k) {
      state = state * 1664525u + 1013904223u;
      t->add_float_data(static_cast<float>(state >> 8) / static_cast<float>(1u << 24) * 0.4f - 0.2f);
    }
    g->mutable_input()->DeleteSubrange(i, 1);
  }
  const fs::path p = dir / "espcn.onnx";
  test::save_model(m, p);
  return p;
}

// The plan's convolutions that read or write NC1HWC0, by kernel name.
std::set<std::string> blocked_convs(const fs::path& plan) {
  std::set<std::string> out;
  const plan::Plan p = ascend::read_plan(plan);
  for (const auto& k : p.kernels())
    if (k.op_type().find("Conv") != std::string::npos)
      for (const auto& t : k.outputs())
        if (t.format() == "NC1HWC0") out.insert(k.name());
  return out;
}

// The head region (the conv reading the image x) in NC1HWC0 and the tail (the conv
// writing y, with no conversion after it) in NCHW.
void check_tail_kept_nchw(const fs::path& plan) {
  const plan::Plan p = ascend::read_plan(plan);
  size_t head = 0, tail = 0;
  for (const auto& k : p.kernels()) {
    if (k.op_type().find("Conv") == std::string::npos) continue;
    if (k.inputs(0).name() == "x") head += k.outputs(0).format() == "NC1HWC0";
    if (k.outputs(0).name() == "y") tail += k.outputs(0).format() == "NCHW";
  }
  CHECK(head == 1);
  CHECK(tail == 1);
  CHECK(blocked_convs(plan).size() == 2);
}

}  // namespace

TEST_CASE("--keep_format keeps one NC1HWC0 region in the model's format, the rest as before") {
  const fs::path dir = test::scratch_dir("keep-format");
  const fs::path model = two_region_model(dir);
  const test::CliResult all = test::run_cli({"compile", model.string(), "-o", (dir / "all.plan").string()});
  INFO(all.err);
  REQUIRE(all.exit_code == 0);
  const std::set<std::string> both = blocked_convs(dir / "all.plan");
  REQUIRE(both.size() == 4);  // both regions in NC1HWC0 by default
  // The tail kept in NCHW: its convs leave NC1HWC0, the head's stay; the check passes.
  const test::CliResult tail = test::run_cli({"compile", model.string(), "-o", (dir / "tail.plan").string(),
                                              "--keep_format", "tail_conv1,tail_relu1,tail_conv2"});
  INFO(tail.err);
  REQUIRE(tail.exit_code == 0);
  check_tail_kept_nchw(dir / "tail.plan");
  // A name the model lacks is an error naming it.
  const test::CliResult bad = test::run_cli({"compile", model.string(), "--keep_format", "tail_conv9"});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("tail_conv9") != std::string::npos);
  CHECK(bad.err.find("no node of that name") != std::string::npos);
}

TEST_CASE("tune --job_type 1 tries each NC1HWC0 region and the extraction modes, and the bank replays them") {
  const fs::path dir = test::scratch_dir("tune-regions");
  const fs::path model = two_region_model(dir);
  const fs::path bank = dir / "bank";
  const test::CliResult t = test::run_cli({"tune", model.string(), "--job_type", "1", "--tune_target",
                                           "simulated", "--output", bank.string(), "--json"});
  INFO(t.err);
  REQUIRE(t.exit_code == 0);
  const json j = json::parse(t.out);
  std::vector<std::string> regions, extractions;
  for (const json& s : j["tried"]) {
    const std::string setting = s["setting"].get<std::string>();
    if (setting.starts_with("region ")) regions.push_back(setting);
    if (setting.ends_with(" extraction")) extractions.push_back(setting);
    CHECK(s["outcome"].get<std::string>().find("failed") == std::string::npos);
  }
  CHECK(regions.size() == 2);
  CHECK(extractions == std::vector<std::string>{"greedy extraction", "exact extraction"});
  // What the bank holds, compile applies: the same simulated latency.
  const test::CliResult c =
      test::run_cli({"compile", model.string(), "--mdl_bank_path", bank.string(), "--json"});
  INFO(c.err);
  REQUIRE(c.exit_code == 0);
  const json cj = json::parse(c.out);
  const json& applied = cj["tuning"]["model_bank"]["applied"];
  REQUIRE(applied.is_object());
  CHECK(applied["keep_format"] == j["chosen"]["keep_format"]);
  CHECK(applied["extraction"] == j["chosen"]["extraction"]);
  CHECK(cj["profile"]["latency_us"].get<double>() == doctest::Approx(j["tuned_us"].get<double>()));
  // A region the bank keeps out of NC1HWC0 (filed by hand here: the simulator keeps
  // both regions) is kept so by compile, as --keep_format keeps it.
  const fs::path file = bank / "Ascend910B1" / "model_bank.json";
  json b = json::parse(test::read_file(file));
  REQUIRE(b["model_entries"].size() == 1);
  b["model_entries"][0]["keep_format"] = {"tail_conv1", "tail_relu1", "tail_conv2"};
  test::write_file(file, b.dump());
  const fs::path plan = dir / "tail.plan";
  const test::CliResult k = test::run_cli(
      {"compile", model.string(), "--mdl_bank_path", bank.string(), "-o", plan.string(), "--json"});
  INFO(k.err);
  REQUIRE(k.exit_code == 0);
  CHECK(json::parse(k.out)["tuning"]["model_bank"]["applied"]["keep_format"].size() == 3);
  check_tail_kept_nchw(plan);
  // A bank whose keep_format is not a list of names is refused whole.
  b["model_entries"][0]["keep_format"] = {1, 2};
  test::write_file(file, b.dump());
  const test::CliResult bad = test::run_cli({"compile", model.string(), "--mdl_bank_path", bank.string()});
  CHECK(bad.exit_code == 1);
  CHECK(bad.err.find("keep_format") != std::string::npos);
}

}  // namespace geopt
