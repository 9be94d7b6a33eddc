// Ops with a fast f32 path (oneDNN primitives, separable passes) equal the same op
// computed in double by the general loop, on shapes and attributes ONNX's small
// conformance cases do not reach (groups, dilations, negative pads, batch axes).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "ascend/device_ops/device_ops.h"
#include "eval/evaluator.h"
#include "kernels/row_math.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

// `body` computes `fast` (f32) and `slow` (the same op on x cast to double, cast back);
// both must agree within `tol` on random inputs of several seeds.
void check_fast_equals_double(const std::string& signature, const std::string& body, double tol) {
  const std::string text = "<ir_version: 8, opset_import: [\"\" : 13]>\n" + signature + " {\n" + body + "\n}";
  onnx::ModelProto proto = test::parse_text_model(text.c_str());
  fs::path p = test::scratch_dir("fast") / "m.onnx";
  test::save_model(proto, p);
  Model model = import_onnx(p);
  Evaluator ev(model, ascend::op_registry());
  for (uint64_t seed : {1, 2}) {
    NamedTensors outs = ev.run(random_inputs(model, seed));
    std::map<std::string, HostTensor> by_name(outs.begin(), outs.end());
    const HostTensor& fast = by_name.at("fast");
    const HostTensor& slow = by_name.at("slow");
    REQUIRE(fast.dims() == slow.dims());
    double worst = 0, largest = 0;
    for (int64_t i = 0; i < fast.size(); ++i) {
      worst = std::max(worst, std::fabs(fast.real_at(i) - slow.real_at(i)));
      largest = std::max(largest, std::fabs(slow.real_at(i)));
    }
    INFO(body << "\nseed " << seed);
    CHECK(largest > 0.1);  // the case computes something
    CHECK(worst <= tol);
  }
}

// ConvTranspose of x and w in f32 and in double, with `attrs` and `args` (", b" for a bias).
void check_conv_transpose(const std::string& signature, const std::string& attrs, bool bias) {
  const std::string b = bias ? ", b" : "";
  const std::string bd = bias ? ", bd" : "";
  check_fast_equals_double(signature,
                           "fast = ConvTranspose <" + attrs + "> (x, w" + b +
                               ")\n"
                               "xd = Cast <to = 11> (x)\nwd = Cast <to = 11> (w)\n" +
                               (bias ? "bd = Cast <to = 11> (b)\n" : "") + "yd = ConvTranspose <" + attrs +
                               "> (xd, wd" + bd +
                               ")\n"
                               "slow = Cast <to = 1> (yd)",
                           1e-5);
}

}  // namespace

TEST_CASE("ConvTranspose in f32 (oneDNN's deconvolution) equals the double loop, every attribute") {
  // A detector's 2x upsampling head: stride 2, kernel 2, bias.
  check_conv_transpose(
      "g (float[1,24,10,12] x, float[24,8,2,2] w, float[8] b) => (float[1,8,20,24] fast, float[1,8,20,24] "
      "slow)",
      "strides = [2, 2]", true);
  // Groups, dilations, asymmetric pads and an output_padding (the end pad goes negative).
  check_conv_transpose(
      "g (float[2,6,5,7] x, float[6,2,3,3] w, float[6] b) => (float[2,6,11,22] fast, float[2,6,11,22] slow)",
      "group = 3, strides = [2, 3], dilations = [2, 1], pads = [1, 0, 2, 1], output_padding = [1, 2]", true);
  // output_shape larger than the kernel reaches: both pads negative, the border is the bias.
  check_conv_transpose(
      "g (float[1,4,5,5] x, float[4,3,3,3] w, float[3] b) => (float[1,3,14,13] fast, float[1,3,14,13] slow)",
      "strides = [2, 2], output_shape = [14, 13]", true);
  // SAME_UPPER, no bias; depthwise (one channel per group).
  check_conv_transpose(
      "g (float[1,8,6,6] x, float[8,1,4,4] w) => (float[1,8,12,12] fast, float[1,8,12,12] slow)",
      "group = 8, strides = [2, 2], auto_pad = \"SAME_UPPER\"", false);
  // 1-D and 3-D.
  check_conv_transpose(
      "g (float[2,5,9] x, float[5,4,3] w, float[4] b) => (float[2,4,20] fast, float[2,4,20] slow)",
      "strides = [2], dilations = [2], pads = [0, 1]", true);
  check_conv_transpose(
      "g (float[1,3,3,4,5] x, float[3,2,2,3,2] w) => (float[1,2,6,8,10] fast, float[1,2,6,8,10] slow)",
      "strides = [2, 2, 2], pads = [0, 0, 0, 0, 1, 0]", false);
}

