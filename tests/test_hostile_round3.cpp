// Round 3 of crafted input, on what wave 2 added: plans edited and resealed (their
// checksums right, their content lying), Loops that never end, option files that are
// pipes or devices, calibration sets of NaNs, outputs whose names collide, NaN through
// activations. Each case is one a reviewer found wrong; each runs through the commands
// users run or the library calls they make, and fails on the code before its fix.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>
#include <algorithm>
#include <cmath>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <limits>
#include <numeric>

#include <zlib.h>
#include <nlohmann/json.hpp>

#include "ascend/compile.h"
#include "ascend/device_ops/device_ops.h"
#include "ascend/hardware_profile.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "dsl_support.h"
#include "eval/evaluator.h"
#include "eval/run_limits.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;
using test::run_cli;

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The CLI under a shell prefix ("ulimit -v N;") and a timeout: a hang fails the test as
// exit 124 instead of stopping the suite.
test::CliResult run_cli_limited(const std::string& prefix, const std::vector<std::string>& args,
                                int seconds = 60) {
  const fs::path dir = test::scratch_dir("cli-limited");
  std::string cmd = prefix + " timeout -s KILL " + std::to_string(seconds) + " " + shell_quote(GEOPT_CLI);
  for (const auto& a : args) cmd += " " + shell_quote(a);
  cmd += " >" + shell_quote((dir / "out").string()) + " 2>" + shell_quote((dir / "err").string());
  const int status = std::system(("sh -c " + shell_quote(cmd)).c_str());
  test::CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = test::read_file(dir / "out");
  r.err = test::read_file(dir / "err");
  return r;
}

// gcc says __SANITIZE_ADDRESS__; clang (before 16) only __has_feature.
#if defined(__SANITIZE_ADDRESS__)
#define GEOPT_TESTS_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GEOPT_TESTS_SANITIZED 1
#endif
#endif
#ifdef GEOPT_TESTS_SANITIZED
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif

// A small model whose plan has a Transpose, a TopK (two outputs) and a Relu.
const char* kPlanModel = R"(
  <ir_version: 8, opset_import: ["" : 13]>
  g (float[2,8] x) => (float[8,2] t, float[2,3] v, int64[2,3] i) {
    t = Transpose <perm = [1, 0]> (x)
    r = Relu(x)
    k = Constant <value = int64[1] {3}> ()
    v, i = TopK(r, k)
  })";

plan::Plan compiled_plan(const fs::path& dir) {
  test::save_model(test::parse_text_model(kPlanModel), dir / "m.onnx");
  Model model = import_onnx(dir / "m.onnx");
  ascend::CompileOptions options;
  options.check = false;
  return ascend::compile(model, ascend::load_profile("Ascend910B1"), options).plan;
}

// An INT attribute as a plan kernel carries it (a serialized AttributeProto).
std::string int_attribute(const std::string& name, int64_t value) {
  onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(onnx::AttributeProto::INT);
  a.set_i(value);
  return a.SerializeAsString();
}

int kernel_of(const plan::Plan& p, const std::string& op) {
  for (int k = 0; k < p.kernels_size(); ++k)
    if (p.kernels(k).op_type() == op) return k;
  FAIL("no " << op << " kernel in the plan");
  return -1;
}

// `geopt run` on a plan must refuse it, exit 1, naming the file and `says`.
void check_refused(const fs::path& plan_path, const std::string& says) {
  for (const char* command : {"run", "plan", "profile"}) {
    std::vector<std::string> args = {command, plan_path.string()};
    if (std::string(command) == "run") args.push_back("--random-inputs");
    if (std::string(command) == "plan") args.insert(args.begin() + 1, "dump");
    auto r = run_cli_limited("", args);
    INFO(command << ": " << r.err);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(plan_path.filename().string()) != std::string::npos);
    CHECK(r.err.find(says) != std::string::npos);
  }
}

// A Loop whose body passes its state through: `trips` as its trip count, or none when
// empty (the text syntax cannot leave an input out, so it is dropped afterwards). Its
// condition stays true.
onnx::ModelProto empty_loop(const std::string& trips) {
  onnx::ModelProto m = test::parse_text_model((R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      go = Constant <value = bool {1}> ()
      trips = Constant <value = int64 {)" + (trips.empty() ? std::string("1") : trips) +
                                               R"(}> ()
      y = Loop (trips, go, x) <body = step (int64 i, bool c, float[2] s) => (bool c_out, float[2] s_out) {
        c_out = Identity(c)
        s_out = Identity(s)
      }>
    })")
                                                  .c_str());
  if (trips.empty()) {
    m.mutable_graph()->mutable_node(2)->set_input(0, "");
    m.mutable_graph()->mutable_node()->DeleteSubrange(1, 1);
  }
  return m;
}

}  // namespace

TEST_CASE("Unique with fewer than four outputs computes the ones it has (it wrote past them)") {
  const fs::path dir = test::scratch_dir("round3-unique");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[6] x) => (float[N] y, int64[M] idx) {
      y, idx = Unique <sorted = 1> (x)
    })"),
                   dir / "unique.onnx");
  Model m = import_onnx(dir / "unique.onnx");
  HostTensor x = HostTensor::from_vector(DType::F32, {6}, std::vector<float>{3, 1, 3, 2, 1, 3});
  const NamedTensors out = Evaluator(m, ascend::op_registry()).run({{"x", x}});
  REQUIRE(out.size() == 2);
  CHECK(out[0].second.to_vector<float>() == std::vector<float>{1, 2, 3});
  CHECK(out[1].second.to_vector<int64_t>() == std::vector<int64_t>{1, 3, 0});
  auto r = run_cli({"optimize", (dir / "unique.onnx").string(), "-o", (dir / "o.onnx").string()});
  CHECK_MESSAGE(r.exit_code == 0, r.err);
}

TEST_CASE("hostile plans, resealed: sizes, indices, arities and attribute types are checked, not trusted") {
  const fs::path dir = test::scratch_dir("round3-plans");
  const plan::Plan good = compiled_plan(dir);
  ascend::write_plan(const_cast<plan::Plan&>(good), dir / "good.plan");
  auto good_run = run_cli({"run", (dir / "good.plan").string(), "--random-inputs"});
  REQUIRE_MESSAGE(good_run.exit_code == 0, good_run.err);

  struct Craft {
    const char* name;
    std::function<void(plan::Plan&)> change;
    const char* says;
  };
  const std::vector<Craft> crafted = {
      {"pool-2e50", [](plan::Plan& p) { p.set_activation_bytes(uint64_t{1} << 50); },
       "activation_bytes is 1125899906842624"},
      {"pool-4g", [](plan::Plan& p) { p.set_activation_bytes(uint64_t{9} << 29); },
       "but its tensors reach only"},
      {"weights-claim", [](plan::Plan& p) { p.set_weight_bytes(p.weight_bytes() + (uint64_t{5} << 30)); },
       "weight_bytes is"},
      {"event-2e31",
       [](plan::Plan& p) { p.mutable_kernels(p.kernels_size() - 1)->add_wait_events(uint32_t{1} << 31); },
       "waits on a missing event 2147483648"},
      {"topk-one-output",
       [](plan::Plan& p) { p.mutable_kernels(kernel_of(p, "TopK"))->mutable_outputs()->RemoveLast(); },
       "has 1 outputs; TopK takes 2"},
      {"relu-no-input", [](plan::Plan& p) { p.mutable_kernels(kernel_of(p, "Relu"))->clear_inputs(); },
       "has 0 inputs; Relu takes 1"},
      {"perm-string",
       [](plan::Plan& p) {
         onnx::AttributeProto a;
         a.set_name("perm");
         a.set_type(onnx::AttributeProto::STRING);
         a.set_s("1,0");
         auto* k = p.mutable_kernels(kernel_of(p, "Transpose"));
         k->clear_attributes();
         k->add_attributes(a.SerializeAsString());
       },
       "attribute 'perm' is of type STRING, Transpose takes INTS"},
      {"resize-antialias",
       [](plan::Plan& p) {
         p.mutable_kernels(kernel_of(p, "Relu"))->add_attributes(int_attribute("antialias", 1));
       },
       "Relu has no attribute 'antialias'"},
      {"output-names-nothing", [](plan::Plan& p) { p.mutable_outputs(0)->set_name("nothing"); },
       "output 'nothing' is no tensor"},
  };
  for (const Craft& c : crafted) {
    INFO(c.name);
    plan::Plan p = good;
    c.change(p);
    const fs::path path = dir / (std::string(c.name) + ".plan");
    ascend::write_plan(p, path);
    check_refused(path, c.says);
  }

  // A side weights file as large as the plan claims, sparse: refused before it is read
  // (it was read whole: 5 GB resident for a plan of a few hundred bytes).
  plan::Plan side = good;
  side.set_weight_bytes(side.weight_bytes() + (uint64_t{5} << 30));
  side.mutable_weights()->clear();
  ascend::PlanWriteOptions to_side;
  to_side.inline_weight_limit = 0;
  ascend::write_plan(side, dir / "side2.plan", to_side);
  REQUIRE(::truncate((dir / "side2.plan.weights").c_str(), static_cast<off_t>(side.weight_bytes())) == 0);
  check_refused(dir / "side2.plan", "weight_bytes is");
}

