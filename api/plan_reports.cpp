#include "plan_reports.h"

#include <google/protobuf/util/json_util.h>

#include <map>

#include "ascend/plan_profile.h"
#include "ascend/tune/tuning_hints.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace geopt::api {
namespace {

// Weight bytes cleared everywhere (their sizes and offsets stay).
void clear_weights(plan::Plan& p) {
  p.clear_weights();
  for (auto& k : *p.mutable_kernels())
    for (auto& b : *k.mutable_bodies()) clear_weights(*b.mutable_plan());
  for (auto& g : *p.mutable_gears()) clear_weights(*g.mutable_plan());
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

}  // namespace

std::string plan_dump_json(plan::Plan p, const std::string& where) {
  clear_weights(p);
  std::string text;
  google::protobuf::util::JsonPrintOptions options;
  options.add_whitespace = true;
  options.preserve_proto_field_names = true;
  if (!google::protobuf::util::MessageToJsonString(p, &text, options).ok())
    throw geopt::Error(where + ": cannot print as JSON");
  return text;
}

nlohmann::ordered_json plan_profile_json(const plan::Plan& file, int gear, const std::string& where,
                                         const std::string& trace) {
  // A plan of gears is simulated one gear at a time.
  if (file.gears_size() && (gear < 0 || gear >= file.gears_size()))
    throw geopt::Error("--gear " + std::to_string(gear) + ": the plan has " +
                       std::to_string(file.gears_size()) + " gear(s), numbered from 0");
  if (!file.gears_size() && gear != 0)
    throw geopt::Error("--gear " + std::to_string(gear) + ": " + where + " is not a plan of gears");
  const plan::Plan& plan = file.gears_size() ? file.gears(gear).plan() : file;
  ascend::PlanProfile p = ascend::simulate_plan(plan);
  if (!trace.empty()) write_file_atomically(trace, ascend::chrome_trace(plan, p));
  std::map<uint32_t, double> busy;  // per stream
  for (const auto& s : p.spans) busy[s.stream] += s.end_us - s.start_us;
  nlohmann::ordered_json j;
  j["plan"] = where;
  j["soc_version"] = plan.soc_version();
  if (file.gears_size())
    j["gear"] = {{"index", gear}, {"input_shape", file.gears(gear).name()}, {"gears", file.gears_size()}};
  j["latency_us"] = p.latency_us;
  j["stream_count"] = plan.stream_count();
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
  j["tuning_hints"] = tuning_hints_json(p, "MODEL");  // a plan does not name its model
  return j;
}

nlohmann::ordered_json tuning_hints_json(const ascend::PlanProfile& profile, const std::string& model) {
  auto hints = nlohmann::ordered_json::array();
  for (const auto& h : ascend::tuning_hints(profile))
    hints.push_back({{"metric", h.metric},
                     {"value", h.value},
                     {"threshold", h.threshold},
                     {"job_type", h.job_type},
                     {"command", "geopt tune " + model + " --job_type " + std::to_string(h.job_type)},
                     {"hint", ascend::hint_text(h, model)}});
  return hints;
}

}  // namespace geopt::api
