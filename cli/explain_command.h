#pragma once
// `geopt explain MODEL.onnx`: why each rule did or did not fire, and why a rule
// that matched was or was not kept; `--node` for what happened to one node.
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_explain_command(CLI::App& app);

}  // namespace geopt::cli
