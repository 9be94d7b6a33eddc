#include "quantize_command.h"
#include "json_output.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "input_shape_option.h"
#include "onnx/export.h"
#include "onnx/import.h"
#include "quantize/post_training_quantization.h"

namespace geopt::cli {
namespace {

struct QuantizeCliOptions {
  std::string model, output, calibration;
  std::string method = "percentile";
  std::string activation_type = "uint8";
  double percentile = 99.999;
  std::vector<std::string> skip_layers;
  bool sensitivity = false;
  std::optional<double> accuracy_target;
  bool progress = true;
  bool json = false;
  InputShapeOption input_shape;
};

// A bar on a terminal, redrawn in place; elsewhere (a log) one line as each stage ends.
quantize::QuantizeProgress progress_bar(bool enabled) {
  if (!enabled) return {};
  const bool tty = isatty(fileno(stderr)) != 0;
  return [tty](std::string_view stage, size_t done, size_t total) {
    if (tty) {
      const size_t width = 30, filled = total ? done * width / total : width;
      std::fprintf(stderr, "\r%-40.40s [%s%s] %zu/%zu", std::string(stage).c_str(),
                   std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(), done, total);
      if (done == total) std::fputc('\n', stderr);
    } else if (done == total) {
      std::fprintf(stderr, "%s: %zu sample(s)\n", std::string(stage).c_str(), total);
    }
    std::fflush(stderr);
  };
}

std::string layer_counts(const std::vector<quantize::LayerReport>& layers, bool quantized) {
  std::map<std::string, size_t> by_op;
  for (const auto& l : layers)
    if (l.quantized == quantized) ++by_op[l.layer.op_type];
  std::string s;
  for (const auto& [op, n] : by_op) s += (s.empty() ? "" : ", ") + op + " " + std::to_string(n);
  return s;
}

nlohmann::ordered_json agreement_json(const quantize::Agreement& a) {
  return {{"cosine", a.cosine}, {"max_relative", a.max_relative}};
}

int run(const QuantizeCliOptions& o) {
  quantize::QuantizeOptions q;
  q.method = quantize::parse_calibration_method(o.method);
  q.activation_type = quantize::parse_activation_type(o.activation_type);
  q.percentile = o.percentile;
  q.skip_layers = o.skip_layers;
  q.sensitivity = o.sensitivity;
  q.accuracy_target = o.accuracy_target;
  const Model model = quantize::quantizable(import_onnx(o.model, o.input_shape.import_options()), o.model);
  const auto samples = quantize::read_calibration_set(o.calibration, model);
  const quantize::QuantizeResult r =
      quantize::quantize_model(model, samples, q, progress_bar(o.progress && !o.json));
  export_onnx(r.model, o.output);

  size_t quantized = 0;
  for (const auto& l : r.layers) quantized += l.quantized;
  const char* activation_text =
      q.activation_type == quantize::ActivationType::U8 ? "uint8 (asymmetric)" : "int8 (symmetric)";
  const char* weight_text = "int8 per output channel (symmetric)";
  if (o.json) {
    nlohmann::ordered_json j;
    j["model"] = o.model;
    j["output"] = o.output;
    j["calibration"] = {{"folder", o.calibration},
                        {"samples", r.samples},
                        {"method", quantize::calibration_method_name(q.method)}};
    if (q.method == quantize::CalibrationMethod::Percentile) j["calibration"]["percentile"] = q.percentile;
    j["activations"] = activation_text;
    j["weights"] = weight_text;
    auto layers = nlohmann::ordered_json::array();
    for (const auto& l : r.layers) {
      nlohmann::ordered_json lj = {{"name", l.layer.name},
                                   {"op", l.layer.op_type},
                                   {"quantized", l.quantized},
                                   {"activation", l.layer.activation},
                                   {"range", {l.range.lo, l.range.hi}},
                                   {"scale", l.activation.scale},
                                   {"zero_point", l.activation.zero_point}};
      if (l.alone) lj["alone"] = agreement_json(*l.alone);
      if (!l.quantized) lj["kept_because"] = l.kept_because;
      layers.push_back(lj);
    }
    j["layers"] = layers;
    j["quantized"] = quantized;
    j["accuracy"] = agreement_json(r.agreement);
    if (q.accuracy_target) j["accuracy"]["target"] = *q.accuracy_target;
    j["evaluations"] = r.evaluations;
    std::cout << json_text(j) << "\n";
    return 0;
  }
  std::printf("model            %s\n", o.model.c_str());
  std::printf("calibration      %s: %zu sample(s), %s", o.calibration.c_str(), r.samples,
              quantize::calibration_method_name(q.method));
  if (q.method == quantize::CalibrationMethod::Percentile) std::printf(" %g%%", q.percentile);
  std::printf("\nquantization     activations %s, weights %s; QDQ form\n", activation_text, weight_text);
  const std::string kept = layer_counts(r.layers, false);
  std::printf("layers           %zu of %zu quantized (%s)%s%s\n", quantized, r.layers.size(),
              layer_counts(r.layers, true).c_str(), kept.empty() ? "" : "; kept in float: ", kept.c_str());
  const bool alone = q.sensitivity || q.accuracy_target;
  int width = 5;
  for (const auto& l : r.layers) width = std::max(width, static_cast<int>(l.layer.name.size()));
  std::printf("                 %-*s %-6s %-22s %-10s %-5s %s\n", width, "layer", "op", "activation range",
              "scale", "zero", alone ? "alone: cosine" : "");
  for (const auto& l : r.layers) {
    char range[64];
    std::snprintf(range, sizeof range, "[%.4g, %.4g]", static_cast<double>(l.range.lo),
                  static_cast<double>(l.range.hi));
    std::string tail = l.alone ? std::to_string(l.alone->cosine).substr(0, 8) : "";
    if (!l.quantized) tail += (tail.empty() ? "" : "  ") + std::string("float: ") + l.kept_because;
    std::printf("                 %-*s %-6s %-22s %-10.4g %-5d %s\n", width, l.layer.name.c_str(),
                l.layer.op_type.c_str(), range, static_cast<double>(l.activation.scale),
                l.activation.zero_point, tail.c_str());
  }
  std::printf(
      "accuracy         outputs' cosine against float %.6f, max abs error %.3g of the output's scale "
      "(calibration set)%s\n",
      r.agreement.cosine, r.agreement.max_relative,
      !q.accuracy_target                         ? ""
      : r.agreement.cosine >= *q.accuracy_target ? "; target met"
                                                 : "; target NOT met");
  std::printf("written          %s\n", o.output.c_str());
  return 0;
}

}  // namespace

std::function<int()> add_quantize_command(CLI::App& app) {
  auto o = std::make_shared<QuantizeCliOptions>();
  CLI::App* cmd = app.add_subcommand(
      "quantize", "INT8 post-training quantization: calibrate, then write the model in ONNX's QDQ form");
  cmd->add_option("model", o->model, "ONNX model (float)")->required();
  cmd->add_option("-o,--output", o->output, "Where to write the quantized model")->required();
  cmd->add_option("--calibration", o->calibration,
                  "Folder of samples: one folder per sample holding NAME.npy per input (as `geopt run "
                  "--save-inputs` writes)")
      ->required();
  cmd->add_option("--calibration-method", o->method,
                  "How activation ranges are chosen: minmax, percentile or entropy (KL)")
      ->check(CLI::IsMember({"minmax", "percentile", "entropy"}))
      ->capture_default_str();
  cmd->add_option("--percentile", o->percentile,
                  "With --calibration-method percentile: the share of values the range keeps")
      ->check(CLI::Range(50.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--activation-type", o->activation_type,
                  "uint8 (asymmetric, a zero point) or int8 (symmetric)")
      ->check(CLI::IsMember({"uint8", "int8"}))
      ->capture_default_str();
  cmd->add_option("--skip-layers", o->skip_layers, "Layers (node names) kept in float, comma-separated")
      ->delimiter(',');
  cmd->add_flag("--sensitivity", o->sensitivity, "Report each layer's error when it alone is quantized");
  cmd->add_option("--accuracy-target", o->accuracy_target,
                  "Keep the most sensitive layers in float until the outputs' cosine against float, on the "
                  "calibration set, reaches this")
      ->check(CLI::Range(0.0, 1.0));
  o->input_shape.add_to(cmd);
  cmd->add_flag("!--no-progress", o->progress, "No progress bar on stderr");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
