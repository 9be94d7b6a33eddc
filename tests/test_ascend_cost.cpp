// Ascend hardware profiles, device layouts (as CANN computes them), and the cost model.
#include <doctest/doctest.h>

#include <tuple>

#include "ascend/cost_model.h"
#include "ascend/layout.h"
#include "ascend/optimizer.h"
#include "dsl_support.h"
#include "onnx/import.h"
#include "test_support.h"
#include "util/error.h"

using namespace geopt;
using namespace geopt::ascend;

TEST_CASE("profiles carry CANN's platform figures") {
  auto names = available_profiles();
  CHECK(names == std::vector<std::string>{"Ascend310", "Ascend310P3", "Ascend910A", "Ascend910B1",
                                          "Ascend910B2", "Ascend910B3"});
  HardwareProfile b1 = load_profile("Ascend910B1");
  CHECK(b1.ai_cores == 24);
  CHECK(b1.vector_cores == 48);
  CHECK(b1.frequency_mhz == 1850);
  CHECK(b1.ub == 192 * 1024);
  CHECK(b1.l1 == 512 * 1024);
  CHECK(b1.l0a == 64 * 1024);
  CHECK(b1.l0c == 128 * 1024);
  CHECK(b1.l2_bytes == 192ll << 20);
  CHECK(b1.peak_fp16_tflops() ==
        doctest::Approx(363.7).epsilon(0.001));  // 4096 MACs x 24 cores x 1.85 GHz x 2
  HardwareProfile b3 = load_profile("Ascend910B3");
  CHECK(b3.ai_cores == 20);
  CHECK(b3.vector_cores == 40);
  HardwareProfile a = load_profile("Ascend910A");
  CHECK(a.ai_cores == 32);
  CHECK(a.frequency_mhz == 1000);
  CHECK(a.l0c == 256 * 1024);
  CHECK(a.l1 == 1024 * 1024);
  CHECK(a.ub == 256 * 1024);
  HardwareProfile p = load_profile("Ascend310P3");
  CHECK(p.ai_cores == 8);
  CHECK(p.vector_cores == 7);
}

TEST_CASE("profile overrides and errors") {
  HardwareProfile p = load_profile("Ascend910B1", {{"memory.hbm_gbps", "1200"}, {"buffers.ub", "65536"}});
  CHECK(p.hbm_gbps == 1200);
  CHECK(p.ub == 65536);
  CHECK_THROWS_WITH_AS(load_profile("Ascend999"),
                       doctest::Contains("unknown --soc-version 'Ascend999' (known: Ascend310, Ascend310P3"),
                       Error);
  CHECK_THROWS_WITH_AS(load_profile("Ascend910B1", {{"memory.nope", "1"}}),
                       doctest::Contains("has no such key"), Error);
  CHECK_THROWS_WITH_AS(load_profile("Ascend910B1", {{"memory.hbm_gbps", "fast"}}),
                       doctest::Contains("not a number"), Error);
  auto dir = test::scratch_dir("profile");
  test::write_file(dir / "bad.toml", "soc_version = \"X\"\n[cores]\nai_cores = 2\n");
  CHECK_THROWS_WITH_AS(load_profile((dir / "bad.toml").string()),
                       doctest::Contains("bad.toml: 'cores.vector_cores' is missing or not an integer"),
                       Error);
  test::write_file(dir / "zero.toml", "soc_version = \"X\"\n[cores]\nai_cores = 0\n");
  CHECK_THROWS_WITH_AS(load_profile((dir / "zero.toml").string()),
                       doctest::Contains("zero.toml: 'cores.ai_cores' is 0; it must be 1 to 4096"), Error);
  // Every rate and size a cost is divided by or added to is finite and in range, from a
  // file and from --profile-set alike (a negative launch overhead made extraction spin).
  for (const auto& [key, value, says] : std::vector<std::tuple<std::string, std::string, std::string>>{
           {"launch.overhead_us", "-0.5", "'launch.overhead_us' is -0.5; it must be at least 0"},
           {"memory.hbm_gbps", "inf", "memory.hbm_gbps=inf: not a number"},
           {"cube.fp16_macs_per_cycle", "0", "'cube.fp16_macs_per_cycle' is 0; it must be above 0"},
           {"cube.m", "0", "'cube.m' is 0; it must be 1 to 256"},
           {"buffers.ub", "1", "'buffers.ub' is 1; it must be 1024"}}) {
    const std::string& option = key;  // a lambda (INFO) cannot name a structured binding in clang 14
    INFO(option);
    CHECK_THROWS_WITH_AS(load_profile("Ascend910B1", {{key, value}}), doctest::Contains(says.c_str()), Error);
  }
  std::string text = test::read_file(std::filesystem::path(GEOPT_SOURCE_DIR_STR) /
                                     "backends/ascend/profiles/Ascend910B1.toml");
  const size_t at = text.find("hbm_gbps");
  REQUIRE(at != std::string::npos);
  text.replace(at, text.find('\n', at) - at, "hbm_gbps = nan");
  test::write_file(dir / "nan.toml", text);
  CHECK_THROWS_WITH_AS(load_profile((dir / "nan.toml").string()),
                       doctest::Contains("'memory.hbm_gbps' is nan"), Error);
}