TEST_CASE("Loops that never end stop the default check with a message, and runs stop at their bounds") {
  const fs::path dir = test::scratch_dir("round3-loops");
  // 2^62 trips of an empty body; and no trip count with a condition that stays true.
  test::save_model(empty_loop("4611686018427387904"), dir / "long.onnx");
  test::save_model(empty_loop(""), dir / "forever.onnx");
  for (const char* name : {"long.onnx", "forever.onnx"}) {
    INFO(name);
    for (const char* command : {"optimize", "compile"}) {
      auto r = run_cli_limited(
          "", {command, (dir / name).string(), "-o", (dir / (std::string(command) + ".out")).string()}, 120);
      INFO(r.err);
      CHECK(r.exit_code == 1);
      CHECK(r.err.find("stopped in the numerical check after 65536 trips") != std::string::npos);
      CHECK(r.err.find("--no-check") != std::string::npos);
      CHECK(!fs::exists(dir / (std::string(command) + ".out")));
    }
  }
  // `geopt run` asked for it: it stops at run's own bound (--max-loop-trips), with a
  // message. The default of 2^22 trips takes seconds here, minutes under the sanitizers.
  if (!kSanitized) {
    auto r = run_cli_limited("", {"run", (dir / "forever.onnx").string(), "--random-inputs"}, 300);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("stopped after 4194304 trips of its loop: raise --max-loop-trips") != std::string::npos);
  }
  auto r = run_cli_limited(
      "", {"run", (dir / "long.onnx").string(), "--random-inputs", "--max-loop-trips", "1000"}, 120);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("stopped after 1000 trips of its loop") != std::string::npos);
  test::save_model(empty_loop("1500"), dir / "short.onnx");
  CHECK(run_cli({"run", (dir / "short.onnx").string(), "--random-inputs", "--max-loop-trips", "1500"})
            .exit_code == 0);

  // Scan outputs that grow: stopped when they pass the bytes they may take.
  onnx::ModelProto grows_proto = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1024] x) => (float[2] y, float[N,1024] grown) {
      go = Constant <value = bool {1}> ()
      two = Constant <value = float[2] {0.0, 0.0}> ()
      unused = Constant <value = int64 {1}> ()
      y, grown = Loop (unused, go, two) <body = step (int64 i, bool c, float[2] s) => (bool c_out, float[2] s_out, float[1024] part) {
        c_out = Identity(c)
        s_out = Identity(s)
        part = Identity(x)
      }>
    })");
  grows_proto.mutable_graph()->mutable_node(3)->set_input(0, "");
  grows_proto.mutable_graph()->mutable_node()->DeleteSubrange(2, 1);
  test::save_model(grows_proto, dir / "grows.onnx");
  Model grows = import_onnx(dir / "grows.onnx");
  RunLimits small;
  small.accumulated_bytes = 1 << 20;  // 256 trips of 4 KiB
  const RunLimitsScope scope(small);
  CHECK_THROWS_WITH_AS(Evaluator(grows, ascend::op_registry()).run(random_inputs(grows, 1)),
                       doctest::Contains("when its scan outputs passed 1048576 bytes"), Error);
}

TEST_CASE(
    "option files are regular files of bounded size: a device, a pipe, a folder or a huge number is "
    "refused") {
  const fs::path dir = test::scratch_dir("round3-options");
  const std::string model = (test::examples_dir() / "resnet18_narrow_op13.onnx").string();
  const std::string out = (dir / "o.onnx").string();
  auto zero = run_cli_limited("",
                              {"optimize", model, "-o", out, "--precision_mode", "allow_mix_precision",
                               "--modify_mixlist", "/dev/zero"},
                              30);
  CHECK(zero.exit_code == 1);
  CHECK(zero.err.find("not a regular file") != std::string::npos);

  const fs::path fifo = dir / "pipe.toml";  // a profile is named by its extension
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  // A writer that holds the pipe open and never writes: a blocking read never returns.
  const pid_t writer = ::fork();
  REQUIRE(writer >= 0);
  if (writer == 0) {
    const int fd = ::open(fifo.c_str(), O_WRONLY);
    ::sleep(100);
    ::_exit(fd >= 0 ? 0 : 1);
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"optimize", model, "-o", out, "--precision_mode", "allow_mix_precision",
                                 "--modify_mixlist", fifo.string()},
        std::vector<std::string>{"optimize", model, "-o", out, "--fusion-switch-file", fifo.string()},
        std::vector<std::string>{"optimize", model, "-o", out, "--soc-version", fifo.string()}}) {
    INFO(args.back());
    auto r = run_cli_limited("", args, 30);
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("not a regular file") != std::string::npos);
  }
  ::kill(writer, SIGKILL);
  ::waitpid(writer, nullptr, 0);

  auto folder = run_cli_limited("", {"optimize", model, "-o", out, "--fusion-switch-file", dir.string()}, 30);
  CHECK(folder.exit_code == 1);
  CHECK(folder.err.find("a folder") != std::string::npos);

  test::write_file(dir / "huge.json", R"({"white-list": {"to-add": [1e999999]}})");
  auto huge = run_cli_limited("",
                              {"optimize", model, "-o", out, "--precision_mode", "allow_mix_precision",
                               "--modify_mixlist", (dir / "huge.json").string()},
                              30);
  CHECK(huge.exit_code == 1);
  CHECK(huge.err.find("huge.json") != std::string::npos);
  CHECK(!fs::exists(out));
}

TEST_CASE("a failed allocation is bad input with its size, under the Release build's allocator too") {
  if (kSanitized) return;  // the sanitizers' allocator reserves the address space a limit would cut
  const fs::path dir = test::scratch_dir("round3-oom");
  // Expand to 2^31 floats: 8 GiB, under this machine's memory but over a 3 GiB limit.
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] x) => (float[2147483648] y) {
      shape = Constant <value = int64[1] {2147483648}> ()
      y = Expand(x, shape)
    })"),
                   dir / "big.onnx");
  auto r = run_cli_limited("ulimit -v 3000000;", {"run", (dir / "big.onnx").string(), "--random-inputs"}, 60);
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("cannot allocate 8589934592 bytes") != std::string::npos);
}

