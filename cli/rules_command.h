#pragma once
// `geopt rules check|list|test|match|apply` and `geopt rules --dump-automaton`.
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_rules_command(CLI::App& app);

}  // namespace geopt::cli
