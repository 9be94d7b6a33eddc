#pragma once
// INT8 post-training quantization, as `geopt quantize` runs it: calibrate the
// activations' ranges on a calibration set, quantize every Conv, MatMul and Gemm with a
// constant weight in ONNX's QDQ form, and, where asked, keep the layers whose
// quantization costs most accuracy in float until the outputs reach a target.
#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/graph.h"
#include "quantize/activation_range.h"
#include "quantize/bias_correction.h"
#include "quantize/calibration_set.h"
#include "quantize/qdq_model.h"

namespace geopt::quantize {

// The opset quantized models are written at: per-output-channel DequantizeLinear needs it
// (QuantizeLinear does not exist before 10).
inline constexpr int64_t kQuantizeOpset = 13;

// The model as quantize_model takes it: one below kQuantizeOpset has its shape
// computations folded and is converted up with ONNX's version converter (PaddleOCR's
// exports are opset 9); any other is returned as it is. `where` names it in errors.
Model quantizable(Model model, const std::filesystem::path& where, const OpRegistry& ops);

struct QuantizeOptions {
  // Percentile read most held-out words as float does on PaddleOCR's recognizer, ahead
  // of auto's per-tensor choice (docs/PRECISION.md, "Choosing the method").
  CalibrationMethod method = CalibrationMethod::Percentile;
  double percentile = 99.999;
  bool bias_correction = true;  // move each quantized layer's bias by its mean shift
  // The share of the samples (0 to 0.5) that set nothing and judge: sensitivity, the
  // accuracy target and the reported held-out agreement are measured on them.
  double holdout = 0;
  ActivationType activation_type = ActivationType::U8;
  std::vector<std::string> skip_layers;  // layer (node) names, or their output's names
  // A conv that reads a model input of at most 4 channels (an image) stays in float unless
  // this is set: each of its outputs sums few products (C x KH x KW) of raw input, too few
  // to average the rounding away, and a channel-blocked int8 kernel pads those few
  // channels to a whole block (docs/PRECISION.md, "Layers").
  bool quantize_image_convs = false;
  bool sensitivity = false;               // measure each layer alone
  std::optional<double> accuracy_target;  // the outputs' cosine to reach (implies sensitivity)
};

// How one set of outputs compares with the float model's over the calibration set.
struct Agreement {
  double cosine = 1;        // the lowest over the float outputs, each over every sample
  double max_relative = 0;  // the largest max |difference| / max |float output|
};

struct LayerReport {
  QuantizableLayer layer;
  bool quantized = false;
  std::string kept_because;                              // why it stayed float, when it did
  std::optional<Agreement> alone;                        // the outputs with only this layer quantized
  ValueRange range;                                      // its activation's calibrated range
  CalibrationMethod method = CalibrationMethod::MinMax;  // that chose it (auto's pick)
  LinearQuant activation;                                // and the scale / zero point from it
  std::optional<BiasCorrection> bias;                    // in the written model, when corrected
};

struct QuantizeResult {
  Model model;
  std::vector<LayerReport> layers;              // in graph order
  Agreement agreement;                          // of the written model, on the samples that calibrated it
  std::optional<Agreement> held_out_agreement;  // and on the held-out split, when there is one
  size_t samples = 0;                           // that calibrated
  size_t held_out_samples = 0;
  size_t evaluations = 0;  // candidate models run over the judging samples (sensitivity, target search)
};

// Called as each sample is done in a stage ("calibrating", "histograms", "channel means",
// "held-out float outputs", "sensitivity", "accuracy", "held-out accuracy"): stage, samples done, samples in
// the stage.
using QuantizeProgress = std::function<void(std::string_view stage, size_t done, size_t total)>;

// Throws geopt::Error for a layer in skip_layers that names no quantizable layer, or a
// model with nothing to quantize.
// `ops` run the model (calibration, sensitivity, the accuracy check).
QuantizeResult quantize_model(const OpRegistry& ops, const Model& model,
                              const std::vector<CalibrationSample>& samples, const QuantizeOptions& options,
                              const QuantizeProgress& progress = {});

}  // namespace geopt::quantize
