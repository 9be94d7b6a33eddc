// INT8 post-training quantization (docs/PRECISION.md, "INT8"): `geopt quantize`
// calibrates a model on a folder of samples and writes it in ONNX's QDQ form; geopt's
// rules then fuse each quantized layer into one int8 kernel whose products are summed
// exactly in int32.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>

#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "eval/numerical_check.h"
#include "io/npy.h"
#include "kernels/int8_products.h"
#include "onnx/import.h"
#include "quantize/activation_range.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

const fs::path kResNet = test::examples_dir() / "resnet18_narrow_op13.onnx";
const fs::path kBert = test::examples_dir() / "bert_tiny_op17.onnx";

// `count` samples of random inputs (seeds from `seed`), as `geopt run --save-inputs` lays them out.
fs::path calibration_folder(const fs::path& model_path, size_t count, uint64_t seed, const std::string& tag) {
  const Model model = import_onnx(model_path);
  const fs::path dir = test::scratch_dir(tag);
  for (size_t i = 0; i < count; ++i) {
    const fs::path sample = dir / ("sample_" + std::to_string(i));
    fs::create_directories(sample);
    for (const auto& [name, t] : random_inputs(model, seed + i)) write_npy(sample / npy_file_name(name), t);
  }
  return dir;
}

// The lowest cosine, over the outputs, of `candidate` against `reference` on one random draw.
double output_cosine(const Model& reference, const Model& candidate, uint64_t seed) {
  const auto inputs = random_inputs(reference, seed);
  const OutputsDiff d = diff_outputs(Evaluator(candidate, ascend::op_registry()).run(inputs),
                                     Evaluator(reference, ascend::op_registry()).run(inputs), {1e9, 1e9});
  REQUIRE(d.mismatch.empty());
  double cosine = 1;
  for (const OutputError& e : d.per_output) cosine = std::min(cosine, e.cosine);
  return cosine;
}

// The node producing a node's input i, or null.
const Node* producer_of(const Node& n, size_t i) { return n.input(i) ? n.input(i)->producer() : nullptr; }

const dsl::RuleSet& rules() {
  static const auto r = test::load_rules({test::shipped_rules()});
  return *r;
}

}  // namespace

TEST_CASE("calibration: percentile and entropy ranges clip the outliers min-max keeps") {
  std::mt19937_64 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(200000);
  for (float& x : v) x = normal(rng);
  v[10] = 60.0f;  // a few outliers far past the bulk
  v[20] = -45.0f;
  quantize::ValueStats s;
  s.add_extremes(v.data(), static_cast<int64_t>(v.size()));
  s.add_to_histogram(v.data(), static_cast<int64_t>(v.size()));
  const auto minmax = s.range(quantize::CalibrationMethod::MinMax, 99.99, false, 128);
  CHECK(minmax.lo == doctest::Approx(-45.0f));
  CHECK(minmax.hi == doctest::Approx(60.0f));
  const auto percentile = s.range(quantize::CalibrationMethod::Percentile, 99.99, true, 128);
  CHECK(percentile.hi > 3.0f);  // keeps the bulk (99.99% of a unit normal lies within 3.9)
  CHECK(percentile.hi < 6.0f);
  CHECK(percentile.lo == -percentile.hi);
  const auto entropy = s.range(quantize::CalibrationMethod::Entropy, 99.99, false, 128);
  CHECK(entropy.hi > 2.0f);
  CHECK(entropy.hi < 20.0f);
  CHECK(entropy.lo < -2.0f);
  CHECK(entropy.lo > -20.0f);
}

