// RNN, GRU and LSTM run on oneDNN's RNN primitives where the node's attributes fit
// them and on the general step loop otherwise (clip, coupled input-forget gates,
// other activations, short sequences). ONNX's node tests and the torch example
// check each against outside references; here the two paths must agree on every
// cell, direction and layout. A clip of 1e30 changes no value but sends the node
// down the loop.
#include <doctest/doctest.h>

#include <string>

#include "ascend/device_ops/device_ops.h"
#include "eval/evaluator.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;

namespace {

struct Variant {
  std::string op;
  int gates;
  std::string attrs;  // extra attributes, each ending in ", "
  bool peepholes;
};

Model recurrent_model(const Variant& v, const std::string& direction, int layout, bool loop) {
  const int T = 4, B = 3, I = 5, H = 3, D = direction == "bidirectional" ? 2 : 1, G = v.gates;
  auto dims = [](std::initializer_list<int> d) {
    std::string s;
    for (int x : d) s += (s.empty() ? "" : ",") + std::to_string(x);
    return s;
  };
  const bool lstm = v.op == "LSTM";
  const std::string x = layout ? dims({B, T, I}) : dims({T, B, I});
  const std::string state = layout ? dims({B, D, H}) : dims({D, B, H});
  std::string text = "<ir_version: 8, opset_import: [\"\" : 17]>\nagree (float[" + x + "] X, float[" +
                     dims({D, G * H, I}) + "] W, float[" + dims({D, G * H, H}) + "] R, float[" +
                     dims({D, 2 * G * H}) + "] Bias, float[" + state + "] H0";
  if (lstm) text += ", float[" + state + "] C0";
  if (v.peepholes) text += ", float[" + dims({D, 3 * H}) + "] P";
  text +=
      ") => (float[" + (layout ? dims({B, T, D, H}) : dims({T, D, B, H})) + "] Y, float[" + state + "] Yh";
  if (lstm) text += ", float[" + state + "] Yc";
  text += ") {\n  Y, Yh" + std::string(lstm ? ", Yc" : "") + " = " + v.op +
          " <hidden_size = " + std::to_string(H) + ", direction = \"" + direction +
          "\", layout = " + std::to_string(layout) + ", " + v.attrs + (loop ? "clip = 1e30, " : "");
  text.erase(text.size() - 2);  // the last ", "
  text += "> (X, W, R, Bias, , H0" + std::string(lstm ? ", C0" : "") + std::string(v.peepholes ? ", P" : "") +
          ")\n}\n";
  return import_onnx_proto(test::parse_text_model(text.c_str()), "recurrent.onnx");
}

}  // namespace

TEST_CASE(
    "RNN, GRU and LSTM: oneDNN's primitives and the general loop compute the same, every direction and "
    "layout") {
  const std::vector<Variant> variants = {
      {"RNN", 1, "", false},
      {"RNN", 1, "activations = [\"Relu\"], ", false},
      {"RNN", 1, "activations = [\"Sigmoid\"], ", false},
      {"GRU", 3, "", false},
      {"GRU", 3, "linear_before_reset = 1, ", false},
      {"LSTM", 4, "", false},
      {"LSTM", 4, "", true},
  };
  for (const Variant& v : variants)
    for (const std::string direction : {"forward", "reverse", "bidirectional"})
      for (int layout : {0, 1}) {
        CAPTURE(v.op);
        CAPTURE(v.attrs);
        CAPTURE(v.peepholes);
        CAPTURE(direction);
        CAPTURE(layout);
        const Model primitive = recurrent_model(v, direction, layout, false);
        const Model loop = recurrent_model(v, direction, layout, true);
        CHECK(test::max_output_error(loop, primitive) < 1e-5);
      }
}

TEST_CASE(
    "a recurrent node the primitives cannot compute runs the loop: clip, coupled gates, other activations") {
  // Each differs from the unclipped default cell: the loop really applies them.
  const char* base = R"(<ir_version: 8, opset_import: ["" : 17]>
agree (float[6,2,4] X, float[1,16,4] W, float[1,16,4] R) => (float[6,1,2,4] Y) {
  Y = LSTM <hidden_size = 4> (X, W, R)
})";
  const Model plain = import_onnx_proto(test::parse_text_model(base), "plain.onnx");
  for (const char* attrs :
       {"clip = 0.1", "input_forget = 1", "activations = [\"HardSigmoid\", \"Tanh\", \"Tanh\"]"}) {
    CAPTURE(attrs);
    std::string text = base;
    text.replace(text.find("hidden_size = 4"), 15, std::string("hidden_size = 4, ") + attrs);
    const Model variant = import_onnx_proto(test::parse_text_model(text.c_str()), "variant.onnx");
    CHECK(test::max_output_error(plain, variant) > 1e-3);
  }
}

TEST_CASE("sequence_lens: a short entry stops where its sequence ends, the others run on") {
  const Model plain = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17]>