TEST_CASE("device shapes follow CANN's transfer rules") {
  CHECK(device_shape({1, 3, 224, 224}, Format::NC1HWC0, DType::F16) ==
        std::vector<int64_t>{1, 1, 224, 224, 16});
  CHECK(device_shape({8, 40, 7, 7}, Format::NC1HWC0, DType::F16) == std::vector<int64_t>{8, 3, 7, 7, 16});
  CHECK(device_shape({8, 40, 7, 7}, Format::NC1HWC0, DType::I8) == std::vector<int64_t>{8, 2, 7, 7, 32});
  CHECK(device_shape({64, 3, 7, 7}, Format::FRACTAL_Z, DType::F16) == std::vector<int64_t>{49, 4, 16, 16});
  CHECK(device_shape({2, 100, 70}, Format::FRACTAL_NZ, DType::F16) == std::vector<int64_t>{2, 5, 7, 16, 16});
  CHECK(padded_elements({1, 3, 224, 224}, Format::NC1HWC0, DType::F16) ==
        224 * 224 * 16);  // C padded 3 -> 16
  CHECK_THROWS_AS(device_shape({3, 4}, Format::NC1HWC0, DType::F16), Error);
}

TEST_CASE("a large fp16 MatMul is Cube-bound at the profile's sustained rate") {
  onnx::ModelProto m = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float16[4096,4096] a, float16[4096,4096] b) => (float16[4096,4096] y) { y = MatMul(a, b) })");
  Model model = import_onnx_proto(std::move(m), "mm.onnx");
  HardwareProfile p = load_profile("Ascend910B1");
  KernelWork w = work_of(*model.graph->nodes()[0]);
  CHECK(w.cube_macs == doctest::Approx(4096.0 * 4096 * 4096));
  KernelCost c = cost_of(w, p);
  CHECK(c.bound == "cube");
  const double flops = 2.0 * 4096 * 4096 * 4096;
  // 1024 tiles of 128x128 over 24 cores: 43 waves where 42.7 would do, at the sustained rate.
  CHECK(c.cube_us == doctest::Approx(flops / (p.peak_fp16_tflops() * 1e12 * p.cube_efficiency) * 1e6 * 43 /
                                     (1024.0 / 24)));
  CHECK(c.cube_us > flops / (p.peak_fp16_tflops() * 1e12) * 1e6);
  // B in ND is converted to FRACTAL_NZ on the way: one more launch, one more read and write of B.
  CHECK(w.extra_launches == 1);
  CHECK(c.total_us == doctest::Approx(c.cube_us + 2 * p.launch_overhead_us));
  // 32 MiB a tensor: each fits Ascend910B1's share of L2 (96 MiB), so none goes to HBM.
  CHECK(c.dram_bytes == 0);
  CHECK(c.l2_bytes == doctest::Approx(5.0 * 4096 * 4096 * 2));
  CHECK(c.memory_us == doctest::Approx(5.0 * 4096 * 4096 * 2 / (p.l2_gbps * 1e9) * 1e6));
  // Laid out at compile time (a FusedMatMul reading FRACTAL_NZ), only the product's own traffic is left.
  onnx::ModelProto nz = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float16[4096,4096] a, float16[256,256,16,16] b) => (float16[4096,4096] y) { y = ai.geopt.FusedMatMul <b_format = "FRACTAL_NZ", n = 4096> (a, b) })");
  Model nz_model = import_onnx_proto(std::move(nz), "nz.onnx");
  KernelWork wn = work_of(*nz_model.graph->nodes()[0]);
  CHECK(wn.extra_launches == 0);
  CHECK(wn.cube_macs == doctest::Approx(4096.0 * 4096 * 4096));
  CHECK(wn.vector_ops == 0);  // no bias, no activation
  CHECK(cost_of(wn, p).l2_bytes == doctest::Approx(3.0 * 4096 * 4096 * 2));
}

