#pragma once
// `geopt tune MODEL --job_type 2 --output BANK`: auto-tuning as Huawei's AOE does it,
// operator tuning (host tactics per op signature) or subgraph tuning (strategy settings
// per model), filed in a knowledge bank that `geopt compile --op_bank_path /
// --mdl_bank_path` reads (docs/TUNING.md).
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_tune_command(CLI::App& app);

}  // namespace geopt::cli