agree (float[6,2,4] X, float[1,12,4] W, float[1,12,4] R) => (float[6,1,2,4] Y, float[1,2,4] Yh) {
  Y, Yh = GRU <hidden_size = 4> (X, W, R)
})"),
                                        "plain.onnx");
  const Model with_lens = import_onnx_proto(test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17]>
agree (float[6,2,4] X, float[1,12,4] W, float[1,12,4] R, int32[2] lens) => (float[6,1,2,4] Y, float[1,2,4] Yh) {
  Y, Yh = GRU <hidden_size = 4> (X, W, R, , lens)
})"),
                                            "lens.onnx");
  std::map<std::string, HostTensor> feeds = random_inputs(plain, 5);
  auto run_with = [&](int32_t first, int32_t second) {
    HostTensor lens(DType::I32, {2});
    lens.mutable_data<int32_t>()[0] = first;
    lens.mutable_data<int32_t>()[1] = second;
    feeds["lens"] = lens;
    return Evaluator(with_lens, ascend::op_registry()).run(feeds);
  };
  const NamedTensors reference = Evaluator(plain, ascend::op_registry()).run(random_inputs(plain, 5));
  const float* y_ref = reference[0].second.data<float>();
  // Full lengths: the same numbers as no sequence_lens at all.
  const NamedTensors full = run_with(6, 6);
  for (int64_t i = 0; i < 6 * 2 * 4; ++i)
    CHECK(full[0].second.data<float>()[i] == doctest::Approx(y_ref[i]).epsilon(1e-6));
  // Entry 0 stops after 3 steps: its outputs after that are 0 and its final state is its
  // state at step 3; entry 1 is untouched.
  const NamedTensors short_run = run_with(3, 6);
  const float* y = short_run[0].second.data<float>();
  const float* yh = short_run[1].second.data<float>();
  auto at = [](int64_t t, int64_t b, int64_t j) { return (t * 2 + b) * 4 + j; };
  for (int64_t j = 0; j < 4; ++j) {
    for (int64_t t = 0; t < 6; ++t) {
      CHECK(y[at(t, 1, j)] == doctest::Approx(y_ref[at(t, 1, j)]).epsilon(1e-6));
      if (t < 3)
        CHECK(y[at(t, 0, j)] == doctest::Approx(y_ref[at(t, 0, j)]).epsilon(1e-6));
      else
        CHECK(y[at(t, 0, j)] == 0.0f);
    }
    CHECK(yh[j] == doctest::Approx(y_ref[at(2, 0, j)]).epsilon(1e-6));
  }
}

TEST_CASE(
    "two LSTMs sharing their input weights keep their own recurrent weights, in the evaluator and in a "
    "plan") {
  // Constant weights are reordered once and cached; in a plan every weight lives in one
  // region, so the cache must tell the two nodes' R apart by more than their owner.
  const char* text = R"(<ir_version: 8, opset_import: ["" : 17]>
agree (float[3,2,2] X) => (float[3,1,2,2] Y1, float[3,1,2,2] Y2)
<float[1,8,2] W = {0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.7, -0.8, 0.9, 0.1, -0.2, 0.3, 0.4, -0.5, 0.6, 0.2},
 float[1,8,2] R1 = {0.5, 0.1, -0.3, 0.2, 0.4, -0.6, 0.1, 0.3, -0.2, 0.5, 0.6, -0.1, 0.2, 0.4, -0.3, 0.1},
 float[1,8,2] R2 = {-0.4, 0.3, 0.2, -0.5, 0.1, 0.6, -0.2, 0.4, 0.3, -0.1, -0.6, 0.2, 0.5, -0.3, 0.1, -0.4}> {
  Y1 = LSTM <hidden_size = 2> (X, W, R1)
  Y2 = LSTM <hidden_size = 2> (X, W, R2)
})";
  std::string loop_text = text;
  for (size_t at; (at = loop_text.find("<hidden_size = 2>")) != std::string::npos;)
    loop_text.replace(at, 17, "<hidden_size = 2, clip = 1e30>");
  const Model primitive = import_onnx_proto(test::parse_text_model(text), "shared.onnx");
  const Model loop = import_onnx_proto(test::parse_text_model(loop_text.c_str()), "shared_loop.onnx");
  CHECK(test::max_output_error(loop, primitive, 3) < 1e-6);
  CHECK(test::max_output_error(loop, primitive, 4) < 1e-6);  // from the cache this time
  const std::filesystem::path dir = test::scratch_dir("recurrent_shared");
  test::save_model(test::parse_text_model(text), dir / "shared.onnx");
  // compile checks the plan (its weights in one region) against the evaluator.
  test::CliResult r =
      test::run_cli({"compile", (dir / "shared.onnx").string(), "-o", (dir / "shared.plan").string()});
  INFO(r.out << r.err);
  CHECK(r.exit_code == 0);
}
