// Every ai.geopt fused kernel equals its unfused ONNX definition on random inputs.
// Each model computes both from the same inputs; the test compares them.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "ascend/device_ops/device_ops.h"
#include "ascend/device_ops/layout_conversions.h"
#include "ascend/layout.h"
#include "eval/evaluator.h"
#include "eval/kernel.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

// Runs the model on random inputs (several seeds) and checks each (fused, reference) output pair.
void check_pairs(const char* text, const std::vector<std::pair<std::string, std::string>>& pairs,
                 double tol = 1e-5) {
  onnx::ModelProto proto = test::parse_text_model(text);
  fs::path p = test::scratch_dir("fused") / "m.onnx";
  test::save_model(proto, p);
  Model model = import_onnx(p);
  Evaluator ev(model, ascend::op_registry());
  for (uint64_t seed : {1, 2, 3}) {
    NamedTensors outs = ev.run(random_inputs(model, seed));
    std::map<std::string, HostTensor> by_name(outs.begin(), outs.end());
    for (const auto& pair : pairs) {
      const auto& [fused, reference] = pair;
      INFO(pair.first << " vs " << pair.second << ", seed " << seed);
      const HostTensor& a = by_name.at(fused);
      const HostTensor& b = by_name.at(reference);
      REQUIRE(a.dims() == b.dims());
      double worst = 0;
      for (int64_t i = 0; i < a.size(); ++i) worst = std::max(worst, std::fabs(a.real_at(i) - b.real_at(i)));
      CHECK(worst <= tol);
    }
  }
}

}  // namespace

TEST_CASE("LayerNorm equals the primitive LayerNorm chain") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,5,16] x, float[16] gamma, float[16] beta) => (float[2,5,16] fused, float[2,5,16] ref) {
      fused = ai.geopt.LayerNorm <epsilon = 0.001> (x, gamma, beta)
      mean = ReduceMean <axes = [-1]> (x)
      d = Sub(x, mean)
      two = Constant <value = float {2.0}> ()
      sq = Pow(d, two)
      var = ReduceMean <axes = [-1]> (sq)
      eps = Constant <value = float {0.001}> ()
      ve = Add(var, eps)
      sd = Sqrt(ve)
      n = Div(d, sd)
      sc = Mul(n, gamma)
      ref = Add(sc, beta)
    })",
              {{"fused", "ref"}});
}

TEST_CASE(
    "LayerNorm over channels, in NCHW and in NC1HWC0, equals LayerNormalization of the NHWC transpose") {
  // 20 channels: two C0 blocks, the second holding 4 real channels and 12 of padding,
  // which the statistics must leave out and the output must keep 0.
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 17, "ai.geopt" : 1]>
    g (float[2,20,3,5] x, float[20] gamma, float[20] beta) => (float[2,20,3,5] nchw, float[2,20,3,5] blocked, float[2,20,3,5] ref, float[2,2,3,5,16] padded) {
      nchw = ai.geopt.LayerNorm <data_format = "NCHW", epsilon = 0.001> (x, gamma, beta)
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      padded = ai.geopt.LayerNorm <data_format = "NC1HWC0", channels = 20, epsilon = 0.001> (x5, gamma, beta)
      blocked = ai.geopt.TransData <src_format = "NC1HWC0", dst_format = "NCHW", channels = 20> (padded)
      t = Transpose <perm = [0, 2, 3, 1]> (x)
      n = LayerNormalization <axis = -1, epsilon = 0.001> (t, gamma, beta)
      ref = Transpose <perm = [0, 3, 1, 2]> (n)
    })",
              {{"nchw", "ref"}, {"blocked", "ref"}});
  // 300 positions (a full run of 256 and one of 44) of 40 channels (the third block 8 real).
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 17, "ai.geopt" : 1]>
    g (float[1,40,20,15] x, float[40] gamma, float[40] beta) => (float[1,40,20,15] blocked, float[1,40,20,15] ref) {
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      padded = ai.geopt.LayerNorm <data_format = "NC1HWC0", channels = 40, epsilon = 0.001> (x5, gamma, beta)
      blocked = ai.geopt.TransData <src_format = "NC1HWC0", dst_format = "NCHW", channels = 40> (padded)
      t = Transpose <perm = [0, 2, 3, 1]> (x)
      n = LayerNormalization <axis = -1, epsilon = 0.001> (t, gamma, beta)
      ref = Transpose <perm = [0, 3, 1, 2]> (n)
    })",
              {{"blocked", "ref"}});
  onnx::ModelProto proto = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17, "ai.geopt" : 1]>
    g (float[1,20,2,2] x, float[20] gamma, float[20] beta) => (float[1,2,2,2,16] y) {
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      y = ai.geopt.LayerNorm <data_format = "NC1HWC0", channels = 20> (x5, gamma, beta)
    })");
  fs::path p = test::scratch_dir("fused") / "pad.onnx";
  test::save_model(proto, p);
  Model model = import_onnx(p);
  const HostTensor y = Evaluator(model, ascend::op_registry()).run(random_inputs(model, 7)).front().second;
  for (int64_t i = 0; i < y.size(); ++i) {
    const int64_t channel = (i / (2 * 2 * 16)) * 16 + i % 16;
    if (channel >= 20) CHECK(y.real_at(i) == 0.0);
  }
}

TEST_CASE(
    "Roll equals torch.roll's Slices and Concat, on the last axis, an outer one, and an axis listed twice") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,3,5] x) => (float[2,3,5] last, float[2,3,5] ref_last, float[2,3,5] two, float[2,3,5] ref_two) {
      last = ai.geopt.Roll <starts = [-2], axes = [-1]> (x)
      k = Constant <value = int64[1] {-2}> ()
      zero = Constant <value = int64[1] {0}> ()
      big = Constant <value = int64[1] {9223372036854775807}> ()
      a2 = Constant <value = int64[1] {2}> ()
      t = Slice(x, k, big, a2)
      h = Slice(x, zero, k, a2)
      ref_last = Concat <axis = 2> (t, h)
      two = ai.geopt.Roll <starts = [9223372036854775807, 1, 4], axes = [1, 1, 2]> (x)
      one = Constant <value = int64[1] {2}> ()
      a1 = Constant <value = int64[1] {1}> ()
      t1 = Slice(x, one, big, a1)
      h1 = Slice(x, zero, one, a1)
      r1 = Concat <axis = 1> (t1, h1)
      four = Constant <value = int64[1] {4}> ()
      t2 = Slice(r1, four, big, a2)
      h2 = Slice(r1, zero, four, a2)
      ref_two = Concat <axis = 2> (t2, h2)
    })",
              {{"last", "ref_last"}, {"two", "ref_two"}}, 0.0);
}

