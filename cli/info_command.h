#pragma once
// `geopt info MODEL`: inputs, outputs, node count, op histogram, parameters.
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

// Adds the subcommand; returns the action to run when it was selected.
std::function<int()> add_info_command(CLI::App& app);

}  // namespace geopt::cli