TEST_CASE(
    "geopt quantize writes ResNet-18 in QDQ form with int8 per-channel weights, close to the float model") {
  const fs::path cal = calibration_folder(kResNet, 6, 100, "quantize-resnet-cal");
  const fs::path out = test::scratch_dir("quantize-resnet") / "int8.onnx";
  const test::CliResult r = test::run_cli({"quantize", kResNet.string(), "-o", out.string(), "--calibration",
                                           cal.string(), "--calibration-method", "entropy"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  // By default the stem, which reads the 3-channel image, stays in float.
  CHECK(r.out.find("20 of 21 quantized (Conv 19, Gemm 1); kept in float: Conv 1") != std::string::npos);
  CHECK(r.out.find("float: reads the input image") != std::string::npos);
  CHECK(r.err.find("calibrating: 6 step(s)") !=
        std::string::npos);  // the progress, one line per stage off a terminal

  const Model original = import_onnx(kResNet);
  const Model q = import_onnx(out);  // the ONNX checker and shape inference accept it
  size_t convs = 0, float_stems = 0;
  for (const auto& n : q.graph->nodes()) {
    if (n->op_type != "Conv" && n->op_type != "Gemm") continue;
    ++convs;
    const Node* x = producer_of(*n, 0);
    const Node* w = producer_of(*n, 1);
    if (!x) {  // the graph input itself: the stem, in float with its float weight
      ++float_stems;
      CHECK(q.graph->constant_value(n->input(1))->dtype == DType::F32);
      continue;
    }
    REQUIRE(w);
    CHECK(x->op_type == "DequantizeLinear");
    CHECK(producer_of(*x, 0)->op_type == "QuantizeLinear");
    CHECK(w->op_type == "DequantizeLinear");
    const Tensor* wq = q.graph->constant_value(w->input(0));
    REQUIRE(wq);
    CHECK(wq->dtype == DType::I8);
    const Tensor* scale = q.graph->constant_value(w->input(1));
    REQUIRE(scale);
    // One scale per output channel: Conv's axis 0, the Gemm's (transB) too.
    CHECK(scale->dims == std::vector<int64_t>{wq->dims[0]});
  }
  CHECK(convs == 21);
  CHECK(float_stems == 1);
  const double cosine = output_cosine(original, q, 7);  // a draw calibration did not see
  CHECK(cosine > 0.99);
  CHECK(cosine < 1.0);  // quantization changes the numbers
}

TEST_CASE("optimize fuses a QDQ model into int8 kernels and the plan computes what the QDQ model computes") {
  const fs::path cal = calibration_folder(kResNet, 4, 200, "fuse-resnet-cal");
  const fs::path q8 = test::scratch_dir("fuse-resnet") / "int8.onnx";
  REQUIRE(test::run_cli({"quantize", kResNet.string(), "-o", q8.string(), "--calibration", cal.string(),
                         "--quantize-image-convs", "--no-progress"})
              .exit_code == 0);
  const Model qdq = import_onnx(q8);
  const ascend::OptimizeResult r = ascend::optimize(qdq, rules(), ascend::load_profile("Ascend910B1"), {});
  // Every conv an int8 conv in NC1HWC0, int8 from layer to layer (the stem reads the
  // quantized image's 3 channels as NCHW); the head's pooled features leave NC1HWC0 once.
  CHECK(test::count_op(r.model, "FusedQuantConv") == 20);
  CHECK(test::count_op(r.model, "QuantConv") == 0);
  CHECK(test::count_op(r.model, "TransData") <= 1);
  CHECK(test::count_op(r.model, "QuantMatMul") == 1);
  const size_t dq_before = test::count_op(qdq, "DequantizeLinear");
  const size_t dq_after = test::count_op(r.model, "DequantizeLinear");
  CHECK(dq_before >
        21);  // each weight's and each quantized activation's (a block's input is shared by two convs)
  CHECK(dq_after <= dq_before / 5);  // at most 20% of the DequantizeLinears outside int8 kernels
  CHECK(r.after.latency_us < r.before.latency_us);
  // The integer kernels against the QDQ model's float arithmetic: equal but where a value
  // on a rounding tie of a later QuantizeLinear lands one step away.
  CHECK(output_cosine(qdq, r.model, 13) > 0.9999);
  const NumericalCheck c =
      check_same_outputs(ascend::op_registry(), qdq, r.model, tolerance_for(model_precision(qdq), {}));
  CHECK_MESSAGE(c.diff.within(), c.diff.worst);

  // The same through the CLI's compile: the plan executor runs the int8 kernels.
  const fs::path plan = test::scratch_dir("fuse-resnet-plan") / "int8.plan";
  const test::CliResult compiled = test::run_cli({"compile", q8.string(), "-o", plan.string()});
  INFO(compiled.out, compiled.err);
  CHECK(compiled.exit_code == 0);

  // `geopt run --profile` names what summed each int8 kernel's products on this machine:
  // oneDNN's int8 primitives where they are exact (VNNI, AMX), else geopt's exact loops.
  const test::CliResult ran = test::run_cli(
      {"run", plan.string(), "--random-inputs", "--profile", "--warmup", "0", "--repeat", "1", "--json"});
  INFO(ran.out, ran.err);
  REQUIRE(ran.exit_code == 0);
  const auto profile = nlohmann::json::parse(ran.out)["profile"];
  for (const char* op : {"ai.geopt::FusedQuantConv", "ai.geopt::QuantMatMul"}) {
    CAPTURE(op);
    REQUIRE(profile.contains(op));
    const auto& implementations = profile[op]["implementations"];
    REQUIRE(implementations.is_object());
    double calls = 0;
    for (const auto& item : implementations.items()) {
      const std::string name = item.key();  // (clang 14's doctest captures no structured binding)
      CAPTURE(name);
      CHECK(name.rfind(int8_primitives_exact() ? "oneDNN int8 " : "exact int32 loops", 0) == 0);
      calls += item.value().get<double>();
    }
    CHECK(calls == profile[op]["calls_per_run"].get<double>());
  }
}

TEST_CASE(
    "int8 convs in NC1HWC0 compute what the NCHW int8 kernels compute, requantized from layer to layer: "
    "uint8 and int8 activations") {
  // ResNet-18 (residual blocks, a strided stem, max pool, downsampling shortcuts) and
  // MobileNetV2 (depthwise convs, ReLU6, an unpadded channel count: 3 x 32 + 0) through
  // the blocked kernels and through the NCHW ones, the same QDQ model on the same inputs.
  // int8 activations are shifted into uint8 for oneDNN, and padding then reads their
  // zero point (128 once shifted), in the one pass that lays a blocked source out
  // channels last.
  for (const char* activations : {"uint8", "int8"})
    for (const fs::path& model : {kResNet, test::examples_dir() / "mobilenetv2_half_op17.onnx"}) {
      CAPTURE(model);
      CAPTURE(activations);
      const std::string name = model.stem().string() + "-" + activations;
      const fs::path cal = calibration_folder(model, 2, 500, model.stem().string() + "-blocked-cal");
      const fs::path q8 = test::scratch_dir(name + "-blocked") / "int8.onnx";
      REQUIRE(test::run_cli({"quantize", model.string(), "-o", q8.string(), "--calibration", cal.string(),
                             "--activation-type", activations, "--quantize-image-convs", "--no-progress"})
                  .exit_code == 0);
      const Model qdq = import_onnx(q8);
      const auto profile = ascend::load_profile("Ascend910B1");
      const ascend::OptimizeResult blocked = ascend::optimize(qdq, rules(), profile, {});
      auto nchw_rules = test::load_rules({test::shipped_rules()});
      for (const char* rule : {"QuantConvToNC1HWC0", "QuantConvResidualToNC1HWC0", "QuantizeNC1HWC0"})
        REQUIRE(nchw_rules->set_enabled(rule, false));
      const ascend::OptimizeResult nchw = ascend::optimize(qdq, *nchw_rules, profile, {});
      const size_t int8_convs = test::count_op(blocked.model, "FusedQuantConv");
      CHECK(int8_convs == test::count_op(qdq, "Conv"));
      CHECK(test::count_op(nchw.model, "QuantConv") == int8_convs);
      // The cost model prices the blocked int8 form lower: no conversions around each conv.
      CHECK(blocked.after.latency_us < 0.8 * nchw.after.latency_us);
      // The same sums, dequantized, requantized and pooled alike: only the float head's
      // summation order (a global pool over blocked or NCHW data) may differ.
      Tolerance close;
      close.atol = close.rtol = 1e-5;
      const NumericalCheck c = check_same_outputs(ascend::op_registry(), nchw.model, blocked.model, close, 3);
      CHECK_MESSAGE(c.diff.within(), c.diff.worst);
    }
}

TEST_CASE("BERT quantized with int8 activations: every projection an int8 QuantMatMul") {
  const fs::path cal = calibration_folder(kBert, 4, 300, "quantize-bert-cal");
  const fs::path q8 = test::scratch_dir("quantize-bert") / "int8.onnx";
  const test::CliResult r =
      test::run_cli({"quantize", kBert.string(), "-o", q8.string(), "--calibration", cal.string(),
                     "--activation-type", "int8", "--calibration-method", "percentile", "--no-progress"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Model original = import_onnx(kBert);
  const Model qdq = import_onnx(q8);
  CHECK(output_cosine(original, qdq, 9) > 0.99);
  for (const auto& n : qdq.graph->nodes())
    if (n->op_type == "QuantizeLinear")
      CHECK(qdq.graph->constant_value(n->input(2))->dtype == DType::I8);  // symmetric: int8 zero points
  const ascend::OptimizeResult o = ascend::optimize(qdq, rules(), ascend::load_profile("Ascend910B1"), {});
  const size_t layers = test::count_op(original, "MatMul") + test::count_op(original, "Gemm");
  const size_t quantized_weights = [&] {
    size_t n = 0;
    for (const auto& node : qdq.graph->nodes())
      n += node->op_type == "DequantizeLinear" && qdq.graph->constant_value(node->input(0));
    return n;
  }();
  CHECK(quantized_weights > 0);
  // The feed-forward and output projections are int8 kernels; Q, K and V may instead
  // be one merged float MatMul (QKVMerge) where the cost model prices that lower.
  CHECK(test::count_op(o.model, "QuantMatMul") >= quantized_weights / 2);
  CHECK(test::count_op(o.model, "DequantizeLinear") <= test::count_op(qdq, "DequantizeLinear") / 5);
  CHECK(quantized_weights <= layers);
  CHECK(output_cosine(qdq, o.model, 15) > 0.9999);
  const NumericalCheck c =
      check_same_outputs(ascend::op_registry(), qdq, o.model, tolerance_for(model_precision(qdq), {}));
  CHECK_MESSAGE(c.diff.within(), c.diff.worst);
}

TEST_CASE("quantize: --skip-layers, the sensitivity report and --accuracy-target") {
  const fs::path cal = calibration_folder(kResNet, 3, 400, "quantize-target-cal");
  const fs::path dir = test::scratch_dir("quantize-target");
  const Model original = import_onnx(kResNet);
  const std::string first_conv = [&] {
    for (const auto& n : original.graph->nodes())
      if (n->op_type == "Conv") return n->name;
    return std::string();
  }();
  REQUIRE_FALSE(first_conv.empty());

  SUBCASE("a skipped layer keeps its float weight and input") {
    const test::CliResult r =
        test::run_cli({"quantize", kResNet.string(), "-o", (dir / "skip.onnx").string(), "--calibration",
                       cal.string(), "--skip-layers", first_conv, "--no-progress"});
    REQUIRE(r.exit_code == 0);
    CHECK(r.out.find("20 of 21 quantized") != std::string::npos);
    CHECK(r.out.find("float: --skip-layers") != std::string::npos);
    const Model q = import_onnx(dir / "skip.onnx");
    const Node* conv = q.graph->find_node(first_conv);
    REQUIRE(conv);
    CHECK(producer_of(*conv, 0) == nullptr);  // the graph input itself
    CHECK(q.graph->constant_value(conv->input(1))->dtype == DType::F32);
  }
  SUBCASE("an unknown layer is refused by name") {
    const test::CliResult r = test::run_cli({"quantize", kResNet.string(), "-o", (dir / "bad.onnx").string(),
                                             "--calibration", cal.string(), "--skip-layers", "no_such_conv"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("--skip-layers 'no_such_conv' names no quantizable layer") != std::string::npos);
    CHECK(r.err.find(first_conv) != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "bad.onnx"));
  }
  SUBCASE("an accuracy target outside (0, 1] is refused") {
    const test::CliResult r = test::run_cli({"quantize", kResNet.string(), "-o", (dir / "bad.onnx").string(),
                                             "--calibration", cal.string(), "--accuracy-target", "0"});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("--accuracy-target") != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "bad.onnx"));
  }
  SUBCASE("the accuracy target keeps the most sensitive layers in float until the cosine reaches it") {
    const test::CliResult r =
        test::run_cli({"quantize", kResNet.string(), "-o", (dir / "target.onnx").string(), "--calibration",
                       cal.string(), "--accuracy-target", "0.999995", "--quantize-image-convs", "--json"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const auto j = nlohmann::json::parse(r.out);
    size_t kept = 0;
    double least_alone = 1, most_alone_kept = 0, least_alone_quantized = 1;
    for (const auto& l : j["layers"]) {
      REQUIRE(l.contains("alone"));  // the target measures each layer alone first
      const double alone = l["alone"]["cosine"];
      CHECK(alone <= 1.0);
      least_alone = std::min(least_alone, alone);
      if (!l["quantized"].get<bool>()) {
        ++kept;
        CHECK(l["kept_because"].get<std::string>().find("--accuracy-target") != std::string::npos);
        most_alone_kept = std::max(most_alone_kept, alone);
      } else {
        least_alone_quantized = std::min(least_alone_quantized, alone);
      }
    }
    CHECK(j["accuracy"]["cosine"].get<double>() >= 0.999995);
    CHECK(kept >= 1);
    CHECK(kept < 21);
    CHECK(most_alone_kept <= least_alone_quantized);  // the kept ones are the most sensitive
  }
}

TEST_CASE("quantize refuses a calibration folder that does not fit the model, naming the file") {
  const fs::path dir = test::scratch_dir("quantize-bad-cal");
  const fs::path out = dir / "int8.onnx";
  SUBCASE("no sample folders") {
    fs::create_directories(dir / "empty");
    const test::CliResult r = test::run_cli(
        {"quantize", kResNet.string(), "-o", out.string(), "--calibration", (dir / "empty").string()});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("holds no sample folders") != std::string::npos);
  }
  SUBCASE("a sample without the model's input") {
    fs::create_directories(dir / "cal" / "s0");
    write_npy(dir / "cal" / "s0" / "other.npy", HostTensor(DType::F32, {1, 3, 32, 32}));
    const test::CliResult r = test::run_cli(
        {"quantize", kResNet.string(), "-o", out.string(), "--calibration", (dir / "cal").string()});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find((dir / "cal" / "s0").string()) != std::string::npos);
    CHECK(r.err.find("missing") != std::string::npos);
  }
  SUBCASE("a sample of the wrong shape") {
    const Model m = import_onnx(kResNet);
    const std::string input = m.graph->inputs()[0]->name();
    fs::create_directories(dir / "cal2" / "s0");
    write_npy(dir / "cal2" / "s0" / npy_file_name(input), HostTensor(DType::F32, {1, 3, 8, 8}));
    const test::CliResult r = test::run_cli(
        {"quantize", kResNet.string(), "-o", out.string(), "--calibration", (dir / "cal2").string()});
    CHECK(r.exit_code == 1);
    CHECK(r.err.find("calibration sample 's0'") != std::string::npos);
  }
  CHECK_FALSE(fs::exists(out));
}

TEST_CASE("the int8 kernels sum exactly where 16-bit pair sums would saturate") {
  // K = 512 products of 255 x 127: a pair sum of u8 x s8 products is 64770, past int16,
  // which AVX2's maddubs saturates; the exact sum is 512 x 255 x 127 = 16581120.
  const std::string text = R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (uint8[2,512] x) => (float[2,3] y) {
      w = Constant <value = int8[512,3] {)" +
                           [] {
                             std::string v;
                             for (int i = 0; i < 512 * 3; ++i)
                               v += (i ? ", " : "") + std::string(i % 3 == 2 ? "-127" : "127");
                             return v;
                           }() +
                           R"(}> ()
      xs = Constant <value = float {0.5}> ()
      xz = Constant <value = uint8 {0}> ()
      ws = Constant <value = float[3] {1.0, 0.25, 2.0}> ()
      wz = Constant <value = int8[3] {0, 0, 0}> ()
      y = ai.geopt.QuantMatMul(x, w, xs, xz, ws, wz)
    })";
  const fs::path path = test::scratch_dir("quant-exact") / "m.onnx";
  test::save_model(test::parse_text_model(text.c_str()), path);
  const Model m = import_onnx(path);
  HostTensor x(DType::U8, {2, 512});
  for (int64_t i = 0; i < x.size(); ++i)
    x.mutable_data<uint8_t>()[i] = i < 512 ? 255 : static_cast<uint8_t>(i % 7);
  const NamedTensors out = Evaluator(m, ascend::op_registry()).run({{"x", x}});
  const float* y = out[0].second.data<float>();
  const double full = 512.0 * 255 * 127 * 0.5;
  CHECK(y[0] == doctest::Approx(full * 1.0).epsilon(1e-7));
  CHECK(y[1] == doctest::Approx(full * 0.25).epsilon(1e-7));
  CHECK(y[2] == doctest::Approx(-full * 2.0).epsilon(1e-7));
  double row1 = 0;
  for (int k = 0; k < 512; ++k) row1 += (512 + k) % 7;
  CHECK(y[3] == doctest::Approx(row1 * 127 * 0.5).epsilon(1e-7));
}

TEST_CASE("quantize converts a model below opset 13 with ONNX's version converter, its shapes folded first") {
  // Softmax before opset 13 works on a 2-D view: its converter needs the input's shape,
  // which a Reshape to a computed shape hides until geopt folds it.
  const char* text = R"(<ir_version: 7, opset_import: ["" : 11]>
    g (float[1,2,4,4] x) => (float[1,32] y) {
      w = Constant <value = float[2,2,1,1] {0.5, -1, 2, 0.25}> ()
      b = Constant <value = float[2] {0.1, -0.2}> ()
      c = Conv(x, w, b)
      s = Shape(c)
      i0 = Constant <value = int64[1] {0}> ()
      n = Gather(s, i0)
      m = Constant <value = int64[1] {-1}> ()
      t = Concat <axis = 0> (n, m)
      r = Reshape(c, t)
      y = Softmax <axis = 1> (r)
    })";
  const fs::path dir = test::scratch_dir("quantize-opset11");
  test::save_model(test::parse_text_model(text), dir / "m.onnx");
  const fs::path cal = calibration_folder(dir / "m.onnx", 3, 500, "quantize-opset11-cal");
  // Its one conv reads x (2 channels): by default it would stay float, and nothing be quantized.
  const test::CliResult refused = test::run_cli({"quantize", (dir / "m.onnx").string(), "-o",
                                                 (dir / "q.onnx").string(), "--calibration", cal.string()});
  CHECK(refused.exit_code == 1);
  CHECK(refused.err.find("every quantizable layer is a conv reading the input image") != std::string::npos);
  CHECK_FALSE(fs::exists(dir / "q.onnx"));
  const test::CliResult r =
      test::run_cli({"quantize", (dir / "m.onnx").string(), "-o", (dir / "q.onnx").string(), "--calibration",
                     cal.string(), "--quantize-image-convs", "--no-progress"});
  INFO(r.err);
  REQUIRE(r.exit_code == 0);
  const Model original = import_onnx(dir / "m.onnx");
  const Model q = import_onnx(dir / "q.onnx");
  CHECK(q.opset_version("") == 13);
  CHECK(test::count_op(q, "QuantizeLinear") == 1);
  for (const auto& n : q.graph->nodes())
    if (n->op_type == "DequantizeLinear" && q.graph->constant_value(n->input(0)))
      CHECK(q.graph->constant_value(n->input(1))->dims == std::vector<int64_t>{2});
  CHECK(output_cosine(original, q, 3) > 0.999);
}

