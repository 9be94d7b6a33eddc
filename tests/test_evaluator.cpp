// The reference evaluator on the committed example models (against torch's
// outputs) and its input checks.
#include <doctest/doctest.h>

#include <cmath>

#include "ascend/device_ops/device_ops.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

double max_abs_diff(const HostTensor& a, const HostTensor& b) {
  REQUIRE(a.dims() == b.dims());
  double worst = 0;
  for (int64_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a.real_at(i) - b.real_at(i)));
  return worst;
}

}  // namespace

TEST_CASE("every example model matches torch's reference output within 1e-4") {
  int checked = 0;
  for (const auto& path : test::example_models()) {
    fs::path ref = path.parent_path() / path.stem();
    if (!fs::is_directory(ref)) continue;  // the external-data copy shares resnet18's reference
    SUBCASE(path.filename().string().c_str()) {
      Model model = import_onnx(path);
      Evaluator ev(model, ascend::op_registry());
      NamedTensors outs = ev.run(read_npy_folder(ref / "inputs"));
      auto want = read_npy_folder(ref / "outputs");
      REQUIRE(outs.size() == want.size());
      for (const auto& [name, got] : outs) {
        const std::string& output = name;  // a lambda (INFO) cannot name a structured binding in clang 14
        INFO("output " << output);
        REQUIRE(want.count(name));
        CHECK(max_abs_diff(got, want.at(name)) <= 1e-4);
      }
    }
    ++checked;
  }
  CHECK(checked == 14);
}

TEST_CASE("the dynamic-sequence model runs at other sequence lengths") {
  Model model = import_onnx(test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx");
  Evaluator ev(model, ascend::op_registry());
  for (int64_t seq : {1, 7, 33}) {
    auto feeds = random_inputs(model, 5, {{"batch", 2}, {"seq", seq}});
    NamedTensors outs = ev.run(feeds);
    CHECK(outs[0].second.dims() == std::vector<int64_t>{2, seq, 64});
    CHECK(outs[1].second.dims() == std::vector<int64_t>{2, 64});
  }
}

TEST_CASE("bad inputs get clear errors") {
  Model model = import_onnx(test::examples_dir() / "bert_tiny_dynamic_seq_op17.onnx");
  Evaluator ev(model, ascend::op_registry());
  auto good = random_inputs(model, 1, {{"seq", 8}});

  auto missing = good;
  missing.erase("attention_mask");
  CHECK_THROWS_WITH_AS(ev.run(missing), doctest::Contains("input 'attention_mask' is missing"), Error);

  auto extra = good;
  extra["input_idz"] = good.at("input_ids");
  CHECK_THROWS_WITH_AS(ev.run(extra), doctest::Contains("input 'input_idz' is not an input of the model"),
                       Error);

  auto wrong_type = good;
  wrong_type["input_ids"] = HostTensor(DType::F32, {1, 8});
  CHECK_THROWS_WITH_AS(ev.run(wrong_type),
                       doctest::Contains("input 'input_ids': expected dtype i64, got f32"), Error);

  auto wrong_rank = good;
  wrong_rank["input_ids"] = HostTensor(DType::I64, {8});
  CHECK_THROWS_WITH_AS(ev.run(wrong_rank), doctest::Contains("expected shape [batch,seq], got i64[8]"),
                       Error);

  auto inconsistent = good;
  inconsistent["attention_mask"] = HostTensor(DType::I64, {1, 9});
  CHECK_THROWS_WITH_AS(ev.run(inconsistent),
                       doctest::Contains("('seq') is 9, but input 'input_ids' set it to 8"), Error);

  Model fixed = import_onnx(test::examples_dir() / "resnet18_narrow_op13.onnx");
  Evaluator fev(fixed, ascend::op_registry());
  CHECK_THROWS_WITH_AS(fev.run({{"image", HostTensor(DType::F32, {1, 3, 64, 65})}}),
                       doctest::Contains("input 'image': expected shape [1,3,64,64], got f32[1,3,64,65]"),
                       Error);
}

TEST_CASE("a model with an op that has no kernel is refused up front, naming it") {
  onnx::ModelProto m = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13, "com.example" : 1]>
    g (float[4] x, bool c) => (float[4] y, float[4] z) {
      y = com.example.Frobnicate(x)
      z = If(c) <then_branch = t () => (float[4] a) { a = com.example.Twiddle(x) },
                 else_branch = e () => (float[4] b) { b = Identity(x) }>
    })");
  m.mutable_graph()->mutable_node(0)->set_name("the_frob");
  fs::path p = test::scratch_dir("nokernel") / "m.onnx";
  test::save_model(m, p);
  Model model = import_onnx(p, {.infer_shapes = false, .input_shapes = {}});
  // Ops inside control-flow bodies are found before anything runs, too.
  CHECK_THROWS_WITH_AS(
      Evaluator(model, ascend::op_registry()),
      doctest::Contains(
          "no kernel for:\n  com.example::Frobnicate (e.g. com.example::Frobnicate 'the_frob')"),
      Error);
  CHECK_THROWS_WITH_AS(Evaluator(model, ascend::op_registry()),
                       doctest::Contains("com.example::Twiddle (in a body of If"), Error);
}

