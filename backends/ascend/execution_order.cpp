#include "execution_order.h"

#include <algorithm>
#include <deque>
#include <functional>
#include <queue>
#include <unordered_map>

#include "util/error.h"

namespace geopt::ascend {

size_t static_bytes(const Value& v) {
  const ValueType& t = v.type;
  if (!t.is_tensor() || t.dtype == DType::Undefined || t.dtype == DType::String || !t.shape)
    throw Error("value '" + v.name() + "' (" + t.to_string() +
                "): a plan needs a numeric tensor of known shape");
  size_t n = dtype_size(t.dtype);
  for (const Dim& d : t.shape->dims()) {
    if (!d.is_static())
      throw Error("value '" + v.name() + "' has shape " + t.to_string() +
                  ": a plan needs static shapes (fix the inputs' symbolic dims with --input_shape, e.g. "
                  "input_ids:1,128)");
    n *= static_cast<size_t>(d.value());
  }
  return n;
}

namespace {

// Bytes when the shape is static, else 0 (the order is still defined; the
// memory plan reports the value).
long long known_bytes(const Value& v) {
  const ValueType& t = v.type;
  if (!t.shape || !t.shape->is_static() || t.dtype == DType::String) return 0;
  return static_cast<long long>(static_bytes(v));
}

// Each node's producers and consumers (indices into graph.nodes()), in input order, each
// once: what every order below walks.
struct Dependencies {
  std::unordered_map<const Node*, size_t> index;
  std::vector<std::vector<size_t>> producers, consumers;
};

Dependencies dependencies(const Graph& graph) {
  const auto& nodes = graph.nodes();
  Dependencies d{
      {}, std::vector<std::vector<size_t>>(nodes.size()), std::vector<std::vector<size_t>>(nodes.size())};
  std::unordered_map<const Node*, size_t>& index = d.index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].get()] = i;
  for (size_t i = 0; i < nodes.size(); ++i)
    for (const Value* in : nodes[i]->inputs()) {
      const Node* p = in ? in->producer() : nullptr;
      if (!p) continue;
      const size_t j = index.at(p);
      if (std::find(d.producers[i].begin(), d.producers[i].end(), j) != d.producers[i].end()) continue;
      d.producers[i].push_back(j);
      d.consumers[j].push_back(i);
    }
  return d;
}

}  // namespace

std::vector<size_t> memory_aware_order(const Graph& graph) {
  const auto& nodes = graph.nodes();
  const Dependencies deps = dependencies(graph);
  const std::vector<std::vector<size_t>>& consumers = deps.consumers;
  std::vector<size_t> waiting(nodes.size());  // producers not yet issued
  for (size_t i = 0; i < nodes.size(); ++i) waiting[i] = deps.producers[i].size();
  std::unordered_map<const Value*, size_t> readers_left;  // consumers not yet issued
  for (const auto& n : nodes)
    for (const Value* in : n->inputs())
      if (in) ++readers_left[in];
  auto pinned = [&](const Value* v) {
    if (v->initializer) return true;
    for (const Value* o : graph.outputs())
      if (o == v) return true;
    return false;
  };
  // Net bytes a node adds to what is alive: its outputs minus inputs it reads last.
  auto delta = [&](size_t i) {
    long long d = 0;
    for (const Value* out : nodes[i]->outputs())
      if (out) d += known_bytes(*out);
    std::vector<const Value*> counted;
    for (const Value* in : nodes[i]->inputs()) {
      if (!in || pinned(in) || std::find(counted.begin(), counted.end(), in) != counted.end()) continue;
      counted.push_back(in);
      size_t uses_here = 0;
      for (const Value* x : nodes[i]->inputs()) uses_here += x == in;
      if (readers_left.at(in) == uses_here) d -= known_bytes(*in);
    }
    return d;
  };

  std::vector<size_t> ready, order;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (waiting[i] == 0) ready.push_back(i);
  while (!ready.empty()) {
    size_t best = 0;
    long long best_delta = 0;
    for (size_t r = 0; r < ready.size(); ++r) {
      long long d = delta(ready[r]);
      if (r == 0 || d < best_delta || (d == best_delta && ready[r] < ready[best])) best = r, best_delta = d;
    }
    size_t i = ready[best];
    ready.erase(ready.begin() + static_cast<std::ptrdiff_t>(best));
    order.push_back(i);
    for (const Value* in : nodes[i]->inputs())
      if (in) --readers_left[in];
    for (size_t c : consumers[i])
      if (--waiting[c] == 0) ready.push_back(c);
  }
  if (order.size() != nodes.size()) throw Error("the graph has a cycle; it has no execution order");
  return order;
}

