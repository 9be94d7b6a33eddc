#pragma once
// `geopt profile MODEL.plan [--trace OUT.json]`: the plan simulated on the
// profile it was compiled for: per-stream timelines, the seed's four metrics,
// the critical-path bound, and a Chrome trace (Perfetto, chrome://tracing).
#include <CLI/CLI.hpp>
#include <functional>

namespace geopt::cli {

std::function<int()> add_profile_command(CLI::App& app);

}  // namespace geopt::cli
