#include "test_support.h"

#include "ascend/device_ops/device_ops.h"
#include "io/npy.h"

#include <doctest/doctest.h>
#include <onnx/defs/parser.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "eval/compare.h"
#include "eval/evaluator.h"

namespace geopt::test {
namespace fs = std::filesystem;

fs::path examples_dir() { return GEOPT_EXAMPLES_DIR; }

namespace {
std::vector<fs::path> models_in(const fs::path& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".onnx") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}
}  // namespace

std::vector<fs::path> example_models() { return models_in(examples_dir()); }

fs::path zoo_dir() { return examples_dir().parent_path() / "zoo"; }

std::vector<fs::path> zoo_models() { return models_in(zoo_dir()); }

fs::path exporters_dir() { return examples_dir().parent_path() / "exporters"; }

std::vector<fs::path> exporter_models() { return models_in(exporters_dir()); }

namespace {
struct ScratchRoot {
  fs::path root;
  ScratchRoot() {
    std::string pattern = (fs::temp_directory_path() / "geopt-test-XXXXXX").string();
    std::vector<char> buf(pattern.begin(), pattern.end());
    buf.push_back('\0');
    root = ::mkdtemp(buf.data());
  }
  ~ScratchRoot() {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
};
}  // namespace

fs::path scratch_dir(const std::string& tag) {
  static ScratchRoot root;
  static int counter = 0;
  fs::path p = root.root / (tag + "-" + std::to_string(counter++));
  fs::create_directories(p);
  return p;
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary);
  out << bytes;
}

onnx::ModelProto parse_text_model(const char* text) {
  onnx::ModelProto m;
  auto status = onnx::OnnxParser::Parse(m, text);
  REQUIRE_MESSAGE(status.IsOK(), status.ErrorMessage());
  return m;
}

void save_model(const onnx::ModelProto& m, const fs::path& p) { write_file(p, m.SerializeAsString()); }

namespace {
std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}
}  // namespace

// GE users export OP_NO_REUSE_MEM; it would change what every compile test plans (the
// test of it sets it itself).
const bool kEnvironmentCleared = [] { return unsetenv("OP_NO_REUSE_MEM") == 0; }();

CliResult run_cli(const std::vector<std::string>& args) {
  fs::path dir = scratch_dir("cli");
  std::string cmd = quote(GEOPT_CLI);
  for (const auto& a : args) cmd += " " + quote(a);
  cmd += " >" + quote((dir / "out").string()) + " 2>" + quote((dir / "err").string());
  int status = std::system(cmd.c_str());
  CliResult r;
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  r.out = read_file(dir / "out");
  r.err = read_file(dir / "err");
  return r;
}

size_t count_op(const Model& m, const std::string& op) {
  size_t n = 0;
  for (const auto& node : m.graph->nodes()) n += node->op_type == op;
  return n;
}

double max_output_error(const Model& reference, const Model& candidate, uint64_t seed) {
  auto feeds = random_inputs(reference, seed);
  return diff_outputs(Evaluator(candidate, ascend::op_registry()).run(feeds),
                      Evaluator(reference, ascend::op_registry()).run(feeds))
      .error();
}

}  // namespace geopt::test
