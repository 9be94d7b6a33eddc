// Ops new or changed in ONNX opsets 18-21 (tests/opsets18_21: one single-op model per
// case, written by make_cases.py with onnx.helper, its outputs from ONNX Runtime 1.30 by
// reference.sh). Each case must import, run on the reference evaluator, and compile to a
// plan whose executor gives the same numbers, within 1e-4 of ONNX Runtime's.
#include <doctest/doctest.h>

#include <algorithm>

#include "ascend/compile.h"
#include "ascend/hardware_profile.h"
#include "ascend/plan_executor.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"

namespace geopt {
namespace {

namespace fs = std::filesystem;

const fs::path kCases = fs::path(GEOPT_TESTS_DIR) / "opsets18_21";

std::vector<fs::path> case_dirs() {
  std::vector<fs::path> dirs;
  for (const auto& e : fs::directory_iterator(kCases))
    if (e.is_directory() && fs::exists(e.path() / "model.onnx")) dirs.push_back(e.path());
  std::sort(dirs.begin(), dirs.end());
  return dirs;
}

// The case's inputs, each as the dtype its model declares.
std::map<std::string, HostTensor> case_inputs(const fs::path& dir, const Model& m) {
  std::map<std::string, HostTensor> files = fs::exists(dir / "inputs") ? read_npy_folder(dir / "inputs") : std::map<std::string, HostTensor>{};
  std::map<std::string, HostTensor> feeds;
  for (const Value* v : m.graph->inputs()) {
    if (v->initializer) continue;
    auto it = files.find(v->name());
    REQUIRE_MESSAGE(it != files.end(), dir.filename().string() << ": no input file for '" << v->name() << "'");
    feeds[v->name()] = as_declared_dtype(it->second, v->type.dtype);
  }
  return feeds;
}

// Each output against ONNX Runtime's: same dtype and shape, within atol 1e-4 + rtol 1e-4
// (integers and booleans exactly).
void check_outputs(const fs::path& dir, const NamedTensors& got, const char* what) {
  const std::map<std::string, HostTensor> expected = read_npy_folder(dir / "expected");
  REQUIRE_MESSAGE(got.size() == expected.size(), dir.filename().string() << " (" << what << "): " << got.size() << " outputs, ONNX Runtime has " << expected.size());
  for (const auto& [name, tensor] : got) {
    auto it = expected.find(name);
    REQUIRE_MESSAGE(it != expected.end(), dir.filename().string() << ": ONNX Runtime has no output '" << name << "'");
    const HostTensor want = as_declared_dtype(it->second, tensor.dtype());
    INFO(dir.filename().string() << " (" << what << ") output '" << name << "'");
    REQUIRE(tensor.dtype() == want.dtype());
    REQUIRE(tensor.dims() == want.dims());
    const TensorDiff d = diff(tensor, want, Tolerance{1e-4, 1e-4, 0});
    CHECK_MESSAGE(d.within(), d.mismatch << d.worst);
  }
}

}  // namespace

TEST_CASE("opsets 18-21: every case runs and matches ONNX Runtime") {
  const auto dirs = case_dirs();
  REQUIRE(dirs.size() >= 80);
  for (const auto& dir : dirs) {
    Model m = import_onnx(dir / "model.onnx");
    check_outputs(dir, Evaluator(m).run(case_inputs(dir, m)), "reference evaluator");
  }
}

TEST_CASE("opsets 18-21: every case compiles to a plan that matches ONNX Runtime") {
  const ascend::HardwareProfile profile = ascend::load_profile("Ascend910B1");
  for (const auto& dir : case_dirs()) {
    Model m = import_onnx(dir / "model.onnx");
    ascend::CompileOptions options;
    options.check = false;  // the outputs are checked against ONNX Runtime's below
    ascend::CompileResult compiled = ascend::compile(m, profile, options);
    check_outputs(dir, ascend::PlanExecutor(compiled.plan).run(case_inputs(dir, m)), "plan executor");
  }
}

}  // namespace geopt