TEST_CASE(
    "an int8 conv multiplies at the Cube's int8 rate whether it reads 8-bit values or quantizes float ones "
    "as it "
    "reads them, and an NC1HWC0 output's padding lanes are not positions") {
  // ResNet-50's 3x3 layer-3 conv, 256 -> 256 channels at 14 x 14, its output requantized.
  auto conv = [](const std::string& x, int quantize_input, int64_t m) {
    const std::string blocks = std::to_string((m + 31) / 32), ms = std::to_string(m);
    const std::string text =
        "<ir_version: 8, opset_import: [\"\" : 13, \"ai.geopt\" : 1]>\ng (" + x + " x, int8[" + ms +
        ",256,3,3] w, float xs, uint8 xz, float[" + ms + "] ws, int8[" + ms + "] wz, float[" + ms +
        "] b) => (uint8[1," + blocks + ",14,14,32] y) {\n  y = ai.geopt.FusedQuantConv <channels = " + ms +
        ", kernel_shape = [3, 3], pads = [1, 1, 1, 1], strides = [1, 1], dilations = [1, 1], group = 1, "
        "output_dtype = 2, output_scale = 0.1, output_zero_point = 0, quantize_input = " +
        std::to_string(quantize_input) +
        ", input_scale = 0.05, input_zero_point = 0> (x, w, xs, xz, ws, wz, b)\n}";
    Model model = import_onnx_proto(test::parse_text_model(text.c_str()), "int8 conv");
    return work_of(*model.graph->nodes()[0]);
  };
  const HardwareProfile p = load_profile("Ascend910B1");
  const KernelWork reads_8bit = conv("uint8[1,8,14,14,32]", 0, 256),
                   quantizes = conv("float[1,16,14,14,16]", 1, 256);
  CHECK(cost_of(quantizes, p).cube_us == doctest::Approx(cost_of(reads_8bit, p).cube_us));
  // The same conv in fp16 takes the Cube about twice as long.
  onnx::ModelProto fp16 = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float16[1,256,14,14] x, float16[256,256,3,3] w) => (float16[1,256,14,14] y) { y = Conv <pads = [1, 1, 1, 1]> (x, w) })");
  Model fp16_model = import_onnx_proto(std::move(fp16), "fp16 conv");
  const double fp16_cube = cost_of(work_of(*fp16_model.graph->nodes()[0]), p).cube_us;
  CHECK(cost_of(reads_8bit, p).cube_us < 0.6 * fp16_cube);
  // Each output position computes its M channels: 2 channels in a block of 32 lanes are 2.
  CHECK(reads_8bit.cube_macs == doctest::Approx(14.0 * 14 * 256 * 256 * 9));
  CHECK(conv("uint8[1,8,14,14,32]", 0, 2).cube_macs == doctest::Approx(14.0 * 14 * 2 * 256 * 9));
}

TEST_CASE("ONNX's QLinearMatMul and QLinearConv are int8 products on the Cube, as geopt's own are") {
  // The QOperator form of a quantized model (onnxruntime's quantize_static with
  // QuantFormat.QOperator) and attention's activation x activation products: B, the
  // weight, is input 3, after A's scale and zero point.
  onnx::ModelProto m = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (uint8[1,12,128,64] q, uint8[1,12,64,128] k, float s, uint8 z, uint8[1,256,14,14] x, int8[256,256,3,3] w,
       int8 wz, int32[256] b) => (uint8[1,12,128,128] y, uint8[1,256,14,14] c) {
      y = QLinearMatMul(q, s, z, k, s, z, s, z)
      c = QLinearConv <pads = [1, 1, 1, 1]> (x, s, z, w, s, wz, s, z, b)
    })");
  Model model = import_onnx_proto(std::move(m), "qlinear.onnx");
  const HardwareProfile p = load_profile("Ascend910B1");
  const KernelWork mm = work_of(*model.graph->nodes()[0]), conv = work_of(*model.graph->nodes()[1]);
  CHECK(mm.cube_macs == doctest::Approx(12.0 * 128 * 128 * 64));
  CHECK(dtype_size(mm.dtype) == 1);
  CHECK(mm.vector_ops == doctest::Approx(2.0 * 12 * 128 * 128));  // the sums requantized
  CHECK(conv.cube_macs == doctest::Approx(14.0 * 14 * 256 * 256 * 9));
  CHECK(dtype_size(conv.dtype) == 1);
  CHECK(conv.vector_ops == doctest::Approx(3.0 * 14 * 14 * 256));  // requantized, its bias added
  // The same products in fp16 take the Cube about twice as long.
  onnx::ModelProto fp16 = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float16[1,256,14,14] x, float16[256,256,3,3] w) => (float16[1,256,14,14] y) { y = Conv <pads = [1, 1, 1, 1]> (x, w) })");
  Model fp16_model = import_onnx_proto(std::move(fp16), "fp16 conv");
  CHECK(cost_of(conv, p).cube_us < 0.6 * cost_of(work_of(*fp16_model.graph->nodes()[0]), p).cube_us);
}