TEST_CASE("LayerNorm in NC1HWC0 refuses a channel count that does not fit its blocks") {
  onnx::ModelProto proto = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 17, "ai.geopt" : 1]>
    g (float[1,2,2,2,16] x, float[40] gamma, float[40] beta) => (float[1,2,2,2,16] y) {
      y = ai.geopt.LayerNorm <data_format = "NC1HWC0", channels = 40> (x, gamma, beta)
    })");
  fs::path p = test::scratch_dir("fused") / "bad.onnx";
  test::save_model(proto, p);
  Model model = import_onnx(p);
  CHECK_THROWS_WITH_AS(Evaluator(model, ascend::op_registry()).run(random_inputs(model, 1)),
                       doctest::Contains("channels = 40 does not fit 2 blocks of 16"), Error);
}

TEST_CASE("ChannelMove equals Concat, ShuffleNet's shuffle and Slice in NCHW, at offsets inside C0 blocks") {
  // 24 + 10 channels (padding lanes random: a move reads real channels only), shuffled
  // across 2 groups, channels [5, 25) taken; and the same concatenation whole.
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 17, "ai.geopt" : 1]>
    g (float[1,2,3,3,16] a, float[1,1,3,3,16] b) => (float[1,2,3,3,16] moved, float[1,2,3,3,16] reference,
                                                      float[1,3,3,3,16] whole, float[1,3,3,3,16] concatenated) {
      moved = ai.geopt.ChannelMove <channels = [24, 10], group = 2, start = 5, count = 20> (a, b)
      whole = ai.geopt.ChannelMove <channels = [24, 10]> (a, b)
      an = ai.geopt.TransData <src_format = "NC1HWC0", dst_format = "NCHW", channels = 24> (a)
      bn = ai.geopt.TransData <src_format = "NC1HWC0", dst_format = "NCHW", channels = 10> (b)
      cat = Concat <axis = 1> (an, bn)
      s5 = Constant <value = int64[5] {1, 2, 17, 3, 3}> ()
      v = Reshape(cat, s5)
      t = Transpose <perm = [0, 2, 1, 3, 4]> (v)
      s4 = Constant <value = int64[4] {1, 34, 3, 3}> ()
      shuffled = Reshape(t, s4)
      first = Constant <value = int64[1] {5}> ()
      end = Constant <value = int64[1] {25}> ()
      axis = Constant <value = int64[1] {1}> ()
      taken = Slice(shuffled, first, end, axis)
      reference = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (taken)
      concatenated = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (cat)
    })",
              {{"moved", "reference"}, {"whole", "concatenated"}}, 0.0);
}

TEST_CASE("ChannelMove refuses channels it does not have, naming them") {
  for (const char* attributes : {"channels = [24], start = 20, count = 8", "channels = [24], start = -1",
                                 "channels = [24], group = 5", "channels = [40]"}) {
    INFO(attributes);
    const std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 17, "ai.geopt" : 1]>
      g (float[1,2,3,3,16] a) => (float[1,1,3,3,16] y) {
        y = ai.geopt.ChannelMove <)") +
                             attributes + R"(> (a)
      })";
    fs::path p = test::scratch_dir("fused") / "bad_move.onnx";
    test::save_model(test::parse_text_model(text.c_str()), p);
    CHECK_THROWS_AS(
        {
          Model model = import_onnx(p);
          Evaluator(model, ascend::op_registry()).run(random_inputs(model, 1));
        },
        Error);
  }
}

TEST_CASE("RMSNorm equals Pow/ReduceMean/Add/Sqrt/Div/Mul") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[3,16] x, float[16] w) => (float[3,16] fused, float[3,16] ref) {
      fused = ai.geopt.RMSNorm <epsilon = 0.000001> (x, w)
      two = Constant <value = float {2.0}> ()
      sq = Pow(x, two)
      ms = ReduceMean <axes = [-1]> (sq)
      eps = Constant <value = float {0.000001}> ()
      a = Add(ms, eps)
      r = Sqrt(a)
      n = Div(x, r)
      ref = Mul(w, n)
    })",
              {{"fused", "ref"}});
}

TEST_CASE("AddLayerNorm equals Add then LayerNormalization, sum output included") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 17, "ai.geopt" : 1]>
    g (float[4,32] x, float[4,32] r, float[32] gamma, float[32] beta) => (float[4,32] y, float[4,32] s, float[4,32] ref_y, float[4,32] ref_s) {
      y, s = ai.geopt.AddLayerNorm <epsilon = 0.00001> (x, r, gamma, beta)
      ref_s = Add(x, r)
      ref_y = LayerNormalization <epsilon = 0.00001> (ref_s, gamma, beta)
    })",
              {{"y", "ref_y"}, {"s", "ref_s"}});
}

TEST_CASE("Gelu equals its erf and tanh formulas") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[64] x) => (float[64] erf_fused, float[64] erf_ref, float[64] tanh_fused, float[64] tanh_ref) {
      erf_fused = ai.geopt.Gelu (x)
      sqrt2 = Constant <value = float {1.4142135623730951}> ()
      one = Constant <value = float {1.0}> ()
      half = Constant <value = float {0.5}> ()
      d = Div(x, sqrt2)
      e = Erf(d)
      e1 = Add(e, one)
      xm = Mul(x, e1)
      erf_ref = Mul(xm, half)
      tanh_fused = ai.geopt.Gelu <approximate = "tanh"> (x)
      c = Constant <value = float {0.044715}> ()
      k = Constant <value = float {0.7978845608028654}> ()
      three = Constant <value = float {3.0}> ()
      x3 = Pow(x, three)
      cx3 = Mul(c, x3)
      inner = Add(x, cx3)
      scaled = Mul(k, inner)
      t = Tanh(scaled)
      t1 = Add(one, t)
      hx = Mul(half, x)
      tanh_ref = Mul(hx, t1)
    })",
              {{"erf_fused", "erf_ref"}, {"tanh_fused", "tanh_ref"}});
}

