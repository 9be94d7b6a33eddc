// What the shipped rules make of each committed example model under
// `geopt optimize` (saturation + extraction on Ascend910B1): the fused op counts
// are pinned, and every optimized model computes what the original computes.
#include <doctest/doctest.h>

#include "ascend/device_ops/device_ops.h"
#include "ascend/hardware_profile.h"
#include "ascend/layout.h"
#include "ascend/optimizer.h"
#include "dsl_support.h"
#include "onnx/import.h"
#include "passes/static_shapes.h"
#include "test_support.h"

namespace geopt {
namespace {

using test::count_op;

ascend::OptimizeResult optimize_example(const std::string& name) {
  static auto rules = test::load_rules({test::shipped_rules()});
  Model m = import_onnx(test::examples_dir() / (name + ".onnx"));
  ascend::OptimizeResult r = ascend::optimize(m, *rules, ascend::load_profile("Ascend910B1"));
  CHECK(test::max_output_error(m, r.model) <= 1e-4);
  return r;
}

size_t count_in(const Model& m, const std::vector<std::string>& ops) {
  size_t n = 0;
  for (const auto& op : ops) n += count_op(m, op);
  return n;
}

// The primitive ops a LayerNorm, a GELU and an attention block are exported as.
const std::vector<std::string> kNormPrimitives = {"ReduceMean", "Pow", "Sqrt", "LayerNormalization",
                                                  "LayerNorm"};
const std::vector<std::string> kGeluPrimitives = {"Erf", "Tanh"};
const std::vector<std::string> kAttentionPrimitives = {"Softmax", "Where"};

TEST_CASE("BERT: every LayerNorm with its residual Add is an AddLayerNorm, GELUs and attention are fused") {
  for (const char* name : {"bert_tiny_op13", "bert_tiny_op17"}) {
    INFO(std::string(name));
    ascend::OptimizeResult r = optimize_example(name);
    CHECK(count_op(r.model, "AddLayerNorm") == 5);  // embeddings + 2 per layer
    CHECK(count_in(r.model, kNormPrimitives) == 0);
    CHECK(count_op(r.model, "FlashAttention") == 2);
    CHECK(count_in(r.model, kAttentionPrimitives) == 0);
    CHECK(count_in(r.model, kGeluPrimitives) ==
          0);                               // the pooler's Tanh (no GELU) rides on its FusedMatMul too
    CHECK(count_op(r.model, "Gelu") == 0);  // both GELUs ride on their FusedMatMul
    CHECK(r.selected["FusedMatMulGelu"] == 2);
    CHECK(r.selected["FusedMatMulTanh"] == 1);
    CHECK(count_op(r.model, "FusedMatMul") ==
          9);  // Q, K and V merged, output and two FFN layers per layer, and the pooler
    CHECK(r.selected["QKVMergeBiased"] == 2);
    CHECK(r.selected.count("QKVMerge") ==
          0);  // built the same input Reshape, but its merged product is not the one kept
    CHECK(count_op(r.model, "Gemm") == 0);
    CHECK(count_op(r.model, "MatMul") == 0);
  }
}

TEST_CASE("GPT-2: the same with a causal mask, and pre-LN residuals keep their sum") {
  for (const char* name : {"gpt2_tiny_op13", "gpt2_tiny_op17"}) {
    INFO(std::string(name));
    ascend::OptimizeResult r = optimize_example(name);
    CHECK(count_op(r.model, "AddLayerNorm") == 5);  // ln_1, ln_2 per block and ln_f
    CHECK(r.selected["AddLayerNormKeepSum"] == 4);  // the sum feeds the next residual too
    CHECK(count_in(r.model, kNormPrimitives) == 0);
    CHECK(count_op(r.model, "FlashAttention") == 2);
    CHECK(count_in(r.model, kAttentionPrimitives) == 0);
    CHECK(count_op(r.model, "Gelu") == 0);  // both tanh GELUs ride on their FusedMatMul
    CHECK(r.selected["FusedMatMulGeluTanh"] == 2);
    CHECK(count_in(r.model, kGeluPrimitives) == 0);
    CHECK(count_op(r.model, "Add") == 0);  // every residual is inside an AddLayerNorm
    CHECK(count_op(r.model, "Not") == 0);  // the mask was folded to a constant
  }
}

TEST_CASE(
    "ViT (torchvision, nn.MultiheadAttention, pre-LN): every residual is inside an AddLayerNorm that keeps "
    "its sum") {
  // Each sum is both a LayerNorm's input and the next residual's: the extraction must
  // take the tuple's sum for the Add, not drop the tuple for a LayerNorm of the Add.
  static auto rules = test::load_rules({test::shipped_rules()});
  for (const char* name : {"vit_tiny_op13", "vit_tiny_op17"}) {
    INFO(std::string(name));
    // As geopt optimize runs it: the exporter's shape computations (the class token's
    // Expand) folded first.
    Model m = import_onnx(test::examples_dir() / (std::string(name) + ".onnx"));
    propagate_static_shapes(m, ascend::op_registry());
    ascend::OptimizeResult r = ascend::optimize(m, *rules, ascend::load_profile("Ascend910B1"));
    CHECK(test::max_output_error(m, r.model) <= 1e-4);
    CHECK(count_op(r.model, "AddLayerNorm") == 5);  // ln_1, ln_2 per layer and the final ln
    CHECK(r.selected["AddLayerNormKeepSum"] == 4);
    CHECK(count_in(r.model, kNormPrimitives) == 0);
    CHECK(count_op(r.model, "Add") == 0);
    CHECK(count_op(r.model, "FlashAttention") == 2);
    CHECK(count_in(r.model, kAttentionPrimitives) == 0);
    CHECK(count_in(r.model, kGeluPrimitives) == 0);
  }
}

TEST_CASE("LLaMA: every RMSNorm, rotary embedding, SwiGLU and attention block is fused") {
  for (const char* name : {"llama_tiny_op13", "llama_tiny_op17"}) {
    INFO(std::string(name));
    ascend::OptimizeResult r = optimize_example(name);
    CHECK(count_op(r.model, "RMSNorm") == 5);
    CHECK(count_in(r.model, kNormPrimitives) == 0);
    CHECK(count_op(r.model, "RotaryEmbedding") == 4);  // Q and K in each of 2 layers
    CHECK(count_in(r.model, {"Slice", "Neg", "Concat"}) == 0);
    CHECK(count_op(r.model, "SwiGLU") == 2);
    CHECK(count_in(r.model, {"Sigmoid", "Mul"}) == 0);
    CHECK(count_op(r.model, "FlashAttention") == 2);
    CHECK(count_in(r.model, kAttentionPrimitives) == 0);
  }
}

TEST_CASE("ResNet and MobileNetV2: every Conv carries its bias and activation, the network runs in NC1HWC0") {
  struct Case {
    const char* name;
    size_t convs;
  };
  for (Case c : {Case{"resnet18_narrow_op13", 20}, Case{"resnet18_narrow_op17", 20},
                 Case{"mobilenetv2_half_op13", 52}, Case{"mobilenetv2_half_op17", 52}}) {
    INFO(std::string(c.name));
    ascend::OptimizeResult r = optimize_example(c.name);
    CHECK(count_op(r.model, "Conv") == 0);
    CHECK(count_op(r.model, "FusedConv") == c.convs);
    CHECK(count_in(r.model, {"Relu", "Clip", "Add"}) ==
          0);                      // activations and residuals are in the FusedConvs
    size_t runtime_transdata = 0;  // weight layouts (FRACTAL_Z) are computed when the model is compiled
    for (const auto& n : r.model.graph->nodes())
      runtime_transdata += n->op_type == "TransData" && !ascend::is_weight_layout(*n);
    CHECK(runtime_transdata == 1);  // one out: the first conv reads the NCHW image as given (C04)
    for (const auto& n : r.model.graph->nodes()) {
      INFO(n->name);
      if (n->op_type == "FusedConv") CHECK(n->attr("data_format")->s == "NC1HWC0");
      // The Cube's convs (group 1) read their weights in FRACTAL_Z; depthwise ones keep NCHW.
      if (n->op_type == "FusedConv") {
        const Attribute* group = n->attr("group");
        const Attribute* wf = n->attr("weight_format");
        CHECK((wf && wf->s == "FRACTAL_Z") == (!group || group->i == 1));
      }
      if (n->op_type == "MaxPool" || n->op_type == "AveragePool") CHECK(n->input(0)->type.shape->rank() == 5);
    }
  }
}

TEST_CASE(
    "the seed case: attention + LayerNorm + Dropout + residual is one kernel at epsilon 1e-5, not at 1e-6") {
  ascend::OptimizeResult fused = optimize_example("seed_attention_ln_eps1e-5");
  CHECK(fused.model.graph->nodes().size() == 1);
  CHECK(count_op(fused.model, "FlashAttentionLayerNorm") == 1);
  ascend::OptimizeResult not_fused = optimize_example("seed_attention_ln_eps1e-6");
  CHECK(count_op(not_fused.model, "FlashAttentionLayerNorm") == 0);
  CHECK(count_op(not_fused.model, "FlashAttention") == 1);  // the attention itself still fuses
  CHECK(not_fused.saturation.per_rule["FlashAttentionLayerNormFusion"].matched == 0);

  // Only where the cost model finds the fused kernel fits: not with a tiny UB.
  auto rules = test::load_rules({test::shipped_rules()});
  ascend::HardwareProfile tiny = ascend::load_profile("Ascend910B1");
  tiny.ub = 4 * 1024;
  Model m = import_onnx(test::examples_dir() / "seed_attention_ln_eps1e-5.onnx");
  ascend::OptimizeResult small = ascend::optimize(m, *rules, tiny);
  CHECK(small.saturation.per_rule["FlashAttentionLayerNormFusion"].matched == 1);
  CHECK(count_op(small.model, "FlashAttentionLayerNorm") == 0);
  CHECK(test::max_output_error(m, small.model) <= 1e-4);
}

}  // namespace
}  // namespace geopt

