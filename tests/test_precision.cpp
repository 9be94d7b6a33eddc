// ATC's precision modes computed (docs/PRECISION.md): the optimized graph carries the
// device's precision as half-precision values and Casts, the evaluator and the plan
// executor compute it (fp16 storage rounded to nearest even, kernels on f32 arithmetic),
// and each mode's outputs differ from the fp32 model by what that precision costs.
#include <doctest/doctest.h>

#include <filesystem>
#include <set>

#include "ascend/compile.h"
#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "ascend/precision_pass.h"
#include "dsl_support.h"
#include "eval/evaluator.h"
#include "eval/numerical_check.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

const ascend::HardwareProfile& profile() {
  static const ascend::HardwareProfile p = ascend::load_profile("Ascend910B1");
  return p;
}

const dsl::RuleSet& rules() {
  static const auto r = test::load_rules({test::shipped_rules()});
  return *r;
}

ascend::Precision precision(ascend::PrecisionMode mode,
                            std::shared_ptr<const ascend::MixList> list = nullptr) {
  ascend::Precision p;
  p.mode = mode;
  p.mix_list = std::move(list);
  return p;
}

ascend::OptimizeResult optimized(const Model& m, const ascend::Precision& p) {
  ascend::OptimizeOptions o;
  o.cost.precision = p;
  o.write_precision = true;
  return ascend::optimize(m, rules(), profile(), o);
}

// The worst output's figures against the fp32 model as given (max_rel: relative to the
// output's largest value).
struct Figures {
  double max_abs = 0, max_rel = 0, cosine = 1;
};

Figures error_of(const Model& original, const Model& changed) {
  NumericalCheck c = check_same_outputs(ascend::op_registry(), original, changed, {1e9, 1e9});
  REQUIRE(c.diff.mismatch.empty());
  REQUIRE_FALSE(c.diff.nan_mismatch);
  Figures e;
  for (const OutputError& o : c.diff.per_output) {
    e.max_abs = std::max(e.max_abs, o.max_abs);
    e.max_rel = std::max(e.max_rel, o.relative());
    e.cosine = std::min(e.cosine, o.cosine);
  }
  return e;
}

size_t values_of(const Model& m, DType t) {
  size_t n = 0;
  for (const auto& node : m.graph->nodes())
    for (const Value* v : node->outputs())
      if (v && v->type.dtype == t) ++n;
  return n;
}

// The dtype each node of this op type computes in (its first output's).
std::set<DType> dtypes_of(const Model& m, const std::string& op) {
  std::set<DType> out;
  for (const auto& node : m.graph->nodes())
    if (node->op_type == op && node->output(0)) out.insert(node->output(0)->type.dtype);
  return out;
}

Model bert() { return import_onnx((test::examples_dir() / "bert_tiny_op17.onnx").string()); }

}  // namespace

TEST_CASE(
    "precision: force_fp16 computes BERT in fp16, with the model's interface in fp32, and costs fp16's "
    "rounding") {
  const Model m = bert();
  ascend::OptimizeResult r = optimized(m, precision(ascend::PrecisionMode::ForceFp16));
  // Every float kernel in fp16; Casts only at the outputs and after the attention mask's
  // Cast from int64 (which keeps its f32: integers are not cast to fp16 directly).
  CHECK(r.precision.by_dtype.count("f32") == 0);
  CHECK(r.precision.by_dtype.at("f16") > 10);
  CHECK(r.precision.casts == m.graph->outputs().size() + 1);
  CHECK(values_of(r.model, DType::F16) > 20);
  for (const Value* out : r.model.graph->outputs()) CHECK(out->type.dtype == DType::F32);
  CHECK(dtypes_of(r.model, "FusedMatMul") == std::set<DType>{DType::F16});
  for (const Value* w : r.model.graph->initializers())  // each weight once, in fp16
    if (is_float(w->type.dtype)) CHECK(w->type.dtype == DType::F16);
  const Figures e = error_of(m, r.model);
  CHECK(e.max_abs > 1e-5);  // not computed in fp32
  CHECK(e.max_rel < 3e-2);
  CHECK(e.cosine > 0.9999);
}

TEST_CASE("precision: must_keep_origin_dtype changes no dtype and matches fp32") {
  const Model m = bert();
  ascend::OptimizeResult r = optimized(m, precision(ascend::PrecisionMode::MustKeepOriginDtype));
  CHECK(r.precision.casts == 0);
  CHECK(values_of(r.model, DType::F16) == 0);
  CHECK(error_of(m, r.model).max_abs < 1e-4);
}

