// Calibration that holds on data it was not tuned on (docs/PRECISION.md, "INT8"): the
// range method chosen per tensor by the quantization error of what calibration saw, bias
// correction of each quantized layer's mean shift, and a held-out split that judges.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <random>

#include "ascend/device_ops/device_ops.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "quantize/activation_range.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

quantize::ValueStats stats_of(const std::vector<float>& v) {
  quantize::ValueStats s;
  s.add_extremes(v.data(), static_cast<int64_t>(v.size()));
  s.add_to_histogram(v.data(), static_cast<int64_t>(v.size()));
  return s;
}

// Samples of input `name` with `rows` x `cols` values: uniform in [0, 1), and one value
// in every `tail_every` far out at `tail` (the tail percentile calibration clips).
fs::path tailed_samples(const std::string& tag, const std::string& name, std::vector<int64_t> dims,
                        size_t count, float tail, int64_t tail_every) {
  const fs::path dir = test::scratch_dir(tag);
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  for (size_t i = 0; i < count; ++i) {
    HostTensor t(DType::F32, dims);
    for (int64_t e = 0; e < t.size(); ++e)
      t.mutable_data<float>()[e] = e % tail_every == 3 ? tail * (0.5f + uniform(rng)) : uniform(rng);
    fs::create_directories(dir / ("s" + std::to_string(i)));
    write_npy(dir / ("s" + std::to_string(i)) / npy_file_name(name), t);
  }
  return dir;
}

// Per output channel (`axis`), the mean over every sample of `model`'s first output.
// Each sample folder holds NAME.npy per input.
std::vector<double> output_channel_means(const Model& model, const fs::path& samples, int64_t axis) {
  const Evaluator evaluator(model, ascend::op_registry());
  std::vector<double> sums;
  double per_channel = 0;
  for (const auto& sample : fs::directory_iterator(samples)) {
    std::map<std::string, HostTensor> inputs;
    for (const auto& f : fs::directory_iterator(sample.path()))
      inputs.emplace(f.path().stem().string(), read_npy(f.path()));
    const HostTensor y = evaluator.run(inputs)[0].second;
    const int64_t channels = y.dim(static_cast<size_t>(axis));
    int64_t inner = 1;
    for (size_t a = static_cast<size_t>(axis) + 1; a < y.rank(); ++a) inner *= y.dim(a);
    sums.resize(static_cast<size_t>(channels), 0.0);
    for (int64_t e = 0; e < y.size(); ++e)
      sums[static_cast<size_t>(e / inner % channels)] += y.data<float>()[e];
    per_channel += static_cast<double>(y.size() / channels);
  }
  for (double& s : sums) s /= per_channel;
  return sums;
}

double largest_difference(const std::vector<double>& a, const std::vector<double>& b) {
  REQUIRE(a.size() == b.size());
  double d = 0;
  for (size_t i = 0; i < a.size(); ++i) d = std::max(d, std::fabs(a[i] - b[i]));
  return d;
}

// `geopt quantize` of `model` with `extra` options; the written model. The test models'
// convs read their input directly: --quantize-image-convs quantizes those of <= 4 channels too.
Model quantized(const fs::path& model, const fs::path& samples, const std::string& tag,
                std::vector<std::string> extra) {
  const fs::path out = test::scratch_dir(tag) / "int8.onnx";
  std::vector<std::string> args = {"quantize",      model.string(),          "-o",
                                   out.string(),    "--calibration",         samples.string(),
                                   "--no-progress", "--quantize-image-convs"};
  args.insert(args.end(), extra.begin(), extra.end());
  const test::CliResult r = test::run_cli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  return import_onnx(out);
}

// How far output 0's per-channel means land from the float model's over `samples` once
// quantized with the 98th percentile (the tail clipped), without bias correction and with
// it; and the corrected model.
struct MeanShift {
  double uncorrected = 0, corrected = 0;
  Model corrected_model;
};

