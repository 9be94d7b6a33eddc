// Ops new or changed in ONNX opsets 18-21 (tests/opsets18_21: one single-op model per
// case, written by make_cases.py with onnx.helper, its outputs from ONNX Runtime 1.30 by
// reference.sh). Each case must import, run on the reference evaluator, and compile to a
// plan whose executor gives the same numbers, within 1e-4 of ONNX Runtime's.
#include <doctest/doctest.h>

#include <algorithm>
#include <fstream>
#include <functional>

#include "ascend/compile.h"
#include "ascend/device_ops/device_ops.h"
#include "ascend/hardware_profile.h"
#include "ascend/optimizer.h"
#include "ascend/plan_executor.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

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
void check_outputs(const fs::path& dir, const NamedTensors& got, const std::string& what) {
  const std::map<std::string, HostTensor> expected = read_npy_folder(dir / "expected");
  REQUIRE_MESSAGE(got.size() == expected.size(), dir.filename().string()
                                                     << " (" << what << "): " << got.size()
                                                     << " outputs, ONNX Runtime has " << expected.size());
  for (const auto& [name, tensor] : got) {
    const std::string& output = name;  // a lambda (INFO) cannot name a structured binding in clang 14
    auto it = expected.find(name);
    REQUIRE_MESSAGE(it != expected.end(), dir.filename().string()
                                              << ": ONNX Runtime has no output '" << output << "'");
    const HostTensor want = as_declared_dtype(it->second, tensor.dtype());
    INFO(dir.filename().string() << " (" << what << ") output '" << output << "'");
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

TEST_CASE("opsets 18-21: a model's opset-18 form fuses as its older form does (one rule for every opset)" *
          doctest::test_suite("sweep")) {
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
    ascend::OptimizeOptions options;
    options.limits.seconds = 600;  // saturated whatever the machine's speed (a sanitizer build under load)
    const ascend::OptimizeResult before = ascend::optimize(original, *rules, profile, options);
    const ascend::OptimizeResult after = ascend::optimize(model, *rules, profile, options);
    CHECK(after.saturation.stop == dsl::StopReason::Saturated);
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
    check_outputs(dir, Evaluator(m, ascend::op_registry()).run(case_inputs(dir, m)), "reference evaluator");
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

TEST_CASE("opsets 18-21: hostile attributes and shapes get an error naming the op, never a crash") {
  // Each model is refused at import (its shape inference) or when it runs (its kernel).
  struct Case {
    const char* what;
    const char* model;
    const char* says;
  };
  const std::vector<Case> cases = {
      {"an uneven Split whose last output would be empty", R"(<ir_version: 8, opset_import: ["" : 18]>
         g (float[5] x) => (float[2] a, float[2] b, float[1] c, float[1] d) {
           a, b, c, d = Split <num_outputs = 4> (x)
         })",
       "does not split into 4 parts"},
      {"Col2Im blocks whose product overflows", R"(<ir_version: 8, opset_import: ["" : 18]>
         g (float[1,4,1] x) => (float[1,1,2,2] y) {
           image = Constant <value = int64[2] {2, 2}> ()
           block = Constant <value = int64[2] {4294967296, 4294967296}> ()
           y = Col2Im(x, image, block)
         })",
       "block_shape must be positive, its product within 64 bits"},
      {"GridSample over 6 spatial axes", R"(<ir_version: 8, opset_import: ["" : 20]>
         g (float[1,1,1,1,1,1,1,1] x, float[1,1,1,1,1,1,1,6] grid) => (float[1,1,1,1,1,1,1,1] y) {
           y = GridSample <mode = "cubic"> (x, grid)
         })",
       "at most 5 spatial axes"},
      {"QuantizeLinear to int32", R"(<ir_version: 8, opset_import: ["" : 21]>
         g (float[4] x) => (int32[4] y) {
           s = Constant <value = float {0.5}> ()
           y = QuantizeLinear <output_dtype = 6> (x, s)
         })",
       "output_dtype must be uint8, int8, uint16 or int16"},
      {"a DFT of length 0", R"(<ir_version: 8, opset_import: ["" : 20]>
         g (float[2,8,1] x) => (float[2,8,2] y) {
           len = Constant <value = int64 {0}> ()
           y = DFT(x, len)
         })",
       "dft_length must be positive"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    const fs::path p = test::scratch_dir("hostile18") / "model.onnx";
    test::save_model(test::parse_text_model(c.model), p);
    CHECK_THROWS_WITH_AS(
        {
          Model m = import_onnx(p);
          Evaluator(m, ascend::op_registry()).run(random_inputs(m, 1));
        },
        doctest::Contains(c.says), Error);
  }
}

TEST_CASE("opsets 18-21: GroupNormalization of an empty batch is empty") {
  const fs::path p = test::scratch_dir("empty18") / "model.onnx";
  test::save_model(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 21]>
    g (float[0,4,3] x, float[4] s, float[4] b) => (float[0,4,3] y) {
      y = GroupNormalization <num_groups = 2> (x, s, b)
    })"),
                   p);
  Model m = import_onnx(p);
  const NamedTensors out = Evaluator(m, ascend::op_registry()).run(random_inputs(m, 1));
  REQUIRE(out.size() == 1);
  CHECK(out[0].second.dims() == std::vector<int64_t>{0, 4, 3});
}

}  // namespace geopt
