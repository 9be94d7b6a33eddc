#include "stream_plan.h"

#include <algorithm>
#include <set>
#include <unordered_map>

#include "util/error.h"

namespace geopt::ascend {
namespace {

// Vector clock: for each stream, how many of its kernels are known finished.
using Clock = std::vector<size_t>;

void merge(Clock& into, const Clock& other) {
  for (size_t s = 0; s < into.size(); ++s) into[s] = std::max(into[s], other[s]);
}

// Dependencies (before, after) over positions in the order: data edges, and
// for bytes the memory plan reuses, every access to the old tensor before
// the write of the new one.
std::vector<std::pair<size_t, size_t>> dependencies(const Graph& graph, const std::vector<size_t>& order,
                                                    const MemoryPlan& memory) {
  std::unordered_map<const Node*, size_t> pos;
  for (size_t k = 0; k < order.size(); ++k) pos[graph.nodes()[order[k]].get()] = k;
  std::set<std::pair<size_t, size_t>> deps;
  auto add = [&](size_t a, size_t b) {
    if (a != b) deps.emplace(std::min(a, b), std::max(a, b));
  };
  auto accesses = [&](const Value* v) {
    std::vector<size_t> out;
    if (v->producer()) out.push_back(pos.at(v->producer()));
    for (const Use& u : v->uses()) out.push_back(pos.at(u.node));
    return out;
  };
  for (size_t k = 0; k < order.size(); ++k)
    for (const Value* in : graph.nodes()[order[k]]->inputs())
      if (in && in->producer()) add(pos.at(in->producer()), k);
  const auto& bufs = memory.buffers;
  for (const auto& b : bufs)  // in-place writes after the reads of earlier members
    for (size_t m = 1; m < b.values.size(); ++m) {
      const Node* writer = b.values[m]->producer();
      if (!writer || is_view_op(*writer)) continue;  // views only read
      for (size_t e = 0; e < m; ++e)
        for (size_t a : accesses(b.values[e])) add(a, pos.at(writer));
    }
  for (size_t i = 0; i < bufs.size(); ++i)
    for (size_t j = 0; j < bufs.size(); ++j) {
      const auto& a = bufs[i];
      const auto& b = bufs[j];
      if (a.last_step >= b.first_step) continue;
      if (!(a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes)) continue;
      const Node* writer = b.values.front()->producer();
      if (!writer) continue;
      for (const Value* v : a.values)
        for (size_t x : accesses(v)) add(x, pos.at(writer));
    }
  return {deps.begin(), deps.end()};
}

}  // namespace

StreamPlan plan_streams(const Graph& graph, const std::vector<size_t>& order, const MemoryPlan& memory,
                        const StreamPlanOptions& options) {
  StreamPlan plan;
  const size_t n = order.size();
  const size_t max_streams = std::max<size_t>(1, options.max_streams);
  plan.dependencies = dependencies(graph, order, memory);
  std::vector<std::vector<size_t>> preds(n);
  for (const auto& [a, b] : plan.dependencies) preds[b].push_back(a);

  std::unordered_map<const Node*, size_t> pos;
  for (size_t k = 0; k < n; ++k) pos[graph.nodes()[order[k]].get()] = k;
  plan.stream_of.assign(n, 0);
  std::vector<bool> continued(n, false);
  std::vector<long> last_on_stream(max_streams, -1);
  size_t used = 1;
  for (size_t k = 0; k < n; ++k) {
    const Node& node = *graph.nodes()[order[k]];
    long pick = -1;
    for (const Value* in : node.inputs()) {
      if (!in || !in->producer()) continue;
      size_t p = pos.at(in->producer());
      if (!continued[p]) {
        continued[p] = true;
        pick = static_cast<long>(plan.stream_of[p]);
        break;
      }
    }
    if (pick < 0) {  // a new branch: the stream that has been idle longest
      pick = 0;
      for (size_t s = 1; s < max_streams; ++s)
        if (last_on_stream[s] < last_on_stream[static_cast<size_t>(pick)]) pick = static_cast<long>(s);
    }
    plan.stream_of[k] = static_cast<size_t>(pick);
    last_on_stream[static_cast<size_t>(pick)] = static_cast<long>(k);
    used = std::max(used, static_cast<size_t>(pick) + 1);
  }
  plan.stream_count = used;

  // Events, skipping those the vector clocks already imply.
  std::vector<size_t> index_in_stream(n);
  std::vector<size_t> count(used, 0);
  for (size_t k = 0; k < n; ++k) index_in_stream[k] = ++count[plan.stream_of[k]];
  std::vector<Clock> after(n, Clock(used, 0));
  std::vector<Clock> stream_clock(used, Clock(used, 0));
  for (size_t k = 0; k < n; ++k) {
    const size_t s = plan.stream_of[k];
    Clock clock = stream_clock[s];
    std::vector<size_t> ps = preds[k];
    std::sort(ps.rbegin(), ps.rend());  // latest first: its clock may cover the others
    for (size_t p : ps) {
      const size_t t = plan.stream_of[p];
      if (t == s) continue;
      ++plan.cross_stream_dependencies;
      if (clock[t] >= index_in_stream[p]) continue;
      plan.events.push_back({p, k});
      merge(clock, after[p]);
    }
    clock[s] = index_in_stream[k];
    after[k] = clock;
    stream_clock[s] = clock;
  }
  std::sort(plan.events.begin(), plan.events.end(),
            [](const StreamEvent& a, const StreamEvent& b) { return a.to != b.to ? a.to < b.to : a.from < b.from; });
  return plan;
}

void validate_stream_plan(const StreamPlan& plan) {
  const size_t n = plan.stream_of.size();
  std::vector<std::vector<size_t>> waits(n);
  for (const auto& e : plan.events) {
    if (e.from >= e.to || e.to >= n)
      throw Error("stream plan: event from kernel " + std::to_string(e.from) + " to kernel " + std::to_string(e.to) +
                  " does not point forward in the order, so the event graph may have a cycle");
    waits[e.to].push_back(e.from);
  }
  std::vector<size_t> index_in_stream(n), count(plan.stream_count, 0);
  for (size_t k = 0; k < n; ++k) index_in_stream[k] = ++count.at(plan.stream_of[k]);
  std::vector<Clock> after(n);
  std::vector<Clock> stream_clock(plan.stream_count, Clock(plan.stream_count, 0));
  for (size_t k = 0; k < n; ++k) {
    Clock clock = stream_clock[plan.stream_of[k]];
    for (size_t p : waits[k]) merge(clock, after[p]);
    clock[plan.stream_of[k]] = index_in_stream[k];
    after[k] = stream_clock[plan.stream_of[k]] = clock;
  }
  for (const auto& [a, b] : plan.dependencies)
    if (after[b][plan.stream_of[a]] < index_in_stream[a])
      throw Error("stream plan: kernel " + std::to_string(b) + " (stream " + std::to_string(plan.stream_of[b]) +
                  ") may start before kernel " + std::to_string(a) + " (stream " + std::to_string(plan.stream_of[a]) +
                  ") it depends on finishes: no event orders them");
}

}  // namespace geopt::ascend
