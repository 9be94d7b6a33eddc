#pragma once
// `geopt cost MODEL.onnx`: the modeled cost of a model on an Ascend profile.
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_cost_command(CLI::App& app);

}  // namespace geopt::cli