TEST_CASE("a sequence-first activation times a weight is one GEMM of all its rows") {
  // nn.MultiheadAttention's packed projection of 197 tokens, batch 1: [197, 1, 768] x
  // [768, 2304] is the product [1, 197, 768] x [768, 2304] is, not 197 products of one row.
  auto cube_us = [](const char* a) {
    const std::string text = std::string(R"(<ir_version: 8, opset_import: ["" : 13]>
    g (float16)") + a + R"( x, float16[768,2304] w) => (float16[)" +
                             (std::string(a) == "[197,1,768]" ? "197,1,2304" : "1,197,2304") +
                             R"(] y) { y = MatMul(x, w) })";
    Model model = import_onnx_proto(test::parse_text_model(text.c_str()), "projection");
    return cost_of(work_of(*model.graph->nodes()[0]), load_profile("Ascend910B1")).cube_us;
  };
  CHECK(cube_us("[197,1,768]") == doctest::Approx(cube_us("[1,197,768]")));
}

TEST_CASE("a fused kernel is feasible with a large UB and infeasible, with the reason, with a small one") {
  onnx::ModelProto m = test::parse_text_model(R"(<ir_version: 8, opset_import: ["" : 13, "ai.geopt" : 1]>
    g (float[8,16384] x, float[8,16384] r, float[16384] g) => (float[8,16384] y) { y = ai.geopt.AddLayerNorm(x, r, g) })");
  Model model = import_onnx_proto(std::move(m), "aln.onnx");
  CostOptions keep;
  keep.precision.mode = PrecisionMode::MustKeepOriginDtype;
  KernelWork w = work_of(*model.graph->nodes()[0], keep);
  CHECK(w.min_ub_bytes == 2 * 16384 * (3 * 4 + 4));  // two rows in, one out, an fp32 copy; double-buffered
  KernelCost small = cost_of(w, load_profile("Ascend910B1"));
  CHECK_FALSE(small.feasible);
  CHECK(small.reason == "ai.geopt::AddLayerNorm: working set 512 KiB exceeds UB 192 KiB on Ascend910B1");
  KernelCost large = cost_of(w, load_profile("Ascend910B1", {{"buffers.ub", "1048576"}}));
  CHECK(large.feasible);
  // In fp16 (ATC's default precision) the row needs 320 KiB: still too big for 192 KiB.
  CHECK_FALSE(cost_of(work_of(*model.graph->nodes()[0]), load_profile("Ascend910B1")).feasible);
}

TEST_CASE("fusing BERT lowers its modeled latency, kernel count and HBM traffic") {
  auto rules = test::load_rules({test::shipped_rules()});
  Model original = import_onnx(test::examples_dir() / "bert_tiny_op13.onnx");
  HardwareProfile p = load_profile("Ascend910B1");
  Model fused = optimize(original, *rules, p).model;
  GraphCost before = cost_of_graph(*original.graph, p), after = cost_of_graph(*fused.graph, p);
  CHECK(after.kernels < before.kernels);
  CHECK(after.latency_us < before.latency_us);
  CHECK(after.hbm_bytes < before.hbm_bytes);
  CHECK(after.by_op.at("ai.geopt::AddLayerNorm").second == 5);
  CHECK(after.by_op.at("ai.geopt::FusedMatMul").second ==
        9);  // per layer: Q, K and V merged (the Split into pieces a view), output, two FFN; the pooler
  CHECK(before.infeasible == 0);
  CHECK(after.infeasible == 0);
}