TEST_CASE("precision: allow_mix_precision keeps the black list in fp32 and lands between fp32 and fp16") {
  const Model m = bert();
  ascend::OptimizeResult mix = optimized(m, precision(ascend::PrecisionMode::AllowMixPrecision));
  ascend::OptimizeResult fp16 = optimized(m, precision(ascend::PrecisionMode::ForceFp16));
  CHECK(dtypes_of(mix.model, "FusedMatMul") == std::set<DType>{DType::F16});   // white: the Cube's
  CHECK(dtypes_of(mix.model, "AddLayerNorm") == std::set<DType>{DType::F32});  // black
  CHECK(mix.precision.kept_f32.count("AddLayerNorm"));
  CHECK(mix.precision.casts > fp16.precision.casts);  // fp16 <-> fp32 at each black op
  const Figures e_mix = error_of(m, mix.model), e_fp16 = error_of(m, fp16.model);
  CHECK(e_mix.max_abs > 1e-6);
  CHECK(e_mix.max_abs < e_fp16.max_abs);
  CHECK(e_mix.max_rel < 1e-2);
}

TEST_CASE(
    "precision: --modify_mixlist moves ops between the lists, and a bad file is refused with its place") {
  const auto dir = test::scratch_dir("mixlist");
  test::write_file(dir / "gray.json", R"({"black-list": {"to-remove": ["AddLayerNorm", "LayerNorm"]}})");
  auto list = std::make_shared<const ascend::MixList>(ascend::load_mix_list((dir / "gray.json").string()));
  CHECK(list->classify("AddLayerNorm") == ascend::MixClass::Gray);
  CHECK(list->classify("Softmax") == ascend::MixClass::Black);
  ascend::OptimizeResult r = optimized(bert(), precision(ascend::PrecisionMode::AllowMixPrecision, list));
  CHECK(dtypes_of(r.model, "AddLayerNorm") == std::set<DType>{DType::F16});  // gray, after fp16 products

  test::write_file(dir / "white.json", R"({"white-list": {"to-add": ["Softmax"]}})");
  CHECK(ascend::load_mix_list((dir / "white.json").string()).classify("Softmax") == ascend::MixClass::White);

  auto refused = [&](const char* text) {
    test::write_file(dir / "bad.json", text);
    try {
      ascend::load_mix_list((dir / "bad.json").string());
    } catch (const geopt::Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  CHECK(refused("{\n  \"black-list\": {\"to-add\": [\"Softmax\",]}\n}").find("bad.json:2:") !=
        std::string::npos);
  CHECK(refused(R"({"black-list": {"to-add": ["Softmaxx"]}})").find("\"Softmaxx\"") != std::string::npos);
  CHECK(refused(R"({"blacklist": {}})").find("unknown list \"blacklist\"") != std::string::npos);
  CHECK(refused(R"({"black-list": {"add": ["Exp"]}})").find("unknown key \"add\"") != std::string::npos);
}

TEST_CASE(
    "precision: force_fp32 rounds the Cube's inputs to fp16 only, and allow_fp32_to_fp16 runs the Cube in "
    "fp16 and the rest in fp32") {
  const Model m = bert();
  ascend::OptimizeResult f32 = optimized(m, precision(ascend::PrecisionMode::ForceFp32));
  CHECK(dtypes_of(f32.model, "FusedMatMul") == std::set<DType>{DType::F32});
  CHECK(f32.precision.casts > 0);
  ascend::OptimizeResult cube = optimized(m, precision(ascend::PrecisionMode::AllowFp32ToFp16));
  CHECK(dtypes_of(cube.model, "FusedMatMul") == std::set<DType>{DType::F16});
  CHECK(dtypes_of(cube.model, "AddLayerNorm") == std::set<DType>{DType::F32});
  const Figures e32 = error_of(m, f32.model),
                e16 = error_of(m, optimized(m, precision(ascend::PrecisionMode::ForceFp16)).model);
  CHECK(e32.max_abs > 1e-6);
  CHECK(e32.max_abs < e16.max_abs);
  CHECK(error_of(m, cube.model).max_rel < 3e-2);
}

TEST_CASE("precision: bf16 keeps 8 bits, so allow_mix_precision_bf16 errs more than the fp16 mix") {
  const Model m = bert();
  const Figures bf = error_of(m, optimized(m, precision(ascend::PrecisionMode::AllowMixPrecisionBf16)).model);
  const Figures half = error_of(m, optimized(m, precision(ascend::PrecisionMode::AllowMixPrecision)).model);
  CHECK(bf.max_abs > half.max_abs);
  CHECK(bf.cosine > 0.999);
}

TEST_CASE("precision: an fp16 plan of a CNN keeps fp16 buffers and weights and passes its mode's check") {
  const Model m = import_onnx((test::examples_dir() / "resnet18_narrow_op13.onnx").string());
  auto compiled = [&](ascend::PrecisionMode mode) {
    ascend::CompileOptions o;
    o.rules = &rules();
    o.optimize.cost.precision = precision(mode);
    o.optimize.write_precision = true;
    return ascend::compile(m, profile(), o);
  };
  ascend::CompileResult half = compiled(ascend::PrecisionMode::ForceFp16);
  ascend::CompileResult full = compiled(ascend::PrecisionMode::MustKeepOriginDtype);
  CHECK(half.check_ok);
  CHECK(full.check_ok);
  REQUIRE(half.output_errors.size() == 1);
  CHECK(half.output_errors[0].max_abs > 1e-5);
  CHECK(half.output_errors[0].cosine > 0.999);
  CHECK(full.max_abs < 1e-4);
  // Activations and weights in half the bytes; the pool also holds the f32 input beside
  // its fp16 copy (the interface keeps its dtype), a large share at 64x64.
  CHECK(half.memory.pool_bytes * 4 < full.memory.pool_bytes * 3);
  CHECK(half.memory.weight_bytes * 20 < full.memory.weight_bytes * 11);
}

TEST_CASE(
    "precision: a mask constant beyond fp16's range saturates at -65504, so a fully masked row stays a "
    "number") {
  // torch's finfo(float32).min as the mask of padded positions.
  const auto dir = test::scratch_dir("precision_mask");
  test::save_model(test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 17]>
    masked (float[2, 4] x, float[2, 4] keep) => (float[2, 4] y) {
      one = Constant <value = float[1] {1.0}> ()
      dropped = Sub (one, keep)
      low = Constant <value = float[1] {-3.4e38}> ()
      mask = Mul (dropped, low)
      scores = Add (x, mask)
      y = Softmax <axis = -1> (scores)
    })"),
                   dir / "masked.onnx");
  const Model m = import_onnx((dir / "masked.onnx").string());
  Model half = m.clone();
  ascend::PrecisionReport report = ascend::apply_precision(half, precision(ascend::PrecisionMode::ForceFp16));
  CHECK(report.saturated == 1);
  Evaluator original(m, ascend::op_registry()), lowered(half, ascend::op_registry());
  std::map<std::string, HostTensor> feeds;
  feeds["x"] = HostTensor::from_vector<float>(DType::F32, {2, 4}, {0.5f, -1, 2, 0, 1, 1, 1, 1});
  feeds["keep"] =
      HostTensor::from_vector<float>(DType::F32, {2, 4}, {1, 1, 0, 1, 0, 0, 0, 0});  // row 1: all masked
  const OutputsDiff d = diff_outputs(lowered.run(feeds), original.run(feeds), {1e-3, 1e-3});
  CHECK_FALSE(d.nan_mismatch);
  CHECK(d.within());
}

TEST_CASE(
    "precision: the CLI takes ATC's names, reports the error per output, and refuses bf16 where the Cube has "
    "none") {
  const std::string model = (test::examples_dir() / "bert_tiny_op17.onnx").string();
  auto r = test::run_cli({"optimize", model, "--precision_mode", "allow_mix_precision"});
  CHECK(r.exit_code == 0);
  CHECK(r.out.find("kept in fp32: ") != std::string::npos);
  CHECK(r.out.find("cosine ") != std::string::npos);
  CHECK(r.out.find("tolerance 0.05 + 0.05") != std::string::npos);
  r = test::run_cli(
      {"optimize", model, "--precision_mode", "allow_mix_precision_bf16", "--soc-version", "Ascend310P3"});
  CHECK(r.exit_code == 1);
  CHECK(r.err.find("computes no bf16") != std::string::npos);
  r = test::run_cli({"optimize", model, "--precision_mode", "force_fp16", "--modify_mixlist", "x.json"});
  CHECK(r.exit_code == 2);  // options that contradict each other: a usage error
  CHECK(r.err.find("--modify_mixlist changes allow_mix_precision's lists") != std::string::npos);
}
