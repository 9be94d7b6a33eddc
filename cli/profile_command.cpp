#include "profile_command.h"
#include "json_output.h"

#include <cstdio>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>

#include "ascend/plan_file.h"
#include "ascend/plan_profile.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace geopt::cli {
namespace {

struct ProfileCliOptions {
  std::string plan, trace;
  int gear = 0;
  bool json = false;
};

std::string kernel_label(const plan::Kernel& k) {
  return k.op_type() + (k.name().empty() ? "" : " '" + k.name() + "'");
}

// Each body: its kernels, streams and simulated time per run, and for a Loop or Scan
// the modeled trips; nested bodies below their parent, indented.
void print_bodies(const plan::Plan& plan, const ascend::PlanProfile& p, int depth) {
  for (const auto& b : p.bodies) {
    const auto& k = plan.kernels(static_cast<int>(b.kernel));
    const std::string indent(static_cast<size_t>(2 * depth), ' ');
    const std::string head = indent + kernel_label(k) + " " + b.attribute;
    if (!b.plan) {
      std::printf("  %s: not compiled, it cannot run at these shapes\n", head.c_str());
      continue;
    }
    const plan::Plan* body = b.plan;
    if (k.op_type() == "If")
      std::printf("  %s: %d kernel(s) on %u stream(s), %.1f us\n", head.c_str(), body->kernels_size(),
                  body->stream_count(), b.profile.latency_us);
    else
      std::printf("  %s: %d kernel(s) on %u stream(s), %.1f us per trip x %.0f trip(s) = %.1f us\n",
                  head.c_str(), body->kernels_size(), body->stream_count(), b.profile.latency_us, b.trips,
                  b.profile.latency_us * b.trips);
    print_bodies(*body, b.profile, depth + 1);
  }
}

nlohmann::ordered_json bodies_json(const plan::Plan& plan, const ascend::PlanProfile& p) {
  auto out = nlohmann::ordered_json::array();
  for (const auto& b : p.bodies) {
    const auto& k = plan.kernels(static_cast<int>(b.kernel));
    nlohmann::ordered_json j{
        {"kernel", b.kernel}, {"op_type", k.op_type()}, {"name", k.name()}, {"attribute", b.attribute}};
    if (!b.plan) {
      j["unrunnable"] = b.unrunnable;
      out.push_back(j);
      continue;
    }
    const plan::Plan* body = b.plan;
    j["kernels"] = body->kernels_size();
    j["streams"] = body->stream_count();
    j["latency_us"] = b.profile.latency_us;
    j["trips"] = b.trips;
    j["total_us"] = b.profile.latency_us * b.trips;
    j["cube_utilization"] = b.profile.cube_utilization;
    j["vector_utilization"] = b.profile.vector_utilization;
    j["bodies"] = bodies_json(*body, b.profile);
    out.push_back(j);
  }
  return out;
}

int run(const ProfileCliOptions& o) {
  const plan::Plan file = ascend::read_plan(o.plan);
  // A plan of gears is simulated one gear at a time (--gear).
  if (file.gears_size() && o.gear >= file.gears_size())
    throw Error("--gear " + std::to_string(o.gear) + ": the plan has " + std::to_string(file.gears_size()) +
                " gear(s), numbered from 0");
  if (!file.gears_size() && o.gear > 0)
    throw Error("--gear " + std::to_string(o.gear) + ": " + o.plan + " is not a plan of gears");
  const plan::Plan& plan = file.gears_size() ? file.gears(o.gear).plan() : file;
  const std::string gear = file.gears_size() ? file.gears(o.gear).name() : "";
  ascend::PlanProfile p = ascend::simulate_plan(plan);
  if (!o.trace.empty()) write_file_atomically(o.trace, ascend::chrome_trace(plan, p));
  std::map<uint32_t, double> busy;  // per stream
  for (const auto& s : p.spans) busy[s.stream] += s.end_us - s.start_us;
  if (o.json) {
    nlohmann::ordered_json j;
    j["plan"] = o.plan;
    j["soc_version"] = plan.soc_version();
    if (file.gears_size())
      j["gear"] = {{"index", o.gear}, {"input_shape", gear}, {"gears", file.gears_size()}};
    j["latency_us"] = p.latency_us;
    j["one_stream_us"] = p.one_stream_us;
    j["critical_path_us"] = p.critical_path_us;
    j["fusion_rate"] = p.fusion_rate;
    j["memory_reuse_rate"] = p.memory_reuse_rate;
    j["layout_transform_share"] = p.layout_transform_share;
    j["cube_utilization"] = p.cube_utilization;
    j["vector_utilization"] = p.vector_utilization;
    auto streams = nlohmann::ordered_json::array();
    for (const auto& [s, us] : busy) streams.push_back({{"stream", s}, {"busy_us", us}});
    j["streams"] = streams;
    j["bodies"] = bodies_json(plan, p);
    std::cout << json_text(j) << "\n";
    return 0;
  }
  std::printf("plan                    %s (%s, simulated)\n", o.plan.c_str(), plan.soc_version().c_str());
  if (file.gears_size())
    std::printf("gear                    %d of %d: %s\n", o.gear, file.gears_size(), gear.c_str());
  std::printf(
      "latency                 %.1f us on %u stream(s); one stream %.1f us; critical path %.1f us (lower "
      "bound)\n",
      p.latency_us, plan.stream_count(), p.one_stream_us, p.critical_path_us);
  for (const auto& [s, us] : busy)
    std::printf("stream %-3u busy         %.1f us (%.0f%%)\n", s, us,
                p.latency_us ? 100 * us / p.latency_us : 0);
  std::printf("fusion rate             %.0f%%\n", 100 * p.fusion_rate);
  std::printf("memory reuse rate       %.0f%%\n", 100 * p.memory_reuse_rate);
  std::printf("layout transform share  %.1f%% of kernel time\n", 100 * p.layout_transform_share);
  std::printf("Cube utilization        %.1f%%\n", 100 * p.cube_utilization);
  std::printf("Vector utilization      %.1f%%\n", 100 * p.vector_utilization);
  if (!p.bodies.empty()) {
    std::printf("control-flow bodies (simulated as plans of their own)\n");
    print_bodies(plan, p, 0);
  }
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
