#include "plan_profile.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "ops/op_traits.h"

namespace geopt::ascend {
namespace {

// A kernel's time alone on the device: each unit's work at full speed; for a
// control-flow kernel, its bodies' time (`bodies`).
double alone_us(const plan::Kernel& k, double bodies) {
  return k.launch_us() + std::max({k.cube_us(), k.vector_us(), k.memory_us(), bodies});
}

struct BodiesTime {
  double us = 0, cube_busy = 0, vector_busy = 0;
};

// The trips compile modeled (0 for a Loop that never runs); a value a plan file could
// hold but compile never writes (negative, not finite, past 2^31) counts as one.
double modeled_trips(const plan::Kernel& k) {
  const double t = k.trips();
  return std::isfinite(t) && t >= 0 && t <= 2147483648.0 ? t : 1.0;
}

std::string trips_text(double trips) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", trips);
  return text;
}

// Simulates kernel i's bodies into p.bodies; returns their time per run of the kernel,
// and the units' busy time in it: the slower runnable branch of an If, trips x the body
// of a Loop or Scan.
BodiesTime simulate_bodies(const plan::Kernel& k, size_t i, PlanProfile& p) {
  BodiesTime t;
  double slowest = 0;
  for (const auto& b : k.bodies()) {
    BodyProfile bp;
    bp.kernel = i;
    bp.attribute = b.attribute();
    bp.unrunnable = b.unrunnable();
    bp.trips =
        standard_op_traits(k.domain(), k.op_type()).control_flow == ControlFlow::If ? 1 : modeled_trips(k);
    if (bp.unrunnable.empty()) {
      bp.plan = &b.plan();
      bp.profile = simulate_plan(b.plan());
      if (bp.profile.latency_us >= slowest) {
        slowest = bp.profile.latency_us;
        t.us = slowest * bp.trips;
        t.cube_busy = bp.profile.cube_utilization * slowest * bp.trips;
        t.vector_busy = bp.profile.vector_utilization * slowest * bp.trips;
      }
    }
    p.bodies.push_back(std::move(bp));
  }
  return t;
}

}  // namespace

PlanProfile simulate_plan(const plan::Plan& plan) {
  PlanProfile p;
  const int n = plan.kernels_size();
  p.spans.resize(static_cast<size_t>(n));
  std::vector<double> stream_free(plan.stream_count(), 0.0);
  std::vector<double> event_time(static_cast<size_t>(plan.events_size()), 0.0);
  std::vector<std::vector<int>> on_stream(plan.stream_count());  // kernels placed, per stream, in order
  double cube_busy = 0, vector_busy = 0, total = 0, layout = 0;
  std::vector<double> body_time(static_cast<size_t>(n), 0.0);
  for (int i = 0; i < n; ++i) {
    const auto& k = plan.kernels(i);
    if (k.bodies_size()) {
      const BodiesTime t = simulate_bodies(k, static_cast<size_t>(i), p);
      body_time[static_cast<size_t>(i)] = t.us;
      cube_busy += t.cube_busy;
      vector_busy += t.vector_busy;
    }
    double start = stream_free[k.stream()];
    for (uint32_t e : k.wait_events()) start = std::max(start, event_time[e]);
    // Units shared with the kernels already placed that are still running then: on
    // each stream at most one (its spans follow one another), found by bisection.
    int cube_users = 1, vector_users = 1, memory_users = 1;
    for (const std::vector<int>& placed : on_stream) {
      auto after = std::upper_bound(placed.begin(), placed.end(), start, [&](double t, int j) {
        return t < p.spans[static_cast<size_t>(j)].start_us;
      });
      if (after == placed.begin()) continue;
      const int j = *std::prev(after);
      if (p.spans[static_cast<size_t>(j)].end_us <= start) continue;
      const auto& other = plan.kernels(j);
      cube_users += other.cube_us() > 0;
      vector_users += other.vector_us() > 0;
      memory_users += other.memory_us() > 0;
    }
    double busy = std::max({k.cube_us() * cube_users, k.vector_us() * vector_users,
                            k.memory_us() * memory_users, body_time[static_cast<size_t>(i)]});
    double end = start + k.launch_us() + busy;
    p.spans[static_cast<size_t>(i)] = {static_cast<size_t>(i), k.stream(), start, end};
    on_stream[k.stream()].push_back(i);
    stream_free[k.stream()] = end;
    for (uint32_t e : k.record_events()) event_time[e] = end;
    p.latency_us = std::max(p.latency_us, end);
    cube_busy += k.cube_us();
    vector_busy += k.vector_us();
    total += alone_us(k, body_time[static_cast<size_t>(i)]);
    if (k.op_type() == "TransData") layout += alone_us(k, 0);
  }
  p.one_stream_us = total;

  // Critical path over data dependencies (the tensor a kernel reads, by name).
  std::map<std::string, double> ready;  // tensor -> earliest time it exists
  for (int i = 0; i < n; ++i) {
    const auto& k = plan.kernels(i);
    double start = 0;
    for (const auto& in : k.inputs())
      if (!in.absent()) {
        auto it = ready.find(in.name());
        if (it != ready.end()) start = std::max(start, it->second);
      }
    double end = start + alone_us(k, body_time[static_cast<size_t>(i)]);
    for (const auto& out : k.outputs())
      if (!out.absent()) ready[out.name()] = end;
    p.critical_path_us = std::max(p.critical_path_us, end);
  }
  if (p.latency_us > 0) {
    p.cube_utilization = cube_busy / p.latency_us;
    p.vector_utilization = vector_busy / p.latency_us;
  }
  p.layout_transform_share = total > 0 ? layout / total : 0;
  const auto& m = plan.memory();
  p.memory_reuse_rate = m.no_reuse_bytes() ? 1.0 - double(m.pool_bytes()) / double(m.no_reuse_bytes()) : 0;
  p.fusion_rate = plan.compile().fusion_rate();
  return p;
}