TEST_CASE(
    "quantize: a subnormal calibration set keeps a usable scale, NaN samples and empty targets are refused") {
  const fs::path dir = test::scratch_dir("round3-quantize");
  const fs::path model = test::examples_dir() / "resnet18_narrow_op13.onnx";
  Model m = import_onnx(model);
  const Value* input = m.graph->inputs()[0];
  auto write_sample = [&](const fs::path& folder, float value) {
    fs::create_directories(folder);
    std::vector<int64_t> dims;
    for (const auto& d : input->type.shape->dims()) dims.push_back(d.is_static() ? d.value() : 1);
    int64_t n = 1;
    for (int64_t d : dims) n *= d;
    write_npy(folder / npy_file_name(input->name()),
              HostTensor::from_vector(DType::F32, dims, std::vector<float>(static_cast<size_t>(n), value)));
  };
  write_sample(dir / "subnormal" / "s0", 1e-41f);
  auto sub = run_cli({"quantize", model.string(), "-o", (dir / "sub.onnx").string(), "--calibration",
                      (dir / "subnormal").string(), "--no-progress"});
  REQUIRE_MESSAGE(sub.exit_code == 0, sub.err);
  Model q = import_onnx(dir / "sub.onnx");
  size_t scales = 0;
  for (const auto& n : q.graph->nodes()) {
    if (n->op_type != "QuantizeLinear") continue;
    const Value* s = n->inputs()[1];
    REQUIRE(s->initializer);
    const HostTensor t = HostTensor::view(*s->initializer);
    for (float v : t.to_vector<float>()) {
      CHECK(std::isfinite(v));
      CHECK(v >= std::numeric_limits<float>::min());
    }
    ++scales;
  }
  CHECK(scales > 0);

  write_sample(dir / "nan" / "s0", std::numeric_limits<float>::quiet_NaN());
  auto nan = run_cli({"quantize", model.string(), "-o", (dir / "nan.onnx").string(), "--calibration",
                      (dir / "nan").string(), "--no-progress"});
  CHECK(nan.exit_code == 1);
  CHECK(nan.err.find(npy_file_name(input->name()) + ": element 0 is NaN") != std::string::npos);
  CHECK(!fs::exists(dir / "nan.onnx"));
  auto empty = run_cli({"quantize", model.string(), "-o", (dir / "e.onnx").string(), "--calibration",
                        (dir / "subnormal").string(), "--accuracy-target", ""});
  CHECK(empty.exit_code == 2);
}

TEST_CASE(
    "outputs: colliding file names are made unique, a failed write leaves nothing, JSON carries any path") {
  const fs::path dir = test::scratch_dir("round3-outputs");
  onnx::ModelProto proto = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] slashed, float[2] a_b, float[2] y3, float[2] y4, float[2] y5) {
      slashed = Relu(x)
      a_b = Neg(x)
      y3 = Abs(x)
      y4 = Sigmoid(x)
      y5 = Tanh(x)
    })");
  // The text syntax has no '/' in names; exporters write them (module paths).
  proto.mutable_graph()->mutable_node(0)->set_output(0, "a/b");
  proto.mutable_graph()->mutable_output(0)->set_name("a/b");
  test::save_model(proto, dir / "m.onnx");
  const fs::path out = dir / "out";
  auto r = run_cli({"run", (dir / "m.onnx").string(), "--random-inputs", "--output-dir", out.string()});
  REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  CHECK(fs::exists(out / "a_b.npy"));
  CHECK(fs::exists(out / "a_b~2.npy"));
  CHECK(r.err.find("is written as a_b~2.npy") != std::string::npos);
  // The two files hold the two outputs: Neg(x) is Relu(x)'s opposite where x > 0.
  // "a/b" < "a_b" in name order, so "a/b" (Relu: no negatives) keeps the plain name.
  const auto relu = read_npy(out / "a_b.npy").to_vector<float>(),
             neg = read_npy(out / "a_b~2.npy").to_vector<float>();
  for (size_t k = 0; k < relu.size(); ++k) CHECK(relu[k] == std::max(-neg[k], 0.0f));
  // --compare reads them back by the same names.
  auto cmp = run_cli({"run", (dir / "m.onnx").string(), "--random-inputs", "--compare", out.string()});
  CHECK_MESSAGE(cmp.exit_code == 0, cmp.err);

  // A folder in the fifth output's place: nothing at all is written.
  const fs::path blocked = dir / "blocked";
  fs::create_directories(blocked / "y5.npy");
  auto failed =
      run_cli({"run", (dir / "m.onnx").string(), "--random-inputs", "--output-dir", blocked.string()});
  CHECK(failed.exit_code == 1);
  for (const char* f : {"a_b.npy", "a_b~2.npy", "y3.npy", "y4.npy"}) CHECK(!fs::exists(blocked / f));
  size_t left = 0;
  for (const auto& e : fs::directory_iterator(blocked)) left += e.path().filename() != "y5.npy";
  CHECK(left == 0);

  // A model path that is not UTF-8, in a JSON report: escaped, exit 0.
  const fs::path latin1 = dir / "mod\xe8le.onnx";
  fs::copy_file(dir / "m.onnx", latin1);
  auto info = run_cli({"info", "--json", latin1.string()});
  CHECK_MESSAGE(info.exit_code == 0, info.err);
  CHECK(nlohmann::json::parse(info.out).dump().find("mod\\\\xE8le.onnx") != std::string::npos);
}

TEST_CASE("activations propagate NaN as ONNX defines them, in the evaluator and in a plan") {
  const fs::path dir = test::scratch_dir("round3-nan");
  // Each activation of x; ThresholdedRelu and Shrink are 0 for NaN by ONNX's definitions
  // (x > alpha is false), every other one NaN.
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 14]>
    g (float[3] x) => (float[3] relu, float[3] leaky, float[3] elu, float[3] celu, float[3] selu, float[3] hsig, float[3] hswish,
                       float[3] sig, float[3] softplus, float[3] softsign, float[3] tanh, float[3] prelu, float[3] clip, float[3] mx,
                       float[3] mn, float[3] thr, float[3] shrink) {
      relu = Relu(x)
      leaky = LeakyRelu(x)
      elu = Elu(x)
      celu = Celu(x)
      selu = Selu(x)
      hsig = HardSigmoid(x)
      hswish = HardSwish(x)
      sig = Sigmoid(x)
      softplus = Softplus(x)
      softsign = Softsign(x)
      tanh = Tanh(x)
      slope = Constant <value = float[1] {0.25}> ()
      prelu = PRelu(x, slope)
      lo = Constant <value = float {0.0}> ()
      hi = Constant <value = float {6.0}> ()
      clip = Clip(x, lo, hi)
      zeros = Constant <value = float[3] {0.0, 0.0, 0.0}> ()
      mx = Max(x, zeros)
      mn = Min(x, zeros)
      thr = ThresholdedRelu(x)
      shrink = Shrink(x)
    })"),
                   dir / "act.onnx");
  Model m = import_onnx(dir / "act.onnx");
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::map<std::string, HostTensor> feeds{
      {"x", HostTensor::from_vector(DType::F32, {3}, std::vector<float>{nan, -1.0f, 2.0f})}};
  ascend::CompileOptions options;
  options.check = false;
  const plan::Plan p = ascend::compile(m, ascend::load_profile("Ascend910B1"), options).plan;
  for (const NamedTensors& outs :
       {Evaluator(m, ascend::op_registry()).run(feeds), ascend::PlanExecutor(p).run(feeds)}) {
    for (const auto& [name, t] : outs) {
      const std::string& output = name;  // a lambda (INFO) cannot name a structured binding in clang 14
      INFO(output);
      const float at_nan = t.to_vector<float>()[0];
      if (name == "thr" || name == "shrink")
        CHECK(at_nan == 0.0f);
      else
        CHECK(std::isnan(at_nan));
    }
  }
}

