// The numerical check on models whose inputs leave dims open: it runs at sizes the model
// accepts (batch 1, the rest at a real size), says which, and when no size works says
// what to pass. What optimize and the library both use.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "ascend/device_ops/device_ops.h"
#include "eval/numerical_check.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using geopt::test::run_cli;
namespace fs = std::filesystem;

namespace {

// A 20 x 20 window: no image under 20 pixels runs, so size 1 (or 16) cannot be the check's.
const char* kWindowed = R"(
<ir_version: 8, opset_import: ["" : 17]>
agraph (float[N, 3, H, W] x) => (float[N, 3, Ho, Wo] y) {
  p = AveragePool<kernel_shape = [20, 20], strides = [2, 2]>(x)
  y = Relu(p)
}
)";

// Runs only at 7 x 7 (a Reshape to a constant shape), which no candidate size is.
const char* kOneSize = R"(
<ir_version: 8, opset_import: ["" : 17]>
agraph (float[N, 3, H, W] x) => (float[1, 147] y) {
  s = Constant<value = int64[2] {1, 147}>()
  r = Reshape(x, s)
  y = Relu(r)
}
)";

}  // namespace

TEST_CASE(
    "the check draws open dims at sizes the model runs at: batch 1, the rest the smallest common size that "
    "fits") {
  auto dir = geopt::test::scratch_dir("numerical_check");
  geopt::test::save_model(geopt::test::parse_text_model(kWindowed), dir / "windowed.onnx");
  geopt::Model m = geopt::import_onnx(dir / "windowed.onnx");
  geopt::CheckInputs in = geopt::choose_check_inputs(geopt::ascend::op_registry(), m, 0);
  CHECK(in.sizes == std::map<std::string, int64_t>{{"H", 32}, {"N", 1}, {"W", 32}});
  CHECK(in.describe() == "H=32, N=1, W=32");
  REQUIRE(in.reference.size() == 1);
  CHECK(in.reference[0].second.shape_string() == "f32[1,3,7,7]");

  // The dynamic BERT example: batch 1, sequence 16 (a Softmax over one key would always be 1).
  geopt::Model bert = geopt::import_onnx(geopt::test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx");
  CHECK(geopt::choose_check_inputs(geopt::ascend::op_registry(), bert, 0).describe() == "batch=1, seq=16");

  // optimize's check (by default) uses the same sizes and says so.
  auto r = run_cli({"optimize", (dir / "windowed.onnx").string(), "--json"});
  REQUIRE(r.exit_code == 0);
  auto j = nlohmann::json::parse(r.out);
  CHECK(j["check"]["sizes"] == "H=32, N=1, W=32");
  CHECK(j["check"]["ok"] == true);
  // A static shape from --input_shape is what the check runs at.
  auto fixed =
      run_cli({"optimize", (dir / "windowed.onnx").string(), "--input_shape", "x:2,3,40,24", "--json"});
  REQUIRE(fixed.exit_code == 0);
  CHECK(nlohmann::json::parse(fixed.out)["check"]["sizes"] == "");
}

TEST_CASE(
    "a model that runs at no size tried is refused with the sizes tried, the failure and the --input_shape "
    "to pass") {
  auto dir = geopt::test::scratch_dir("numerical_check_refused");
  geopt::test::save_model(geopt::test::parse_text_model(kOneSize), dir / "one_size.onnx");
  geopt::Model m = geopt::import_onnx(dir / "one_size.onnx");
  CHECK_THROWS_WITH_AS(geopt::choose_check_inputs(geopt::ascend::op_registry(), m, 0),
                       doctest::Contains("open dims H (of input 'x'), W (of input 'x') (16, 32, 64"),
                       geopt::Error);
  auto r = run_cli({"optimize", (dir / "one_size.onnx").string()});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("at 16: ") != std::string::npos);
  CHECK(r.err.find("Reshape") != std::string::npos);
  CHECK(r.err.find("--input_shape, e.g. \"x:1,3,<H>,<W>\"") != std::string::npos);
  // What it says to do works, on optimize, explain and cost alike.
  for (const char* command : {"optimize", "explain", "cost"}) {
    auto fixed = run_cli({command, (dir / "one_size.onnx").string(), "--input_shape", "x:1,3,7,7"});
    CHECK_MESSAGE(fixed.exit_code == 0, command, ": ", fixed.err);
  }
  auto bad = run_cli({"cost", (dir / "one_size.onnx").string(), "--input_shape", "x:1,3,7"});
  CHECK(bad.exit_code == 1);
}

TEST_CASE(
    "sizes the graph names are tried after the common ones: frames of 400 samples, an 1100-sample filter") {
  auto dir = geopt::test::scratch_dir("numerical_check_implied");
  // Audio split into frames of 400 samples: no power of two or image size divides into them.
  geopt::test::save_model(geopt::test::parse_text_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, samples] audio) => (float[batch, 400] y) {
  s = Constant <value = int64[3] {0, -1, 400}> ()
  f = Reshape(audio, s)
  y = ReduceMean <axes = [1], keepdims = 0> (f)
})"),
                          dir / "frames.onnx");
  CHECK(geopt::choose_check_inputs(geopt::ascend::op_registry(), geopt::import_onnx(dir / "frames.onnx"), 0)
            .describe() == "batch=1, samples=400");
  // A filter of 1100 samples: wider than every common size (1024 the largest).
  geopt::test::save_model(geopt::test::parse_text_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[batch, 1, samples] audio) => (float[batch, 2, frames] y) {
  ws = Constant <value = int64[3] {2, 1, 1100}> ()
  w = ConstantOfShape <value = float[1] {0.5}> (ws)
  y = Conv <kernel_shape = [1100], strides = [160]> (audio, w)
})"),
                          dir / "filter.onnx");
  CHECK(geopt::choose_check_inputs(geopt::ascend::op_registry(), geopt::import_onnx(dir / "filter.onnx"), 0)
            .describe() == "batch=1, samples=1100");
}

TEST_CASE("unnamed dims are drawn by their position, and a check that only runs at 1 says so") {
  auto dir = geopt::test::scratch_dir("numerical_check_unnamed");
  // Both leading dims are batch-like by position; the names ('token...') say nothing of them.
  geopt::test::save_model(geopt::test::parse_text_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[?, ?] input_ids, float[?, ?] token_type_ids) => (float[?, ?] y) {
  y = Concat <axis = 1> (input_ids, token_type_ids)
})"),
                          dir / "unnamed.onnx");
  geopt::CheckInputs in =
      geopt::choose_check_inputs(geopt::ascend::op_registry(), geopt::import_onnx(dir / "unnamed.onnx"), 0);
  CHECK(in.describe() == "input_ids:0=1, input_ids:1=16, token_type_ids:0=1, token_type_ids:1=16");
  CHECK_FALSE(in.only_at_one);

  // A Reshape to [1, 1]: only S = 1 runs.
  geopt::test::save_model(geopt::test::parse_text_model(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N, S] x) => (float[1, 1] y) {
  s = Constant <value = int64[2] {1, 1}> ()
  y = Reshape(x, s)
})"),
                          dir / "one.onnx");
  geopt::CheckInputs one =
      geopt::choose_check_inputs(geopt::ascend::op_registry(), geopt::import_onnx(dir / "one.onnx"), 0);
  CHECK(one.only_at_one);
  CHECK(one.describe().find("N=1, S=1 (every larger size failed: checked at 1 only") == 0);
  auto r = run_cli({"optimize", (dir / "one.onnx").string()});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("checked at 1 only") != std::string::npos);
}