namespace geopt {

// A constant of one value whose shape broadcasts a symbolic batch ([2, 1, 1, 1] against
// N) changes the product's shape at run time: folding it into the conv, or making the
// relu6 a HardSigmoid of x alone, would give N rows where the model gives 2. Run at N = 1
// (where both agree) and at N = 2, --no-check, as a user would.
TEST_CASE("rewrites keep a symbolic batch: a constant that broadcasts it is not folded away") {
  const char* models[] = {R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,4,4] x) => (float[M,3,4,4] y) {
  w = Constant <value = float[3,2,1,1] {1, -2, 3, -4, 5, -6}> ()
  b = Constant <value = float[3] {0.5, -0.5, 1}> ()
  f = Constant <value = float[2,1,1,1] {1.5, 1.5}> ()
  c = Conv <kernel_shape = [1, 1]> (x, w, b)
  y = Mul(c, f)
})",
                          R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,2,4,4] x) => (float[M,3,4,4] y) {
  w = Constant <value = float[3,2,1,1] {1, -2, 3, -4, 5, -6}> ()
  b = Constant <value = float[3] {0.5, -0.5, 1}> ()
  t = Constant <value = float[2,1,1,1] {0.25, 0.25}> ()
  c = Conv <kernel_shape = [1, 1]> (x, w, b)
  y = Add(c, t)
})",
                          R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[N,8] x) => (float[M,8] y) {
  three = Constant <value = float[2,1] {3, 3}> ()
  lo = Constant <value = float {0}> ()
  hi = Constant <value = float {6}> ()
  six = Constant <value = float {6}> ()
  a = Add(x, three)
  r = Clip(a, lo, hi)
  y = Div(r, six)
})"};
  auto dir = test::scratch_dir("symbolic_batch_rules");
  int i = 0;
  for (const char* text : models) {
    const auto model = dir / ("m" + std::to_string(i) + ".onnx"),
               optimized = dir / ("o" + std::to_string(i++) + ".onnx");
    test::save_model(test::parse_text_model(text), model);
    auto r = test::run_cli({"optimize", model.string(), "-o", optimized.string(), "--no-check"});
    REQUIRE_MESSAGE(r.exit_code == 0, r.err);
    for (const char* n : {"N=1", "N=2"}) {
      auto run = test::run_cli(
          {"run", optimized.string(), "--random-inputs", "--dim", n, "--compare", model.string()});
      CHECK_MESSAGE(run.exit_code == 0, text, " at ", n, ": ", run.out, run.err);
    }
  }
}

}  // namespace geopt