TEST_CASE("FlashAttention equals MatMul/Scale/Mask/Softmax/MatMul, with and without causal masking") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 14, "ai.geopt" : 1]>
    g (float[2,3,6,8] q, float[2,3,6,8] k, float[2,3,6,5] v, float[2,1,1,6] mask) => (float[2,3,6,5] fused, float[2,3,6,5] ref, float[2,3,6,5] causal_fused, float[2,3,6,5] causal_ref) {
      fused = ai.geopt.FlashAttention (q, k, v, mask)
      kt = Transpose <perm = [0, 1, 3, 2]> (k)
      qk = MatMul(q, kt)
      scale = Constant <value = float {0.35355339059327373}> ()
      s = Mul(qk, scale)
      sm = Add(s, mask)
      p = Softmax <axis = -1> (sm)
      ref = MatMul(p, v)
      causal_fused = ai.geopt.FlashAttention <causal = 1, scale = 0.5> (q, k, v)
      half = Constant <value = float {0.5}> ()
      cs = Mul(qk, half)
      ones = Constant <value = float[6,6] {1,1,1,1,1,1, 1,1,1,1,1,1, 1,1,1,1,1,1, 1,1,1,1,1,1, 1,1,1,1,1,1, 1,1,1,1,1,1}> ()
      lower = Trilu <upper = 0> (ones)
      zero = Constant <value = float {0.0}> ()
      keep = Greater(lower, zero)
      neg = Constant <value = float {-1e30}> ()
      masked = Where(keep, cs, neg)
      cp = Softmax <axis = -1> (masked)
      causal_ref = MatMul(cp, v)
    })",
              {{"fused", "ref"}, {"causal_fused", "causal_ref"}});
}

TEST_CASE("FusedConv equals Conv [+ residual] + activation [* scale + shift] for every activation") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 14, "ai.geopt" : 1]>
    g (float[1,4,9,9] x, float[6,2,3,3] w, float[6] b, float[1,6,5,5] z) => (float[1,6,5,5] relu_f, float[1,6,5,5] relu_r, float[1,6,5,5] clip_f, float[1,6,5,5] clip_r, float[1,6,5,5] leaky_f, float[1,6,5,5] leaky_r, float[1,6,5,5] hs_f, float[1,6,5,5] hs_r, float[1,6,5,5] silu_f, float[1,6,5,5] silu_r, float[1,6,5,5] sig_f, float[1,6,5,5] sig_r, float[1,6,5,5] affine_f, float[1,6,5,5] affine_r) {
      c = Conv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1]> (x, w, b)
      cz = Add(c, z)
      relu_f = ai.geopt.FusedConv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], activation = "Relu"> (x, w, b, z)
      relu_r = Relu(cz)
      lo = Constant <value = float {0.0}> ()
      hi = Constant <value = float {0.25}> ()
      clip_f = ai.geopt.FusedConv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], activation = "Clip", activation_params = [0.0, 0.25]> (x, w, b)
      clip_r = Clip(c, lo, hi)
      leaky_f = ai.geopt.FusedConv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], activation = "LeakyRelu", activation_params = [0.2]> (x, w, b)
      leaky_r = LeakyRelu <alpha = 0.2> (c)
      hs_f = ai.geopt.FusedConv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], activation = "HardSwish"> (x, w, b)
      hs_r = HardSwish(c)
      silu_f = ai.geopt.FusedConv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], activation = "SiLU"> (x, w, b)
      sg = Sigmoid(c)
      silu_r = Mul(c, sg)
      sig_f = ai.geopt.FusedConv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], activation = "Sigmoid"> (x, w, b)
      sig_r = Sigmoid(c)
      affine_f = ai.geopt.FusedConv <group = 2, strides = [2, 2], pads = [1, 1, 1, 1], activation = "SiLU", post_scale = -0.75, post_shift = 0.25> (x, w, b, z)
      sz = Sigmoid(cz)
      silu_z = Mul(cz, sz)
      s = Constant <value = float {-0.75}> ()
      t = Constant <value = float {0.25}> ()
      ss = Mul(silu_z, s)
      affine_r = Add(ss, t)
    })",
              {{"relu_f", "relu_r"},
               {"clip_f", "clip_r"},
               {"leaky_f", "leaky_r"},
               {"hs_f", "hs_r"},
               {"silu_f", "silu_r"},
               {"sig_f", "sig_r"},
               {"affine_f", "affine_r"}});
}

TEST_CASE("FusedMatMul equals MatMul + bias + activation") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,7,16] a, float[16,12] w, float[12] bias) => (float[2,7,12] f, float[2,7,12] r, float[2,7,12] gf, float[2,7,12] gr, float[2,7,12] tf, float[2,7,12] tr) {
      f = ai.geopt.FusedMatMul <activation = "Relu"> (a, w, bias)
      m = MatMul(a, w)
      mb = Add(m, bias)
      r = Relu(mb)
      gf = ai.geopt.FusedMatMul <activation = "Gelu"> (a, w, bias)
      sqrt2 = Constant <value = float {1.4142135623730951}> ()
      one = Constant <value = float {1.0}> ()
      half = Constant <value = float {0.5}> ()
      d = Div(mb, sqrt2)
      e = Erf(d)
      e1 = Add(e, one)
      xm = Mul(mb, e1)
      gr = Mul(xm, half)
      tf = ai.geopt.FusedMatMul <activation = "GeluTanh"> (a, w, bias)
      tr = ai.geopt.Gelu <approximate = "tanh"> (mb)
    })",
              {{"f", "r"}, {"gf", "gr"}, {"tf", "tr"}});
}

TEST_CASE("FusedConv reading FRACTAL_Z weights and FusedMatMul reading FRACTAL_NZ ones equal the plain ops") {
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,20,6,6] x, float[18,20,3,3] w, float[18] b, float[3,5,20] a, float[20,18] m) => (float[2,18,4,4] conv_z, float[2,18,4,4] conv, float[3,5,18] mm_nz, float[3,5,18] mm) {
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      wz = ai.geopt.TransData <src_format = "NCHW", dst_format = "FRACTAL_Z"> (w)
      y5 = ai.geopt.FusedConv <data_format = "NC1HWC0", weight_format = "FRACTAL_Z", channels = 18, kernel_shape = [3, 3], activation = "Relu"> (x5, wz, b)
      conv_z = ai.geopt.TransData <src_format = "NC1HWC0", dst_format = "NCHW", channels = 18> (y5)
      c = Conv <kernel_shape = [3, 3]> (x, w, b)
      conv = Relu(c)
      mnz = ai.geopt.TransData <src_format = "ND", dst_format = "FRACTAL_NZ"> (m)
      mm_nz = ai.geopt.FusedMatMul <b_format = "FRACTAL_NZ", n = 18, activation = "Tanh"> (a, mnz, b)
      p = MatMul(a, m)
      q = Add(p, b)
      mm = Tanh(q)
    })",
              {{"conv_z", "conv"}, {"mm_nz", "mm"}});
}

