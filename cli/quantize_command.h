#pragma once
// `geopt quantize MODEL.onnx -o MODEL_INT8.onnx --calibration DIR`: INT8 post-training
// quantization to ONNX's QDQ form, with calibration, a sensitivity report and an
// accuracy target.
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_quantize_command(CLI::App& app);

}  // namespace geopt::cli
