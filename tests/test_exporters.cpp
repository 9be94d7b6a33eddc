// The exporter zoo (examples/exporters.py): models in the idioms of tf2onnx, a torch
// fp16 export, onnxruntime's dynamic quantizer, torch's dynamo exporter at opset 18 and
// another builder's Ifs. Each, as a user runs it: `geopt run` matches ONNX
// Runtime's outputs (committed, examples/exporters_reference.sh) within what the model's
// precision allows, `geopt optimize` and `geopt compile` pass their default check, and the
// plan matches ONNX Runtime like the model does.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"

namespace geopt {
namespace {

namespace fs = std::filesystem;

// --input NAME=FILE for each of the model's reference inputs.
std::vector<std::string> input_args(const fs::path& model) {
  std::vector<std::string> args;
  for (const auto& e : fs::directory_iterator(model.parent_path() / model.stem() / "inputs"))
    args.push_back("--input"), args.push_back(e.path().stem().string() + "=" + e.path().string());
  return args;
}

// ONNX Runtime's results, allowed: fp32 models 1e-4 of the output's scale, an fp16 one
// fp16's 1e-2, a quantized one 5e-2 (a rounding tie moves a quantized step).
std::vector<std::string> compare_args(const fs::path& model) {
  const std::string name = model.stem().string();
  const std::string tol = name.rfind("fp16", 0) == 0                                               ? "1e-2"
                          : name.rfind("dynamic_int8", 0) == 0 || name.rfind("static_qdq", 0) == 0 ? "5e-2"
                                                                                                   : "1e-4";
  return {"--compare", (model.parent_path() / model.stem() / "outputs").string(), "--atol", tol, "--rtol",
          tol};
}

// What a user gives optimize and compile for a model with open input dims: the shapes of
// the inputs they feed (--input_shape) and those inputs for the check (--check-input: a
// scalar that picks an If's branch). Nothing for a model whose inputs are static.
std::vector<std::string> shape_args(const fs::path& model) {
  bool open = false;
  const Model m = import_onnx(model);
  for (const Value* v : m.graph->inputs())
    open = open || (!v->initializer && !(v->type.shape && v->type.shape->is_static()));
  if (!open) return {};
  std::vector<std::string> args;
  std::string shapes;
  for (const auto& e : fs::directory_iterator(model.parent_path() / model.stem() / "inputs")) {
    const std::string name = e.path().stem().string();
    const HostTensor t = read_npy(e.path());
    std::string dims;
    for (int64_t d : t.dims()) dims += (dims.empty() ? "" : ",") + std::to_string(d);
    if (t.rank() > 0) shapes += (shapes.empty() ? "" : ";") + name + ":" + dims;
    args.push_back("--check-input"), args.push_back(name + "=" + e.path().string());
  }
  if (!shapes.empty()) args.push_back("--input_shape"), args.push_back(shapes);
  return args;
}

std::vector<std::string> join(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

}  // namespace

// A sweep (CTest label `sweep`: the -Werror build only): under the sanitizers the int8
// kernels, the If pass and the check run in their own tests below and in test_integer_ops.
TEST_CASE(
    "the exporter zoo: each model runs as ONNX Runtime does, optimizes and compiles with the default check, "
    "and its plan matches ONNX Runtime" *
    doctest::test_suite("sweep")) {
  const auto models = test::exporter_models();
  REQUIRE(models.size() >= 5);
  const fs::path dir = test::scratch_dir("exporters");
  for (const fs::path& model : models) {
    INFO(model.filename().string());
    auto run = test::run_cli(join(join({"run", model.string()}, input_args(model)), compare_args(model)));
    CHECK_MESSAGE(run.exit_code == 0, run.out << run.err);
    const fs::path optimized = dir / (model.stem().string() + ".onnx");
    auto opt = test::run_cli(join({"optimize", model.string(), "-o", optimized.string()}, shape_args(model)));
    CHECK_MESSAGE(opt.exit_code == 0, opt.out << opt.err);
    auto opt_run =
        test::run_cli(join(join({"run", optimized.string()}, input_args(model)), compare_args(model)));
    CHECK_MESSAGE(opt_run.exit_code == 0, opt_run.out << opt_run.err);
    const fs::path plan = dir / (model.stem().string() + ".plan");
    auto compile = test::run_cli(join({"compile", model.string(), "-o", plan.string()}, shape_args(model)));
    CHECK_MESSAGE(compile.exit_code == 0, compile.out << compile.err);
    auto plan_run = test::run_cli(join(join({"run", plan.string()}, input_args(model)), compare_args(model)));
    CHECK_MESSAGE(plan_run.exit_code == 0, plan_run.out << plan_run.err);
  }
}

TEST_CASE("tf2onnx's CNNs fuse: every conv with its Pad and activation, the residual paths in NC1HWC0") {
  for (const char* name : {"tf_mobilenet_style", "tf_blazeface_style"}) {
    INFO(name);
    const fs::path model = test::exporters_dir() / (std::string(name) + ".onnx");
    auto opt =
        test::run_cli({"optimize", model.string(), "-o", (test::scratch_dir("tf") / "o.onnx").string()});
    REQUIRE(opt.exit_code == 0);
    // Left unfused: only the two NHWC Transposes at the edges.
    CHECK(opt.out.find("left unfused: Transpose 2\n") != std::string::npos);
  }
}

TEST_CASE(
    "onnxruntime's dynamic quantization fuses: each ConvInteger or MatMulInteger with its Cast, scales, bias "
    "and activation is one int8 kernel") {
  for (const char* name : {"dynamic_int8", "dynamic_int8_unet"}) {
    INFO(name);
    const fs::path model = test::exporters_dir() / (std::string(name) + ".onnx");
    const fs::path optimized = test::scratch_dir("int8") / "o.onnx";
    auto opt = test::run_cli({"optimize", model.string(), "-o", optimized.string()});
    REQUIRE(opt.exit_code == 0);
    const Model m = import_onnx(optimized);
    for (const char* op : {"ConvInteger", "MatMulInteger", "Cast", "Mul", "Add", "Relu"}) {
      INFO(op);
      CHECK(test::count_op(m, op) == 0);
    }
    CHECK(test::count_op(m, "QuantConv") + test::count_op(m, "QuantMatMul") > 0);
    CHECK(test::count_op(m, "DynamicQuantizeLinear") > 0);  // each activation's own range
  }
}

TEST_CASE(
    "onnxruntime's static quantization (QDQ) fuses: every conv, residual sum, activation, gate and pool on "
    "8-bit tensors in NC1HWC0, at most 10% of the QuantizeLinear and DequantizeLinear nodes left") {
  struct Case {
    const char* name;
    size_t sums, products, tables, conversions;
  };
  // ResNet: residual sums; MobileNetV2: sums, Clip removed; EfficientNet and MobileNetV3's
  // blocks: SiLU (x times a table of x: one table), gates (a table, a product), HardSwish
  // (a table), one sum. Every pool is 8-bit in NC1HWC0 (a squeeze-and-excitation gate's and the
  // head's): the one conversion is the head's pooled values' into the classifier.
  for (const Case& c : {Case{"static_qdq_resnet_u8", 2, 0, 0, 1}, Case{"static_qdq_mobilenet_s8", 2, 0, 0, 1},
                        Case{"static_qdq_efficientnet_u8", 1, 2, 8, 1}}) {
    const char* name = c.name;
    INFO(name);
    const fs::path model = test::exporters_dir() / (std::string(name) + ".onnx");
    const fs::path dir = test::scratch_dir("static-qdq");
    const fs::path optimized = dir / "o.onnx";
    auto opt = test::run_cli({"optimize", model.string(), "-o", optimized.string()});
    REQUIRE_MESSAGE(opt.exit_code == 0, opt.out << opt.err);
    const Model before = import_onnx(model);
    const Model after = import_onnx(optimized);
    auto qdq = [](const Model& m) {
      return test::count_op(m, "QuantizeLinear") + test::count_op(m, "DequantizeLinear");
    };
    INFO(opt.out);
    CHECK(qdq(after) * 10 <= qdq(before));
    // The sums, products and activations are 8-bit kernels; no float one is left.
    CHECK(test::count_op(after, "QuantAdd") == c.sums);
    CHECK(test::count_op(after, "QuantMul") == c.products);
    CHECK(test::count_op(after, "QuantLookup") == c.tables);
    for (const char* op :
         {"Conv", "Add", "Mul", "Relu", "Clip", "Sigmoid", "HardSigmoid", "HardSwish", "GlobalAveragePool"}) {
      INFO(op);
      CHECK(test::count_op(after, op) == 0);
    }
    CHECK(test::count_op(after, "FusedQuantConv") == test::count_op(before, "Conv"));
    CHECK(test::count_op(after, "TransData") == c.conversions);
    // The plan computes what ONNX Runtime does.
    const fs::path plan = dir / "p.plan";
    auto compile = test::run_cli({"compile", model.string(), "-o", plan.string()});
    REQUIRE_MESSAGE(compile.exit_code == 0, compile.out << compile.err);
    auto run = test::run_cli(join(join({"run", plan.string()}, input_args(model)), compare_args(model)));
    CHECK_MESSAGE(run.exit_code == 0, run.out << run.err);
  }
}

TEST_CASE(
    "an If whose branches give its output a shape each compiles (its readers move into the branches), and "
    "the "
    "plan runs either branch as the model does") {
  const fs::path model = test::exporters_dir() / "if_vad_like.onnx";
  const fs::path inputs = test::exporters_dir() / "if_vad_like" / "inputs";
  const fs::path dir = test::scratch_dir("if_branches");
  const fs::path plan = dir / "if.plan";
  auto compile = test::run_cli({"compile", model.string(), "-o", plan.string(), "--input_shape",
                                "audio:1,2048", "--check-input", "sr=" + (inputs / "sr.npy").string()});
  REQUIRE_MESSAGE(compile.exit_code == 0, compile.out << compile.err);
  for (int64_t rate : {16000, 8000}) {  // 4 frames of 512 samples, or 8 of 256
    INFO(rate);
    write_npy(dir / "sr.npy", HostTensor::scalar<int64_t>(DType::I64, rate));
    auto run = test::run_cli({"run", plan.string(), "--input", "audio=" + (inputs / "audio.npy").string(),
                              "--input", "sr=" + (dir / "sr.npy").string(), "--compare", model.string()});
    CHECK_MESSAGE(run.exit_code == 0, run.out << run.err);
  }
}

TEST_CASE(
    "onnxruntime's static quantization (QDQ) of a transformer layer fuses: every product, sum, Softmax, "
    "norm, scale and GELU on 8-bit tensors, the plan as ONNX Runtime computes it") {
  const fs::path model = test::exporters_dir() / "static_qdq_transformer_u8.onnx";
  const fs::path dir = test::scratch_dir("static-qdq-transformer");
  const fs::path optimized = dir / "o.onnx";
  auto opt = test::run_cli({"optimize", model.string(), "-o", optimized.string()});
  REQUIRE_MESSAGE(opt.exit_code == 0, opt.out << opt.err);
  INFO(opt.out);
  const Model before = import_onnx(model);
  const Model after = import_onnx(optimized);
  // Left: the input's QuantizeLinear and the last norm's DequantizeLinear (its output is float).
  CHECK(test::count_op(after, "QuantizeLinear") == 1);
  CHECK(test::count_op(after, "DequantizeLinear") == 1);
  for (const char* op : {"MatMul", "Add", "Mul", "Div", "Erf", "Softmax"}) {
    INFO(op);
    CHECK(test::count_op(after, op) == 0);
  }
  // Six projections against int8 weights, the scores and context between two 8-bit
  // activations, the projections' bias sums and two residual sums, one 8-bit Softmax and
  // norm, and two tables: the scores' 1/sqrt(d), and GELU (erf, 1 + erf, x times it, half).
  CHECK(test::count_op(after, "QuantMatMul") == 6);
  CHECK(test::count_op(after, "QLinearMatMul") == 2);
  CHECK(test::count_op(after, "QuantAdd") == 8);
  CHECK(test::count_op(after, "QuantSoftmax") == 1);
  CHECK(test::count_op(after, "QuantLayerNorm") == 1);
  CHECK(test::count_op(after, "QuantLookup") == 2);
  CHECK(test::count_op(before, "DequantizeLinear") + test::count_op(before, "QuantizeLinear") == 78);
  // The plan computes what ONNX Runtime does.
  const fs::path plan = dir / "p.plan";
  auto compile = test::run_cli({"compile", model.string(), "-o", plan.string()});
  REQUIRE_MESSAGE(compile.exit_code == 0, compile.out << compile.err);
  auto run = test::run_cli(join(join({"run", plan.string()}, input_args(model)), compare_args(model)));
  CHECK_MESSAGE(run.exit_code == 0, run.out << run.err);
}

}  // namespace geopt
