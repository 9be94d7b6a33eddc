#include "memory_plan.h"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>

#include "cost_model.h"
#include "device_ops/device_ops.h"
#include "execution_order.h"
#include "ops/op_traits.h"
#include "util/error.h"

namespace geopt::ascend {
namespace {

size_t align_up(size_t n) {
  return std::max<size_t>(1, (n + kMemoryAlignment - 1) / kMemoryAlignment) * kMemoryAlignment;
}

// The inputs whose bytes a node's output may take when they die at that node
// (OpTraits::may_run_in_place): every input of an elementwise op (its kernel reads each
// element before writing it), and FusedConv's residual (input 3: the conv adds it where it
// writes, KernelContext::new_output), which keeps a ResNet's residual stream in one buffer.
// Only output 0 takes an input's bytes: a second output (a FusedConv's channel means) is
// written beside it.
bool may_run_in_place(const Node& n, size_t output, size_t input) {
  return output == 0 && op_registry().traits(n.domain, n.op_type).may_run_in_place(input);
}

// For each buffer, the buffers whose lifetimes overlap it: a sweep in order of first
// step over the buffers still alive (the pairs themselves, not all pairs, are the cost).
std::vector<std::vector<size_t>> overlapping_lifetimes(const std::vector<PlannedBuffer>& bufs) {
  std::vector<size_t> by_first(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) by_first[i] = i;
  std::stable_sort(by_first.begin(), by_first.end(),
                   [&](size_t a, size_t b) { return bufs[a].first_step < bufs[b].first_step; });
  std::vector<std::vector<size_t>> conflicts(bufs.size());
  std::multimap<int, size_t> alive;  // last step -> buffer
  for (size_t i : by_first) {
    alive.erase(alive.begin(), alive.lower_bound(bufs[i].first_step));  // ended before i begins
    for (const auto& [last, j] : alive) conflicts[i].push_back(j), conflicts[j].push_back(i);
    alive.emplace(bufs[i].last_step, i);
  }
  return conflicts;
}

// The largest value over a range of steps in O(1) after O(n log n) (a sparse table).
class RangeMax {
 public:
  explicit RangeMax(const std::vector<int64_t>& v) : table_{v} {
    for (size_t w = 1; 2 * w <= v.size(); w *= 2) {
      const std::vector<int64_t>& prev = table_.back();
      std::vector<int64_t> next(prev.size() - w);
      for (size_t i = 0; i < next.size(); ++i) next[i] = std::max(prev[i], prev[i + w]);
      table_.push_back(std::move(next));
    }
  }
  int64_t over(size_t first, size_t last) const {  // inclusive
    size_t level = 0;
    while ((size_t{2} << level) <= last - first + 1) ++level;
    return std::max(table_[level][first], table_[level][last + 1 - (size_t{1} << level)]);
  }

