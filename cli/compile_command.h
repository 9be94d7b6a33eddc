#pragma once
// `geopt compile MODEL.onnx -o MODEL.plan`: optimize, then lower: execution
// order, memory plan, streams and events, the plan file; checked by running the
// plan in the executor against the reference evaluator on the original model.
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_compile_command(CLI::App& app);

}  // namespace geopt::cli