TEST_CASE("command lines: empty dims are refused, a rule's division by zero is refused at its line") {
  const fs::path dir = test::scratch_dir("round3-cli");
  const std::string model = (test::examples_dir() / "resnet18_narrow_op13.onnx").string();
  for (const char* shape : {"image:1,,8,8", "image:1,3,8,"}) {
    INFO(shape);
    auto r = run_cli({"optimize", model, "-o", (dir / "o.onnx").string(), "--input_shape", shape});
    CHECK(r.exit_code == 2);
    CHECK(r.err.find("a dimension is empty") != std::string::npos);
  }
  // Other malformed option values are usage errors too (exit 2, they gave 1): a dim of -5,
  // a profile key that is none, a value that is no number, an unknown profile name.
  const std::vector<std::vector<std::string>> malformed = {{"--input_shape", "image:-5,3,8,8"},
                                                           {"--input_shape", "-5"},
                                                           {"--profile-set", "X=abc"},
                                                           {"--profile-set", "memory.nope=1"},
                                                           {"--profile-set", "memory.hbm_gbps=abc"},
                                                           {"--soc-version", "Ascend999"}};
  for (const auto& extra : malformed) {
    INFO(extra[0] << " " << extra[1]);
    std::vector<std::string> args = {"optimize", model, "-o", (dir / "o.onnx").string()};
    args.insert(args.end(), extra.begin(), extra.end());
    auto r = run_cli(args);
    CHECK_MESSAGE(r.exit_code == 2, r.err);
  }
  // 1 / %a with %a bound to LeakyRelu's alpha of 0: refused where the rule says it.
  test::write_file(dir / "div.gerule", R"(rule InvertAlpha {
  match %y = LeakyRelu(%x) { alpha == %a }
  rewrite %y => LeakyRelu(%x) { alpha = 1 / %a }
}
)");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y) {
      y = LeakyRelu <alpha = 0.0> (x)
    })"),
                   dir / "leaky.onnx");
  auto r = run_cli({"rules", "apply", (dir / "leaky.onnx").string(), "-o", (dir / "out.onnx").string(),
                    "--rules", (dir / "div.gerule").string()});
  INFO(r.err);
  CHECK(r.err.find("div.gerule:3") != std::string::npos);
  CHECK(r.err.find("division by zero") != std::string::npos);
  if (fs::exists(dir / "out.onnx")) {
    Model out = import_onnx(dir / "out.onnx");
    for (const auto& n : out.graph->nodes())
      for (const auto& a : n->attributes) CHECK(std::isfinite(a.f));
  }
}

TEST_CASE("a check input that picks an If branch which cannot run is named, with --check-input") {
  const fs::path dir = test::scratch_dir("round3-branch");
  // The sample rate picks the branch, as Silero VAD's does: at 16000 the model runs, at
  // any other rate it reshapes 4 values into 9.
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4] x, int64 sr) => (float[N] y) {
      rate = Constant <value = int64 {16000}> ()
      is16k = Equal(sr, rate)
      y = If (is16k) <then_branch = t () => (float[4] a) {
        flat = Constant <value = int64[1] {4}> ()
        a = Reshape(x, flat)
      }, else_branch = e () => (float[9] b) {
        nine = Constant <value = int64[1] {9}> ()
        b = Reshape(x, nine)
      }>
    })"),
                   dir / "vad.onnx");
  auto r = run_cli(
      {"compile", (dir / "vad.onnx").string(), "-o", (dir / "vad.plan").string(), "--input_shape", "x:1,4"});
  INFO(r.err);
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("the check drew input 'sr' at random") != std::string::npos);
  CHECK(r.err.find("--check-input sr=") != std::string::npos);
  write_npy(dir / "sr.npy", HostTensor::from_vector(DType::I64, {}, std::vector<int64_t>{16000}));
  auto ok = run_cli({"compile", (dir / "vad.onnx").string(), "-o", (dir / "vad.plan").string(),
                     "--input_shape", "x:1,4", "--check-input", "sr=" + (dir / "sr.npy").string()});
  CHECK_MESSAGE(ok.exit_code == 0, ok.err);
}

TEST_CASE("shape errors name the node and the tensor: negative Split sizes, a dim of 2^62") {
  const fs::path dir = test::scratch_dir("round3-shapes");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[6] x) => (float[N] a, float[M] b) {
      sizes = Constant <value = int64[2] {-1, 7}> ()
      a, b = Split <axis = 0> (x, sizes)
    })"),
                   dir / "split.onnx");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1] x) => (float[N,M] y) {
      shape = Constant <value = int64[2] {4611686018427387904, 4}> ()
      y = Expand(x, shape)
    })"),
                   dir / "huge.onnx");
  for (const char* model : {"split.onnx", "huge.onnx"}) {
    for (const char* command : {"run", "optimize"}) {
      std::vector<std::string> args = {command, (dir / model).string()};
      if (std::string(command) == "run")
        args.push_back("--random-inputs");
      else
        args.insert(args.end(), {"-o", (dir / "o.onnx").string()});
      auto r = run_cli(args);
      INFO(model << " " << command << ": " << r.err);
      CHECK(r.exit_code == 1);
      CHECK(r.err.find(std::string(model) == "split.onnx" ? "Split" : "Expand") != std::string::npos);
      CHECK(r.err.find(std::string(model) == "split.onnx" ? "'sizes'" : "'shape'") != std::string::npos);
    }
  }
}

TEST_CASE(
    "a NaN reaching a fused activation stays NaN: Conv + Relu, + Clip, + LeakyRelu, optimized and compiled") {
  const fs::path dir = test::scratch_dir("round3-nan-fused");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,16,6,6] x) => (float[1,16,6,6] relu, float[1,16,6,6] clip, float[1,16,6,6] leaky) {
      tenth = Constant <value = float {0.1}> ()
      fifth = Constant <value = float {0.2}> ()
      half = Constant <value = float {0.5}> ()
      dims = Constant <value = int64[4] {16, 16, 1, 1}> ()
      w = Expand(tenth, dims)
      w2 = Expand(fifth, dims)
      w3 = Expand(half, dims)
      c1 = Conv <kernel_shape = [1, 1]> (x, w)
      relu = Relu(c1)
      c2 = Conv <kernel_shape = [1, 1]> (x, w2)
      lo = Constant <value = float {0.0}> ()
      hi = Constant <value = float {6.0}> ()
      clip = Clip(c2, lo, hi)
      c3 = Conv <kernel_shape = [1, 1]> (x, w3)
      leaky = LeakyRelu(c3)
    })"),
                   dir / "conv.onnx");
  Model m = import_onnx(dir / "conv.onnx");
  std::map<std::string, HostTensor> feeds = random_inputs(m, 3);
  feeds.at("x").mutable_data<float>()[7] =
      std::numeric_limits<float>::quiet_NaN();  // pixel (1, 1) of channel 0
  auto rules = test::load_rules({test::shipped_rules()});
  ascend::CompileOptions options;
  options.check = false;
  options.rules = rules.get();
  const ascend::CompileResult compiled = ascend::compile(m, ascend::load_profile("Ascend910B1"), options);
  size_t fused = 0;
  for (const auto& k : compiled.plan.kernels()) fused += k.op_type() == "FusedConv";
  CHECK(fused == 3);
  // Every output channel reads input channel 0 at (1, 1): NaN in all 16, for each
  // activation as the model states it. In the plan the three are oneDNN post-ops: the
  // LeakyRelu keeps NaN; the fused Relu and Clip return their bound for NaN, as ONNX
  // Runtime's fused MLAS activations do (docs/SECURITY.md, "Values").
  auto nan_at_pixel = [](const HostTensor& t) {
    size_t n = 0;
    for (int64_t c = 0; c < 16; ++c) n += std::isnan(t.data<float>()[c * 36 + 7]);
    return n;
  };
  for (const auto& [name, t] : Evaluator(m, ascend::op_registry()).run(feeds)) {
    const std::string& output = name;  // a lambda (INFO) cannot name a structured binding in clang 14
    INFO(output);
    CHECK(nan_at_pixel(t) == 16);
    CHECK(!std::isnan(t.data<float>()[0]));
  }
  for (const auto& [name, t] : ascend::PlanExecutor(compiled.plan).run(feeds)) {
    const std::string& output = name;  // a lambda (INFO) cannot name a structured binding in clang 14
    INFO(output);
    CHECK(!std::isnan(t.data<float>()[0]));
    if (name == "leaky") CHECK(nan_at_pixel(t) == 16);
  }
}

