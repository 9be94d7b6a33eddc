// The zoo (examples/zoo): architectures nobody tuned the rules for, each exported at
// opsets 13 and 17. Every committed model computes what torch computed; geopt optimize
// keeps its outputs and never raises its modeled latency; the transformers keep no
// attention, GELU or normalization primitive outside a fused kernel, and the attention's
// head split and merge are absorbed. (Kernel counts against ONNX Runtime, which CI does
// not install, are bench/kernel_bench.sh's, recorded in docs/BENCHMARKS.md.)
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "ascend/cost_model.h"
#include "ascend/device_ops/device_ops.h"
#include "ascend/optimizer.h"
#include "dsl_support.h"
#include "eval/compare.h"
#include "eval/evaluator.h"
#include "io/npy.h"
#include "onnx/import.h"
#include "test_support.h"

using namespace geopt;
namespace fs = std::filesystem;

namespace {

std::string arch_of(const fs::path& model) {
  const std::string stem = model.stem().string();
  return stem.substr(0, stem.rfind("_op"));
}

// Nodes of `op` that run at run time: some input is not a constant (a weight's layout
// for the Cube, computed at compile time, is not one).
size_t runtime_ops(const Model& m, const std::string& op) {
  std::set<const Value*> constant(m.graph->initializers().begin(), m.graph->initializers().end());
  for (const Value* in : m.graph->inputs()) constant.erase(in);
  size_t n = 0;
  for (const auto& node : m.graph->nodes()) {
    bool of_constants = !node->inputs().empty() || (node->domain.empty() && node->op_type == "Constant");
    for (const Value* in : node->inputs()) of_constants = of_constants && (!in || constant.count(in));
    if (of_constants) {
      for (const Value* out : node->outputs()) constant.insert(out);
      continue;
    }
    n += node->op_type == op;
  }
  return n;
}

const std::set<std::string> kTransformers = {
    "bert",          "gpt2",  "gpt2_gelu_b", "t5_encoder", "whisper_encoder",
    "torch_encoder", "llama", "vit_b_16",    "clip_text"};

}  // namespace

TEST_CASE("the zoo: every committed model computes torch's outputs") {
  const auto models = test::zoo_models();
  CHECK(models.size() == 42);  // 21 architectures at opsets 13 and 17
  for (const auto& path : models) {
    INFO(path.filename().string());
    Model model = import_onnx(path);
    const fs::path ref = path.parent_path() / path.stem();
    const NamedTensors got = Evaluator(model, ascend::op_registry()).run(read_npy_folder(ref / "inputs"));
    const auto outputs = read_npy_folder(ref / "outputs");
    NamedTensors want;
    for (const auto& [name, t] : got) {
      REQUIRE(outputs.count(name));
      want.emplace_back(name, outputs.at(name));
    }
    CHECK(want.size() == outputs.size());
    OutputsDiff d = diff_outputs(got, want);
    CHECK(d.mismatch.empty());
    CHECK(d.error() <= 1e-4);
  }
}

TEST_CASE(
    "the zoo: optimize keeps every model's outputs, never raises its modeled latency, fuses every "
    "transformer's primitives and keeps every CNN in NC1HWC0") {
  auto rules = test::load_rules({test::shipped_rules()});
  const auto profile = ascend::load_profile("Ascend910B1");
  size_t transformers = 0;
  for (const auto& path : test::zoo_models()) {
    const std::string arch = arch_of(path);
    INFO(path.filename().string());
    Model model = import_onnx(path);
    ascend::OptimizeOptions options;
    options.limits.seconds = 600;  // saturated whatever the machine's speed (a sanitizer build under load)
    ascend::OptimizeResult r = ascend::optimize(model, *rules, profile, options);
    CHECK(r.saturation.stop == dsl::StopReason::Saturated);
    CHECK(r.after.latency_us <= r.before.latency_us + 1e-9);
    CHECK(test::max_output_error(model, r.model) <= 1e-4);
    if (!kTransformers.count(arch)) {
      // Every CNN (Swin-T's patch embedding too) runs in NC1HWC0 from its first conv, which
      // reads the image as given, and converts once, on the way out. ShuffleNet splits,
      // concatenates and shuffles channels at offsets that are not whole C0 blocks
      // (ChannelMove); DenseNet concatenates many inputs and
      // normalizes them before each conv; ConvNeXt normalizes channels and runs its
      // pointwise Linears between NCHW <-> NHWC Transposes (channels_last.gerule).
      CHECK(runtime_ops(r.model, "TransData") == 1);
      CHECK(runtime_ops(r.model, "Conv") == 0);
      if (arch != "swin_t")
        CHECK(runtime_ops(r.model, "Transpose") == 0);  // Swin's window partitions move data
      if (arch == "swin_t") {  // a transformer too: its shifted-window attentions, GELUs and norms fused
        for (const char* primitive :
             {"Softmax", "Erf", "Tanh", "Pow", "ReduceMean", "Sqrt", "LayerNormalization"}) {
          INFO(primitive);
          CHECK(runtime_ops(r.model, primitive) == 0);
        }
        CHECK(runtime_ops(r.model, "Gather") == 0);  // the packed Q/K/V unbound by one Split (a view)
        CHECK(runtime_ops(r.model, "Roll") ==
              2);  // each shifted block's torch.roll, before and after its attention
      }
      continue;
    }
    ++transformers;
    CHECK(r.after.kernels * 2 < r.before.kernels);
    for (const char* primitive :
         {"Softmax", "Erf", "Tanh", "Pow", "ReduceMean", "Sqrt", "LayerNormalization"}) {
      INFO(primitive);
      CHECK(runtime_ops(r.model, primitive) == 0);
    }
    CHECK(runtime_ops(r.model, "FlashAttention") == 2);  // two layers each
    // The head split and merge go into FlashAttention (input_layout BSND), LLaMA's too: its
    // rotary embedding runs in BSND, before the split.
    CHECK(runtime_ops(r.model, "Transpose") <= 1);  // Whisper's (and ViT's) [B, C, T] to [B, T, C]
  }
  CHECK(transformers == 18);
}
