#include "egraph/egraph.h"
#include "ops/op_traits.h"

#include <algorithm>
#include <cstring>
#include <set>

#include "ir/graph_text.h"
#include "util/error.h"

namespace geopt {

size_t ENodeHash::operator()(const ENode& n) const {
  size_t h = std::hash<uint32_t>()(n.op) * 31 + static_cast<size_t>(n.kind);
  for (ClassId c : n.children) h = h * 1000003u ^ std::hash<uint32_t>()(c);
  return h ^ std::hash<const void*>()(n.constant);
}

std::string op_signature_key(const std::string& domain, const std::string& op_type,
                             const std::vector<Attribute>& attrs, size_t outputs) {
  std::vector<std::string> parts;
  for (const auto& a : attrs) parts.push_back(a.name + "=" + a.identity_key());
  std::sort(parts.begin(), parts.end());  // attribute order does not change the op
  std::string key = (domain.empty() ? "" : domain + "::") + op_type + "/" + std::to_string(outputs);
  for (const auto& p : parts) key += "|" + p;
  return key;
}

uint32_t EGraph::intern(const OpSignature& sig) {
  std::string key =
      sig.key.empty() ? op_signature_key(sig.domain, sig.op_type, sig.attributes, sig.num_outputs) : sig.key;
  if (auto it = signature_index_.find(key); it != signature_index_.end()) return it->second;
  OpSignature s = sig;  // copied only when new
  s.key = key;
  const auto index = static_cast<uint32_t>(signatures_.size());
  signature_index_.emplace(std::move(key), index);
  signatures_.push_back(std::move(s));
  return index;
}

ClassId EGraph::find(ClassId id) const {
  while (parent_[id] != id) {
    parent_[id] = parent_[parent_[id]];
    id = parent_[id];
  }
  return id;
}

ENode EGraph::canonical(ENode n) const {
  for (ClassId& c : n.children)
    if (c != kAbsent) c = find(c);
  return n;
}

std::optional<ClassId> EGraph::lookup(ENode node) const {
  auto it = memo_.find(canonical(std::move(node)));
  if (it == memo_.end()) return std::nullopt;
  return find(it->second);
}

ClassId EGraph::add(ENode node, const ClassData& data) {
  node = canonical(std::move(node));
  if (auto it = memo_.find(node); it != memo_.end()) return find(it->second);
  ClassId id = static_cast<ClassId>(parent_.size());
  // `data` may be another class's (a fold passes the class it folds): copied before
  // the table grows and moves every class.
  ClassData copied = data;
  parent_.push_back(id);
  classes_.emplace_back();
  is_live_.push_back(true);
  ++live_classes_;
  EClass& c = classes_.back();
  c.id = id;
  c.nodes.push_back(node);
  ++created_;
  c.data = std::move(copied);
  if (node.kind == ENode::Kind::Const) c.data.constant = node.constant;
  for (ClassId child : node.children)
    if (child != kAbsent) {
      live(child).parents.emplace_back(node, id);
      touched_.push_back(child);  // one more use: one_use may change, a pattern may now reach it
    }
  touched_.push_back(id);
  memo_.emplace(std::move(node), id);
  return id;
}

ClassId EGraph::add_op(const OpSignature& sig, std::vector<ClassId> children, const ClassData& data) {
  ENode n;
  n.kind = ENode::Kind::Op;
  n.op = intern(sig);
  n.children = std::move(children);
  return add(std::move(n), data);
}

namespace {

// A cheap key for a constant's contents: dtype, dims and a sample of the bytes (the
// first and last 4 KiB); equal keys are compared byte for byte.
uint64_t content_key(const Tensor& t) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(static_cast<uint64_t>(t.dtype));
  for (int64_t d : t.dims) mix(static_cast<uint64_t>(d));
  const auto bytes = t.bytes();
  const size_t sample = 4096;
  auto mix_range = [&](size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) mix(static_cast<uint64_t>(bytes[i]));
  };
  mix(bytes.size());
  mix_range(0, std::min(bytes.size(), sample));
  if (bytes.size() > sample) mix_range(std::max(sample, bytes.size() - sample), bytes.size());
  return h;
}

}  // namespace