std::optional<TopoSortingMode> parse_topo_sorting_mode(const std::string& text) {
  static const std::pair<const char*, TopoSortingMode> kNames[] = {
      {"0", TopoSortingMode::bfs},
      {"bfs", TopoSortingMode::bfs},
      {"1", TopoSortingMode::dfs},
      {"dfs", TopoSortingMode::dfs},
      {"2", TopoSortingMode::rdfs},
      {"rdfs", TopoSortingMode::rdfs},
      {"3", TopoSortingMode::stable_rdfs},
      {"stable_rdfs", TopoSortingMode::stable_rdfs},
      {"memory", TopoSortingMode::memory_aware},
  };
  for (const auto& [name, mode] : kNames)
    if (text == name) return mode;
  return std::nullopt;
}

std::string topo_sorting_mode_name(TopoSortingMode mode) {
  switch (mode) {
    case TopoSortingMode::bfs:
      return "bfs";
    case TopoSortingMode::dfs:
      return "dfs";
    case TopoSortingMode::rdfs:
      return "rdfs";
    case TopoSortingMode::stable_rdfs:
      return "stable_rdfs";
    case TopoSortingMode::memory_aware:
      break;
  }
  return "memory";
}

std::vector<size_t> execution_order(const Graph& graph, TopoSortingMode mode) {
  if (mode == TopoSortingMode::memory_aware) return memory_aware_order(graph);
  const auto& nodes = graph.nodes();
  const Dependencies deps = dependencies(graph);
  const auto& producers = deps.producers;
  const auto& consumers = deps.consumers;
  std::vector<size_t> order;
  order.reserve(nodes.size());
  if (mode == TopoSortingMode::rdfs) {
    // Post-order from each graph output back through the producers, then whatever
    // reaches no output (in node order); an explicit stack, as a chain may be long.
    enum class Mark { none, open, done };
    std::vector<Mark> mark(nodes.size(), Mark::none);
    auto visit = [&](size_t root) {
      if (mark[root] != Mark::none) return;
      std::vector<std::pair<size_t, size_t>> stack{{root, 0}};  // node, next producer to visit
      mark[root] = Mark::open;
      while (!stack.empty()) {
        auto& [i, next] = stack.back();
        if (next < producers[i].size()) {
          const size_t p = producers[i][next++];
          if (mark[p] == Mark::open) throw Error("the graph has a cycle; it has no execution order");
          if (mark[p] == Mark::none) {
            mark[p] = Mark::open;
            stack.emplace_back(p, 0);
          }
          continue;
        }
        mark[i] = Mark::done;
        order.push_back(i);
        stack.pop_back();
      }
    };
    for (const Value* out : graph.outputs())
      if (const Node* p = out ? out->producer() : nullptr) visit(deps.index.at(p));
    for (size_t i = 0; i < nodes.size(); ++i) visit(i);
    return order;
  }
  // Kahn's algorithm; the modes differ in which ready node goes next: the earliest in
  // the graph's own order (stable), the first to become ready (BFS), or the last (DFS).
  std::vector<size_t> waiting(nodes.size());
  for (size_t i = 0; i < nodes.size(); ++i) waiting[i] = producers[i].size();
  std::deque<size_t> ready;
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> earliest;
  const bool stable = mode == TopoSortingMode::stable_rdfs;
  for (size_t i = 0; i < nodes.size(); ++i)
    if (waiting[i] == 0) stable ? earliest.push(i) : ready.push_back(i);
  while (!ready.empty() || !earliest.empty()) {
    size_t i;
    if (stable) {
      i = earliest.top();
      earliest.pop();
    } else {
      i = ready.front();
      ready.pop_front();
    }
    order.push_back(i);
    std::vector<size_t> now_ready;
    for (size_t c : consumers[i])
      if (--waiting[c] == 0) now_ready.push_back(c);
    if (stable)
      for (size_t c : now_ready) earliest.push(c);
    else if (mode == TopoSortingMode::dfs)  // the first consumer next, before what was ready
      ready.insert(ready.begin(), now_ready.begin(), now_ready.end());
    else
      ready.insert(ready.end(), now_ready.begin(), now_ready.end());
  }
  if (order.size() != nodes.size()) throw Error("the graph has a cycle; it has no execution order");
  return order;
}

}  // namespace geopt::ascend