TEST_CASE("FusedConv in NC1HWC0 equals Conv on every path, padding channels included") {
  // 20 input and 18 output channels: each tensor's second C0 block is mostly padding,
  // and the blocked outputs are compared whole, so padding that is not 0 fails (Sigmoid
  // and a Clip above 0 are not 0 at 0: the padding must not be activated).
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,20,7,7] x, float[18,20,3,3] w, float[18] b, float[2,18,4,4] z, float[20,1,3,3] dw, float[20] db) => (float[2,2,4,4,16] res_f, float[2,2,4,4,16] res_r, float[2,2,4,4,16] first_f, float[2,2,4,4,16] first_r, float[2,2,7,7,16] dw_f, float[2,2,7,7,16] dw_r, float[2,2,4,4,16] gelu_f, float[2,2,4,4,16] gelu_r, float[2,2,4,4,16] mish_f, float[2,2,4,4,16] mish_r, float[2,2,4,4,16] quick_f, float[2,2,4,4,16] quick_r, float[2,2,4,4,16] sig_f, float[2,2,4,4,16] sig_r, float[2,2,7,7,16] clip_f, float[2,2,7,7,16] clip_r, float[2,2,4,4,16] affine_f, float[2,2,4,4,16] affine_r, float[2,2,7,7,16] dw_affine_f, float[2,2,7,7,16] dw_affine_r) {
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      z5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (z)
      wz = ai.geopt.TransData <src_format = "NCHW", dst_format = "FRACTAL_Z"> (w)
      c = Conv <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (x, w, b)
      res_f = ai.geopt.FusedConv <data_format = "NC1HWC0", weight_format = "FRACTAL_Z", channels = 18, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "Relu"> (x5, wz, b, z5)
      cz = Add(c, z)
      rr = Relu(cz)
      res_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (rr)
      first_f = ai.geopt.FusedConv <data_format = "NC1HWC0", input_format = "NCHW", kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "Tanh"> (x, w, b)
      ct = Tanh(c)
      first_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (ct)
      dw_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "Clip", activation_params = [-0.5, 0.5]> (x5, dw, db)
      d = Conv <group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, dw, db)
      lo = Constant <value = float {-0.5}> ()
      hi = Constant <value = float {0.5}> ()
      dc = Clip(d, lo, hi)
      dw_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (dc)
      gelu_f = ai.geopt.FusedConv <data_format = "NC1HWC0", weight_format = "FRACTAL_Z", channels = 18, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "Gelu"> (x5, wz, b)
      sqrt2 = Constant <value = float {1.4142135623730951}> ()
      one = Constant <value = float {1.0}> ()
      half = Constant <value = float {0.5}> ()
      e = Div(c, sqrt2)
      erf = Erf(e)
      e1 = Add(erf, one)
      xm = Mul(c, e1)
      gr = Mul(xm, half)
      gelu_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (gr)
      mish_f = ai.geopt.FusedConv <data_format = "NC1HWC0", weight_format = "FRACTAL_Z", channels = 18, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "Mish"> (x5, wz, b)
      sp = Softplus(c)
      th = Tanh(sp)
      mr = Mul(c, th)
      mish_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (mr)
      quick_f = ai.geopt.FusedConv <data_format = "NC1HWC0", weight_format = "FRACTAL_Z", channels = 18, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "QuickGelu", activation_params = [1.5]> (x5, wz, b)
      ac = Constant <value = float {1.5}> ()
      ax = Mul(c, ac)
      sx = Sigmoid(ax)
      qr = Mul(c, sx)
      quick_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (qr)
      sig_f = ai.geopt.FusedConv <data_format = "NC1HWC0", weight_format = "FRACTAL_Z", channels = 18, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "Sigmoid"> (x5, wz, b)
      sg = Sigmoid(c)
      sig_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (sg)
      clip_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "Clip", activation_params = [0.1, 0.5]> (x5, dw, db)
      lo2 = Constant <value = float {0.1}> ()
      dc2 = Clip(d, lo2, hi)
      clip_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (dc2)
      affine_f = ai.geopt.FusedConv <data_format = "NC1HWC0", weight_format = "FRACTAL_Z", channels = 18, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "HardSwish", post_scale = 1.25, post_shift = -0.5> (x5, wz, b)
      hsg = HardSigmoid <alpha = 0.16666667, beta = 0.5> (c)
      hs = Mul(c, hsg)
      s = Constant <value = float {1.25}> ()
      t = Constant <value = float {-0.5}> ()
      hss = Mul(hs, s)
      hst = Add(hss, t)
      affine_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (hst)
      dw_affine_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "Relu", post_scale = 0.5, post_shift = 2.0> (x5, dw, db)
      dr = Relu(d)
      s2 = Constant <value = float {0.5}> ()
      t2 = Constant <value = float {2.0}> ()
      drs = Mul(dr, s2)
      drt = Add(drs, t2)
      dw_affine_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (drt)
    })",
              {{"res_f", "res_r"},
               {"first_f", "first_r"},
               {"dw_f", "dw_r"},
               {"gelu_f", "gelu_r"},
               {"mish_f", "mish_r"},
               {"quick_f", "quick_r"},
               {"sig_f", "sig_r"},
               {"clip_f", "clip_r"},
               {"affine_f", "affine_r"},
               {"dw_affine_f", "dw_affine_r"}},
              1e-5);
}

TEST_CASE(
    "on one thread, a FusedConv's Sigmoid, SiLU and QuickGelu after the primitive equal Conv + activation") {
  // A team of one thread applies these three on the row loops after oneDNN's primitive,
  // the affine after them, and sets a blocked output's padding lanes back to 0: 18 output
  // channels (the second C0 block mostly padding; Sigmoid(0) * 2 - 0.5 is not 0 there, so
  // padding left activated fails), a residual added before the activation, an NCHW
  // output, an EfficientNet-style 1x1 expansion, its channel means (output 1: of the
  // activated output, padding lanes 0) and a gate's input scale (input 4).
  const KernelThreadLimit one_thread(1);
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,20,7,7] x, float[18,20,3,3] w, float[18,20,1,1] w1, float[18] b, float[2,18,7,7] z, float[1,20,1,1] s) => (float[2,2,7,7,16] silu_f, float[2,2,7,7,16] silu_r, float[2,2,4,4,16] sig_f, float[2,2,4,4,16] sig_r, float[2,2,7,7,16] quick_f, float[2,2,7,7,16] quick_r, float[2,18,4,4] plain_f, float[2,18,4,4] plain_r, float[2,2,1,1,16] means_f, float[2,2,1,1,16] means_r, float[2,2,7,7,16] gated_f, float[2,2,7,7,16] gated_r) {
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      z5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (z)
      silu_f = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "SiLU"> (x5, w1, b)
      e = Conv <kernel_shape = [1, 1]> (x, w1, b)
      eg = Sigmoid(e)
      es = Mul(e, eg)
      silu_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (es)
      sig_f = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "Sigmoid", post_scale = 2.0, post_shift = -0.5> (x5, w, b)
      c = Conv <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (x, w, b)
      cg = Sigmoid(c)
      two = Constant <value = float {2.0}> ()
      half = Constant <value = float {0.5}> ()
      c2 = Mul(cg, two)
      c3 = Sub(c2, half)
      sig_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (c3)
      quick_f = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "QuickGelu", activation_params = [1.5]> (x5, w, b, z5)
      r = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, w, b)
      rz = Add(r, z)
      a = Constant <value = float {1.5}> ()
      ra = Mul(rz, a)
      rg = Sigmoid(ra)
      rq = Mul(rz, rg)
      quick_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (rq)
      plain_f = ai.geopt.FusedConv <kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "SiLU"> (x, w, b)
      pg = Sigmoid(c)
      plain_r = Mul(c, pg)
      means_y, means_f = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "Sigmoid"> (x5, w1, b)
      means_r = AveragePool <kernel_shape = [7, 7, 1]> (means_y)
      s5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (s)
      gated_f = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "SiLU"> (x5, w1, b, , s5)
      xs = Mul(x, s)
      ge = Conv <kernel_shape = [1, 1]> (xs, w1, b)
      gg = Sigmoid(ge)
      gs = Mul(ge, gg)
      gated_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (gs)
    })",
              {{"silu_f", "silu_r"},
               {"sig_f", "sig_r"},
               {"quick_f", "quick_r"},
               {"plain_f", "plain_r"},
               {"means_f", "means_r"},
               {"gated_f", "gated_r"}},
              1e-5);
}