TEST_CASE("npy files round-trip and bad ones are rejected") {
  fs::path dir = test::scratch_dir("npy");
  HostTensor t = HostTensor::from_vector<float>(DType::F32, {2, 3}, {1, 2, 3, 4, 5, 6});
  write_npy(dir / "t.npy", t);
  HostTensor back = read_npy(dir / "t.npy");
  CHECK(back.dims() == t.dims());
  CHECK(back.to_vector<float>() == t.to_vector<float>());
  HostTensor s = HostTensor::scalar<int64_t>(DType::I64, 42);
  write_npy(dir / "s.npy", s);
  CHECK(read_npy(dir / "s.npy").to_vector<int64_t>() == std::vector<int64_t>{42});
  // numpy wrote these reference files: read one whose values we know.
  HostTensor ids = read_npy(test::examples_dir() / "bert_tiny_op13" / "inputs" / "attention_mask.npy");
  CHECK(ids.dtype() == DType::I64);
  CHECK(ids.dims() == std::vector<int64_t>{1, 16});
  CHECK(ids.int_at(0) == 1);
  CHECK(ids.int_at(15) == 0);

  test::write_file(dir / "bad.npy", "not numpy at all");
  CHECK_THROWS_WITH_AS(read_npy(dir / "bad.npy"), doctest::Contains("bad magic"), Error);
  std::string truncated = test::read_file(dir / "t.npy");
  test::write_file(dir / "cut.npy", truncated.substr(0, truncated.size() - 4));
  CHECK_THROWS_WITH_AS(read_npy(dir / "cut.npy"), doctest::Contains("data bytes"), Error);
}

TEST_CASE("f16 models compute in f32 and round back, close to the f32 model") {
  const char* f16 = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float16[4,8] a, float16[8,3] w, float16[3] b) => (float16[4,3] y) {
      m = MatMul(a, w)
      s = Add(m, b)
      y = Relu(s)
    })";
  const char* f32 = R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[4,8] a, float[8,3] w, float[3] b) => (float[4,3] y) {
      m = MatMul(a, w)
      s = Add(m, b)
      y = Relu(s)
    })";
  fs::path dir = test::scratch_dir("f16");
  test::save_model(test::parse_text_model(f16), dir / "h.onnx");
  test::save_model(test::parse_text_model(f32), dir / "f.onnx");
  Model mh = import_onnx(dir / "h.onnx"), mf = import_onnx(dir / "f.onnx");
  auto feeds_h = random_inputs(mh, 9);
  std::map<std::string, HostTensor> feeds_f;
  for (const auto& [name, t] : feeds_h) {  // the same values, widened
    HostTensor w(DType::F32, t.dims());
    for (int64_t i = 0; i < t.size(); ++i) w.mutable_data<float>()[i] = static_cast<float>(t.real_at(i));
    feeds_f[name] = w;
  }
  HostTensor yh = Evaluator(mh, ascend::op_registry()).run(feeds_h)[0].second;
  HostTensor yf = Evaluator(mf, ascend::op_registry()).run(feeds_f)[0].second;
  CHECK(yh.dtype() == DType::F16);
  CHECK(max_abs_diff(yh, yf) <= 4e-3);  // f16 keeps 11 bits: |y| < 4 here
  CHECK(max_abs_diff(yh, yf) > 0);      // and it really was rounded to f16
}

TEST_CASE("output checks are numpy.allclose: an absolute and a relative part, the worst element named") {
  HostTensor ref(DType::F32, {2, 2}), got(DType::F32, {2, 2});
  float* r = ref.mutable_data<float>();
  float* g = got.mutable_data<float>();
  const float logits[] = {30.0f, -12.0f, 0.001f, 0.0f};
  for (int i = 0; i < 4; ++i) r[i] = g[i] = logits[i];
  g[0] += 1.5e-4f;  // GPT-2's logits move this much under a correct fusion: within 1e-4 + 1e-4 * 30
  TensorDiff ok = diff(got, ref);
  CHECK(ok.max_abs > 1e-4);
  CHECK(ok.within());
  g[3] = 2.5e-4f;  // beside zero only the absolute part counts
  TensorDiff bad = diff(got, ref);
  CHECK_FALSE(bad.within());
  CHECK(bad.worst == "[1, 1]: 0.000250000012 against 0");
  OutputsDiff both = diff_outputs({{"logits", got}}, {{"logits", ref}}, Tolerance{1e-3, 0});
  CHECK(both.within());  // a looser absolute tolerance passes it
  CHECK(both.worst.rfind("output 'logits' [", 0) == 0);
}

TEST_CASE("a fed value overrides an input's initializer, which serves as its default") {
  onnx::ModelProto m = test::parse_text_model(R"(
    <ir_version: 8, opset_import: ["" : 13]>
    g (float[2] x, float[2] w) => (float[2] y) {
      y = Mul(x, w)
    })");
  auto* init = m.mutable_graph()->add_initializer();
  init->set_name("w");
  init->set_data_type(onnx::TensorProto::FLOAT);
  init->add_dims(2);
  init->add_float_data(10.0f);
  init->add_float_data(100.0f);
  fs::path p = test::scratch_dir("default_input") / "m.onnx";
  test::save_model(m, p);
  Model model = import_onnx(p);
  Evaluator ev(model, ascend::op_registry());
  std::map<std::string, HostTensor> feeds{{"x", HostTensor::from_vector<float>(DType::F32, {2}, {1, 2})}};
  CHECK(ev.run(feeds)[0].second.to_vector<float>() == std::vector<float>{10, 200});  // the default
  feeds["w"] = HostTensor::from_vector<float>(DType::F32, {2}, {3, 4});
  CHECK(ev.run(feeds)[0].second.to_vector<float>() == std::vector<float>{3, 8});  // the value fed
}
