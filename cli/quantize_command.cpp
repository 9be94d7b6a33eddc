#include "quantize_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>

#include "geopt/geopt.h"
#include "input_shape_option.h"
#include "progress_bar.h"

namespace geopt::cli {
namespace {

struct QuantizeCliOptions {
  std::string model, output, calibration;
  std::string method = "percentile";
  std::string activation_type = "uint8";
  double percentile = 99.999;
  bool bias_correction = true;
  double holdout = 0;
  std::vector<std::string> skip_layers;
  bool quantize_image_convs = false;
  bool sensitivity = false;
  std::optional<double> accuracy_target;
  bool progress = true;
  bool json = false;
  InputShapeOption input_shape;
};

int run(const QuantizeCliOptions& o) {
  api::QuantizeOptions a;
  a.calibration = o.calibration;
  a.method = o.method;
  a.activation_type = o.activation_type;
  a.percentile = o.percentile;
  a.bias_correction = o.bias_correction;
  a.holdout = o.holdout;
  a.skip_layers = o.skip_layers;
  a.quantize_image_convs = o.quantize_image_convs;
  a.sensitivity = o.sensitivity;
  a.accuracy_target = o.accuracy_target;
  a.input_shape = o.input_shape.text;
  a.output = o.output;
  a.progress = progress_bar(o.progress && !o.json);
  const api::QuantizeResult r = api::quantize(api::ModelSource::file(o.model), a);
  std::cout << (o.json ? r.report_json + "\n" : r.report_text) << std::flush;
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
                  "How activation ranges are chosen: percentile, minmax, entropy (KL), or auto (per tensor, "
                  "whichever of the three quantizes its calibration values with the least squared error)")
      ->check(CLI::IsMember({"auto", "minmax", "percentile", "entropy"}))
      ->capture_default_str();
  cmd->add_option("--percentile", o->percentile,
                  "With --calibration-method percentile (or auto, which weighs it): the share of values the "
                  "range keeps")
      ->check(CLI::Range(50.0, 100.0))
      ->capture_default_str();
  cmd->add_flag("!--no-bias-correction", o->bias_correction,
                "Keep the float biases as they are (by default each quantized layer's bias takes back the "
                "mean shift quantization gives its output channels)");
  cmd->add_option("--holdout", o->holdout,
                  "Share of the calibration samples held out: they set no range and judge the result "
                  "(--sensitivity, --accuracy-target and the reported held-out agreement)")
      ->check(CLI::Range(0.0, 0.5))
      ->capture_default_str();
  cmd->add_option("--activation-type", o->activation_type,
                  "uint8 (asymmetric, a zero point) or int8 (symmetric)")
      ->check(CLI::IsMember({"uint8", "int8"}))
      ->capture_default_str();
  cmd->add_option("--skip-layers", o->skip_layers, "Layers (node names) kept in float, comma-separated")
      ->delimiter(',');
  cmd->add_flag(
      "--quantize-image-convs", o->quantize_image_convs,
      "Also quantize a conv that reads a model input of at most 4 channels (an image), kept in float "
      "by default: int8 gains little there and costs the most accuracy (docs/PRECISION.md)");
  cmd->add_flag("--sensitivity", o->sensitivity, "Report each layer's error when it alone is quantized");
  cmd->add_option("--accuracy-target", o->accuracy_target,
                  "Keep the most sensitive layers in float until the outputs' cosine against float, on the "
                  "calibration set (the held-out split with --holdout), reaches this")
      ->check(CLI::Range(0.0, 1.0));
  o->input_shape.add_to(cmd);
  cmd->add_flag("!--no-progress", o->progress, "No progress bar on stderr");
  cmd->add_flag("--json", o->json, "Print the report as JSON");
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