TEST_CASE("a depthwise FusedConv in NC1HWC0 (geopt's own loop) equals Conv on every geometry") {
  // 29 columns: runs of 8 outputs inside the row and single ones at its edges; 20
  // channels, so the second block is mostly padding and must come out 0 (Sigmoid(0) is
  // not). Strides, asymmetric pads, dilations, a 1x7 window, no bias, a residual; each with
  // an activation the loop takes by default (Sigmoid, SiLU, QuickGelu). A 6 x 3 plane
  // under a 5 x 5 window (every output at an edge, the window wider than the row) and a
  // 3 x 3 window at stride 2 with pads wider than it (outputs whose window holds no input
  // column: the bias alone).
  check_pairs(
      R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,20,23,29] x, float[20,1,3,3] w3, float[20,1,5,5] w5, float[20,1,1,7] w17, float[20] b, float[2,20,23,29] z, float[2,20,6,3] xs) => (float[2,2,6,3,16] narrow_f, float[2,2,6,3,16] narrow_r, float[2,2,4,4,16] wide_f, float[2,2,4,4,16] wide_r, float[2,2,23,29,16] res_f, float[2,2,23,29,16] res_r, float[2,2,11,14,16] s2_f, float[2,2,11,14,16] s2_r, float[2,2,23,29,16] dil_f, float[2,2,23,29,16] dil_r, float[2,2,23,15,16] row_f, float[2,2,23,15,16] row_r, float[2,2,11,14,16] sig_f, float[2,2,11,14,16] sig_r) {
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      z5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (z)
      res_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "SiLU"> (x5, w3, b, z5)
      c1 = Conv <group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, w3, b)
      c1z = Add(c1, z)
      g1 = Sigmoid(c1z)
      r1 = Mul(c1z, g1)
      res_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (r1)
      s2_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [5, 5], strides = [2, 2], pads = [2, 1, 1, 2], activation = "SiLU"> (x5, w5, b)
      c2 = Conv <group = 20, kernel_shape = [5, 5], strides = [2, 2], pads = [2, 1, 1, 2]> (x, w5, b)
      g2 = Sigmoid(c2)
      r2 = Mul(c2, g2)
      s2_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (r2)
      dil_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], dilations = [2, 3], pads = [2, 3, 2, 3], activation = "QuickGelu", activation_params = [1.5]> (x5, w3, b)
      c3 = Conv <group = 20, kernel_shape = [3, 3], dilations = [2, 3], pads = [2, 3, 2, 3]> (x, w3, b)
      a3 = Constant <value = float {1.5}> ()
      m3 = Mul(c3, a3)
      g3 = Sigmoid(m3)
      r3 = Mul(c3, g3)
      dil_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (r3)
      row_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [1, 7], strides = [1, 2], pads = [0, 3, 0, 3], activation = "Sigmoid", post_scale = 2.0, post_shift = -1.0> (x5, w17)
      c4 = Conv <group = 20, kernel_shape = [1, 7], strides = [1, 2], pads = [0, 3, 0, 3]> (x, w17)
      g4 = Sigmoid(c4)
      two = Constant <value = float {2.0}> ()
      one = Constant <value = float {1.0}> ()
      m4 = Mul(g4, two)
      r4 = Sub(m4, one)
      row_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (r4)
      sig_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], strides = [2, 2], activation = "Sigmoid"> (x5, w3, b)
      c5 = Conv <group = 20, kernel_shape = [3, 3], strides = [2, 2]> (x, w3, b)
      r5 = Sigmoid(c5)
      sig_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (r5)
      xs5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (xs)
      narrow_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [5, 5], pads = [2, 2, 2, 2], activation = "SiLU"> (xs5, w5, b)
      c6 = Conv <group = 20, kernel_shape = [5, 5], pads = [2, 2, 2, 2]> (xs, w5, b)
      g6 = Sigmoid(c6)
      r6 = Mul(c6, g6)
      narrow_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (r6)
      wide_f = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], strides = [2, 2], pads = [2, 3, 2, 3], activation = "SiLU"> (xs5, w3, b)
      c7 = Conv <group = 20, kernel_shape = [3, 3], strides = [2, 2], pads = [2, 3, 2, 3]> (xs, w3, b)
      g7 = Sigmoid(c7)
      r7 = Mul(c7, g7)
      wide_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (r7)
    })",
      {{"narrow_f", "narrow_r"},
       {"wide_f", "wide_r"},
       {"res_f", "res_r"},
       {"s2_f", "s2_r"},
       {"dil_f", "dil_r"},
       {"row_f", "row_r"},
       {"sig_f", "sig_r"}},
      1e-5);
}

