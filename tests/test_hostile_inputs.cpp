// Crafted files of the kinds geopt reads, run through the commands users run: each is
// refused with exit 1 and a message naming the file and the problem (or read right),
// never a crash, a hang or a silently wrong answer.
#include <doctest/doctest.h>

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>

#include <random>

#include "ascend/compile.h"
#include "ascend/hardware_profile.h"
#include "ascend/plan_executor.h"
#include "ascend/plan_file.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/atomic_file.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;
using test::run_cli;

namespace {

// A .npy v1 file: header text padded with spaces to `header_bytes` (a multiple of 64 less 10), then the data.
std::string npy(const std::string& dict, size_t header_bytes, const std::string& data) {
  std::string header = dict;
  header.resize(header_bytes - 1, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xFF);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

std::string floats(size_t n) { return std::string(n * 4, '\0'); }

}  // namespace

TEST_CASE("hostile .npy headers: long, negative, overflowing, malformed") {
  const fs::path dir = test::scratch_dir("hostile-npy");
  const fs::path model = test::examples_dir() / "resnet18_narrow_op13.onnx";

  // A 60 KB header is legal (v1 allows 64 KB) and read like any other; a regex once
  // ran out of stack on it.
  test::write_file(dir / "long.npy", npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                                         60 * 1024 - 10, floats(6)));
  HostTensor t = read_npy(dir / "long.npy");
  CHECK(t.dims() == std::vector<int64_t>{2, 3});

  struct Bad {
    const char* file;
    std::string dict;
    std::string data;
    const char* says;
  };
  const std::vector<Bad> bad = {
      {"negative.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1, 3), }", floats(3),
       "negative dimension"},
      {"huge.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (4, 4611686018427387904), }", floats(1),
       "more elements than 2^63"},
      {"bytes.npy", "{'descr': '<f8', 'fortran_order': False, 'shape': (1152921504606846976,), }", floats(1),
       "exceed 2^62 bytes"},
      {"digits.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999999, 1), }",
       floats(1), "does not fit in 64 bits"},
      {"noshape.npy", "{'descr': '<f4', 'fortran_order': False, }", floats(1), "no 'shape'"},
      {"key.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'extra': 1 }", floats(1),
       "unexpected key 'extra'"},
      {"open.npy", "{'descr': '<f4, 'shape': (1,) ", floats(1), "bad .npy header"},
      {"short.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", floats(5), "24 expected"},
  };
  for (const Bad& b : bad) {
    INFO(b.file);
    test::write_file(dir / b.file, npy(b.dict, 118, b.data));
    CHECK_THROWS_WITH_AS(read_npy(dir / b.file), doctest::Contains(b.says), Error);
    // Through the command line too: exit 1, the file named.
    auto r = run_cli({"run", model.string(), "--input", "image=" + (dir / b.file).string()});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find(b.file) != std::string::npos);
  }
  // A header that claims 4 GiB is refused before it is read.
  std::string v2 = "\x93NUMPY";
  v2 += '\x02';
  v2 += '\x00';
  v2 += std::string("\xff\xff\xff\xff", 4);
  test::write_file(dir / "claims.npy", v2 + "{");
  CHECK_THROWS_WITH_AS(read_npy(dir / "claims.npy"), doctest::Contains("more than geopt reads"), Error);
}

TEST_CASE("hostile rule files: deep nesting and endless input") {
  const fs::path dir = test::scratch_dir("hostile-rules");
  // 100,000 levels would overflow any recursive parser's stack: refused at the first
  // bracket past the limit, in well under a second.
  std::string deep = "rule Deep { match %y = ";
  for (int i = 0; i < 100000; ++i) deep += "Relu(";
  deep += "%x";
  for (int i = 0; i < 100000; ++i) deep += ")";
  deep += " rewrite %y => %x }\n";
  test::write_file(dir / "deep.gerule", deep);
  // An escaped quote in a string does not end it, for the depth scan as for the grammar.
  std::string escaped = "rule E { doc \"\\\"\" match %y = ";
  for (int i = 0; i < 1000; ++i) escaped += "Relu(";
  escaped += "%x";
  for (int i = 0; i < 1000; ++i) escaped += ")";
  escaped += " rewrite %y => %x }\n";
  test::write_file(dir / "escaped.gerule", escaped);
  auto esc = run_cli({"rules", "check", (dir / "escaped.gerule").string()});
  CHECK(esc.exit_code == 1);
  CHECK(esc.err.find("nest deeper than 256") != std::string::npos);
  const auto start = std::chrono::steady_clock::now();
  auto r = run_cli({"rules", "check", (dir / "deep.gerule").string()});
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(5));
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("deep.gerule:1:") != std::string::npos);
  CHECK(r.err.find("nest deeper than 256") != std::string::npos);
  // /dev/zero never ends: read no further than the cap.
  auto z = run_cli({"rules", "check", "/dev/zero"});
  CHECK(z.exit_code == 1);
  CHECK(z.err.find("longer than 16 MiB") != std::string::npos);
}