ClassId EGraph::add_constant(std::shared_ptr<const Tensor> tensor, const ClassData& data) {
  // Equal constants are one class (CSE of constants), so ops reading them hash-cons too.
  std::vector<std::pair<const Tensor*, ClassId>>* same = nullptr;
  if (tensor->dtype != DType::String) {
    same = &constants_by_content_[content_key(*tensor)];
    for (const auto& [t, c] : *same)
      if (t == tensor.get() || t->same_contents(*tensor)) return find(c);
  }
  ENode n;
  n.kind = ENode::Kind::Const;
  n.constant = tensor.get();
  if (!memo_.count(n)) constants_.emplace(tensor.get(), std::move(tensor));
  ClassData d = data;
  if (d.type.dtype == DType::Undefined) {
    d.type.dtype = n.constant->dtype;
    d.type.shape = Shape(std::vector<Dim>(n.constant->dims.begin(), n.constant->dims.end()));
  }
  const Tensor* payload = n.constant;
  ClassId id = add(std::move(n), d);
  if (same) same->emplace_back(payload, id);
  return id;
}

ClassId EGraph::add_input(uint32_t index, const ClassData& data) {
  ENode n;
  n.kind = ENode::Kind::Input;
  n.op = index;
  return add(std::move(n), data);
}

ClassId EGraph::merge(ClassId a, ClassId b) {
  a = find(a);
  b = find(b);
  if (a == b) return a;
  ClassId root = std::min(a, b), other = std::max(a, b);  // deterministic: the older class survives
  parent_[other] = root;
  EClass& r = live(root);
  EClass& o = live(other);
  r.nodes.insert(r.nodes.end(), o.nodes.begin(), o.nodes.end());
  r.parents.insert(r.parents.end(), o.parents.begin(), o.parents.end());
  // Analysis merge: the dtype must agree; keep the more complete shape, the constant, the older name.
  if (r.data.type.dtype == DType::Undefined)
    r.data.type.dtype = o.data.type.dtype;
  else if (o.data.type.dtype != DType::Undefined && o.data.type.dtype != r.data.type.dtype)
    throw InternalError("merging classes of different dtypes (" + dtype_name(r.data.type.dtype) + ", " +
                        dtype_name(o.data.type.dtype) + ")");
  if (!r.data.type.shape && o.data.type.shape) r.data.type.shape = o.data.type.shape;
  if (!r.data.constant) r.data.constant = o.data.constant;
  r.data.compile_time = r.data.compile_time || o.data.compile_time;
  if (r.data.name.empty()) r.data.name = o.data.name;
  o = EClass{};
  is_live_[other] = false;
  --live_classes_;
  pending_.push_back(root);
  touched_.push_back(root);
  return root;
}

void EGraph::repair(ClassId id) {
  EClass& c = live(id);
  std::vector<std::pair<ENode, ClassId>> old = std::move(c.parents);
  c.parents.clear();
  for (auto& [node, cls] : old) memo_.erase(node);
  std::unordered_map<ENode, ClassId, ENodeHash> seen;
  for (auto& [node, cls] : old) {
    ENode n = canonical(node);
    ClassId owner = find(cls);
    auto [it, inserted] = seen.emplace(n, owner);
    if (!inserted && find(it->second) != owner) {  // congruent parents: their classes are equal
      owner = merge(it->second, owner);
      it->second = owner;
    }
    memo_[n] = owner;
  }
  EClass& now = live(find(id));
  for (auto& [n, owner] : seen) now.parents.emplace_back(n, find(owner));
}

void EGraph::rebuild() {
  while (!pending_.empty()) {
    std::set<ClassId> todo;
    for (ClassId id : pending_) todo.insert(find(id));
    pending_.clear();
    for (ClassId id : todo) repair(find(id));
  }
  // Canonicalize and dedupe the e-nodes of every class (sorted for determinism).
  for (ClassId id = 0; id < classes_.size(); ++id) {
    if (!is_live_[id]) continue;
    EClass& c = classes_[id];
    for (auto& n : c.nodes) n = canonical(n);
    std::sort(c.nodes.begin(), c.nodes.end(), [](const ENode& a, const ENode& b) {
      if (a.kind != b.kind) return a.kind < b.kind;
      if (a.op != b.op) return a.op < b.op;
      if (a.children != b.children) return a.children < b.children;
      return std::less<const void*>()(a.constant, b.constant);
    });
    c.nodes.erase(std::unique(c.nodes.begin(), c.nodes.end()), c.nodes.end());
  }
}