TEST_CASE(
    "a FusedConv's channel means (its output 1) equal a global average pool of its output, on every path") {
  // The depthwise loop sums each row as it writes it (SiLU, a residual; 20 channels, so
  // the second block's 12 padding lanes must average 0; 23 x 29 planes shared by both
  // threads); a strided oneDNN conv reading FRACTAL_Z weights; a matrix-vector product
  // over a 1 x 1 image; an NCHW conv. Each against the pool of the conv's own output.
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,20,23,29] x, float[20,1,3,3] dw, float[20] b, float[2,20,23,29] z, float[18,20,3,3] w, float[18] b18, float[2,20,1,1] p, float[18,20,1,1] w1) => (float[2,2,1,1,16] dw_m, float[2,2,1,1,16] dw_r, float[2,2,1,1,16] res_m, float[2,2,1,1,16] res_r, float[2,2,1,1,16] cube_m, float[2,2,1,1,16] cube_r, float[2,2,1,1,16] pixel_m, float[2,2,1,1,16] pixel_r, float[2,18,1,1] nchw_m, float[2,18,1,1] nchw_r) {
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      z5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (z)
      dw_y, dw_m = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "SiLU"> (x5, dw, b)
      dw_r = AveragePool <kernel_shape = [23, 29, 1]> (dw_y)
      z5s = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], strides = [2, 2]> (z5, dw, b)
      res_y, res_m = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], strides = [2, 2], activation = "Relu"> (x5, dw, b, z5s)
      res_r = AveragePool <kernel_shape = [11, 14, 1]> (res_y)
      wz = ai.geopt.TransData <src_format = "NCHW", dst_format = "FRACTAL_Z"> (w)
      cube_y, cube_m = ai.geopt.FusedConv <data_format = "NC1HWC0", weight_format = "FRACTAL_Z", channels = 18, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1], activation = "Sigmoid"> (x5, wz, b18)
      cube_r = AveragePool <kernel_shape = [12, 15, 1]> (cube_y)
      p5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (p)
      pixel_y, pixel_m = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "SiLU"> (p5, w1, b18)
      pixel_r = AveragePool <kernel_shape = [1, 1, 1]> (pixel_y)
      nchw_y, nchw_m = ai.geopt.FusedConv <kernel_shape = [3, 3], pads = [0, 1, 2, 1], activation = "Relu"> (x, w, b18)
      nchw_r = GlobalAveragePool(nchw_y)
    })",
              {{"dw_m", "dw_r"},
               {"res_m", "res_r"},
               {"cube_m", "cube_r"},
               {"pixel_m", "pixel_r"},
               {"nchw_m", "nchw_r"}},
              1e-6);
}

TEST_CASE(
    "a global average pool and a ReduceMean over H and W give each plane's mean, in NCHW and over a whole "
    "NC1HWC0 plane") {
  // 37 channels: 3 blocks, the last with 11 padding lanes (their mean is 0); 9 x 11
  // positions (not a multiple of the four sums per lane); a batch of 2; a 1 x 1 plane;
  // and planes of 100 x 201 positions (more than one block of 4096, on both threads).
  // The reference is ReduceSum's double loop divided by the positions.
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,37,9,11] x, float[2,5,1,1] p, float[1,3,100,201] big) => (float[2,37,1,1] gap, float[2,37,1,1] reduce_mean, float[2,37,1,1] window, float[2,37,1,1] mean, float[2,3,1,1,16] blocked, float[2,3,1,1,16] blocked_mean, float[2,5,1,1] pixel, float[2,5,1,1] same, float[1,3,1,1] big_gap, float[1,3,1,1] big_reduce_mean, float[1,1,1,1,16] big_blocked, float[1,3,1,1] big_mean, float[1,1,1,1,16] big_blocked_mean) {
      gap = GlobalAveragePool(x)
      reduce_mean = ReduceMean <axes = [2, 3]> (x)
      window = AveragePool <kernel_shape = [9, 11]> (x)
      axes = Constant <value = int64[2] {2, 3}> ()
      sum = ReduceSum(x, axes)
      count = Constant <value = float {99.0}> ()
      mean = Div(sum, count)
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      blocked = AveragePool <kernel_shape = [9, 11, 1]> (x5)
      blocked_mean = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (mean)
      pixel = GlobalAveragePool(p)
      same = Identity(p)
      big_gap = GlobalAveragePool(big)
      big_reduce_mean = ReduceMean <axes = [2, 3]> (big)
      big5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (big)
      big_blocked = AveragePool <kernel_shape = [100, 201, 1]> (big5)
      big_sum = ReduceSum(big, axes)
      positions = Constant <value = float {20100.0}> ()
      big_mean = Div(big_sum, positions)
      big_blocked_mean = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (big_mean)
    })",
              {{"gap", "mean"},
               {"reduce_mean", "mean"},
               {"window", "mean"},
               {"blocked", "blocked_mean"},
               {"pixel", "same"},
               {"big_gap", "big_mean"},
               {"big_reduce_mean", "big_mean"},
               {"big_blocked", "big_blocked_mean"}},
              1e-6);
}

TEST_CASE(
    "a FusedConv reading its input times a scale per channel (input S) equals the product, then the conv") {
  // The scale goes into the weights where one serves both samples (oneDNN's cached copy
  // of constant weights, scaled in its own layout: a 1x1 conv with a residual, a grouped
  // 3x3 conv, a depthwise one; a copy of weights that are an input, in NCHW) and into a
  // copy of x where each sample has its own. 20 channels: the second block's padding
  // lanes meet a scale too. Each against the Mul the rules fuse, then the conv.
  check_pairs(
      R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,20,9,7] x, float[1,20,1,1] s, float[2,20,1,1] each, float[2,8,9,7] z, float[8] b8, float[4] b4, float[20] b20, float[8,20,3,3] wi) => (float[2,1,9,7,16] one, float[2,1,9,7,16] one_r, float[2,1,9,7,16] own, float[2,1,9,7,16] own_r, float[2,1,5,4,16] grouped, float[2,1,5,4,16] grouped_r, float[2,2,9,7,16] dw, float[2,2,9,7,16] dw_r, float[2,8,9,7] nchw, float[2,8,9,7] nchw_r) {
      w8 = Constant <value = float[8,20,1,1] {-0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0, -1, 0.75, -0.25, -1.25, 0.5, -0.5, 1.25, 0.25, -0.75, 1, 0}> ()
      wg = Constant <value = float[4,10,3,3] {-1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5, 0.75, -0.75, 0.5, -1, 0.25, -1.25, 0, 1.25, -0.25, 1, -0.5}> ()
      wd = Constant <value = float[20,1,3,3] {-0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25, -0.5, 0.25, 1, -1, -0.25, 0.5, 1.25, -0.75, 0, 0.75, -1.25}> ()
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      s5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (s)
      each5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (each)
      z5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (z)
      xs = Mul(x5, s5)
      xe = Mul(x5, each5)
      one = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "Relu"> (x5, w8, b8, z5, s5)
      one_r = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "Relu"> (xs, w8, b8, z5)
      own = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1]> (x5, w8, b8, , each5)
      own_r = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1]> (xe, w8, b8)
      grouped = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 2, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (x5, wg, b4, , s5)
      grouped_r = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 2, kernel_shape = [3, 3], strides = [2, 2], pads = [1, 1, 1, 1]> (xs, wg, b4)
      dw = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "SiLU"> (x5, wd, b20, , s5)
      dw_r = ai.geopt.FusedConv <data_format = "NC1HWC0", group = 20, kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "SiLU"> (xs, wd, b20)
      xn = Mul(x, s)
      nchw = ai.geopt.FusedConv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, wi, b8, , s)
      nchw_r = ai.geopt.FusedConv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (xn, wi, b8)
    })",
      {{"one", "one_r"}, {"own", "own_r"}, {"grouped", "grouped_r"}, {"dw", "dw_r"}, {"nchw", "nchw_r"}},
      1e-5);
}

