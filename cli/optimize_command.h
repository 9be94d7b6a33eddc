#pragma once
// `geopt optimize MODEL.onnx -o OUT.onnx`: equality saturation with the rules,
// extraction under the Ascend cost model, a numerical check, and a report.
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_optimize_command(CLI::App& app);

}  // namespace geopt::cli