namespace {

struct TraceWriter {
  nlohmann::ordered_json events = nlohmann::ordered_json::array();
  uint32_t next_track = 0, next_flow = 0;

  // One plan's kernels from time `at`, on tracks of its own named after `where`; the
  // first run of each body nested inside its kernel's span, after the launch.
  void plan(const plan::Plan& plan, const PlanProfile& profile, double at, const std::string& where) {
    const uint32_t first = next_track;
    next_track += plan.stream_count();
    for (uint32_t s = 0; s < plan.stream_count(); ++s)
      events.push_back(
          {{"name", "thread_name"},
           {"ph", "M"},
           {"pid", 0},
           {"tid", first + s},
           {"args", {{"name", (where.empty() ? "" : where + ", ") + "stream " + std::to_string(s)}}}});
    for (const auto& span : profile.spans) {
      const auto& k = plan.kernels(static_cast<int>(span.kernel));
      nlohmann::ordered_json args{{"kernel", span.kernel},
                                  {"name", k.name()},
                                  {"cube_us", k.cube_us()},
                                  {"vector_us", k.vector_us()},
                                  {"memory_us", k.memory_us()}};
      if (k.bodies_size() && k.op_type() != "If") args["trips"] = modeled_trips(k);
      events.push_back({{"name", k.op_type()},
                        {"cat", k.domain().empty() ? "onnx" : k.domain()},
                        {"ph", "X"},
                        {"pid", 0},
                        {"tid", first + span.stream},
                        {"ts", at + span.start_us},
                        {"dur", span.end_us - span.start_us},
                        {"args", args}});
    }
    const uint32_t flow = next_flow;
    next_flow += static_cast<uint32_t>(plan.events_size());
    for (const auto& e : plan.events()) {  // flow arrows: record -> wait
      const auto& from = profile.spans[e.from_kernel()];
      const auto& to = profile.spans[e.to_kernel()];
      events.push_back({{"name", "event " + std::to_string(e.id())},
                        {"cat", "event"},
                        {"ph", "s"},
                        {"id", flow + e.id()},
                        {"pid", 0},
                        {"tid", first + from.stream},
                        {"ts", at + from.end_us}});
      events.push_back({{"name", "event " + std::to_string(e.id())},
                        {"cat", "event"},
                        {"ph", "f"},
                        {"bp", "e"},
                        {"id", flow + e.id()},
                        {"pid", 0},
                        {"tid", first + to.stream},
                        {"ts", at + to.start_us}});
    }
    for (const BodyProfile& b : profile.bodies) {
      if (!b.plan || b.trips == 0) continue;  // no run to show
      const auto& k = plan.kernels(static_cast<int>(b.kernel));
      const std::string label = k.op_type() + (k.name().empty() ? "" : " '" + k.name() + "'") + " " +
                                b.attribute +
                                (b.trips > 1 ? " (first of " + trips_text(b.trips) + " trips)" : "");
      this->plan(*b.plan, b.profile, at + profile.spans[b.kernel].start_us + k.launch_us(),
                 where.empty() ? label : where + " > " + label);
    }
  }
};

}  // namespace

std::string chrome_trace(const plan::Plan& plan, const PlanProfile& profile) {
  TraceWriter w;
  w.events.push_back({{"name", "process_name"},
                      {"ph", "M"},
                      {"pid", 0},
                      {"args", {{"name", plan.soc_version() + " (simulated)"}}}});
  w.plan(plan, profile, 0, "");
  nlohmann::ordered_json& events = w.events;
  nlohmann::ordered_json trace;
  trace["traceEvents"] = events;
  trace["displayTimeUnit"] = "ns";
  trace["metadata"] = {{"latency_us", profile.latency_us},
                       {"critical_path_us", profile.critical_path_us},
                       {"fusion_rate", profile.fusion_rate},
                       {"memory_reuse_rate", profile.memory_reuse_rate},
                       {"layout_transform_share", profile.layout_transform_share},
                       {"cube_utilization", profile.cube_utilization},
                       {"vector_utilization", profile.vector_utilization}};
  return trace.dump() + "\n";
}

}  // namespace geopt::ascend