TEST_CASE("a FusedConv refuses an input scale that is not one value per channel, naming the node") {
  onnx::ModelProto proto = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[1,20,9,7] x, float[1,20,9,7] s, float[8,20,1,1] w) => (float[1,8,9,7] y) {
      y = ai.geopt.FusedConv <kernel_shape = [1, 1]> (x, w, , , s)
    })");
  fs::path p = test::scratch_dir("fused") / "bad_scale.onnx";
  test::save_model(proto, p);
  Model model = import_onnx(p);
  Evaluator ev(model, ascend::op_registry());
  CHECK_THROWS_WITH_AS(ev.run(random_inputs(model, 1)),
                       doctest::Contains("must hold one f32 value per channel of the input"), Error);
}

TEST_CASE("a 1x1 FusedConv over a 1x1 image (a matrix-vector product) equals Conv, in NCHW and in NC1HWC0") {
  // A squeeze-and-excitation gate's two convs: 40 -> 20 with SiLU, 20 -> 40 with Sigmoid
  // (padding lanes of the blocked output must come out 0, not Sigmoid(0)), and a residual
  // with an affine tail; a batch of 2. A squeeze of 150 channels to 70 (in NCHW two steps of
  // the product's four 16-lane sums, one of a single sum, a tail of 6; in NC1HWC0 its 160
  // lanes) against a MatMul: a Conv of its shape runs on the same matrix-vector loop.
  check_pairs(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[2,40,1,1] x, float[20,40,1,1] w1, float[20] b1, float[40,20,1,1] w2, float[40] b2, float[2,20,1,1] z, float[2,150,1,1] xl, float[70,150,1,1] wl, float[70] bl) => (float[2,20,1,1] plain_f, float[2,20,1,1] plain_r, float[2,3,1,1,16] gate_f, float[2,3,1,1,16] gate_r, float[2,2,1,1,16] res_f, float[2,2,1,1,16] res_r, float[2,70,1,1] long_f, float[2,70,1,1] long_r, float[2,5,1,1,16] long_bf, float[2,5,1,1,16] long_br) {
      long_f = ai.geopt.FusedConv <kernel_shape = [1, 1]> (xl, wl, bl)
      xs = Constant <value = int64[2] {2, 150}> ()
      ws = Constant <value = int64[2] {70, 150}> ()
      ys = Constant <value = int64[4] {2, 70, 1, 1}> ()
      xr = Reshape(xl, xs)
      wr = Reshape(wl, ws)
      wt = Transpose <perm = [1, 0]> (wr)
      mm = MatMul(xr, wt)
      mb = Add(mm, bl)
      long_r = Reshape(mb, ys)
      xl5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (xl)
      long_bf = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1]> (xl5, wl, bl)
      long_br = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (long_r)
      plain_f = ai.geopt.FusedConv <kernel_shape = [1, 1], activation = "SiLU"> (x, w1, b1)
      c1 = Conv <kernel_shape = [1, 1]> (x, w1, b1)
      s1 = Sigmoid(c1)
      plain_r = Mul(c1, s1)
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      h5 = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "SiLU"> (x5, w1, b1)
      gate_f = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "Sigmoid"> (h5, w2, b2)
      c2 = Conv <kernel_shape = [1, 1]> (plain_r, w2, b2)
      s2 = Sigmoid(c2)
      gate_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (s2)
      z5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (z)
      res_f = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [1, 1], activation = "Relu", post_scale = 0.5, post_shift = 1.0> (x5, w1, b1, z5)
      cz = Add(c1, z)
      rz = Relu(cz)
      half = Constant <value = float {0.5}> ()
      one = Constant <value = float {1.0}> ()
      rh = Mul(rz, half)
      ra = Add(rh, one)
      res_r = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (ra)
    })",
              {{"plain_f", "plain_r"},
               {"gate_f", "gate_r"},
               {"res_f", "res_r"},
               {"long_f", "long_r"},
               {"long_bf", "long_br"}},
              1e-5);
}

TEST_CASE(
    "a 3x3 conv of many channels (Winograd where the machine has it) equals the direct sum, in NCHW and in "
    "NC1HWC0") {
  // 64 channels, stride 1: the shape the host kernel runs as Winograd F(2x2, 3x3) on
  // AVX-512. The reference is the conv's definition summed in double here, not another
  // oneDNN conv. Weights at He scale, so outputs are about 1 and 1e-5 is tight.
  constexpr int64_t C = 64, M = 80, H = 9, W = 11;
  onnx::ModelProto proto = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[1,64,9,11] x, float[80,64,3,3] w, float[80] b, float[1,80,9,11] z) => (float[1,80,9,11] plain, float[1,5,9,11,16] blocked) {
      plain = Conv <kernel_shape = [3, 3], pads = [1, 1, 1, 1]> (x, w, b)
      x5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (x)
      z5 = ai.geopt.TransData <src_format = "NCHW", dst_format = "NC1HWC0"> (z)
      blocked = ai.geopt.FusedConv <data_format = "NC1HWC0", kernel_shape = [3, 3], pads = [1, 1, 1, 1], activation = "Relu"> (x5, w, b, z5)
    })");
  fs::path p = test::scratch_dir("fused") / "winograd.onnx";
  test::save_model(proto, p);
  Model model = import_onnx(p);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> unit(-1.0f, 1.0f);
  auto fill = [&](std::vector<int64_t> dims, float scale) {
    HostTensor t(DType::F32, std::move(dims));
    for (int64_t i = 0; i < t.size(); ++i) t.mutable_data<float>()[i] = unit(rng) * scale;
    return t;
  };
  std::map<std::string, HostTensor> in{{"x", fill({1, C, H, W}, 1.0f)},
                                       {"w", fill({M, C, 3, 3}, 1.0f / std::sqrt(9.0f * C))},
                                       {"b", fill({M}, 0.1f)},
                                       {"z", fill({1, M, H, W}, 1.0f)}};
  NamedTensors outs = Evaluator(model, ascend::op_registry()).run(in);
  std::map<std::string, HostTensor> by_name(outs.begin(), outs.end());
  const float* x = in.at("x").data<float>();
  const float* w = in.at("w").data<float>();
  const float* b = in.at("b").data<float>();
  const float* z = in.at("z").data<float>();
  const float* plain = by_name.at("plain").data<float>();
  const float* blocked = by_name.at("blocked").data<float>();
  double worst_plain = 0, worst_blocked = 0;
  for (int64_t m = 0; m < M; ++m)
    for (int64_t r = 0; r < H; ++r)
      for (int64_t c = 0; c < W; ++c) {
        double sum = b[m];
        for (int64_t ic = 0; ic < C; ++ic)
          for (int64_t i = 0; i < 3; ++i)
            for (int64_t j = 0; j < 3; ++j) {
              const int64_t rr = r + i - 1, cc = c + j - 1;
              if (rr >= 0 && rr < H && cc >= 0 && cc < W)
                sum += double(x[(ic * H + rr) * W + cc]) * w[((m * C + ic) * 3 + i) * 3 + j];
            }
        const int64_t at = (m * H + r) * W + c;
        worst_plain = std::max(worst_plain, std::fabs(plain[at] - sum));
        const double fused = std::max(0.0, sum + z[at]);
        worst_blocked =
            std::max(worst_blocked, std::fabs(blocked[((m / 16) * H * W + r * W + c) * 16 + m % 16] - fused));
      }
  CHECK(worst_plain <= 1e-5);
  CHECK(worst_blocked <= 1e-5);
}