TEST_CASE("ConvTranspose with constant weights (reordered once) gives the same result on every run") {
  onnx::ModelProto proto = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[1,2,3,3] x) => (float[1,2,6,6] fast, float[1,2,6,6] slow) {
      w = Constant <value = float[2,1,2,2] {1, -2, 0.5, 3, -1, 0.25, 2, -0.5}> ()
      fast = ConvTranspose <strides = [2, 2], group = 2> (x, w)
      xd = Cast <to = 11> (x)
      wd = Cast <to = 11> (w)
      yd = ConvTranspose <strides = [2, 2], group = 2> (xd, wd)
      slow = Cast <to = 1> (yd)
    })");
  fs::path p = test::scratch_dir("fast") / "const_w.onnx";
  test::save_model(proto, p);
  Model model = import_onnx(p);
  Evaluator ev(model, ascend::op_registry());
  for (uint64_t seed : {1, 2, 3}) {
    NamedTensors outs = ev.run(random_inputs(model, seed));
    const HostTensor& fast = outs[0].second;
    const HostTensor& slow = outs[1].second;
    REQUIRE(fast.dims() == slow.dims());
    for (int64_t i = 0; i < fast.size(); ++i) CHECK(std::fabs(fast.real_at(i) - slow.real_at(i)) <= 1e-6);
  }
}

TEST_CASE("Resize in f32 (separable passes) equals the general loop in double, every mode") {
  struct Case {
    std::string shape_in, shape_out, attrs, scales;
  };
  const Case cases[] = {
      // nearest: PaddleOCR's FPN (asymmetric, floor, x2 and x8), and the other roundings
      {"1,5,6,7", "1,5,48,56",
       "mode = \"nearest\", coordinate_transformation_mode = \"asymmetric\", nearest_mode = \"floor\"",
       "1, 1, 8, 8"},
      {"2,3,9,8", "2,3,6,12", "mode = \"nearest\"", "1, 1, 0.7, 1.5"},
      {"2,3,9,8", "2,3,13,5",
       "mode = \"nearest\", coordinate_transformation_mode = \"align_corners\", nearest_mode = "
       "\"round_prefer_ceil\"",
       "1, 1, 1.5, 0.7"},
      {"4,3,5,6", "2,6,5,9", "mode = \"nearest\", nearest_mode = \"ceil\"", "0.5, 2, 1, 1.5"},
      // linear: every transform, up and down, an outer axis and the batch axis included
      {"1,4,7,9", "1,4,14,18", "mode = \"linear\"", "1, 1, 2, 2"},
      {"2,3,9,8", "2,3,5,13", "mode = \"linear\", coordinate_transformation_mode = \"align_corners\"",
       "1, 1, 0.6, 1.7"},
      {"2,3,9,8", "2,3,4,20", "mode = \"linear\", coordinate_transformation_mode = \"pytorch_half_pixel\"",
       "1, 1, 0.5, 2.5"},
      {"3,4,5,6", "6,2,5,6", "mode = \"linear\", coordinate_transformation_mode = \"asymmetric\"",
       "2, 0.5, 1, 1"},
      {"2,6,10", "2,6,25", "mode = \"linear\"", "1, 1, 2.5"},
      // cubic, with and without exclude_outside
      {"1,3,8,8", "1,3,12,6", "mode = \"cubic\"", "1, 1, 1.5, 0.75"},
      {"1,3,8,8", "1,3,16,16", "mode = \"cubic\", cubic_coeff_a = -0.5, exclude_outside = 1", "1, 1, 2, 2"},
  };
  for (const Case& c : cases) {
    check_fast_equals_double("g (float[" + c.shape_in + "] x) => (float[" + c.shape_out + "] fast, float[" +
                                 c.shape_out + "] slow)",
                             "roi = Constant <value = float[0] {}> ()\n"
                             "scales = Constant <value = float[" +
                                 std::to_string(std::count(c.scales.begin(), c.scales.end(), ',') + 1) +
                                 "] {" + c.scales +
                                 "}> ()\n"
                                 "fast = Resize <" +
                                 c.attrs +
                                 "> (x, roi, scales)\n"
                                 "xd = Cast <to = 11> (x)\n"
                                 "yd = Resize <" +
                                 c.attrs +
                                 "> (xd, roi, scales)\n"
                                 "slow = Cast <to = 1> (yd)",
                             1e-5);
  }
}