TEST_CASE(
    "review of round 3: outputs onto devices, INT_MIN % -1, unbounded --threads, resealed plans that read "
    "before a write") {
  const fs::path dir = test::scratch_dir("round3-review");
  const std::string model = (test::examples_dir() / "resnet18_narrow_op13.onnx").string();
  // An output path that is a pipe (or /dev/null) stays what it is: the write is refused.
  const fs::path fifo = dir / "out.plan";
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  auto onto = run_cli_limited("", {"compile", model, "-o", fifo.string(), "--no-check"}, 60);
  CHECK(onto.exit_code == 1);
  CHECK(onto.err.find("not a regular file") != std::string::npos);
  struct stat st {};
  REQUIRE(::lstat(fifo.c_str(), &st) == 0);
  CHECK(S_ISFIFO(st.st_mode));

  // Integer Mod of INT_MIN by -1 is 0 (it trapped with SIGFPE), in the evaluator and folded.
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (int32[2] a, int32[2] b) => (int32[2] m, int64[1] folded) {
      m = Mod(a, b)
      lo = Constant <value = int64[1] {-9223372036854775808}> ()
      m1 = Constant <value = int64[1] {-1}> ()
      folded = Mod(lo, m1)
    })"),
                   dir / "mod.onnx");
  Model mod = import_onnx(dir / "mod.onnx");
  const NamedTensors got =
      Evaluator(mod, ascend::op_registry())
          .run({{"a", HostTensor::from_vector(DType::I32, {2}, std::vector<int32_t>{INT32_MIN, 7})},
                {"b", HostTensor::from_vector(DType::I32, {2}, std::vector<int32_t>{-1, -3})}});
  CHECK(got[0].second.to_vector<int32_t>() == std::vector<int32_t>{0, -2});  // Python's 7 % -3 == -2
  CHECK(got[1].second.to_vector<int64_t>() == std::vector<int64_t>{0});
  auto optimized = run_cli({"optimize", (dir / "mod.onnx").string(), "-o", (dir / "mod_o.onnx").string()});
  CHECK_MESSAGE(optimized.exit_code == 0, optimized.err);

  // --threads within 1 to 1024; a negative launch overhead is refused, not spun on.
  CHECK(run_cli_limited("", {"run", model, "--random-inputs", "--threads", "100000"}).exit_code == 2);
  CHECK(run_cli_limited("", {"run", model, "--random-inputs", "--threads", "-1"}).exit_code == 2);
  auto negative = run_cli_limited(
      "", {"optimize", model, "-o", (dir / "n.onnx").string(), "--profile-set", "launch.overhead_us=-0.5"},
      60);
  CHECK(negative.exit_code == 1);
  CHECK(negative.err.find("'launch.overhead_us' is -0.5") != std::string::npos);

  // Resealed plans whose dataflow lies: two kernels swapped (one reads before its
  // producer), an output binding of another dtype, an input binding moved off its readers.
  const plan::Plan good = compiled_plan(dir);
  struct Craft {
    const char* name;
    std::function<void(plan::Plan&)> change;
    const char* says;
  };
  const std::vector<Craft> crafted = {
      {"swapped",
       [](plan::Plan& p) {
         const int topk = kernel_of(p, "TopK"), relu = kernel_of(p, "Relu");
         p.mutable_kernels()->SwapElements(topk, relu);
         p.clear_events();
         for (auto& k : *p.mutable_kernels()) k.clear_wait_events(), k.clear_record_events(), k.set_stream(0);
         p.set_stream_count(1);
       },
       "which no earlier kernel writes"},
      {"output-dtype",
       [](plan::Plan& p) { p.mutable_outputs(1)->set_dtype(static_cast<int32_t>(DType::I32)); },
       "another dtype or shape"},
      {"input-moved", [](plan::Plan& p) { p.mutable_inputs(0)->set_offset(p.inputs(0).offset() + 512); },
       "no earlier kernel writes and no input binds"},
  };
  for (const Craft& c : crafted) {
    INFO(c.name);
    plan::Plan p = good;
    c.change(p);
    const fs::path path = dir / (std::string(c.name) + ".plan");
    ascend::write_plan(p, path);
    check_refused(path, c.says);
  }

  // Edge models the reference evaluator read wrong: a window of 0, a float Range of 1e19
  // elements (its count cast from a double past int64); NaN tolerances.
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,1,4,4] x) => (float[1,1,N,M] y) {
      y = MaxPool <kernel_shape = [0, 0]> (x)
    })"),
                   dir / "pool0.onnx");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float s) => (float[N] y) {
      limit = Constant <value = float {1e19}> ()
      one = Constant <value = float {1.0}> ()
      y = Range(s, limit, one)
    })"),
                   dir / "range.onnx");
  for (const char* m : {"pool0.onnx", "range.onnx"}) {
    auto r = run_cli({"run", (dir / m).string(), "--random-inputs"});
    INFO(m << ": " << r.err);
    CHECK(r.exit_code == 1);
  }
  CHECK(run_cli({"run", model, "--random-inputs", "--compare", model, "--atol", "nan"}).exit_code == 2);
  CHECK(run_cli({"optimize", model, "-o", (dir / "t.onnx").string(), "--check-rtol", "nan"}).exit_code == 2);
  // Sizes given on the command line are sizes: --dim and --symbolic-dim.
  CHECK(run_cli({"run", model, "--random-inputs", "--dim", "batch=-1"}).exit_code == 2);
  CHECK(run_cli({"run", model, "--random-inputs", "--dim", "batch=5x"}).exit_code == 2);
  CHECK(run_cli({"run", model, "--random-inputs", "--dim", "batch=2", "--dim", "batch=3"}).exit_code == 2);
  CHECK(run_cli({"cost", model, "--symbolic-dim", "4611686018427387904"}).exit_code == 2);
  CHECK(run_cli({"cost", model, "--symbolic-dim", "0"}).exit_code == 2);
}

