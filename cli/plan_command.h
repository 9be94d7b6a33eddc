#pragma once
// `geopt plan dump MODEL.plan [--json]`: a compiled plan, readable (like
// `atc --mode=1` for an offline model): kernels in order with their streams,
// events and tensors (region, offset, size, shape, format).
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_plan_command(CLI::App& app);

}  // namespace geopt::cli
