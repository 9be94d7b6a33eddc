#include "egraph/selection.h"

#include <algorithm>
#include <iterator>
#include <memory>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

namespace geopt {

size_t& extraction_steps() {
  thread_local size_t steps = 0;
  return steps;
}

NodeCost remember_costs(NodeCost cost) {
  auto memo = std::make_shared<std::unordered_map<const ENode*, double>>();
  return [cost = std::move(cost), memo](const EGraph& g, ClassId c, const ENode& n) {
    auto [it, added] = memo->try_emplace(&n, 0.0);
    if (added) it->second = cost(g, c, n);
    return it->second;
  };
}

// What one switch does to the selection: use counts that change, classes it newly
// computes (with the e-node each takes), and the change in cost.
struct Selection::Change {
  std::unordered_map<ClassId, int64_t> uses;
  std::unordered_map<ClassId, size_t> added;
  double own = 0;   // of the switched class's e-node
  double cost = 0;  // of the whole program
};

Selection::Selection(const EGraph& g, std::vector<ClassId> roots, const NodeCost& cost, Choice choice)
    : g_(g), roots_(std::move(roots)), cost_fn_(cost), choice_(std::move(choice)) {
  choice_.resize(g_.id_bound(), kNoChoice);
  recompute();
}

namespace {
constexpr uint64_t kLabelGap = uint64_t{1} << 32;  // 2^31 classes at most, so labels stay below 2^63
}  // namespace

void Selection::recompute() {
  const size_t n = g_.id_bound();
  extraction_steps() += n;
  uses_.assign(n, 0);
  own_.assign(n, 0);
  position_.assign(n, 0);
  labels_.clear();
  order_.clear();
  order_stale_ = false;
  cost_ = 0;
  // Iterative depth-first walk (model depth must not bound the native stack):
  // 0 unseen, 1 open, 2 done.
  std::vector<uint8_t> state(n, 0);
  struct Frame {
    ClassId id;
    size_t next;
  };
  std::vector<Frame> stack;
  auto enter = [&](ClassId c) {
    if (state[c] == 1) return false;  // a cycle
    if (state[c] == 2) return true;
    const size_t k = choice_[c];
    if (k == kNoChoice || k >= g_.eclass(c).nodes.size()) return false;
    own_[c] = cost_fn_(g_, c, g_.eclass(c).nodes[k]);
    if (own_[c] == kInfeasible) return false;
    state[c] = 1;
    stack.push_back({c, 0});
    return true;
  };
  bool ok = true;
  for (ClassId r : roots_) {
    r = g_.find(r);
    ++uses_[r];
    ok = ok && enter(r);
    while (ok && !stack.empty()) {
      Frame& top = stack.back();
      const auto& children = g_.eclass(top.id).nodes[choice_[top.id]].children;
      if (top.next < children.size()) {
        const ClassId child = children[top.next++];
        if (child == kAbsent) continue;
        const ClassId ch = g_.find(child);
        ++uses_[ch];
        ok = enter(ch);
        continue;
      }
      state[top.id] = 2;
      position_[top.id] = (order_.size() + 1) * kLabelGap;
      labels_.emplace_hint(labels_.end(), position_[top.id], top.id);
      order_.push_back(top.id);
      cost_ += own_[top.id];
      stack.pop_back();
    }
  }
  if (!ok) cost_ = kInfeasible;
}

bool Selection::plan_switch(ClassId c, size_t node, const Choice* fill, Change& change) const {
  const ENode& n = g_.eclass(c).nodes.at(node);
  const double own = cost_fn_(g_, c, n);
  if (own == kInfeasible) return false;
  change.own = own - own_[c];
  change.cost = change.own;
  auto current_uses = [&](ClassId x) {
    auto it = change.uses.find(x);
    return static_cast<int64_t>(uses_[x]) + (it == change.uses.end() ? 0 : it->second);
  };
  // What the new e-node needs first, so a class both sides use is never dropped and re-added.
  std::vector<ClassId> stack;
  auto need = [&](const ENode& e) {
    for (ClassId ch : e.children)
      if (ch != kAbsent) stack.push_back(g_.find(ch));
  };
  need(n);
  while (!stack.empty()) {
    const ClassId x = stack.back();
    stack.pop_back();
    ++extraction_steps();
    const bool newly = current_uses(x) == 0;
    ++change.uses[x];
    if (!newly) continue;
    size_t k = choice_[x];
    if (k == kNoChoice && fill && x < fill->size()) k = (*fill)[x];
    if (k == kNoChoice || k >= g_.eclass(x).nodes.size()) return false;
    const ENode& e = g_.eclass(x).nodes[k];
    const double c_x = cost_fn_(g_, x, e);
    if (c_x == kInfeasible) return false;
    change.cost += c_x;
    change.added[x] = k;
    need(e);
  }
  // Then what the old e-node alone kept alive.
  for (ClassId ch : g_.eclass(c).nodes.at(choice_[c]).children)
    if (ch != kAbsent) stack.push_back(g_.find(ch));
  while (!stack.empty()) {
    const ClassId y = stack.back();
    stack.pop_back();
    ++extraction_steps();
    --change.uses[y];
    if (current_uses(y) != 0) continue;
    change.cost -= own_[y];
    for (ClassId ch : g_.eclass(y).nodes[choice_[y]].children)
      if (ch != kAbsent) stack.push_back(g_.find(ch));
  }
  std::vector<ClassId> from;
  for (ClassId ch : n.children)
    if (ch != kAbsent) from.push_back(g_.find(ch));
  return !reaches(from, c, change) && !added_cycle(change);
}

// Whether the classes a switch computes anew, each on its own (or fill's) choice, close a
// cycle among themselves: reaches() sees only the cycles through the switched class.
bool Selection::added_cycle(const Change& change) const {
  if (change.added.size() < 2) return false;
  std::unordered_map<ClassId, uint8_t> state;  // 1 open, 2 done
  struct Frame {
    ClassId id;
    size_t next;
  };
  std::vector<Frame> stack;
  for (const auto& [start, k] : change.added) {
    if (state[start]) continue;
    state[start] = 1;
    stack.push_back({start, 0});
    while (!stack.empty()) {
      Frame& top = stack.back();
      const auto& children = g_.eclass(top.id).nodes[change.added.at(top.id)].children;
      if (top.next == children.size()) {
        state[top.id] = 2;
        stack.pop_back();
        continue;
      }
      const ClassId ch = children[top.next++];
      if (ch == kAbsent) continue;
      const ClassId y = g_.find(ch);
      if (!change.added.count(y)) continue;
      ++extraction_steps();
      uint8_t& st = state[y];
      if (st == 1) return true;
      if (st == 0) {
        st = 1;
        stack.push_back({y, 0});
      }
    }
  }
  return false;
}

// Whether `target` is reachable from `from` in the selection after `change`. The old
// selection is acyclic and its edges point only at classes it computes, so every new
// cycle through old classes passes through the switched class (cycles among the classes
// computed anew: added_cycle), and an old class reaches it only from a later label in
// the children-first order.
bool Selection::reaches(const std::vector<ClassId>& from, ClassId target, const Change& change) const {
  std::unordered_set<ClassId> seen;
  std::vector<ClassId> stack(from.begin(), from.end());
  while (!stack.empty()) {
    const ClassId x = stack.back();
    stack.pop_back();
    ++extraction_steps();
    if (x == target) return true;
    if (!seen.insert(x).second) continue;
    size_t k;
    if (auto it = change.added.find(x); it != change.added.end()) {
      k = it->second;
    } else {
      if (position_[x] < position_[target]) continue;
      k = choice_[x];
    }
    for (ClassId ch : g_.eclass(x).nodes[k].children)
      if (ch != kAbsent) stack.push_back(g_.find(ch));
  }
  return false;
}

double Selection::cost_with(ClassId c, size_t node, const Choice* fill) const {
  c = g_.find(c);
  if (!feasible()) return kInfeasible;
  if (uses_[c] == 0 || node == choice_[c]) return cost_;
  Change change;
  if (!plan_switch(c, node, fill, change)) return kInfeasible;
  return cost_ + change.cost;
}

const std::vector<ClassId>& Selection::order() const {
  if (order_stale_) {
    order_.clear();
    for (const auto& [label, x] : labels_)
      if (uses_[x] > 0) order_.push_back(x);
    order_stale_ = false;
    extraction_steps() += labels_.size();
  }
  return order_;
}

void Selection::switch_to(ClassId c, size_t node, const Choice* fill) {
  c = g_.find(c);
  if (node == choice_[c]) return;
  if (!feasible() || uses_[c] == 0) {  // nothing to update in place
    choice_[c] = node;
    if (!feasible()) recompute();
    return;
  }
  Change change;
  if (!plan_switch(c, node, fill, change)) return;
  choice_[c] = node;
  own_[c] += change.own;
  for (const auto& [x, d] : change.uses) uses_[x] = static_cast<uint32_t>(static_cast<int64_t>(uses_[x]) + d);
  for (const auto& [x, k] : change.added) {
    choice_[x] = k;
    own_[x] = cost_fn_(g_, x, g_.eclass(x).nodes[k]);
  }
  cost_ += change.cost;
  std::vector<ClassId> group;  // the classes the switch placed anew, children first, then c
  if (!change.added.empty()) place_added(c, change, group);
  group.push_back(c);
  reorder_after_switch(group);
  order_stale_ = true;
}

// Gives the classes a switch of c newly computes labels just below c's, children first
// among themselves (a post-order walk of their chosen e-nodes). Their children outside
// them keep their labels: reorder_after_switch repairs the ones that stand above.
void Selection::place_added(ClassId c, const Change& change, std::vector<ClassId>& group) {
  std::vector<uint8_t> done;  // per added class, in `index`: 0 unseen, 1 open, 2 done
  std::unordered_map<ClassId, size_t> index;
  for (const auto& [x, k] : change.added) index.emplace(x, index.size());
  done.assign(index.size(), 0);
  struct Frame {
    ClassId id;
    size_t next;
  };
  std::vector<Frame> stack;
  auto enter = [&](ClassId ch) {
    if (ch == kAbsent) return;
    ch = g_.find(ch);
    auto it = index.find(ch);
    if (it == index.end() || done[it->second]) return;
    done[it->second] = 1;
    stack.push_back({ch, 0});
  };
  for (ClassId ch : g_.eclass(c).nodes[choice_[c]].children) {
    enter(ch);
    while (!stack.empty()) {
      Frame& top = stack.back();
      const auto& children = g_.eclass(top.id).nodes[choice_[top.id]].children;
      if (top.next < children.size()) {
        enter(children[top.next++]);
        continue;
      }
      done[index.at(top.id)] = 2;
      group.push_back(top.id);
      stack.pop_back();
    }
  }
  extraction_steps() += group.size();
  // A class computed before and dropped since keeps a label from then: placed anew.
  for (ClassId x : group)
    if (auto it = labels_.find(position_[x]); it != labels_.end() && it->second == x) labels_.erase(it);
  auto gap_below = [&]() {
    auto it = labels_.find(position_[c]);
    const uint64_t below = it == labels_.begin() ? 0 : std::prev(it)->first;
    return std::pair<uint64_t, uint64_t>{below, (position_[c] - below) / (group.size() + 1)};
  };
  auto [below, step] = gap_below();
  if (step == 0) {
    relabel();
    std::tie(below, step) = gap_below();
  }
  for (size_t j = 0; j < group.size(); ++j) {
    position_[group[j]] = below + step * (j + 1);
    labels_.emplace(position_[group[j]], group[j]);
  }
}

// Labels every placed class anew, in the order they stand, a full gap apart.
void Selection::relabel() {
  extraction_steps() += labels_.size();
  std::map<uint64_t, ClassId> fresh;
  uint64_t next = kLabelGap;
  for (const auto& [label, x] : labels_) {
    position_[x] = next;
    fresh.emplace_hint(fresh.end(), next, x);
    next += kLabelGap;
  }
  labels_.swap(fresh);
}

// Keeps the children-first order valid after a switch (Pearce and Kelly's dynamic
// topological order). `group` is the switched class last, after the classes the switch
// placed just below it; their children outside the group may stand above it. The
// descendants of those children placed between the group and the highest of them move
// before the group and the ancestors of the switched class placed there, reusing the
// same labels. Only that stretch of the order is touched.
void Selection::reorder_after_switch(const std::vector<ClassId>& group) {
  const ClassId c = group.back();
  const uint64_t lower = position_[c];
  uint64_t upper = lower;
  std::unordered_set<ClassId> in_group(group.begin(), group.end());
  std::vector<ClassId> stack;
  for (ClassId x : group)
    for (ClassId ch : g_.eclass(x).nodes[choice_[x]].children) {
      if (ch == kAbsent || in_group.count(g_.find(ch))) continue;
      const ClassId y = g_.find(ch);
      upper = std::max(upper, position_[y]);
      stack.push_back(y);
    }
  if (upper == lower) return;
  std::vector<ClassId> down, up(group.begin(), group.end() - 1);
  std::unordered_set<ClassId> seen;
  while (!stack.empty()) {
    const ClassId x = stack.back();
    stack.pop_back();
    if (position_[x] <= lower || position_[x] > upper || !seen.insert(x).second) continue;
    down.push_back(x);
    for (ClassId ch : g_.eclass(x).nodes[choice_[x]].children)
      if (ch != kAbsent) stack.push_back(g_.find(ch));
  }
  stack.push_back(c);
  while (!stack.empty()) {
    const ClassId x = stack.back();
    stack.pop_back();
    if (position_[x] < lower || position_[x] >= upper || !seen.insert(x).second) continue;
    up.push_back(x);
    for (const auto& [parent_node, parent] : g_.eclass(x).parents) {
      const ClassId p = g_.find(parent);
      if (uses_[p] == 0) continue;
      for (ClassId ch : g_.eclass(p).nodes[choice_[p]].children)
        if (ch != kAbsent && g_.find(ch) == x) {
          stack.push_back(p);
          break;
        }
    }
  }
  extraction_steps() += down.size() + up.size();
  auto by_position = [&](ClassId a, ClassId b) { return position_[a] < position_[b]; };
  std::sort(down.begin(), down.end(), by_position);
  std::sort(up.begin(), up.end(), by_position);
  std::vector<uint64_t> slots;
  for (ClassId x : down) slots.push_back(position_[x]);
  for (ClassId x : up) slots.push_back(position_[x]);
  std::sort(slots.begin(), slots.end());
  for (uint64_t label : slots) labels_.erase(label);
  size_t k = 0;
  for (ClassId x : down) position_[x] = slots[k++], labels_.emplace(position_[x], x);
  for (ClassId x : up) position_[x] = slots[k++], labels_.emplace(position_[x], x);
}

}  // namespace geopt