namespace {

// The checksum over everything but the weights, as a reviewer recomputes it by hand: a
// field write_plan would set itself (the side weights' name) edited after it.
void reseal(plan::Plan& p) {
  std::string weights;
  weights.swap(*p.mutable_weights());
  const uint32_t w = p.weights_crc();
  p.clear_structure_crc();
  p.clear_weights_crc();
  const std::string bytes = p.SerializeAsString();
  p.set_structure_crc(static_cast<uint32_t>(
      crc32(0L, reinterpret_cast<const Bytef*>(bytes.data()), static_cast<uInt>(bytes.size()))));
  p.set_weights_crc(w);
  p.mutable_weights()->swap(weights);
}

plan::Plan plan_of(const fs::path& dir, const char* name, const std::string& text, size_t streams) {
  test::save_model(test::parse_text_model(text.c_str()), dir / (std::string(name) + ".onnx"));
  Model model = import_onnx(dir / (std::string(name) + ".onnx"));
  ascend::CompileOptions options;
  options.check = false;
  options.max_streams = streams;
  options.single_stream = streams == 1;
  options.choose_streams = false;  // keep the streams as planned: the crafts drop their events
  return ascend::compile(model, ascend::load_profile("Ascend910B1"), options).plan;
}

// Every reference to the tensor `name` in kernels and bindings moved to `offset`.
void move_tensor(plan::Plan& p, const std::string& name, uint64_t offset) {
  auto move = [&](plan::TensorRef& r) {
    if (r.name() == name) r.set_offset(offset);
  };
  for (auto& k : *p.mutable_kernels()) {
    for (auto& r : *k.mutable_inputs()) move(r);
    for (auto& r : *k.mutable_outputs()) move(r);
  }
  for (auto& r : *p.mutable_outputs()) move(r);
  // The pool as large as what is left in it (else its size is refused first).
  uint64_t end = 0;
  auto reach = [&](const plan::TensorRef& r) {
    if (!r.absent() && r.region() == plan::ACTIVATION) end = std::max(end, r.offset() + r.size());
  };
  for (const auto& k : p.kernels()) {
    for (const auto& r : k.inputs()) reach(r);
    for (const auto& r : k.outputs()) reach(r);
  }
  for (const auto& r : p.inputs()) reach(r);
  p.set_activation_bytes(end);
}

}  // namespace

TEST_CASE(
    "hostile plans, resealed: pool bytes overwritten while read, unordered streams, stray bodies, names that "
    "lie") {
  const fs::path dir = test::scratch_dir("round3-ordering");
  // Two values live together (both feed the Add), on one stream.
  const plan::Plan pair = plan_of(dir, "pair", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4,64] x) => (float[4,64] c, float[4,64] a) {
      a = Sigmoid(x)
      b = Tanh(x)
      c = Add(a, b)
    })",
                                  1);
  // Two branches on two streams, joined by an event.
  const plan::Plan branches = plan_of(dir, "branches", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[64,64] x) => (float[64,64] y) {
      a = MatMul(x, x)
      b = Sigmoid(x)
      y = Add(a, b)
    })",
                                      4);
  REQUIRE(branches.stream_count() > 1);
  // A Loop of 3 trips that stacks a scan output, its trip count a weight.
  const plan::Plan loop = plan_of(dir, "loop", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x) => (float[2] y, float[3,2] parts) {
      go = Constant <value = bool {1}> ()
      trips = Constant <value = int64 {3}> ()
      y, parts = Loop (trips, go, x) <body = step (int64 i, bool c, float[2] s) => (bool c_out, float[2] s_out, float[2] part) {
        c_out = Identity(c)
        s_out = Identity(s)
        part = Identity(s)
      }>
    })",
                                  1);
  // A Resize (the round's plan carried an opset-18 antialias into one at opset 13).
  const plan::Plan resize = plan_of(dir, "resize", R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,4,4] x) => (float[1,2,8,8] y) {
      roi = Constant <value = float[8] {0, 0, 0, 0, 1, 1, 1, 1}> ()
      scales = Constant <value = float[4] {1.0, 1.0, 2.0, 2.0}> ()
      y = Resize <mode = "nearest"> (x, roi, scales)
    })",
                                    1);
  for (const plan::Plan* p : {&pair, &branches, &loop, &resize}) {
    plan::Plan copy = *p;
    ascend::write_plan(copy, dir / "good.plan");
    auto r = run_cli({"run", (dir / "good.plan").string(), "--random-inputs"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
  }

  struct Craft {
    const char* name;
    const plan::Plan* from;
    std::function<void(plan::Plan&)> change;
    const char* says;
  };
  const std::vector<Craft> crafted = {
      // Tanh's result placed over Sigmoid's while the Add still reads both: it computed
      // tanh + tanh, and nothing said so.
      {"overlap-live", &pair,
       [](plan::Plan& p) {
         const auto& sigmoid = p.kernels(kernel_of(p, "Sigmoid")).outputs(0);
         move_tensor(p, p.kernels(kernel_of(p, "Tanh")).outputs(0).name(), sigmoid.offset());
       },
       "may still read it"},
      // The Add's result over the Sigmoid's, which it reads itself (in place) but which is
      // also an output of the plan.
      {"overlap-output", &pair,
       [](plan::Plan& p) {
         move_tensor(p, p.kernels(kernel_of(p, "Add")).outputs(0).name(),
                     p.kernels(kernel_of(p, "Sigmoid")).outputs(0).offset());
       },
       "as an output of the plan"},
      {"race", &branches,
       [](plan::Plan& p) {
         for (auto& k : *p.mutable_kernels()) k.clear_wait_events();
       },
       "no stream or event orders the write first (a race)"},
      {"body-on-relu", &pair,
       [&](plan::Plan& p) {
         auto* b = p.mutable_kernels(kernel_of(p, "Tanh"))->add_bodies();
         b->set_attribute("body");
         *b->mutable_plan() = loop.kernels(kernel_of(loop, "Loop")).bodies(0).plan();
       },
       "which is no graph attribute of Tanh"},
      {"two-bodies", &loop,
       [](plan::Plan& p) {
         auto* k = p.mutable_kernels(kernel_of(p, "Loop"));
         *k->add_bodies() = k->bodies(0);
       },
       "has two bodies for 'body'"},
      {"no-body", &loop, [](plan::Plan& p) { p.mutable_kernels(kernel_of(p, "Loop"))->clear_bodies(); },
       "lacks its body 'body'"},
      {"format", &pair,
       [](plan::Plan& p) { p.mutable_kernels(0)->mutable_outputs(0)->set_format("NCHW\x1b[2J"); },
       "is in format 'NCHW\\x1B[2J'"},
      {"soc-version", &pair, [](plan::Plan& p) { p.set_soc_version("Ascend\n910B1"); },
       "its soc_version 'Ascend\\x0A910B1' is no profile name"},
      {"no-outputs", &pair, [](plan::Plan& p) { p.clear_outputs(); }, "it has no outputs"},
      // The fuzzer's find: a weight at an odd offset was read in place, misaligned.
      {"misaligned-weight", &resize,
       [](plan::Plan& p) {
         auto* scales = p.mutable_kernels(kernel_of(p, "Resize"))->mutable_inputs(2);
         REQUIRE(scales->region() == plan::WEIGHT);
         scales->set_offset(scales->offset() + 2);
       },
       "not a multiple of its 4-byte elements"},
      {"resize-antialias", &resize,
       [](plan::Plan& p) {
         p.mutable_kernels(kernel_of(p, "Resize"))->add_attributes(int_attribute("antialias", 1));
       },
       "Resize has no attribute 'antialias'"},
      {"kernel-name", &pair, [](plan::Plan& p) { p.mutable_kernels(0)->set_name("k\x1b[2J"); },
       "kernel 0's name 'k\\x1B[2J' is not text"},
      // (Bytes that are no UTF-8 protobuf itself refuses as it parses: no valid plan file.)
      {"tensor-name", &pair,
       [](plan::Plan& p) { p.mutable_kernels(0)->mutable_outputs(0)->set_name("a\x07"); },
       "output 'a\\x07' is not text"},
  };
  for (const Craft& c : crafted) {
    INFO(c.name);
    plan::Plan p = *c.from;
    c.change(p);
    const fs::path path = dir / (std::string(c.name) + ".plan");
    ascend::write_plan(p, path);
    check_refused(path, c.says);
  }

  // Zero trips of a Loop planned for three: its scan output has length 0, which is not
  // the [3,2] the plan reserved (it gave three rows of zeros).
  {
    plan::Plan p = loop;
    const auto& trips = p.kernels(kernel_of(p, "Loop")).inputs(0);
    REQUIRE(trips.region() == plan::WEIGHT);
    std::memset(p.mutable_weights()->data() + trips.offset(), 0, sizeof(int64_t));
    ascend::write_plan(p, dir / "zero-trips.plan");
    auto r = run_cli({"run", (dir / "zero-trips.plan").string(), "--random-inputs"});
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.err.find("came out as f32[0,2]") != std::string::npos, r.err);
  }
  // The evaluator gives ONNX's empty scan output for a declared length zero trips do not run.
  onnx::ModelProto zero = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, int64 m) => (float[2] y, float[3,2] parts) {
      go = Constant <value = bool {1}> ()
      y, parts = Loop (m, go, x) <body = step (int64 i, bool c, float[2] s) => (bool c_out, float[2] s_out, float[2] part) {
        c_out = Identity(c)
        s_out = Identity(s)
        part = Identity(s)
      }>
    })");
  test::save_model(zero, dir / "zero.onnx");
  Model zero_model = import_onnx(dir / "zero.onnx");
  const NamedTensors none =
      Evaluator(zero_model, ascend::op_registry())
          .run({{"x", HostTensor::from_vector(DType::F32, {2}, std::vector<float>{1, 2})},
                {"m", HostTensor::scalar<int64_t>(DType::I64, 0)}});
  CHECK(none[1].second.dims() == std::vector<int64_t>{0, 2});

  // A side weights file named with a NUL or a control byte: refused, the name escaped.
  plan::Plan side = pair;
  ascend::PlanWriteOptions to_side;
  to_side.inline_weight_limit = 0;
  ascend::write_plan(side, dir / "side.plan", to_side);
  plan::Plan named = ascend::read_plan(dir / "side.plan");
  named.mutable_weights()->clear();
  named.set_weights_file(std::string("side.plan.weights\0x", 19));
  reseal(named);
  REQUIRE(named.structure_crc() != side.structure_crc());
  {
    std::ofstream out(dir / "nul.plan", std::ios::binary);
    out << named.SerializeAsString();
  }
  check_refused(dir / "nul.plan",
                "its weights file 'side.plan.weights\\x00x' must be a name beside the plan");

  // A gear named for other shapes than it takes (the name picks nothing, the shapes do).
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[N,8] x) => (float[N,8] y) {
      y = Relu(x)
    })"),
                   dir / "dyn.onnx");
  auto c = run_cli({"compile", (dir / "dyn.onnx").string(), "--input_shape", "x:-1,8", "--dynamic_dims",
                    "2;4", "-o", (dir / "dyn.plan").string()});
  REQUIRE_MESSAGE(c.exit_code == 0, c.err);
  plan::Plan geared = ascend::read_plan(dir / "dyn.plan");
  REQUIRE(geared.gears_size() == 2);
  geared.mutable_gears(1)->set_name("x:8,8");
  ascend::write_plan(geared, dir / "gear-name.plan");
  check_refused(dir / "gear-name.plan", "is named for other input shapes than its inputs have (x:4,8)");

  // A range plan whose input's range (and binding) grew past what its kernels were
  // planned for: refused when the inputs reach a kernel, naming the bytes it reads.
  auto ranged = run_cli({"compile", (dir / "dyn.onnx").string(), "--input_shape_range", "x:[1~8,8]", "-o",
                         (dir / "range.plan").string()});
  REQUIRE_MESSAGE(ranged.exit_code == 0, ranged.err);
  plan::Plan wider = ascend::read_plan(dir / "range.plan");
  REQUIRE(wider.input_ranges_size() == 1);
  wider.mutable_input_ranges(0)->mutable_dims(0)->set_max(16);
  plan::TensorRef& x = *wider.mutable_inputs(0);
  x.set_dims(0, 16);
  x.set_size(x.size() * 2);
  wider.set_activation_bytes(std::max<uint64_t>(wider.activation_bytes(), x.offset() + x.size()));
  ascend::write_plan(wider, dir / "wider.plan");
  auto r = run_cli({"run", (dir / "wider.plan").string(), "--random-inputs"});
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(
      r.err.find("input 'x' came out larger than the 256 bytes this kernel reads") != std::string::npos,
      r.err);
}