 private:
  std::vector<std::vector<int64_t>> table_;
};

using Placement = std::vector<size_t>;  // offset per buffer

// Lowest (first fit) or tightest (best fit) offset for buffer i among the
// already-placed buffers whose lifetimes overlap it.
size_t find_offset(const std::vector<PlannedBuffer>& bufs, const std::vector<std::vector<size_t>>& conflicts,
                   const Placement& at, const std::vector<bool>& placed, size_t i, bool best_fit) {
  std::vector<std::pair<size_t, size_t>> taken;  // (offset, end)
  for (size_t j : conflicts[i])
    if (placed[j]) taken.emplace_back(at[j], at[j] + bufs[j].bytes);
  std::sort(taken.begin(), taken.end());
  size_t cursor = 0, best = SIZE_MAX, best_gap = SIZE_MAX;
  for (const auto& [start, end] : taken) {
    if (start >= cursor && start - cursor >= bufs[i].bytes) {
      if (!best_fit) return cursor;
      if (start - cursor < best_gap) best_gap = start - cursor, best = cursor;
    }
    cursor = std::max(cursor, end);
  }
  return best != SIZE_MAX ? best : cursor;
}

size_t pool_size(const std::vector<PlannedBuffer>& bufs, const Placement& at) {
  size_t top = 0;
  for (size_t i = 0; i < bufs.size(); ++i) top = std::max(top, at[i] + bufs[i].bytes);
  return top;
}

Placement place_in_order(const std::vector<PlannedBuffer>& bufs,
                         const std::vector<std::vector<size_t>>& conflicts, const std::vector<size_t>& order,
                         bool best_fit) {
  Placement at(bufs.size(), 0);
  std::vector<bool> placed(bufs.size(), false);
  for (size_t i : order) {
    at[i] = find_offset(bufs, conflicts, at, placed, i, best_fit);
    placed[i] = true;
  }
  return at;
}

// Moves buffers down into gaps left below them until nothing moves.
void close_gaps(const std::vector<PlannedBuffer>& bufs, const std::vector<std::vector<size_t>>& conflicts,
                Placement& at) {
  std::vector<size_t> by_offset(bufs.size());
  for (size_t i = 0; i < bufs.size(); ++i) by_offset[i] = i;
  std::vector<bool> placed(bufs.size(), true);
  for (int pass = 0; pass < 8; ++pass) {
    std::stable_sort(by_offset.begin(), by_offset.end(), [&](size_t a, size_t b) { return at[a] < at[b]; });
    bool moved = false;
    for (size_t i : by_offset) {
      placed[i] = false;
      size_t lower = find_offset(bufs, conflicts, at, placed, i, false);
      placed[i] = true;
      if (lower < at[i]) at[i] = lower, moved = true;
    }
    if (!moved) break;
  }
}

}  // namespace

bool is_view_op(const Node& n) {
  return op_registry().traits(n.domain, n.op_type).view || is_view_transpose(describe(n)) ||
         is_view_split(describe(n));
}

namespace {

// Bytes of the buffers alive at each step (0 .. end_step).
std::vector<int64_t> bytes_alive_per_step(const std::vector<PlannedBuffer>& bufs, int end_step) {
  std::vector<int64_t> alive(static_cast<size_t>(end_step) + 2, 0);  // a difference array, then summed
  for (const auto& b : bufs) {
    alive[static_cast<size_t>(b.first_step)] += static_cast<int64_t>(b.bytes);
    alive[static_cast<size_t>(b.last_step) + 1] -= static_cast<int64_t>(b.bytes);
  }
  for (size_t s = 1; s < alive.size(); ++s) alive[s] += alive[s - 1];
  alive.pop_back();
  return alive;
}

// Each buffer's offset in the pool: one after another without reuse; with it, the
// smallest pool of three greedy orders (by size, by breadth, by lifetime best fit), gaps
// closed after each. Records each strategy's pool and the one chosen in `plan`.
Placement place_buffers(MemoryPlan& plan, const std::vector<int64_t>& alive, bool reuse) {
  const auto& bufs = plan.buffers;
  Placement best;
  if (!reuse) {
    best.resize(bufs.size());
    size_t top = 0;
    for (size_t i = 0; i < bufs.size(); ++i) best[i] = top, top += bufs[i].bytes;
    plan.strategy = "no reuse";
    plan.strategy_pool_bytes[plan.strategy] = top;
  } else {
    const std::vector<std::vector<size_t>> conflicts = overlapping_lifetimes(bufs);
    std::vector<size_t> ids(bufs.size());
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = i;
    auto sorted = [&](std::function<bool(size_t, size_t)> before) {
      std::vector<size_t> v = ids;
      std::stable_sort(v.begin(), v.end(), before);
      return v;
    };
    // Breadth of a buffer: the most bytes alive at any step of its lifetime.
    const RangeMax most_alive(alive);
    std::vector<int64_t> breadth(bufs.size(), 0);
    for (size_t i = 0; i < bufs.size(); ++i)
      breadth[i] =
          most_alive.over(static_cast<size_t>(bufs[i].first_step), static_cast<size_t>(bufs[i].last_step));
    struct Strategy {
      std::string name;
      std::vector<size_t> order;
      bool best_fit;
    };
    std::vector<Strategy> strategies = {
        {"greedy by size", sorted([&](size_t a, size_t b) { return bufs[a].bytes > bufs[b].bytes; }), false},
        {"greedy by breadth", sorted([&](size_t a, size_t b) {
           return breadth[a] != breadth[b] ? breadth[a] > breadth[b] : bufs[a].bytes > bufs[b].bytes;
         }),
         false},
        {"lifetime best fit", sorted([&](size_t a, size_t b) {
           return bufs[a].first_step != bufs[b].first_step ? bufs[a].first_step < bufs[b].first_step
                                                           : bufs[a].bytes > bufs[b].bytes;
         }),
         true},
    };
    size_t best_pool = SIZE_MAX;
    for (const auto& s : strategies) {
      Placement at = place_in_order(bufs, conflicts, s.order, s.best_fit);
      plan.strategy_pool_bytes[s.name] = pool_size(bufs, at);
      close_gaps(bufs, conflicts, at);
      size_t pool = pool_size(bufs, at);
      plan.strategy_pool_bytes[s.name + " + closing gaps"] = pool;
      if (pool < best_pool) best_pool = pool, best = at, plan.strategy = s.name + " + closing gaps";
    }
  }
  return best;
}

}  // namespace

MemoryPlan plan_memory(const Graph& graph, const std::vector<size_t>& order,
                       const MemoryPlanOptions& options) {
  MemoryPlan plan;
  const auto& nodes = graph.nodes();
  const int end_step = static_cast<int>(order.size()) + 1;
  std::unordered_map<const Value*, int> last_use;
  for (size_t k = 0; k < order.size(); ++k)
    for (const Value* in : nodes[order[k]]->inputs())
      if (in && !in->initializer) last_use[in] = static_cast<int>(k) + 1;
  for (const Value* out : graph.outputs()) last_use[out] = end_step;

  auto new_buffer = [&](const Value* v, int step, bool apart = false) {
    PlannedBuffer b;
    b.values.push_back(v);
    b.bytes = align_up(static_bytes(*v));
    b.first_step = step;
    b.last_step = std::max(step, last_use.count(v) ? last_use.at(v) : step);
    if (apart) {  // alive from the first step to the last: it conflicts with every buffer
      b.first_step = 0;
      b.last_step = end_step;
      ++plan.kept_apart;
    }
    plan.no_reuse_bytes += b.bytes;
    plan.buffer_of[v] = plan.buffers.size();
    plan.buffers.push_back(std::move(b));
  };
  // v takes bytes of `into`'s buffer, `delta` past where `into` starts.
  auto join = [&](const Value* v, const Value* into, int step, std::optional<size_t> delta = std::nullopt) {
    size_t id = plan.buffer_of.at(into);
    PlannedBuffer& b = plan.buffers[id];
    b.values.push_back(v);
    b.last_step = std::max({b.last_step, step, last_use.count(v) ? last_use.at(v) : step});
    plan.buffer_of[v] = id;
    auto base = plan.offset_in_buffer.find(into);
    if (delta || base != plan.offset_in_buffer.end())
      plan.offset_in_buffer[v] = (base == plan.offset_in_buffer.end() ? 0 : base->second) + delta.value_or(0);
  };

  plan.no_reuse_unmatched = options.no_reuse;
  for (const Value* in : graph.inputs())
    if (!in->initializer) new_buffer(in, 0);
  for (size_t k = 0; k < order.size(); ++k) {
    const Node& n = *nodes[order[k]];
    const int step = static_cast<int>(k) + 1;
    // Names as plan dump prints them: the node's name, its op type, or domain::op type.
    const std::string qualified = n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type;
    const bool named = options.no_reuse.count(n.name) || options.no_reuse.count(n.op_type) ||
                       options.no_reuse.count(qualified);
    if (named)
      plan.no_reuse_unmatched.erase(n.name), plan.no_reuse_unmatched.erase(n.op_type),
          plan.no_reuse_unmatched.erase(qualified);
    const bool apart = options.reuse && named;  // with reuse off every buffer is apart anyway
    const Value* in0 = n.input(0);
    // A Split over a value whose dims are set at run time is no view: its pieces' offsets depend on them.
    const bool is_split = is_view_split(describe(n));
    const bool split_view = is_split && in0 && !options.runtime_shaped.count(in0->name());
    if (split_view && !in0->initializer && !apart) {  // pieces aligned: is_view_split checks
      size_t delta = 0;                               // the pieces lie one after another
      for (const Value* out : n.outputs()) {
        if (out) join(out, in0, step, delta), ++plan.views;
        delta += out ? static_bytes(*out) : 0;
      }
      continue;
    }
    for (size_t o = 0; o < n.outputs().size(); ++o) {
      const Value* out = n.outputs()[o];
      if (!out) continue;
      if (o == 0 && is_view_op(n) && in0 && !in0->initializer && static_bytes(*in0) == static_bytes(*out) &&
          (!is_split || split_view)) {
        join(out, in0, step);
        ++plan.views;
        continue;
      }
      // Of the inputs dying here, the one whose buffer lives longest already: a
      // residual stream then stays in one buffer instead of hopping between two
      // whose lifetimes overlap by a step (which fragments the pool).
      const Value* host = nullptr;
      if (options.reuse && !apart)
        for (size_t i = 0; i < n.inputs().size(); ++i)
          if (const Value* in = n.inputs()[i];
              in && may_run_in_place(n, o, i) && !in->initializer && plan.buffer_of.count(in) &&
              static_bytes(*in) == static_bytes(*out) &&
              plan.buffers[plan.buffer_of.at(in)].last_step == step &&
              (!host || plan.buffers[plan.buffer_of.at(in)].first_step <
                            plan.buffers[plan.buffer_of.at(host)].first_step))
            host = in;
      if (host) {
        join(out, host, step);
        plan.no_reuse_bytes += align_up(static_bytes(*out));
        ++plan.in_place;
      } else {
        new_buffer(out, step, apart);
      }
    }
  }

  auto& bufs = plan.buffers;
  const std::vector<int64_t> alive = bytes_alive_per_step(bufs, end_step);
  plan.load_bytes = bufs.empty() ? 0 : static_cast<size_t>(*std::max_element(alive.begin(), alive.end()));
  const Placement best = place_buffers(plan, alive, options.reuse);
  for (size_t i = 0; i < bufs.size(); ++i) bufs[i].offset = best[i];
  plan.pool_bytes = pool_size(bufs, best);

  for (const Value* w : graph.initializers()) {
    plan.weight_offset[w] = plan.weight_bytes;
    plan.weight_bytes += align_up(w->initializer->byte_size());
  }
  return plan;
}

void validate_memory_plan(const MemoryPlan& plan) {
  const auto& bufs = plan.buffers;
  for (size_t i = 0; i < bufs.size(); ++i)
    if (bufs[i].offset + bufs[i].bytes > plan.pool_bytes || bufs[i].offset % kMemoryAlignment)
      throw Error("memory plan: '" + bufs[i].values.front()->name() +
                  "' lies outside the pool or is misaligned");
  // A piece of a view Split lies inside its buffer, aligned.
  for (const auto& [v, delta] : plan.offset_in_buffer) {
    const PlannedBuffer& b = bufs.at(plan.buffer_of.at(v));
    if (delta % kMemoryAlignment || delta + static_bytes(*v) > b.bytes)
      throw Error("memory plan: '" + v->name() + "' at +" + std::to_string(delta) +
                  " lies outside its buffer ('" + b.values.front()->name() + "', " + std::to_string(b.bytes) +
                  " bytes) or is misaligned");
  }
  const std::vector<std::vector<size_t>> conflicts = overlapping_lifetimes(bufs);
  for (size_t i = 0; i < bufs.size(); ++i)
    for (size_t j : conflicts[i]) {
      if (j <= i) continue;
      const auto& a = bufs[i];
      const auto& b = bufs[j];
      bool bytes_overlap = a.offset < b.offset + b.bytes && b.offset < a.offset + a.bytes;
      if (bytes_overlap)
        throw Error("memory plan: '" + a.values.front()->name() + "' (steps " + std::to_string(a.first_step) +
                    "-" + std::to_string(a.last_step) + ", bytes " + std::to_string(a.offset) + "+" +
                    std::to_string(a.bytes) + ") and '" + b.values.front()->name() + "' (steps " +
                    std::to_string(b.first_step) + "-" + std::to_string(b.last_step) + ", bytes " +
                    std::to_string(b.offset) + "+" + std::to_string(b.bytes) +
                    ") are alive together and share bytes");
    }
}

}  // namespace geopt::ascend