TEST_CASE("broadcasting binary ops on large tensors (tiles shared among threads) equal the element formula") {
  // Shapes that coalesce to one long row (cut into tiles), to rows of 16 or 32 lanes many
  // to a tile (an NC1HWC0 tensor times a per-channel gate, C0 16 and int8's 32), and to
  // rows with a repeated value.
  onnx::ModelProto proto = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float[70001] a, float[70001] b, float[1,5,40,41,16] x, float[1,5,1,1,16] s, float[300,257] m, float[300,1] c, float[2,3,7,6,32] u, float[2,3,1,1,32] t) => (float[70001] sum, float[1,5,40,41,16] gate, float[300,257] diff, float[2,3,7,6,32] gate32) {
      sum = Add(a, b)
      gate = Mul(x, s)
      diff = Sub(c, m)
      gate32 = Mul(u, t)
    })");
  fs::path p = test::scratch_dir("fast") / "broadcast.onnx";
  test::save_model(proto, p);
  Model model = import_onnx(p);
  auto feeds = random_inputs(model, 3);
  NamedTensors outs = Evaluator(model, ascend::op_registry()).run(feeds);
  const float* a = feeds.at("a").data<float>();
  const float* b = feeds.at("b").data<float>();
  const float* x = feeds.at("x").data<float>();
  const float* s = feeds.at("s").data<float>();
  const float* m = feeds.at("m").data<float>();
  const float* c = feeds.at("c").data<float>();
  const float* sum = outs[0].second.data<float>();
  const float* gate = outs[1].second.data<float>();
  const float* diff = outs[2].second.data<float>();
  const float* u = feeds.at("u").data<float>();
  const float* t = feeds.at("t").data<float>();
  const float* gate32 = outs[3].second.data<float>();
  int64_t wrong = 0;
  for (int64_t i = 0; i < 70001; ++i) wrong += sum[i] != a[i] + b[i];
  for (int64_t i = 0; i < 5 * 40 * 41 * 16; ++i)
    wrong += gate[i] != x[i] * s[(i / (40 * 41 * 16)) * 16 + i % 16];
  for (int64_t i = 0; i < 300 * 257; ++i) wrong += diff[i] != c[i / 257] - m[i];
  for (int64_t i = 0; i < 2 * 3 * 7 * 6 * 32; ++i)
    wrong += gate32[i] != u[i] * t[(i / (7 * 6 * 32)) * 32 + i % 32];
  CHECK(wrong == 0);
}