TEST_CASE(
    "review of round 3, second part: INT64 slice steps, repeated einsum outputs, overflowing tiles, NaN "
    "comparisons, unknown --dim") {
  const fs::path dir = test::scratch_dir("round3-review2");
  // Slice steps of INT64_MAX and INT64_MIN: one element and none (the count overflowed).
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4,6] x) => (float[4,N] big, float[4,M] small, float[K,6] back) {
      lo = Constant <value = int64[1] {-9223372036854775808}> ()
      hi = Constant <value = int64[1] {9223372036854775807}> ()
      one = Constant <value = int64[1] {1}> ()
      zero = Constant <value = int64[1] {0}> ()
      minus = Constant <value = int64[1] {-1}> ()
      big = Slice(x, lo, hi, one, hi)
      small = Slice(x, lo, hi, one, lo)
      back = Slice(x, hi, lo, zero, minus)
    })"),
                   dir / "slice.onnx");
  Model slice = import_onnx(dir / "slice.onnx");
  std::vector<float> values(24);
  std::iota(values.begin(), values.end(), 0.0f);
  const NamedTensors sliced = Evaluator(slice, ascend::op_registry())
                                  .run({{"x", HostTensor::from_vector(DType::F32, {4, 6}, values)}});
  CHECK(sliced[0].second.dims() == std::vector<int64_t>{4, 1});  // numpy: x[:, ::2**63-1] is column 0
  CHECK(sliced[0].second.to_vector<float>() == std::vector<float>{0, 6, 12, 18});
  CHECK(sliced[1].second.dims() ==
        std::vector<int64_t>{4, 0});  // from the end leftwards, starting at 0: nothing
  CHECK(sliced[2].second.dims() == std::vector<int64_t>{4, 6});  // all rows, reversed
  CHECK(sliced[2].second.to_vector<float>()[0] == 18);

  struct Bad {
    const char* name;
    const char* text;
    const char* says;
  };
  const std::vector<Bad> bad = {
      {"einsum", R"(
        <ir_version: 8, opset_import: ["" : 12]>
        g (float[3,3] a) => (float[3,3] y) {
          y = Einsum <equation = "ij->ii"> (a)
        })",
       "output label 'i' is given twice"},
      {"tile", R"(
        <ir_version: 8, opset_import: ["" : 13]>
        g (float[4,6] x) => (float[N,M] y) {
          r = Constant <value = int64[2] {4611686018427387904, 4}> ()
          y = Tile(x, r)
        })",
       "axis 0 of 4 repeated 4611686018427387904 times is past 2^63"},
  };
  for (const Bad& b : bad) {
    INFO(b.name);
    test::save_model(test::parse_text_model(b.text), dir / (std::string(b.name) + ".onnx"));
    auto r = run_cli({"run", (dir / (std::string(b.name) + ".onnx")).string(), "--random-inputs"});
    CHECK(r.exit_code == 1);
    CHECK_MESSAGE(r.err.find(b.says) != std::string::npos, r.err);
  }
  // Pads whose sum wraps past 2^63 at import (ONNX's inference wraps them) say so.
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[4,6] x) => (float[N,M] y) {
      p = Constant <value = int64[4] {0, 4611686018427387904, 0, 4611686018427387904}> ()
      y = Pad(x, p)
    })"),
                   dir / "pad.onnx");
  auto pad = run_cli({"run", (dir / "pad.onnx").string(), "--random-inputs"});
  CHECK(pad.exit_code == 1);
  CHECK_MESSAGE(pad.err.find("a size past 2^63, wrapped negative") != std::string::npos, pad.err);

  // --compare with NaN: where one side has NaN and the other not, the output fails and
  // its cosine is 0 (it said 1); NaN in both is equal, and said.
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[64] x) => (float[64] y) {
      y = Log(x)
    })"),
                   dir / "log.onnx");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[64] x) => (float[64] y) {
      a = Abs(x)
      y = Log(a)
    })"),
                   dir / "log_abs.onnx");
  auto differ = run_cli({"run", (dir / "log.onnx").string(), "--random-inputs", "--compare",
                         (dir / "log_abs.onnx").string(), "--json"});
  CHECK(differ.exit_code == 1);
  const auto d = nlohmann::json::parse(differ.out)["outputs"][0];
  CHECK(d["ok"] == false);
  CHECK(d["cosine"] == 0.0);
  CHECK(d["nan_mismatches"].get<int64_t>() > 0);
  auto same = run_cli(
      {"run", (dir / "log.onnx").string(), "--random-inputs", "--compare", (dir / "log.onnx").string()});
  CHECK_MESSAGE(same.exit_code == 0, same.err);
  CHECK(same.out.find("(NaN in both: ") != std::string::npos);

  // --dim naming no open dim of the inputs (it was ignored), or given for a plan.
  auto unknown = run_cli({"run", (dir / "slice.onnx").string(), "--random-inputs", "--dim", "batch=2"});
  CHECK(unknown.exit_code == 2);
  CHECK(unknown.err.find("--dim batch: no input of") != std::string::npos);
  CHECK(unknown.err.find("its dims are all fixed") != std::string::npos);

  // A resealed plan whose modeled figures are NaN or negative (profile printed them).
  const plan::Plan good = compiled_plan(dir);
  for (double value :
       {std::numeric_limits<double>::quiet_NaN(), -1.0, std::numeric_limits<double>::infinity()}) {
    plan::Plan p = good;
    p.mutable_kernels(0)->set_modeled_us(value);
    ascend::write_plan(p, dir / "figures.plan");
    check_refused(dir / "figures.plan", "has modeled_us");
  }
  plan::Plan rate = good;
  rate.mutable_compile()->set_fusion_rate(std::numeric_limits<double>::quiet_NaN());
  ascend::write_plan(rate, dir / "rate.plan");
  check_refused(dir / "rate.plan", "its compile statistics are no figures");
}

