#include "profile_command.h"
#include "json_text.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "ascend/plan_file.h"
#include "plan_reports.h"
#include "util/error.h"

namespace geopt::cli {
using api::json_text;
namespace {

struct ProfileCliOptions {
  std::string plan, trace;
  int gear = 0;
  bool json = false;
};

// Each body: its kernels, streams and simulated time per run, and for a Loop or Scan
// the modeled trips; nested bodies below their parent, indented.
void print_bodies(const nlohmann::ordered_json& bodies, int depth) {
  for (const auto& b : bodies) {
    const std::string indent(static_cast<size_t>(2 * depth), ' ');
    const std::string name = b["name"].get<std::string>();
    const std::string head = indent + b["op_type"].get<std::string>() +
                             (name.empty() ? "" : " '" + name + "'") + " " +
                             b["attribute"].get<std::string>();
    if (b.contains("unrunnable")) {
      std::printf("  %s: not compiled, it cannot run at these shapes\n", head.c_str());
      continue;
    }
    const double us = b["latency_us"].get<double>();
    if (b["op_type"] == "If")
      std::printf("  %s: %d kernel(s) on %u stream(s), %.1f us\n", head.c_str(), b["kernels"].get<int>(),
                  b["streams"].get<unsigned>(), us);
    else
      std::printf("  %s: %d kernel(s) on %u stream(s), %.1f us per trip x %.0f trip(s) = %.1f us\n",
                  head.c_str(), b["kernels"].get<int>(), b["streams"].get<unsigned>(), us,
                  b["trips"].get<double>(), b["total_us"].get<double>());
    print_bodies(b["bodies"], depth + 1);
  }
}

int run(const ProfileCliOptions& o) {
  const plan::Plan file = ascend::read_plan(o.plan);
  const nlohmann::ordered_json j = api::plan_profile_json(file, o.gear, o.plan, o.trace);
  if (o.json) {
    std::cout << json_text(j) << "\n";
    return 0;
  }
  const double latency = j["latency_us"].get<double>();
  std::printf("plan                    %s (%s, simulated)\n", o.plan.c_str(),
              j["soc_version"].get<std::string>().c_str());
  if (j.contains("gear"))
    std::printf("gear                    %d of %d: %s\n", o.gear, j["gear"]["gears"].get<int>(),
                j["gear"]["input_shape"].get<std::string>().c_str());
  std::printf(
      "latency                 %.1f us on %u stream(s); one stream %.1f us; critical path %.1f us (lower "
      "bound)\n",
      latency, j["stream_count"].get<unsigned>(), j["one_stream_us"].get<double>(),
      j["critical_path_us"].get<double>());
  for (const auto& s : j["streams"]) {
    const double us = s["busy_us"].get<double>();
    std::printf("stream %-3u busy         %.1f us (%.0f%%)\n", s["stream"].get<unsigned>(), us,
                latency ? 100 * us / latency : 0);
  }
  std::printf("fusion rate             %.0f%%\n", 100 * j["fusion_rate"].get<double>());
  std::printf("memory reuse rate       %.0f%%\n", 100 * j["memory_reuse_rate"].get<double>());
  std::printf("layout transform share  %.1f%% of kernel time\n",
              100 * j["layout_transform_share"].get<double>());
  std::printf("Cube utilization        %.1f%%\n", 100 * j["cube_utilization"].get<double>());
  std::printf("Vector utilization      %.1f%%\n", 100 * j["vector_utilization"].get<double>());
  if (!j["bodies"].empty()) {
    std::printf("control-flow bodies (simulated as plans of their own)\n");
    print_bodies(j["bodies"], 0);
  }
  for (const auto& h : j["tuning_hints"])
    std::printf("tune hint               %s\n", h["hint"].get<std::string>().c_str());
  if (!o.trace.empty())
    std::printf("trace                   %s (open in Perfetto or chrome://tracing)\n", o.trace.c_str());
  return 0;
}

}  // namespace

std::function<int()> add_profile_command(CLI::App& app) {
  auto o = std::make_shared<ProfileCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("profile", "Simulate a compiled plan: stream timelines, metrics, Chrome trace");
  cmd->add_option("plan", o->plan, "Plan file (from geopt compile)")->required();
  cmd->add_option("--trace", o->trace, "Write a Chrome trace-event JSON file");
  cmd->add_flag("--json", o->json, "Print the metrics as JSON");
  cmd->add_option("--gear", o->gear, "A plan of gears: the gear to simulate (plan dump lists them)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