namespace {

// The share of `images` a model classifies as `labels` says, and its predictions.
std::pair<double, std::vector<int64_t>> classify(const Model& m, const HostTensor& images,
                                                 const HostTensor& labels) {
  const NamedTensors out = Evaluator(m, ascend::op_registry()).run({{"image", images}});
  const HostTensor& logits = out[0].second;
  const int64_t n = logits.dim(0), classes = logits.dim(1);
  std::vector<int64_t> predicted(static_cast<size_t>(n));
  int64_t right = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* row = logits.data<float>() + i * classes;
    predicted[static_cast<size_t>(i)] = std::max_element(row, row + classes) - row;
    right += predicted[static_cast<size_t>(i)] == labels.int_at(i);
  }
  return {static_cast<double>(right) / static_cast<double>(n), predicted};
}

double agreement_of(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  size_t same = 0;
  for (size_t i = 0; i < a.size(); ++i) same += a[i] == b[i];
  return static_cast<double>(same) / static_cast<double>(a.size());
}

}  // namespace

TEST_CASE(
    "a trained CNN on real images keeps its accuracy in INT8, in QDQ form and in geopt's int8 kernels") {
  // examples/train_shapes.py: a small CNN trained on synthetic shapes, 20 training images
  // to calibrate with and 200 held-out images with their labels.
  const fs::path dir = fs::path(GEOPT_SOURCE_DIR_STR) / "examples" / "trained";
  const fs::path model_path = dir / "shapes_cnn_op13.onnx";
  const fs::path q8 = test::scratch_dir("quantize-trained") / "int8.onnx";
  for (const std::string method : {"auto", "minmax", "percentile", "entropy"}) {
    CAPTURE(method);
    const test::CliResult r =
        test::run_cli({"quantize", model_path.string(), "-o", q8.string(), "--calibration",
                       (dir / "shapes_cnn_op13" / "calibration").string(), "--calibration-method", method,
                       "--no-progress"});
    INFO(r.err);
    REQUIRE(r.exit_code == 0);
    const HostTensor images = read_npy(dir / "shapes_cnn_op13" / "test" / "image.npy");
    const HostTensor labels = read_npy(dir / "shapes_cnn_op13" / "test" / "labels.npy");
    const Model float_model = import_onnx(model_path);
    const Model qdq = import_onnx(q8);
    const auto [float_accuracy, float_predicted] = classify(float_model, images, labels);
    const auto [int8_accuracy, int8_predicted] = classify(qdq, images, labels);
    CHECK(float_accuracy >= 0.95);
    CHECK(int8_accuracy >= float_accuracy - 0.02);
    CHECK(agreement_of(float_predicted, int8_predicted) >= 0.97);
    const ascend::OptimizeResult o = ascend::optimize(qdq, rules(), ascend::load_profile("Ascend910B1"), {});
    // int8 convs in NC1HWC0; the first, on the image, in float by default
    CHECK(test::count_op(o.model, "FusedQuantConv") == 2);
    CHECK(test::count_op(o.model, "FusedConv") == 1);
    CHECK(test::count_op(o.model, "DequantizeLinear") == 0);
    const auto [fused_accuracy, fused_predicted] = classify(o.model, images, labels);
    CHECK(agreement_of(int8_predicted, fused_predicted) >= 0.99);  // the int8 kernels compute the QDQ model
    CHECK(fused_accuracy >= float_accuracy - 0.02);
  }
}