TEST_CASE(
    "quantize: a calibration sample near float's limit is refused, naming it (the model computed NaN)") {
  const fs::path dir = test::scratch_dir("round3-quantize-limit");
  const fs::path model = test::examples_dir() / "resnet18_narrow_op13.onnx";
  Model m = import_onnx(model);
  const Value* input = m.graph->inputs()[0];
  std::vector<int64_t> dims;
  for (const auto& d : input->type.shape->dims()) dims.push_back(d.is_static() ? d.value() : 1);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  std::vector<float> values(static_cast<size_t>(n));
  for (size_t i = 0; i < values.size(); ++i) values[i] = i % 2 ? 3e38f : -3e38f;
  fs::create_directories(dir / "huge" / "s0");
  write_npy(dir / "huge" / "s0" / npy_file_name(input->name()),
            HostTensor::from_vector(DType::F32, dims, values));
  auto r = run_cli({"quantize", model.string(), "-o", (dir / "q.onnx").string(), "--calibration",
                    (dir / "huge").string(), "--no-progress"});
  CHECK(r.exit_code == 1);
  CHECK_MESSAGE(
      r.err.find("calibration sample 's0': the float model's output 'logits' is NaN at element 0") !=
          std::string::npos,
      r.err);
  CHECK(!fs::exists(dir / "q.onnx"));

  // A model that computes such a sample finitely: the range of its input has no float width.
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4] x) => (float[1,2] y) <float[4,2] w = {0.001, 0.002, 0.001, 0.002, 0.001, 0.002, 0.001, 0.002}> {
      y = MatMul(x, w)
    })"),
                   dir / "matmul.onnx");
  fs::create_directories(dir / "wide" / "s0");
  write_npy(dir / "wide" / "s0" / "x.npy",
            HostTensor::from_vector(DType::F32, {1, 4}, std::vector<float>{3e38f, -3e38f, 1.0f, 2.0f}));
  auto wide =
      run_cli({"quantize", (dir / "matmul.onnx").string(), "-o", (dir / "w.onnx").string(), "--calibration",
               (dir / "wide").string(), "--no-progress", "--calibration-method", "minmax"});
  CHECK(wide.exit_code == 1);
  CHECK_MESSAGE(wide.err.find("calibration: tensor 'x' ranges over [") != std::string::npos, wide.err);
  CHECK(wide.err.find("wider than a float holds") != std::string::npos);
  CHECK(!fs::exists(dir / "w.onnx"));
}

TEST_CASE("plan ordering: a write over one piece of a Split waits for that piece's readers only") {
  // x [2,4] at bytes 0-32 is split into a (0-16) and b (16-32), views of it; Relu writes
  // its result over a, which it reads itself, while Neg still reads b on the same stream
  // later. Valid: b's bytes are untouched. (Reads of a piece once counted against all of x.)
  auto ref = [](plan::TensorRef* r, const char* name, uint64_t offset, std::vector<int64_t> dims) {
    r->set_name(name);
    r->set_offset(offset);
    r->set_dtype(static_cast<int32_t>(DType::F32));
    int64_t n = 1;
    for (int64_t d : dims) r->add_dims(d), n *= d;
    r->set_size(static_cast<uint64_t>(n) * 4);
  };
  plan::Plan p;
  p.set_magic(ascend::kPlanMagic);
  p.set_format_version(ascend::kPlanFormatVersion);
  p.set_soc_version("Ascend910B1");
  auto* opset = p.add_opsets();
  opset->set_domain("");
  opset->set_version(13);
  p.set_stream_count(1);
  p.set_activation_bytes(48);
  ref(p.add_inputs(), "x", 0, {2, 4});
  plan::Kernel* split = p.add_kernels();
  split->set_name("split");
  split->set_op_type("Split");
  split->add_attributes(int_attribute("axis", 0));
  ref(split->add_inputs(), "x", 0, {2, 4});
  ref(split->add_outputs(), "a", 0, {1, 4});
  ref(split->add_outputs(), "b", 16, {1, 4});
  plan::Kernel* relu = p.add_kernels();
  relu->set_name("relu");
  relu->set_op_type("Relu");
  ref(relu->add_inputs(), "a", 0, {1, 4});
  ref(relu->add_outputs(), "c", 0, {1, 4});
  plan::Kernel* neg = p.add_kernels();
  neg->set_name("neg");
  neg->set_op_type("Neg");
  ref(neg->add_inputs(), "b", 16, {1, 4});
  ref(neg->add_outputs(), "d", 32, {1, 4});
  ref(p.add_outputs(), "c", 0, {1, 4});
  ref(p.add_outputs(), "d", 32, {1, 4});
  CHECK_NOTHROW(ascend::check_plan(p, "split.plan"));
  // The same Relu writing over b instead (b's reader, Neg, comes after it): refused.
  plan::Plan over_b = p;
  over_b.mutable_kernels(1)->mutable_outputs(0)->set_offset(16);
  over_b.mutable_outputs(0)->set_offset(16);
  CHECK_THROWS_WITH_AS(ascend::check_plan(over_b, "split.plan"),
                       doctest::Contains("may still read it (through its view 'b')"), Error);
  // And the plan runs: c = relu(x[0]), d = -x[1].
  const NamedTensors out = ascend::PlanExecutor(p).run(
      {{"x", HostTensor::from_vector(DType::F32, {2, 4}, std::vector<float>{-1, 2, -3, 4, 5, -6, 7, -8})}});
  CHECK(out[0].second.to_vector<float>() == std::vector<float>{0, 2, 0, 4});
  CHECK(out[1].second.to_vector<float>() == std::vector<float>{-5, 6, -7, 8});
}
