#pragma once
// `geopt run MODEL.onnx`: execute a model with the reference evaluator.
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_run_command(CLI::App& app);

}  // namespace geopt::cli
