#include "stream_plan.h"

#include <algorithm>
#include <map>
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

// Dependencies (before, after) over positions in the order: data edges, and for
// bytes the memory plan reuses, the accesses of the tensor that held them last before
// the write of the new one. Orderings implied through a chain are left out: a write
// over bytes whose previous holder wrote over an older one's comes after that holder's
// write, which came after the older holder's accesses. So each buffer is ordered
// after the latest holder of each of its bytes only (an interval map over the pool,
// swept in order of first use), and an in-place member after the members since the
// buffer's latest write: O(n log n), where all pairs were quadratic.
std::vector<std::pair<size_t, size_t>> dependencies(const Graph& graph, const std::vector<size_t>& order,
                                                    const MemoryPlan& memory) {
  std::unordered_map<const Node*, size_t> pos;
  for (size_t k = 0; k < order.size(); ++k) pos[graph.nodes()[order[k]].get()] = k;
  std::vector<std::pair<size_t, size_t>> deps;
  auto add = [&](size_t a, size_t b) {
    if (a != b) deps.emplace_back(std::min(a, b), std::max(a, b));
  };
  auto accesses = [&](const Value* v, std::vector<size_t>& out) {
    if (v->producer()) out.push_back(pos.at(v->producer()));
    for (const Use& u : v->uses()) out.push_back(pos.at(u.node));
  };
  for (size_t k = 0; k < order.size(); ++k)
    for (const Value* in : graph.nodes()[order[k]]->inputs())
      if (in && in->producer()) add(pos.at(in->producer()), k);
  const auto& bufs = memory.buffers;
  // Per buffer, the accesses of its members since its last real write (views only read).
  std::vector<std::vector<size_t>> tail(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) {
    const auto& b = bufs[i];
    size_t since = 0;  // the latest member whose producer writes
    for (size_t m = 0; m < b.values.size(); ++m) {
      const Node* writer = b.values[m]->producer();
      if (m > 0 && writer && !is_view_op(*writer)) {
        std::vector<size_t> before;  // in-place writes after the reads of earlier members
        for (size_t e = since; e < m; ++e) accesses(b.values[e], before);
        for (size_t a : before) add(a, pos.at(writer));
        since = m;
      }
    }
    for (size_t e = since; e < b.values.size(); ++e) accesses(b.values[e], tail[i]);
  }
  // Interval map over the pool: start -> (end, buffer that held [start, end) last).
  std::map<size_t, std::pair<size_t, size_t>> holder;
  std::vector<size_t> by_first(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) by_first[i] = i;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](size_t a, size_t b) { return bufs[a].first_step < bufs[b].first_step; });
  for (size_t j : by_first) {
    const auto& b = bufs[j];
    const size_t lo = b.offset, hi = b.offset + b.bytes;
    if (hi == lo) continue;
    // Split the segments that straddle lo and hi, so [lo, hi) is whole segments.
    auto split = [&](size_t at) {
      auto it = holder.upper_bound(at);
      if (it == holder.begin()) return;
      --it;
      const auto [start, seg] = *it;
      if (start < at && at < seg.first) {
        it->second.first = at;
        holder.emplace(at, std::make_pair(seg.first, seg.second));
      }
    };
    split(lo);
    split(hi);
    const Node* writer = b.values.front()->producer();
    for (auto it = holder.lower_bound(lo); it != holder.end() && it->first < hi;) {
      const size_t a = it->second.second;
      if (writer && bufs[a].last_step < b.first_step)
        for (size_t x : tail[a]) add(x, pos.at(writer));
      it = holder.erase(it);
    }
    holder.emplace(lo, std::make_pair(hi, j));
  }
  std::sort(deps.begin(), deps.end());
  deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
  return deps;
}

// A view the memory plan aliases: its output lies in its data input's bytes. (A view op
// whose output was kept apart copies, and is a kernel like any other.)
bool aliases_input(const Node& node, const MemoryPlan& memory) {
  if (!is_view_op(node) || node.inputs().empty() || node.outputs().empty() || !node.inputs()[0] ||
      !node.outputs()[0])
    return false;
  auto in = memory.buffer_of.find(node.inputs()[0]), out = memory.buffer_of.find(node.outputs()[0]);
  return in != memory.buffer_of.end() && out != memory.buffer_of.end() && in->second == out->second;
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
  // A kernel's continuation slot: its own, or for a view (which launches no work: it
  // names bytes its input's producer wrote) its producer's. Continuing either continues
  // both, so a view neither takes a stream of its own nor lets two branches share one.
  // On a stream of its own a view would only add events (GPT-2's Q/K/V reshapes took
  // three streams and six events a layer, to overlap nothing).
  std::vector<size_t> slot(n);
  std::vector<bool> continued(n, false);  // per slot
  std::vector<long> last_on_stream(max_streams, -1);
  std::vector<long> last_slot_on_stream(max_streams, -1);
  size_t used = 1;
  for (size_t k = 0; k < n; ++k) {
    const Node& node = *graph.nodes()[order[k]];
    slot[k] = k;
    long pick = -1;
    // A view stays with its producer while nothing else has run on that stream since.
    const Value* data = node.inputs().empty() ? nullptr : node.inputs()[0];
    if (data && data->producer() && aliases_input(node, memory)) {
      const size_t p = pos.at(data->producer()), t = plan.stream_of[p];
      if (last_slot_on_stream[t] == static_cast<long>(slot[p])) {
        pick = static_cast<long>(t);
        slot[k] = slot[p];
      }
    }
    for (const Value* in : node.inputs()) {
      if (pick >= 0) break;
      if (!in || !in->producer()) continue;
      size_t p = pos.at(in->producer());
      if (!continued[slot[p]]) {
        continued[slot[p]] = true;
        pick = static_cast<long>(plan.stream_of[p]);
      }
    }
    if (pick < 0) {  // a new branch: the stream that has been idle longest
      pick = 0;
      for (size_t s = 1; s < max_streams; ++s)
        if (last_on_stream[s] < last_on_stream[static_cast<size_t>(pick)]) pick = static_cast<long>(s);
    }
    plan.stream_of[k] = static_cast<size_t>(pick);
    last_on_stream[static_cast<size_t>(pick)] = static_cast<long>(k);
    last_slot_on_stream[static_cast<size_t>(pick)] = static_cast<long>(slot[k]);
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
  std::sort(plan.events.begin(), plan.events.end(), [](const StreamEvent& a, const StreamEvent& b) {
    return a.to != b.to ? a.to < b.to : a.from < b.from;
  });
  return plan;
}

void validate_stream_plan(const StreamPlan& plan) {
  const size_t n = plan.stream_of.size();
  std::vector<std::vector<size_t>> waits(n);
  for (const auto& e : plan.events) {
    if (e.from >= e.to || e.to >= n)
      throw Error("stream plan: event from kernel " + std::to_string(e.from) + " to kernel " +
                  std::to_string(e.to) +
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
      throw Error("stream plan: kernel " + std::to_string(b) + " (stream " +
                  std::to_string(plan.stream_of[b]) + ") may start before kernel " + std::to_string(a) +
                  " (stream " + std::to_string(plan.stream_of[a]) +
                  ") it depends on finishes: no event orders them");
}

}  // namespace geopt::ascend