TEST_CASE(
    "Sigmoid, SiLU and QuickGelu in f32 (the vector rows) stay within 4 ulps of the formula in double") {
  // A row whose length leaves a tail past the last full vector, over the whole float range:
  // NaN, the infinities, values past exp's clamps (-87.3) and near them, 0 and -0, and a
  // dense sweep of [-100, 100]. SiLU and QuickGelu run as a 1x1 conv's activation (identity
  // weights over 1 x 1 planes, geopt's matrix-vector loop: each output is one input
  // exactly, then the row).
  std::vector<float> v = {NAN,    INFINITY, -INFINITY, -1e30f, 1e30f, -87.5f,
                          -87.3f, -87.2f,   88.5f,     0.0f,   -0.0f};
  while (v.size() < 4000) v.push_back(-100.0f + 200.0f * static_cast<float>(v.size()) / 4000.0f);
  v.resize(4007);
  const int64_t n = static_cast<int64_t>(v.size()), c = 40;
  std::string eye;
  for (int64_t i = 0; i < c * c; ++i) eye += std::string(i ? ", " : "") + (i / c == i % c ? "1" : "0");
  onnx::ModelProto proto = test::parse_text_model((R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[4007] x, float[1,40,1,1] p) => (float[4007] sig, float[1,40,1,1] silu, float[1,40,1,1] quick) {
      eye = Constant <value = float[40,40,1,1] {)" +
                                                   eye + R"(}> ()
      sig = Sigmoid(x)
      silu = ai.geopt.FusedConv <kernel_shape = [1, 1], activation = "SiLU"> (p, eye)
      quick = ai.geopt.FusedConv <kernel_shape = [1, 1], activation = "QuickGelu", activation_params = [1.5]> (p, eye)
    })")
                                                      .c_str());
  fs::path path = test::scratch_dir("fast") / "logistic.onnx";
  test::save_model(proto, path);
  Model model = import_onnx(path);
  Evaluator ev(model, ascend::op_registry());
  auto logistic = [](double a) { return 1.0 / (1.0 + std::exp(-a)); };
  // 4 float ulps of the exact value; below 1e-30 (a sigmoid under e^-69, which the rows
  // flush to 0 past exp's floor of -87.3) an absolute 1e-30.
  auto close = [](double got, double want) {
    const double ulps = want == 0 ? 0 : 4 * std::ldexp(1.0, std::ilogb(want) - 23);
    return std::fabs(got - want) <= std::max(ulps, 1e-30);
  };
  std::map<std::string, HostTensor> feeds;
  feeds["x"] = HostTensor::from_vector<float>(DType::F32, {n}, v);
  feeds["p"] = HostTensor::uninitialized(DType::F32, {1, c, 1, 1});
  int64_t wrong = 0;
  // The conv's planes from the sweep, after the NaN and the infinities (through the zero
  // weights they make every output NaN).
  for (int64_t offset = 3; offset + c <= n; offset += 397) {
    std::copy(v.begin() + offset, v.begin() + offset + c, feeds["p"].mutable_data<float>());
    NamedTensors outs = ev.run(feeds);
    std::map<std::string, HostTensor> by_name(outs.begin(), outs.end());
    if (offset == 3)
      for (int64_t i = 0; i < n; ++i) {
        const double got = by_name.at("sig").data<float>()[i];
        const bool ok = std::isnan(v[i]) ? std::isnan(got) : close(got, logistic(v[i]));
        CHECK_MESSAGE(ok, "Sigmoid(" << v[i] << ") = " << got << ", want " << logistic(v[i]));
        wrong += !ok;
      }
    for (int64_t i = 0; i < c; ++i) {
      const double x = v[offset + i];
      const double silu = by_name.at("silu").data<float>()[i], quick = by_name.at("quick").data<float>()[i];
      // QuickGelu's alpha x is a float product: its rounding (e^-60 moves by 60 x 2^-24 of
      // itself) belongs to the argument, not to the row.
      const double alpha_x = static_cast<float>(1.5f * static_cast<float>(x));
      const bool ok = close(silu, x * logistic(x)) && close(quick, x * logistic(alpha_x));
      CHECK_MESSAGE(ok, "x " << x << ": SiLU " << silu << " want " << x * logistic(x) << ", QuickGelu "
                             << quick << " want " << x * logistic(alpha_x));
      wrong += !ok;
    }
  }
  CHECK(wrong == 0);
  // Both instruction paths of the rows on every value, the NaN and infinities included
  // (on a CPU without AVX-512 both run the portable loop).
  for (RowInstructions instructions : {RowInstructions::best, RowInstructions::portable}) {
    const char* path = instructions == RowInstructions::best ? "best" : "portable";
    std::vector<float> sig(v.size()), silu(v.size()), quick(v.size());
    sigmoid_row(v.data(), sig.data(), n, instructions);
    swish_row(v.data(), silu.data(), n, 1.0f, instructions);
    swish_row(v.data(), quick.data(), n, 1.5f, instructions);
    int64_t row_wrong = 0;
    for (int64_t i = 0; i < n; ++i) {
      const double x = v[i], alpha_x = static_cast<float>(1.5f * v[i]);
      // x * sigmoid(x) at x = -infinity is -infinity x 0: NaN, as the unfused Mul gives.
      auto agrees = [&](double got, double want) {
        return std::isnan(want) ? std::isnan(got) : (std::isinf(want) ? got == want : close(got, want));
      };
      const bool ok = agrees(sig[i], std::isnan(x) ? x : logistic(x)) && agrees(silu[i], x * logistic(x)) &&
                      agrees(quick[i], x * logistic(alpha_x));
      CHECK_MESSAGE(ok, path << " x " << x << ": Sigmoid " << sig[i] << " SiLU " << silu[i] << " want "
                             << x * logistic(x) << ", QuickGelu " << quick[i] << " want "
                             << x * logistic(alpha_x));
      row_wrong += !ok;
    }
    CHECK_MESSAGE(row_wrong == 0, path);
  }
}