void EGraph::check_invariants() const {
  if (!clean()) throw InternalError("e-graph checked before rebuild()");
  auto where = [](ClassId c) { return "class " + std::to_string(c); };
  std::unordered_map<ENode, ClassId, ENodeHash> owner;
  for (ClassId id = 0; id < classes_.size(); ++id) {
    if (!is_live_[id]) continue;
    const EClass& c = classes_[id];
    if (find(id) != id) throw InternalError(where(id) + " is stored but not canonical");
    for (const ENode& n : c.nodes) {
      if (!(canonical(n) == n))
        throw InternalError(where(id) + " holds an e-node with non-canonical children");
      auto [it, fresh] = owner.emplace(n, id);
      if (!fresh) throw InternalError("congruence: one e-node in " + where(it->second) + " and " + where(id));
      auto memo = memo_.find(n);
      if (memo == memo_.end() || find(memo->second) != id)
        throw InternalError("hash-cons: an e-node of " + where(id) + " is not mapped to it");
      if (n.kind == ENode::Kind::Const && c.data.constant == nullptr)
        throw InternalError(where(id) + " holds a constant its data does not");
    }
    for (const auto& [n, user] : c.parents) {
      const ClassId owner_id = find(user);
      if (owner_id >= classes_.size() || !is_live_[owner_id])
        throw InternalError(where(id) + " has a parent in a dead class");
      const EClass& owner_class = classes_[owner_id];
      const ENode canon = canonical(n);
      if (std::find(owner_class.nodes.begin(), owner_class.nodes.end(), canon) == owner_class.nodes.end())
        throw InternalError(where(id) + " lists a parent e-node its class does not hold");
    }
  }
  for (const auto& [n, c] : memo_)
    if (canonical(n) == n && owner.count(n) && owner.at(n) != find(c))
      throw InternalError("hash-cons maps an e-node to a class that does not hold it");
}

std::shared_ptr<const Tensor> EGraph::constant_ptr(const Tensor* t) const {
  auto it = constants_.find(t);
  return it == constants_.end() ? nullptr : it->second;
}

const EClass& EGraph::live(ClassId id) const {
  if (id >= classes_.size() || !is_live_[id])
    throw InternalError("e-class " + std::to_string(id) + " is not a live class");
  return classes_[id];
}

std::vector<ClassId> EGraph::class_ids() const {
  std::vector<ClassId> ids;
  ids.reserve(live_classes_);
  for (ClassId id = 0; id < classes_.size(); ++id)
    if (is_live_[id]) ids.push_back(id);
  return ids;
}

size_t EGraph::node_count() const {
  size_t n = 0;
  for (ClassId id = 0; id < classes_.size(); ++id)
    if (is_live_[id]) n += classes_[id].nodes.size();
  return n;
}

size_t EGraph::class_count() const { return live_classes_; }

GraphEGraph egraph_from_graph(const Graph& g) {
  GraphEGraph out;
  EGraph& eg = out.egraph;
  eg.dim_ranges = g.dim_ranges;
  std::unordered_map<const Value*, ClassId> cls;
  auto data_of = [](const Value* v) {
    return ClassData{v->type, nullptr, v->name(), v->producer() ? v->producer()->name : ""};
  };
  for (size_t i = 0; i < g.inputs().size(); ++i) {
    const Value* v = g.inputs()[i];
    ClassId c = eg.add_input(static_cast<uint32_t>(i), data_of(v));
    cls[v] = c;
    out.inputs.push_back(c);
  }
  for (const Value* v : g.initializers())
    if (!cls.count(v)) cls[v] = eg.add_constant(v->initializer, data_of(v));
  for (const auto& n : g.nodes()) {
    // A Constant node is its tensor: one Const e-node, so constant patterns see it.
    const Attribute* value = is_constant_node(*n) ? n->attr("value") : nullptr;
    if (value && !value->tensors.empty() && n->output(0)) {
      cls[n->output(0)] = eg.add_constant(value->tensors[0], data_of(n->output(0)));
      continue;
    }
    std::vector<ClassId> children;
    for (const Value* in : n->inputs()) children.push_back(in ? cls.at(in) : kAbsent);
    OpSignature sig{n->domain, n->op_type, n->attributes, n->outputs().size(), ""};
    // Two draws of a random op are two values, however alike: never hash-consed into one.
    if (n->is_nondeterministic())
      sig.key = op_signature_key(sig.domain, sig.op_type, sig.attributes, sig.num_outputs) +
                "|draw=" + std::to_string(eg.class_count());
    if (n->outputs().size() == 1) {
      if (const Value* out_v = n->output(0)) cls[out_v] = eg.add_op(sig, std::move(children), data_of(out_v));
      continue;
    }
    ClassId tuple = eg.add_op(sig, std::move(children), ClassData{{}, nullptr, "", n->name});
    for (size_t k = 0; k < n->outputs().size(); ++k) {
      const Value* v = n->output(k);
      if (!v) continue;
      ENode proj;
      proj.kind = ENode::Kind::Proj;
      proj.op = static_cast<uint32_t>(k);
      proj.children = {tuple};
      cls[v] = eg.add(std::move(proj), data_of(v));
    }
  }
  for (const Value* v : g.outputs()) out.roots.push_back(cls.at(v));
  return out;
}

}  // namespace geopt
