#include "passes/cse.h"

#include <algorithm>
#include <map>
#include <set>
#include <unordered_map>

#include "egraph/egraph.h"

namespace geopt {

CseReport eliminate_common_subexpressions(Graph& g) {
  CseReport report;
  const std::set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  // Constants: bucketed by type and size, compared byte for byte.
  std::map<std::string, std::vector<Value*>> buckets;
  std::vector<Value*> candidates(g.initializers().begin(), g.initializers().end());
  for (const auto& n : g.nodes())
    if (n->op_type == "Constant" && n->domain.empty() && n->output(0)) candidates.push_back(n->output(0));
  for (Value* v : candidates) {
    const Tensor* t = g.constant_value(v);
    if (!t || outputs.count(v) || v->uses().empty()) continue;
    std::string key = dtype_name(t->dtype) + "/" + std::to_string(t->bytes().size() + t->strings.size());
    for (int64_t d : t->dims) key += "," + std::to_string(d);
    auto& same = buckets[key];
    auto it = std::find_if(same.begin(), same.end(), [&](const Value* u) { return g.constant_value(u)->same_contents(*t); });
    if (it == same.end()) {
      same.push_back(v);
    } else {
      g.replace_all_uses(v, *it);
      ++report.constants;
    }
  }
  // Nodes, in graph order: an op of the same inputs as an earlier one is that one.
  std::unordered_map<std::string, Node*> seen;
  for (const auto& n : g.nodes()) {
    if (n->is_nondeterministic() || n->op_type == "Constant" || n->outputs().empty()) continue;
    bool keep = false;
    for (const Value* out : n->outputs()) keep = keep || outputs.count(out);
    if (keep) continue;
    std::string key = op_signature_key(n->domain, n->op_type, n->attributes, n->outputs().size());
    for (const Value* in : n->inputs()) key += "|" + std::to_string(reinterpret_cast<uintptr_t>(in));
    auto [it, inserted] = seen.emplace(std::move(key), n.get());
    if (inserted) continue;
    for (size_t k = 0; k < n->outputs().size(); ++k)
      if (n->output(k) && it->second->output(k)) g.replace_all_uses(n->output(k), it->second->output(k));
    ++report.nodes;
  }
  return report;
}

}  // namespace geopt
