#include "tune/layout_regions.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "device_ops/device_ops.h"

namespace geopt::ascend {
namespace {

// What optimize recorded: fused node -> the input nodes its rule replaced.
std::map<std::string, std::vector<std::string>> provenance(const Model& m) {
  std::map<std::string, std::vector<std::string>> out;
  for (const auto& [key, text] : m.metadata) {
    if (key != "geopt.provenance") continue;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    if (!j.is_object()) continue;
    for (auto it = j.begin(); it != j.end(); ++it) {
      const nlohmann::json& replaced = it.value().value("replaced", nlohmann::json::array());
      if (!replaced.is_array()) continue;
      std::vector<std::string>& names = out[it.key()];
      for (const auto& r : replaced)
        if (r.is_string()) names.push_back(r.get<std::string>());
    }
  }
  return out;
}

}  // namespace

std::vector<LayoutRegion> layout_regions(const Model& optimized, const Model& input) {
  const auto& nodes = optimized.graph->nodes();
  std::map<const Node*, size_t> index;
  for (size_t i = 0; i < nodes.size(); ++i) index[nodes[i].get()] = i;
  std::vector<size_t> parent(nodes.size());
  std::iota(parent.begin(), parent.end(), size_t{0});
  auto root = [&](size_t i) {
    while (parent[i] != i) i = parent[i] = parent[parent[i]];
    return i;
  };
  // A value is in NC1HWC0 where its producer writes that format, or writes none of its
  // own (an elementwise op, a pool moved through the conversions) from an NC1HWC0 input
  // into a 5-D value. Nodes come in topological order.
  std::set<const Value*> in_nc1hwc0;
  for (const auto& n : nodes) {
    const std::optional<Format> f = written_format(*n);
    bool blocked_input = false;
    for (const Value* in : n->inputs()) blocked_input = blocked_input || (in && in_nc1hwc0.count(in));
    for (const Value* out : n->outputs())
      if (out &&
          (f == Format::NC1HWC0 || (!f && blocked_input && out->type.shape && out->type.shape->rank() == 5)))
        in_nc1hwc0.insert(out);
  }
  std::vector<bool> blocked(nodes.size(), false);
  for (size_t i = 0; i < nodes.size(); ++i) {
    bool writes = false;
    for (const Value* out : nodes[i]->outputs()) writes = writes || (out && in_nc1hwc0.count(out));
    if (!writes) continue;
    blocked[i] = true;
    for (const Value* out : nodes[i]->outputs())
      if (out && in_nc1hwc0.count(out))
        for (const Use& u : out->uses()) {
          const size_t j = index.at(u.node);
          blocked[j] = true;
          parent[root(j)] = root(i);
        }
  }
  const auto made_by = provenance(optimized);
  std::map<size_t, LayoutRegion> by_root;
  std::map<size_t, std::set<std::string>> names;
  for (size_t i = 0; i < nodes.size(); ++i) {
    if (!blocked[i]) continue;
    const size_t r = root(i);
    by_root[r].nodes.push_back(nodes[i]->name);
    auto made = made_by.find(nodes[i]->name);
    if (made != made_by.end()) {
      for (const std::string& n : made->second)
        if (input.graph->find_node(n)) names[r].insert(n);
    } else if (input.graph->find_node(nodes[i]->name)) {
      names[r].insert(nodes[i]->name);
    }
  }
  std::vector<LayoutRegion> regions;
  for (auto& [r, region] : by_root) {
    for (const auto& n : input.graph->nodes())  // unnamed nodes cannot be named to --keep_format
      if (!n->name.empty() && names[r].count(n->name)) region.input_nodes.push_back(n->name);
    if (!region.input_nodes.empty()) regions.push_back(std::move(region));
  }
  std::map<std::string, size_t> position;
  for (const auto& n : input.graph->nodes()) position.emplace(n->name, position.size());
  std::stable_sort(regions.begin(), regions.end(), [&](const LayoutRegion& a, const LayoutRegion& b) {
    if (a.input_nodes.size() != b.input_nodes.size()) return a.input_nodes.size() > b.input_nodes.size();
    return position.at(a.input_nodes.front()) < position.at(b.input_nodes.front());
  });
  return regions;
}

}  // namespace geopt::ascend