TEST_CASE("hostile plans: random bit flips are refused or change nothing, and crafted structure is refused") {
  const fs::path dir = test::scratch_dir("hostile-plans");
  Model model = import_onnx(test::examples_dir() / "resnet18_narrow_op13.onnx");
  ascend::CompileOptions options;
  options.check = false;
  ascend::CompileResult compiled = ascend::compile(model, ascend::load_profile("Ascend910B1"), options);
  ascend::write_plan(compiled.plan, dir / "good.plan");
  const std::string good = test::read_file(dir / "good.plan");
  const auto feeds = random_inputs(model, 7);
  const NamedTensors want = ascend::PlanExecutor(ascend::read_plan(dir / "good.plan")).run(feeds);

  // 1-4 flipped bits anywhere in the file (seeded: the same 240 cases every run). A flip
  // the checksums miss would have to leave the numbers as they were.
  std::mt19937_64 rng(20261201);
  size_t refused = 0, identical = 0;
  for (int trial = 0; trial < 240; ++trial) {
    std::string bytes = good;
    const int flips = 1 + static_cast<int>(rng() % 4);
    for (int f = 0; f < flips; ++f) {
      const size_t bit = rng() % (bytes.size() * 8);
      bytes[bit / 8] = static_cast<char>(bytes[bit / 8] ^ (1 << (bit % 8)));
    }
    test::write_file(dir / "flipped.plan", bytes);
    try {
      const NamedTensors got = ascend::PlanExecutor(ascend::read_plan(dir / "flipped.plan")).run(feeds);
      OutputsDiff d = diff_outputs(got, want);
      CHECK(d.mismatch.empty());
      CHECK(d.error() == 0);
      ++identical;
    } catch (const Error& e) {
      CHECK(std::string(e.what()).find("flipped.plan") != std::string::npos);
      ++refused;
    }
  }
  CHECK(refused + identical == 240);
  CHECK(refused >= 230);

  // Structure that would crash or hang an executor, sealed as a compiler would write it.
  struct Craft {
    const char* name;
    std::function<void(plan::Plan&)> change;
    const char* says;
  };
  const std::vector<Craft> crafted = {
      {"streams", [](plan::Plan& p) { p.set_stream_count(1000000); }, "claims 1000000 streams"},
      {"no-output", [](plan::Plan& p) { p.mutable_kernels(0)->clear_outputs(); }, "has no output"},
      {"stray-event", [](plan::Plan& p) { p.mutable_kernels(0)->add_wait_events(0); }, "waits on"},
  };
  for (const Craft& c : crafted) {
    INFO(c.name);
    plan::Plan p = compiled.plan;
    c.change(p);
    ascend::write_plan(p, dir / (std::string(c.name) + ".plan"));
    for (const char* command : {"run", "profile", "plan"}) {
      std::vector<std::string> args = {command, (dir / (std::string(c.name) + ".plan")).string()};
      if (std::string(command) == "run") args.push_back("--random-inputs");
      if (std::string(command) == "plan") args.insert(args.begin() + 1, "dump");
      auto r = run_cli(args);
      CHECK(r.exit_code == 1);
      CHECK(r.err.find(c.says) != std::string::npos);
    }
  }
}

TEST_CASE("hostile models and command lines: linked external data, non-UTF-8 names, conflicting options") {
  const fs::path dir = test::scratch_dir("hostile-models");
  // External data through a link that leaves the model's folder is refused, whatever its
  // location text says; the same data as a plain file beside the model is read.
  fs::copy_file(test::examples_dir() / "resnet18_narrow_external_op13.onnx", dir / "m.onnx",
                fs::copy_options::overwrite_existing);
  fs::remove(dir / "resnet18_narrow_external_op13.weights");
  fs::create_symlink("/etc/passwd", dir / "resnet18_narrow_external_op13.weights");
  auto linked = run_cli({"info", (dir / "m.onnx").string()});
  CHECK(linked.exit_code == 1);
  CHECK(linked.err.find("outside the model's folder") != std::string::npos);
  fs::remove(dir / "resnet18_narrow_external_op13.weights");
  fs::copy_file(test::examples_dir() / "resnet18_narrow_external_op13.weights",
                dir / "resnet18_narrow_external_op13.weights");
  CHECK(run_cli({"info", (dir / "m.onnx").string()}).exit_code == 0);

  // A node name that is not UTF-8: refused at import, the name shown escaped.
  onnx::ModelProto mp;
  {
    std::string bytes = test::read_file(test::examples_dir() / "bert_tiny_op13.onnx");
    REQUIRE(mp.ParseFromString(bytes));
  }
  mp.mutable_graph()->mutable_node(3)->set_name("bad\xff\xfename");
  test::save_model(mp, dir / "bad_name.onnx");
  auto named =
      run_cli({"optimize", (dir / "bad_name.onnx").string(), "-o", (dir / "out.onnx").string(), "--json"});
  CHECK(named.exit_code == 1);
  CHECK(named.err.find("bad\\xFF\\xFEname") != std::string::npos);
  CHECK(named.err.find("not valid UTF-8") != std::string::npos);
  CHECK(!fs::exists(dir / "out.onnx"));

  const std::string model = (test::examples_dir() / "resnet18_narrow_op13.onnx").string();
  CHECK(run_cli({"optimize", model, "-o", (dir / "o.onnx").string(), "--iter-limit", "-1"}).exit_code == 2);
  CHECK(run_cli({"optimize", model, "-o", (dir / "o.onnx").string(), "--time-limit", "-5"}).exit_code == 2);
  const std::string image = (test::examples_dir() / "resnet18_narrow_op13" / "inputs" / "image.npy").string();
  auto twice = run_cli({"run", model, "--input", "image=" + image, "--input", "image=" + image});
  CHECK(twice.exit_code == 1);
  CHECK(twice.err.find("--input image is given twice") != std::string::npos);
  // A plan over its own model would destroy it.
  fs::copy_file(model, dir / "self.onnx", fs::copy_options::overwrite_existing);
  auto self = run_cli({"compile", (dir / "self.onnx").string(), "-o", (dir / "self.onnx").string()});
  CHECK(self.exit_code == 1);
  CHECK(self.err.find("is the model itself") != std::string::npos);
  CHECK(test::read_file(dir / "self.onnx") == test::read_file(model));
}

