#include "plan_command.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>

#include "ascend/plan_file.h"
#include "ir/dtype.h"
#include "plan_reports.h"
#include "util/error.h"

namespace geopt::cli {
namespace {

struct PlanOptions {
  std::string plan;
  bool json = false;
};

std::string tensor_text(const plan::TensorRef& r) {
  if (r.absent()) return "-";
  std::string dims;
  for (int i = 0; i < r.dims_size(); ++i) dims += (i ? "," : "") + std::to_string(r.dims(i));
  return r.name() + " " + dtype_name(static_cast<DType>(r.dtype())) + "[" + (r.bounded() ? "<=" : "") + dims +
         "] " + r.format() + " @" + (r.region() == plan::WEIGHT ? "weight" : "pool") + "+" +
         std::to_string(r.offset()) + (r.bounded() ? " (dims set at run time)" : "");
}

// The kernels of a plan or of a body (indented under its control-flow kernel).
void print_kernels(const plan::Plan& p, const std::string& indent) {
  for (int k = 0; k < p.kernels_size(); ++k) {
    const auto& kernel = p.kernels(k);
    std::printf("%s#%-4d stream %u  %s%s%s '%s'  %.2f us\n", indent.c_str(), k, kernel.stream(),
                kernel.domain().c_str(), kernel.domain().empty() ? "" : "::", kernel.op_type().c_str(),
                kernel.name().c_str(), kernel.modeled_us());
    if (!kernel.host_tactic().empty())
      std::printf("%s      tactic %s%s\n", indent.c_str(), kernel.host_tactic().c_str(),
                  kernel.tactic_source() == "bank" ? " (from the knowledge bank)" : "");
    for (uint32_t e : kernel.wait_events())
      std::printf("%s      wait   event %u (from #%u)\n", indent.c_str(), e,
                  p.events(static_cast<int>(e)).from_kernel());
    for (const auto& r : kernel.inputs())
      std::printf("%s      in     %s\n", indent.c_str(), tensor_text(r).c_str());
    for (const auto& r : kernel.outputs())
      std::printf("%s      out    %s\n", indent.c_str(), tensor_text(r).c_str());
    for (uint32_t e : kernel.record_events())
      std::printf("%s      record event %u (for #%u)\n", indent.c_str(), e,
                  p.events(static_cast<int>(e)).to_kernel());
    for (const auto& body : kernel.bodies()) {
      if (!body.unrunnable().empty()) {
        std::printf("%s      body   %s: not compiled (cannot run at these shapes: %s)\n", indent.c_str(),
                    body.attribute().c_str(), body.unrunnable().c_str());
        continue;
      }
      const plan::Plan& b = body.plan();
      std::printf(
          "%s      body   %s: %d kernel(s) on %u stream(s), %d event(s), pool %llu B, weights %llu B\n",
          indent.c_str(), body.attribute().c_str(), b.kernels_size(), b.stream_count(), b.events_size(),
          static_cast<unsigned long long>(b.activation_bytes()),
          static_cast<unsigned long long>(b.weight_bytes()));
      const std::string inner = indent + "             ";
      for (const auto& r : b.inputs()) std::printf("%sinput  %s\n", inner.c_str(), tensor_text(r).c_str());
      for (const auto& r : b.outputs()) std::printf("%soutput %s\n", inner.c_str(), tensor_text(r).c_str());
      print_kernels(b, inner);
    }
  }
}

// Kernels, memory and bindings of a plan (or of one gear).
void print_plan_body(const plan::Plan& p, uint64_t weight_bytes, const std::string& weights_where) {
  const auto& m = p.memory();
  std::printf("kernels          %d on %u stream(s), %d event(s)\n", p.kernels_size(), p.stream_count(),
              p.events_size());
  std::printf("memory           pool %llu B (LOAD %llu B, without reuse %llu B; %s), weights %llu B %s\n",
              static_cast<unsigned long long>(m.pool_bytes()),
              static_cast<unsigned long long>(m.load_bytes()),
              static_cast<unsigned long long>(m.no_reuse_bytes()), m.strategy().c_str(),
              static_cast<unsigned long long>(weight_bytes), weights_where.c_str());
  for (const auto& r : p.input_ranges())
    std::printf("range            %s (memory planned at the upper bound)\n", ascend::range_text(r).c_str());
  for (const auto& r : p.inputs()) std::printf("input            %s\n", tensor_text(r).c_str());
  for (const auto& r : p.outputs()) std::printf("output           %s\n", tensor_text(r).c_str());
  print_kernels(p, "");
}

int dump(const PlanOptions& o) {
  plan::Plan p = ascend::read_plan(o.plan);
  if (o.json) {
    std::cout << api::plan_dump_json(std::move(p), o.plan);
    return 0;
  }
  std::printf("plan             %s (format %u, by %s)\n", o.plan.c_str(), p.format_version(),
              p.producer().c_str());
  std::printf("soc_version      %s\n", p.soc_version().c_str());
  const std::string where = p.weights_file().empty() ? "inline" : "in " + p.weights_file();
  if (!p.gears_size()) {
    print_plan_body(p, p.weight_bytes(), where);
    return 0;
  }
  std::printf("gears            %d, sharing weights of %llu B %s\n", p.gears_size(),
              static_cast<unsigned long long>(p.weight_bytes()), where.c_str());
  for (int g = 0; g < p.gears_size(); ++g)
    std::printf("  gear %-3d       %s: %d kernels, pool %llu B\n", g, p.gears(g).name().c_str(),
                p.gears(g).plan().kernels_size(),
                static_cast<unsigned long long>(p.gears(g).plan().activation_bytes()));
  for (int g = 0; g < p.gears_size(); ++g) {
    std::printf("\ngear %d           %s\n", g, p.gears(g).name().c_str());
    print_plan_body(p.gears(g).plan(), p.weight_bytes(), "(shared)");
  }
  return 0;
}

}  // namespace

std::function<int()> add_plan_command(CLI::App& app) {
  auto o = std::make_shared<PlanOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "Inspect a compiled plan");
  cmd->require_subcommand(1);
  CLI::App* dump_cmd =
      cmd->add_subcommand("dump", "Print a plan: kernels, streams, events, tensors and memory");
  dump_cmd->add_option("plan", o->plan, "Plan file (from geopt compile)")->required();
  dump_cmd->add_flag("--json", o->json, "Print the plan as JSON (without the weight bytes)");
  return [dump_cmd, o]() -> int { return *dump_cmd ? dump(*o) : -1; };
}

}  // namespace geopt::cli