MeanShift mean_shift(const fs::path& model, const fs::path& samples, const std::string& tag) {
  const std::vector<std::string> clip = {"--calibration-method", "percentile", "--percentile", "98"};
  std::vector<std::string> plain = clip;
  plain.push_back("--no-bias-correction");
  MeanShift m;
  m.corrected_model = quantized(model, samples, tag + "-corrected", clip);
  const auto reference = output_channel_means(import_onnx(model), samples, 1);
  m.uncorrected = largest_difference(
      output_channel_means(quantized(model, samples, tag + "-plain", plain), samples, 1), reference);
  m.corrected = largest_difference(output_channel_means(m.corrected_model, samples, 1), reference);
  return m;
}

}  // namespace

TEST_CASE("calibration: auto picks, per tensor, the range that quantizes the values with the least error") {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  // Two outliers far past the bulk in two million values: min-max would spend its steps on
  // them. (In two hundred thousand, keeping them costs less squared error than clipping
  // them, and auto keeps them: the error counts every value alike.)
  std::vector<float> tailed(2000000);
  for (float& x : tailed) x = normal(rng);
  tailed[10] = 60.0f;
  tailed[20] = -45.0f;
  const quantize::ValueStats t = stats_of(tailed);
  using M = quantize::CalibrationMethod;
  const auto auto_range = t.range(M::Auto, 99.99, false, 128);
  CHECK(t.chosen_method(M::Auto, 99.99, false, 128) != M::MinMax);
  CHECK(auto_range.hi < 20.0f);
  CHECK(auto_range.hi > 3.0f);
  CHECK(t.quantization_error(auto_range, false) <
        t.quantization_error(t.range(M::MinMax, 99.99, false, 128), false));
  const quantize::ValueStats fewer = stats_of(std::vector<float>(tailed.begin(), tailed.begin() + 200000));
  CHECK(fewer.chosen_method(M::Auto, 99.99, false, 128) == M::MinMax);

  // Values spread evenly up to their maximum (no tail): clipping only loses, and auto keeps
  // the whole range, where percentile cuts the top.
  std::uniform_real_distribution<float> uniform(0.0f, 1.0f);
  std::vector<float> flat(200000);
  for (float& x : flat) x = uniform(rng);
  const quantize::ValueStats f = stats_of(flat);
  const auto flat_auto = f.range(M::Auto, 99.0, false, 255);
  CHECK(flat_auto.hi == doctest::Approx(f.extremes().hi));
  CHECK(f.range(M::Percentile, 99.0, false, 255).hi < 0.999f);
  // The error of a range holding every value is rounding's alone: step^2 / 12.
  const double step = f.extremes().hi / 255.0;
  CHECK(f.quantization_error({0.0f, f.extremes().hi}, false) ==
        doctest::Approx(step * step / 12).epsilon(0.01));
}

TEST_CASE("bias correction: a quantized MatMul's output channels keep the float model's means") {
  // Percentile calibration clips the activation's tail, which moves every output channel's
  // mean; the Add's bias takes the shift back. For a MatMul the correction is exact.
  const fs::path dir = test::scratch_dir("bias-matmul");
  std::string weights, bias;
  std::mt19937_64 rng(3);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 16 * 8; ++i) weights += (i ? ", " : "") + std::to_string(normal(rng));
  for (int i = 0; i < 8; ++i) bias += (i ? ", " : "") + std::to_string(0.1 * i);
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4,16] x) => (float[4,8] y) {
      w = Constant <value = float[16,8] {)" +
                           weights + R"(}> ()
      b = Constant <value = float[8] {)" +
                           bias + R"(}> ()
      m = MatMul(x, w)
      y = Add(m, b)
    })";
  test::save_model(test::parse_text_model(text.c_str()), dir / "m.onnx");
  const fs::path samples = tailed_samples("bias-matmul-cal", "x", {4, 16}, 8, 30.0f, 67);
  const MeanShift shift = mean_shift(dir / "m.onnx", samples, "bias-matmul");
  CHECK(shift.uncorrected > 0.05);  // the clipped tail shifted the means
  CHECK(shift.corrected < 1e-4);    // and the corrected bias takes the whole shift back
}