TEST_CASE("an interrupted write leaves no temporary file behind") {
  const fs::path dir = test::scratch_dir("hostile-signal");
  for (int sig : {SIGTERM, SIGINT}) {
    INFO("signal " << sig);
    const pid_t child = ::fork();
    REQUIRE(child >= 0);
    if (child == 0) {  // a write cut short by the signal, as a user's Ctrl-C does
      remove_temporaries_on_signals();
      AtomicFile f(dir / "out.plan");
      f.write(std::string(1 << 20, 'x'));
      std::raise(sig);
      std::_Exit(0);  // not reached
    }
    int status = 0;
    REQUIRE(::waitpid(child, &status, 0) == child);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == sig);
    size_t left = 0;
    for (const auto& e : fs::directory_iterator(dir))
      left += e.path().filename().string().find(".tmp-") != std::string::npos;
    CHECK(left == 0);
    CHECK(!fs::exists(dir / "out.plan"));
  }
}

TEST_CASE("a plan that does not fit the device's HBM is refused at compile time, naming both sizes") {
  const fs::path dir = test::scratch_dir("hostile-capacity");
  const std::string model = (test::examples_dir() / "resnet18_narrow_op13.onnx").string();
  auto r = run_cli(
      {"compile", model, "-o", (dir / "r.plan").string(), "--profile-set", "memory.hbm_bytes=1000000"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("of weights, more than the 1 MiB of HBM") != std::string::npos);
  CHECK(r.err.find("--input_shape") != std::string::npos);
  CHECK(!fs::exists(dir / "r.plan"));
  CHECK(run_cli({"compile", model, "-o", (dir / "r.plan").string(), "--no-check"}).exit_code == 0);
}

TEST_CASE("an input of 2^40 elements is bad input: exit 1 naming its size, not an internal error") {
  const fs::path dir = test::scratch_dir("hostile-huge");
  onnx::ModelProto mp = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1099511627776] x) => (float[1099511627776] y) { y = Relu(x) })");
  test::save_model(mp, dir / "huge.onnx");
  auto r = run_cli({"run", (dir / "huge.onnx").string(), "--random-inputs"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("larger than this machine's memory") != std::string::npos);
}

// Opening a named pipe blocks until something writes to it: every file geopt reads is
// opened without blocking, so a pipe nobody writes to is a short file, never a hang.
TEST_CASE("a named pipe in place of any input file is refused at once, never waited on") {
  auto dir = test::scratch_dir("fifo");
  const std::string model = (test::examples_dir() / "resnet18_narrow_op13.onnx").string();
  const std::string pipe = (dir / "pipe").string();
  REQUIRE(::mkfifo(pipe.c_str(), 0600) == 0);
  // Exit 1 where an empty file is bad input; a rule file may be empty (no rules).
  const std::vector<std::pair<std::vector<std::string>, int>> commands = {
      {{"info", pipe}, 1},           {{"run", model, "--input", "image=" + pipe}, 1},
      {{"plan", "dump", pipe}, 1},   {{"run", pipe, "--random-inputs"}, 1},
      {{"rules", "check", pipe}, 0},
  };
  for (const auto& [args, want] : commands) {
    std::string cmd = "timeout 30 '" + std::string(GEOPT_CLI) + "'";
    for (const auto& a : args) cmd += " '" + a + "'";
    cmd += " >/dev/null 2>&1";
    const auto start = std::chrono::steady_clock::now();
    const int status = std::system(cmd.c_str());
    const int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    const auto& command = args;  // a lambda (CHECK_MESSAGE) cannot name a structured binding in clang 14
    CHECK_MESSAGE(code == want, command[0], " ", command.back(), ": exit ", code, " (124: it waited)");
    CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(20));
  }
}
