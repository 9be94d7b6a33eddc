#include "ir/graph.h"
#include "ops/op_traits.h"

#include <algorithm>
#include <queue>
#include <unordered_set>

#include "util/error.h"

namespace geopt {

Value* Graph::add_value(std::string value_name) {
  if (value_name.empty()) throw InternalError("values need a name");
  auto v = std::make_unique<Value>(value_name);
  auto [it, inserted] = by_name_.emplace(std::move(value_name), v.get());
  if (!inserted) throw Error("duplicate value name '" + it->first + "'");
  values_.push_back(std::move(v));
  return values_.back().get();
}

Value* Graph::find_value(std::string_view value_name) const {
  auto it = by_name_.find(std::string(value_name));
  return it == by_name_.end() ? nullptr : it->second;
}

std::string Graph::unique_name(std::string_view prefix) const {
  std::string candidate(prefix);
  if (!find_value(candidate) && !find_node(candidate)) return candidate;
  // Suffixes below the counter were taken when it was last moved: start after them.
  size_t& k = next_suffix_[candidate];
  do candidate = std::string(prefix) + "_" + std::to_string(++k);
  while (find_value(candidate) || find_node(candidate));
  return candidate;
}

void Graph::unindex_node(Node* n) {
  if (n->name.empty()) return;
  auto [first, last] = node_by_name_.equal_range(n->name);
  for (auto it = first; it != last; ++it)
    if (it->second == n) {
      node_by_name_.erase(it);
      return;
    }
}

void Graph::rename_node(Node* n, std::string new_name) {
  unindex_node(n);
  n->name = std::move(new_name);
  if (!n->name.empty()) node_by_name_.emplace(n->name, n);
}

void Graph::add_initializer(Value* v, std::shared_ptr<const Tensor> data) {
  v->initializer = std::move(data);
  initializers_.push_back(v);
}

Node* Graph::add_node(std::string op_type, std::string_view domain, std::string node_name,
                      const std::vector<Value*>& inputs, const std::vector<Value*>& outputs) {
  auto n = std::make_unique<Node>();
  n->op_type = std::move(op_type);
  n->domain = canonical_domain(domain);
  n->name = std::move(node_name);
  n->index_hint_ = nodes_added_++;
  if (!n->name.empty()) node_by_name_.emplace(n->name, n.get());
  n->inputs_ = inputs;
  n->outputs_ = outputs;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (inputs[i]) inputs[i]->uses_.push_back({n.get(), i});
  for (size_t i = 0; i < outputs.size(); ++i) {
    Value* out = outputs[i];
    if (!out) continue;
    if (out->producer_)
      throw Error(n->describe() + ": output '" + out->name() + "' is already produced by " +
                  out->producer_->describe());
    out->producer_ = n.get();
    out->producer_output_ = i;
  }
  nodes_.push_back(std::move(n));
  return nodes_.back().get();
}

void Graph::set_input(Node* n, size_t index, Value* v) {
  if (index >= n->inputs_.size()) n->inputs_.resize(index + 1, nullptr);
  if (Value* old = n->inputs_[index]) std::erase(old->uses_, Use{n, index});
  n->inputs_[index] = v;
  if (v) v->uses_.push_back({n, index});
}

void Graph::remove_node(Node* n) {
  for (Value* out : n->outputs_)
    if (out && !out->uses_.empty())
      throw InternalError("removing " + n->describe() + " whose output '" + out->name() + "' is still used");
  for (size_t i = 0; i < n->inputs_.size(); ++i)
    if (Value* in = n->inputs_[i]) std::erase(in->uses_, Use{n, i});
  for (Value* out : n->outputs_)
    if (out) out->producer_ = nullptr;
  unindex_node(n);
  std::erase_if(nodes_, [n](const std::unique_ptr<Node>& p) { return p.get() == n; });
}

void Graph::fold_node(Node* n, std::vector<std::shared_ptr<const Tensor>> output_data) {
  if (output_data.size() != n->outputs_.size())
    throw InternalError("folding " + n->describe() + " needs one tensor per output");
  for (size_t k = 0; k < n->outputs_.size(); ++k) {
    Value* out = n->outputs_[k];
    if (!out) continue;
    out->producer_ = nullptr;
    add_initializer(out, std::move(output_data[k]));
  }
  n->outputs_.clear();
  remove_node(n);
}

void Graph::replace_all_uses(Value* old, Value* with) {
  if (old == with) return;
  std::vector<Use> uses = old->uses_;
  for (const Use& u : uses) set_input(u.node, u.input_index, with);
  for (Value*& out : outputs_)
    if (out == old) out = with;
}

void Graph::rename_value(Value* v, std::string new_name) {
  if (new_name == v->name_) return;
  if (by_name_.count(new_name)) throw InternalError("value name '" + new_name + "' is taken");
  by_name_.erase(v->name_);
  v->name_ = std::move(new_name);
  by_name_[v->name_] = v;
}

size_t Graph::remove_dead_code() {
  std::unordered_set<const Value*> outputs(outputs_.begin(), outputs_.end());
  size_t removed = 0;
  std::vector<bool> dead(nodes_.size(), false);
  for (size_t i = nodes_.size(); i-- > 0;) {  // reverse order frees chains in one sweep
    Node* n = nodes_[i].get();
    bool live = false;
    for (const Value* out : n->outputs_) live = live || (out && (!out->uses_.empty() || outputs.count(out)));
    if (live) continue;
    for (size_t k = 0; k < n->inputs_.size(); ++k)
      if (Value* in = n->inputs_[k]) std::erase(in->uses_, Use{n, k});
    for (Value* out : n->outputs_)
      if (out) out->producer_ = nullptr;
    unindex_node(n);
    dead[i] = true;
    ++removed;
  }
  size_t kept = 0;  // one compaction: erasing one by one is quadratic in the nodes removed
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (!dead[i]) nodes_[kept++] = std::move(nodes_[i]);
  nodes_.resize(kept);
  std::unordered_set<const Value*> inputs(inputs_.begin(), inputs_.end());
  std::erase_if(initializers_, [&](Value* v) {
    bool unused = v->uses_.empty() && !outputs.count(v) && !inputs.count(v);
    if (unused) v->initializer.reset();
    return unused;
  });
  std::erase_if(values_, [&](const std::unique_ptr<Value>& v) {
    bool dead = !v->producer_ && v->uses_.empty() && !v->initializer && !outputs.count(v.get()) &&
                !inputs.count(v.get());
    if (dead) by_name_.erase(v->name_);
    return dead;
  });
  return removed;
}

bool Graph::topological_sort() {
  // Kahn's algorithm, always taking the earliest ready node in the current order.
  std::unordered_map<const Node*, size_t> position;
  for (size_t i = 0; i < nodes_.size(); ++i) position[nodes_[i].get()] = i;
  std::vector<size_t> pending(nodes_.size(), 0);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    std::unordered_set<const Node*> producers;
    for (Value* in : nodes_[i]->inputs_)
      if (in && in->producer_) producers.insert(in->producer_);
    pending[i] = producers.size();
  }
  std::priority_queue<size_t, std::vector<size_t>, std::greater<>> ready;
  for (size_t i = 0; i < nodes_.size(); ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<size_t> order;
  while (!ready.empty()) {
    size_t i = ready.top();
    ready.pop();
    order.push_back(i);
    std::unordered_set<const Node*> consumers;
    for (Value* out : nodes_[i]->outputs_)
      if (out)
        for (const Use& u : out->uses_) consumers.insert(u.node);
    // Visit consumers in graph order for determinism.
    std::vector<size_t> next;
    for (const Node* c : consumers) next.push_back(position.at(c));
    std::sort(next.begin(), next.end());
    for (size_t c : next)
      if (--pending[c] == 0) ready.push(c);
  }
  if (order.size() != nodes_.size()) return false;
  std::vector<std::unique_ptr<Node>> sorted;
  sorted.reserve(nodes_.size());
  for (size_t i : order) sorted.push_back(std::move(nodes_[i]));
  nodes_ = std::move(sorted);
  return true;
}

const Tensor* Graph::constant_value(const Value* v) const {
  if (!v) return nullptr;
  if (v->initializer)
    return std::find(inputs_.begin(), inputs_.end(), v) == inputs_.end() ? v->initializer.get() : nullptr;
  const Node* p = v->producer();
  if (p && is_constant_node(*p))
    if (const Attribute* a = p->attr("value"); a && !a->tensors.empty()) return a->tensors[0].get();
  return nullptr;
}

const Node* Graph::find_node(std::string_view node_name) const {
  if (node_name.empty()) return nullptr;
  auto [first, last] = node_by_name_.equal_range(std::string(node_name));
  const Node* found = nullptr;
  for (auto it = first; it != last; ++it)
    if (!found || it->second->index_hint_ < found->index_hint_) found = it->second;
  return found;
}

int64_t Model::opset_version(std::string_view d) const {
  for (const auto& o : opsets)
    if (canonical_domain(o.domain) == canonical_domain(d)) return o.version;
  return 0;
}

Model Model::header_copy() const {
  Model m;
  m.ir_version = ir_version;
  m.opsets = opsets;
  m.producer_name = producer_name;
  m.producer_version = producer_version;
  m.domain = domain;
  m.model_version = model_version;
  m.doc_string = doc_string;
  m.metadata = metadata;
  m.opaque_functions = opaque_functions;
  m.opaque_training_info = opaque_training_info;
  m.graph->name = graph->name;
  m.graph->doc_string = graph->doc_string;
  m.graph->opaque_sparse_initializers = graph->opaque_sparse_initializers;
  m.graph->opaque_quantization_annotations = graph->opaque_quantization_annotations;
  m.graph->dim_ranges = graph->dim_ranges;
  return m;
}

Model Model::clone() const {
  Model m = header_copy();
  const Graph& from = *graph;
  Graph& to = *m.graph;
  std::unordered_map<const Value*, Value*> same;
  for (const auto& v : from.values()) {
    Value* c = to.add_value(v->name());
    c->type = v->type;
    c->doc_string = v->doc_string;
    same[v.get()] = c;
  }
  auto mapped = [&](const std::vector<Value*>& vs) {
    std::vector<Value*> out;
    for (const Value* v : vs) out.push_back(v ? same.at(v) : nullptr);
    return out;
  };
  for (Value* v : mapped(from.inputs())) to.add_input(v);
  for (const Value* v : from.initializers()) to.add_initializer(same.at(v), v->initializer);
  for (const auto& n : from.nodes()) {
    Node* c = to.add_node(n->op_type, n->domain, n->name, mapped(n->inputs()), mapped(n->outputs()));
    c->attributes = n->attributes;
    c->doc_string = n->doc_string;
  }
  for (Value* v : mapped(from.outputs())) to.add_output(v);
  return m;
}

}  // namespace geopt