TEST_CASE("bias correction: a depthwise conv's channel means come back, and a conv without a bias gets one") {
  // Nine weights per channel round with a bias of their own, and the activation's tail is
  // clipped; a valid 3x3 window over 64 x 64 reads all but the border pixels equally often.
  const fs::path dir = test::scratch_dir("bias-conv");
  std::string weights;
  std::mt19937_64 rng(9);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int i = 0; i < 4 * 9; ++i) weights += (i ? ", " : "") + std::to_string(normal(rng));
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,64,64] x, float[2,8] z) => (float[1,4,62,62] y, float[2,3] u) {
      w = Constant <value = float[4,1,3,3] {)" +
                           weights + R"(}> ()
      y = Conv <group = 4> (x, w)
      v = Constant <value = float[8,3] {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4, 5, 6}> ()
      u = MatMul(z, v)
    })";
  test::save_model(test::parse_text_model(text.c_str()), dir / "m.onnx");
  const fs::path samples = tailed_samples("bias-conv-cal", "x", {1, 4, 64, 64}, 8, 30.0f, 67);
  // z as well: the MatMul reads it.
  for (const auto& s : fs::directory_iterator(samples)) {
    HostTensor z(DType::F32, {2, 8});
    for (int64_t e = 0; e < z.size(); ++e) z.mutable_data<float>()[e] = static_cast<float>(e % 5) * 0.3f;
    write_npy(s.path() / npy_file_name("z"), z);
  }
  const MeanShift shift = mean_shift(dir / "m.onnx", samples, "bias-conv");
  const Model& corrected = shift.corrected_model;
  for (const auto& n : corrected.graph->nodes())
    if (n->op_type == "Conv") {
      REQUIRE(n->input(2));
      CHECK(corrected.graph->constant_value(n->input(2))->dims == std::vector<int64_t>{4});
    }

  // The conv's output (the first): the window's edges read the border pixels less often
  // than the means count them, so the correction is close, not exact.
  CHECK(shift.uncorrected > 0.05);
  CHECK(shift.corrected < shift.uncorrected / 5);
  const fs::path json_out = test::scratch_dir("bias-conv-json") / "q.onnx";
  const test::CliResult r = test::run_cli(
      {"quantize", (dir / "m.onnx").string(), "-o", json_out.string(), "--calibration", samples.string(),
       "--json", "--calibration-method", "percentile", "--percentile", "98", "--quantize-image-convs"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  size_t shifted = 0, left = 0;
  for (const auto& l : j["layers"]) {
    if (l.contains("bias_shift")) ++shifted;
    if (l.contains("bias_not_corrected")) {
      ++left;
      CHECK(l["bias_not_corrected"].get<std::string>().find("not read by one Add") != std::string::npos);
    }
  }
  CHECK(shifted == 1);  // the conv
  CHECK(left == 1);     // the MatMul, whose output no Add reads
}

TEST_CASE(
    "--holdout: the held-out samples set no range and judge the accuracy target, and the report says so") {
  // examples/train_shapes.py's CNN and its 20 calibration images: 15 calibrate, 5 judge.
  const fs::path dir = fs::path(GEOPT_SOURCE_DIR_STR) / "examples" / "trained";
  const fs::path out = test::scratch_dir("holdout") / "int8.onnx";
  const std::vector<std::string> base = {"quantize",
                                         (dir / "shapes_cnn_op13.onnx").string(),
                                         "-o",
                                         out.string(),
                                         "--calibration",
                                         (dir / "shapes_cnn_op13" / "calibration").string(),
                                         "--no-progress",
                                         "--quantize-image-convs",
                                         "--holdout",
                                         "0.25"};
  std::vector<std::string> args = base;
  args.insert(args.end(), {"--accuracy-target", "0.9999", "--json"});
  const test::CliResult r = test::run_cli(args);
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["calibration"]["samples"] == 15);
  CHECK(j["calibration"]["held_out_samples"] == 5);
  REQUIRE(j["accuracy"].contains("held_out"));
  const double held_out = j["accuracy"]["held_out"]["cosine"].get<double>();
  CHECK(held_out > 0.9);
  CHECK(held_out <= 1.0);
  size_t kept = 0;
  for (const auto& l : j["layers"])
    if (!l["quantized"].get<bool>()) {
      ++kept;
      CHECK(l["kept_because"].get<std::string>().find("(held out)") != std::string::npos);
    }
  // The target is met on the held-out split, or every layer is kept trying.
  CHECK((held_out >= 0.9999 || kept == j["layers"].size()));

  // The held-out images set no range: the 15 others alone give the same ranges. The split
  // spreads the 5 over the folder's order: round((j + 0.5) x 20 / 5) for j < 5.
  const fs::path fifteen = test::scratch_dir("holdout-fifteen");
  std::vector<fs::path> samples;
  for (const auto& e : fs::directory_iterator(dir / "shapes_cnn_op13" / "calibration"))
    samples.push_back(e.path());
  std::sort(samples.begin(), samples.end());
  REQUIRE(samples.size() == 20);
  for (size_t i = 0; i < samples.size(); ++i)
    if (i % 4 != 2) fs::copy(samples[i], fifteen / samples[i].filename(), fs::copy_options::recursive);
  const test::CliResult alone =
      test::run_cli({"quantize", (dir / "shapes_cnn_op13.onnx").string(), "-o", out.string(), "--calibration",
                     fifteen.string(), "--no-progress", "--quantize-image-convs", "--json"});
  REQUIRE(alone.exit_code == 0);
  const auto a = nlohmann::json::parse(alone.out);
  REQUIRE(a["layers"].size() == j["layers"].size());
  for (size_t i = 0; i < a["layers"].size(); ++i) CHECK(a["layers"][i]["range"] == j["layers"][i]["range"]);

  const test::CliResult text = test::run_cli(base);
  REQUIRE(text.exit_code == 0);
  CHECK(text.out.find("15 sample(s) and 5 held out") != std::string::npos);
  CHECK(text.out.find("on the 5 held-out sample(s), which set no range") != std::string::npos);

  std::vector<std::string> too_many = base;
  too_many.back() = "0.7";
  const test::CliResult refused = test::run_cli(too_many);
  CHECK(refused.exit_code == 2);
  CHECK(refused.err.find("--holdout") != std::string::npos);
}

