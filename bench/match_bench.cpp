// Matching cost as the rule count grows. Loads a model (default: the BERT-base
// encoder), then matches every node (through the one matcher, on the model's
// e-graph, as `geopt rules match` does; the e-graph is built in each run) with the starter rules plus 0, 9
// and 99 generated variants of the LayerNorm rule per starter rule set (1x, 10x, 100x rules). The variants
// share prefixes with the real rule but never match. Prints the median time per full-graph match and the
// ratio to 1x.
//   geopt_match_bench [MODEL] [RULES_DIR]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "ascend/device_ops/device_ops.h"
#include "dsl/diagnostic.h"
#include "dsl/explain.h"
#include "dsl/rule_set.h"
#include "onnx/import.h"

namespace fs = std::filesystem;
using namespace geopt;

namespace {

std::string variants(int count) {
  std::string text;
  for (int k = 1; k <= count; ++k) {
    std::string a = std::to_string(k);
    text += "rule LayerNormAxis" + a + " [generated] {\n  let %d = Sub(%x, ReduceMean(%x) { axes == [" + a +
            "], keepdims == 1 })\n  let %var = ReduceMean(Pow(%d, 2.0)) { axes == [" + a +
            "], keepdims == 1 }\n  match %y = Add(Mul(Div(%d, Sqrt(Add(%var, const %eps))), %gamma), %beta)\n"
            "  rewrite %y => ai.geopt.LayerNorm(%x, %gamma, %beta) { axis = " +
            a + ", epsilon = %eps }\n}\n";
  }
  return text;
}

}  // namespace

int main(int argc, char** argv) {
  ascend::register_op_schemas();  // the rules and the model name Ascend's ops
  const std::string model_path = argc > 1 ? argv[1] : "bench/out/bert_base_op13.onnx";
  const std::string rules_dir = argc > 2 ? argv[2] : dsl::default_rules_dir();
  Model model = import_onnx(model_path);
  fs::path tmp = fs::temp_directory_path() / "geopt-match-bench";
  fs::create_directories(tmp);
  std::vector<dsl::Diagnostic> errors;
  auto base = dsl::RuleSet::load({rules_dir}, errors);
  if (!base) {
    std::fprintf(stderr, "%s", dsl::format_diagnostics(errors).c_str());
    return 1;
  }
  const size_t starter = base->rules().size();
  std::printf("model %s: %zu nodes; starter rules: %zu\n\n", model_path.c_str(), model.graph->nodes().size(),
              starter);
  std::printf(
      "| rules | rule alternatives | automaton nodes | predicates asked | matches | median match time (ms) | "
      "vs 1x |\n|---|---|---|---|---|---|---|\n");
  double one_x = 0;
  for (int factor : {1, 10, 100}) {
    std::ofstream(tmp / "variants.gerule")
        << variants(static_cast<int>(starter) * factor - static_cast<int>(starter));
    auto rules = dsl::RuleSet::load({rules_dir, (tmp / "variants.gerule").string()}, errors);
    if (!rules) {
      std::fprintf(stderr, "%s", dsl::format_diagnostics(errors).c_str());
      return 1;
    }
    size_t alternatives = 0;
    for (const auto& r : rules->rules()) alternatives += r.alternatives.size();
    std::vector<double> times;
    size_t asked = 0, matches = 0;
    for (int run = 0; run < 15; ++run) {
      asked = 0;
      matches = 0;
      auto t0 = std::chrono::steady_clock::now();
      for (const auto& [rule, sites] : dsl::match_sites(*rules, ascend::op_registry(), model, &asked))
        matches += sites.size();
      times.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(times.begin(), times.end());
    double median = times[times.size() / 2];
    if (factor == 1) one_x = median;
    std::printf("| %zu (%dx) | %zu | %zu | %zu | %zu | %.3f | %.2f |\n", rules->rules().size(), factor,
                alternatives, rules->automaton().node_count(), asked, matches, median, median / one_x);
  }
  fs::remove_all(tmp);
  return 0;
}
