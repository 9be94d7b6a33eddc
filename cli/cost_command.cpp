#include "cost_command.h"
#include "json_text.h"

#include <algorithm>
#include <cstdio>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "ascend/cost_model.h"
#include "input_shape_option.h"
#include "onnx/import.h"
#include "profile_options.h"
#include "util/error.h"

namespace geopt::cli {
using api::json_text;
namespace {

struct CostCliOptions {
  std::string model;
  ProfileOptions profile;
  InputShapeOption input_shape;
  int64_t symbolic = 1;
  bool json = false;
  bool per_kernel = false;
};

int run(const CostCliOptions& o) {
  ascend::HardwareProfile profile = o.profile.load();
  Model model = import_onnx(o.model, o.input_shape.import_options());
  const ascend::CostOptions options = o.profile.cost_options(profile, o.symbolic);
  ascend::GraphCost gc = ascend::cost_of_graph(*model.graph, profile, options);
  std::vector<std::pair<std::string, std::pair<double, size_t>>> rows(gc.by_op.begin(), gc.by_op.end());
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second.first > b.second.first; });
  std::vector<std::string> infeasible;
  auto kernels = nlohmann::ordered_json::array();
  for (const auto& [node, w, c] : gc.per_kernel) {
    if (!c.feasible) infeasible.push_back(node->describe() + ": " + c.reason);
    if (o.per_kernel)
      kernels.push_back({{"node", node->name},
                         {"op", w.op},
                         {"bound", c.bound},
                         {"us", c.total_us},
                         {"cube_us", c.cube_us},
                         {"vector_us", c.vector_us},
                         {"memory_us", c.memory_us},
                         {"launch_us", c.launch_us},
                         {"macs", w.cube_macs},
                         {"dram_bytes", c.dram_bytes},
                         {"l2_bytes", c.l2_bytes}});
  }
  if (o.json) {
    nlohmann::ordered_json j{{"model", o.model},
                             {"soc_version", profile.soc_version},
                             {"precision_mode", o.profile.precision},
                             {"kernels", gc.kernels},
                             {"hbm_bytes", gc.hbm_bytes},
                             {"latency_us", gc.latency_us}};
    auto ops = nlohmann::ordered_json::object();
    for (const auto& [op, v] : rows) ops[op] = {{"us", v.first}, {"kernels", v.second}};
    j["by_op"] = ops;
    j["infeasible"] = infeasible;
    if (o.per_kernel) j["per_kernel"] = kernels;
    std::cout << json_text(j) << "\n";
    return 0;
  }
  std::printf("model           %s\n", o.model.c_str());
  std::printf("profile         %s (%d AI cores, %d vector cores, %.0f MHz, UB %lld KiB, HBM %.0f GB/s; %s)\n",
              profile.soc_version.c_str(), profile.ai_cores, profile.vector_cores, profile.frequency_mhz,
              static_cast<long long>(profile.ub / 1024), profile.hbm_gbps, o.profile.precision.c_str());
  std::printf("kernels         %zu\n", gc.kernels);
  std::printf("HBM traffic     %.2f MiB\n", gc.hbm_bytes / (1 << 20));
  std::printf("modeled latency %.1f us (one stream, kernels in sequence)\n", gc.latency_us);
  std::printf("by op type\n");
  for (const auto& [op, v] : rows)
    std::printf("  %-28s %9.1f us  %4zu kernels\n", op.c_str(), v.first, v.second);
  for (const auto& i : infeasible) std::printf("infeasible: %s\n", i.c_str());
  if (o.per_kernel) {
    std::printf("per kernel (us: total = launch + the busiest of cube, vector, memory)\n");
    std::printf("  %-32s %-26s %-6s %9s %9s %9s %9s %10s %10s\n", "node", "op", "bound", "total", "cube",
                "vector", "memory", "DRAM MiB", "L2 MiB");
    for (const auto& k : kernels)
      std::printf("  %-32s %-26s %-6s %9.1f %9.1f %9.1f %9.1f %10.2f %10.2f\n",
                  k["node"].get<std::string>().c_str(), k["op"].get<std::string>().c_str(),
                  k["bound"].get<std::string>().c_str(), k["us"].get<double>(), k["cube_us"].get<double>(),
                  k["vector_us"].get<double>(), k["memory_us"].get<double>(),
                  k["dram_bytes"].get<double>() / (1 << 20), k["l2_bytes"].get<double>() / (1 << 20));
  }
  return 0;
}

}  // namespace

std::function<int()> add_cost_command(CLI::App& app) {
  auto o = std::make_shared<CostCliOptions>();
  CLI::App* cmd =
      app.add_subcommand("cost", "Model a model's latency, kernels and HBM traffic on an Ascend profile");
  cmd->add_option("model", o->model, "ONNX model")->required();
  o->profile.add_to(cmd);
  o->input_shape.add_to(cmd);
  cmd->add_option("--symbolic-dim", o->symbolic, "Value assumed for symbolic dims (1 to 2^31)")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 31))
      ->capture_default_str();
  cmd->add_flag("--json", o->json, "Print JSON");
  cmd->add_flag(
      "--per-kernel", o->per_kernel,
      "List every kernel: its bound unit, time on each unit, and bytes from device memory and from L2");
  return [cmd, o]() -> int { return *cmd ? run(*o) : -1; };
}

}  // namespace geopt::cli
