// Ops new or changed in ONNX opsets 18-21 (tests/opsets18_21: one single-op model per
// case, written by make_cases.py with onnx.helper, its outputs from ONNX Runtime 1.30 by
// reference.sh). Each case must import, run on the reference evaluator, and compile to a
// plan whose executor gives the same numbers, within 1e-4 of ONNX Runtime's.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include "ascend/compile.h"
#include "ascend/hardware_profile.h"
#include "ascend/optimizer.h"
#include "ascend/plan_executor.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"

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
  std::map<std::string, HostTensor> files =
      fs::exists(dir / "inputs") ? read_npy_folder(dir / "inputs") : std::map<std::string, HostTensor>{};
  std::map<std::string, HostTensor> feeds;
  for (const Value* v : m.graph->inputs()) {
    if (v->initializer) continue;
    auto it = files.find(v->name());
    REQUIRE_MESSAGE(it != files.end(), dir.filename().string()
                                           << ": no input file for '" << v->name() << "'");
    feeds[v->name()] = as_declared_dtype(it->second, v->type.dtype);
  }
  return feeds;
}

// Each output against ONNX Runtime's: same dtype and shape, within atol 1e-4 + rtol 1e-4
// (integers and booleans exactly).
void check_outputs(const fs::path& dir, const NamedTensors& got, const char* what) {
  const std::map<std::string, HostTensor> expected = read_npy_folder(dir / "expected");
  REQUIRE_MESSAGE(got.size() == expected.size(), dir.filename().string()
                                                     << " (" << what << "): " << got.size()
                                                     << " outputs, ONNX Runtime has " << expected.size());
  for (const auto& [name, tensor] : got) {
    auto it = expected.find(name);
    REQUIRE_MESSAGE(it != expected.end(), dir.filename().string()
                                              << ": ONNX Runtime has no output '" << name << "'");
    const HostTensor want = as_declared_dtype(it->second, tensor.dtype());
    INFO(dir.filename().string() << " (" << what << ") output '" << name << "'");
    REQUIRE(tensor.dtype() == want.dtype());
    REQUIRE(tensor.dims() == want.dims());
    const TensorDiff d = diff(tensor, want, Tolerance{1e-4, 1e-4, 0});
    CHECK_MESSAGE(d.within(), d.mismatch << d.worst);
  }
}

// The model as an opset-18 exporter writes it: each Reduce*'s axes (ReduceSum's were
// already) an int64 initializer input instead of an attribute; nothing else changed at 18
// for what torch 1.13 exports.
fs::path as_opset18(const fs::path& path) {
  onnx::ModelProto m;
  {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(m.ParseFromIstream(&in));
  }
  int moved = 0;
  std::function<void(onnx::GraphProto&)> rewrite = [&](onnx::GraphProto& g) {
    for (auto& n : *g.mutable_node()) {
      for (auto& a : *n.mutable_attribute()) {
        if (a.has_g()) rewrite(*a.mutable_g());
        for (auto& sub : *a.mutable_graphs()) rewrite(sub);
      }
      if (n.op_type().rfind("Reduce", 0) != 0 || n.op_type() == "ReduceSum") continue;
      auto& attrs = *n.mutable_attribute();
      for (int i = 0; i < attrs.size(); ++i) {
        if (attrs[i].name() != "axes") continue;
        auto* t = g.add_initializer();
        t->set_name(n.output(0) + "_axes18");
        t->set_data_type(onnx::TensorProto::INT64);
        t->add_dims(attrs[i].ints_size());
        for (int64_t v : attrs[i].ints()) t->add_int64_data(v);
        n.add_input(t->name());
        attrs.DeleteSubrange(i, 1);
        ++moved;
        break;
      }
    }
  };
  rewrite(*m.mutable_graph());
  for (auto& o : *m.mutable_opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") o.set_version(18);
  const fs::path out = test::scratch_dir("opset18") / path.filename();
  test::save_model(m, out);
  return moved > 0 ? out : fs::path{};
}

}  // namespace

TEST_CASE("opsets 18-21: a model's opset-18 form fuses as its older form does (one rule for every opset)") {
  auto rules = test::load_rules({test::shipped_rules()});
  const auto profile = ascend::load_profile("Ascend910B1");
  int compared = 0;
  for (const auto& path : test::zoo_models()) {
    if (path.filename().string().find("op13") == std::string::npos) continue;
    const fs::path upgraded = as_opset18(path);
    if (upgraded.empty()) continue;  // no Reduce with axes: the same model at 18
    INFO(path.filename().string());
    const Model original = import_onnx(path), model = import_onnx(upgraded);
    REQUIRE(model.opset_version("") == 18);
    const ascend::OptimizeResult before = ascend::optimize(original, *rules, profile);
    const ascend::OptimizeResult after = ascend::optimize(model, *rules, profile);
    CHECK(after.after.kernels == before.after.kernels);
    // An unfused Reduce reads its axes input's few bytes too: a millionth at most.
    CHECK(after.after.latency_us == doctest::Approx(before.after.latency_us).epsilon(1e-6));
    CHECK(test::max_output_error(model, after.model) <= 1e-4);
    ++compared;
  }
  CHECK(compared >= 8);  // every transformer's LayerNorm or RMSNorm, CNNs' means
}

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