TEST_CASE("NC1HWC0 puts channel c at [n, c / C0, h, w, c % C0], pads with zeros, and converts back") {
  // Positions in tiles of 64 and a partial one (9 x 17 = 153), a last block mostly padding
  // (37 channels); f32 and fp16 (C0 16), uint8 (C0 32); a tensor the threads share.
  for (const auto& shaped :
       std::vector<std::pair<DType, std::vector<int64_t>>>{{DType::F32, {2, 37, 9, 17}},
                                                           {DType::F16, {2, 37, 9, 17}},
                                                           {DType::U8, {2, 37, 9, 17}},
                                                           {DType::F32, {1, 20, 60, 61}}}) {
    const DType dtype = shaped.first;  // not a structured binding: clang's INFO lambda cannot capture one
    const std::vector<int64_t>& dims = shaped.second;
    INFO(dtype_name(dtype) << " " << dims[1] << " channels of " << dims[2] << "x" << dims[3]);
    HostTensor x(dtype, dims);
    const int64_t bytes = static_cast<int64_t>(dtype_size(dtype));
    for (int64_t i = 0; i < x.size(); ++i)  // each element's own bytes: its index, modulo
      std::memcpy(x.mutable_raw() + i * bytes, &i, static_cast<size_t>(bytes));
    HostTensor y = ascend::to_nc1hwc0(x);
    const int64_t c0 = y.dims()[4], c1 = y.dims()[1], hw = dims[2] * dims[3];
    CHECK(c0 == (dtype == DType::U8 ? 32 : 16));
    int64_t misplaced = 0;
    for (int64_t n = 0; n < dims[0]; ++n)
      for (int64_t c = 0; c < c1 * c0; ++c)
        for (int64_t p = 0; p < hw; ++p) {
          const std::byte* got = y.raw() + (((n * c1 + c / c0) * hw + p) * c0 + c % c0) * bytes;
          int64_t want = 0;  // a padding channel is zero
          if (c < dims[1]) want = (n * dims[1] + c) * hw + p;
          misplaced += std::memcmp(got, &want, static_cast<size_t>(bytes)) != 0;
        }
    CHECK(misplaced == 0);
    HostTensor back = ascend::from_nc1hwc0(y, dims[1]);
    REQUIRE(back.dims() == dims);
    CHECK(std::memcmp(back.raw(), x.raw(), x.nbytes()) == 0);
  }
}

TEST_CASE("FRACTAL_Z and FRACTAL_NZ put each element where CANN does, pad with zeros, and convert back") {
  // Conv weights [N=20, C=3, H=3, W=3] (f32, C0 = 16): [ceil(3/16)*3*3, ceil(20/16), 16, 16] = [9, 2, 16,
  // 16].
  HostTensor w(DType::F32, {20, 3, 3, 3});
  for (int64_t i = 0; i < w.size(); ++i) w.mutable_data<float>()[i] = static_cast<float>(i + 1);
  HostTensor z = ascend::to_fractal_z(w);
  CHECK(z.dims() == std::vector<int64_t>{9, 2, 16, 16});
  CHECK(z.dims() == ascend::device_shape(w.dims(), ascend::Format::FRACTAL_Z, DType::F32));
  // (n=17, c=2, h=1, w=2): row (c/16)*9 + 1*3 + 2 = 5, n1 = 1, n0 = 1, c0 = 2.
  const int64_t plain = ((17 * 3 + 2) * 3 + 1) * 3 + 2;
  CHECK(z.data<float>()[((5 * 2 + 1) * 16 + 1) * 16 + 2] == static_cast<float>(plain + 1));
  double total = 0;
  for (int64_t i = 0; i < z.size(); ++i) total += z.data<float>()[i];
  CHECK(total == doctest::Approx(static_cast<double>(w.size()) * (w.size() + 1) / 2));  // the rest is zero
  HostTensor back = ascend::from_fractal_z(z, w.dims());
  CHECK(back.to_vector<float>() == w.to_vector<float>());
  HostTensor padded = ascend::from_fractal_z(z, {20, 16, 3, 3});  // the padded input channels read as zero
  CHECK(padded.data<float>()[((17 * 16 + 2) * 3 + 1) * 3 + 2] == static_cast<float>(plain + 1));
  CHECK(padded.data<float>()[((17 * 16 + 3) * 3 + 1) * 3 + 2] == 0.0f);

  // A batch of matrices [2, H=20, W=18]: [2, ceil(18/16), ceil(20/16), 16, 16] = [2, 2, 2, 16, 16].
  HostTensor m(DType::F32, {2, 20, 18});
  for (int64_t i = 0; i < m.size(); ++i) m.mutable_data<float>()[i] = static_cast<float>(i + 1);
  HostTensor nz = ascend::to_fractal_nz(m);
  CHECK(nz.dims() == std::vector<int64_t>{2, 2, 2, 16, 16});
  CHECK(nz.dims() == ascend::device_shape(m.dims(), ascend::Format::FRACTAL_NZ, DType::F32));
  // (b=1, h=17, w=17): [1, 17/16, 17/16, 17%16, 17%16] = [1, 1, 1, 1, 1].
  CHECK(nz.data<float>()[(((1 * 2 + 1) * 2 + 1) * 16 + 1) * 16 + 1] ==
        static_cast<float>((1 * 20 + 17) * 18 + 17 + 1));
  CHECK(ascend::from_fractal_nz(nz, 20, 18).to_vector<float>() == m.to_vector<float>());
  CHECK_THROWS_AS(ascend::from_fractal_nz(nz, 40, 18), Error);
}