TEST_CASE("bias correction: a Gemm's C (transposed B, alpha, beta) exactly, a grouped conv's B closely") {
  const fs::path dir = test::scratch_dir("bias-gemm");
  std::mt19937_64 rng(17);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  auto values = [&](int n) {
    std::string v;
    for (int i = 0; i < n; ++i) v += (i ? ", " : "") + std::to_string(normal(rng));
    return v;
  };
  // y = 0.5 x W^T + 2 C: the shift is scaled by alpha and C moves by it over beta.
  const std::string gemm = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4,16] x) => (float[4,8] y) {
      w = Constant <value = float[8,16] {)" +
                           values(8 * 16) + R"(}> ()
      c = Constant <value = float[1,8] {)" +
                           values(8) + R"(}> ()
      y = Gemm <transB = 1, alpha = 0.5, beta = 2.0> (x, w, c)
    })";
  test::save_model(test::parse_text_model(gemm.c_str()), dir / "gemm.onnx");
  const fs::path gemm_samples = tailed_samples("bias-gemm-cal", "x", {4, 16}, 8, 30.0f, 67);
  const MeanShift gemm_shift = mean_shift(dir / "gemm.onnx", gemm_samples, "bias-gemm");
  CHECK(gemm_shift.uncorrected > 0.05);
  CHECK(gemm_shift.corrected < 1e-4);
  // Two groups of two input channels: output channel o reads input channels 2 (o / 2) and
  // 2 (o / 2) + 1.
  const std::string grouped = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,4,64,64] x) => (float[1,4,62,62] y) {
      w = Constant <value = float[4,2,3,3] {)" +
                              values(4 * 2 * 9) + R"(}> ()
      y = Conv <group = 2> (x, w)
    })";
  test::save_model(test::parse_text_model(grouped.c_str()), dir / "grouped.onnx");
  const fs::path conv_samples = tailed_samples("bias-grouped-cal", "x", {1, 4, 64, 64}, 8, 30.0f, 67);
  const MeanShift conv_shift = mean_shift(dir / "grouped.onnx", conv_samples, "bias-grouped");
  CHECK(conv_shift.uncorrected > 0.05);
  CHECK(conv_shift.corrected < conv_shift.uncorrected / 5);
}
