#include "egraph/extract.h"

#include <algorithm>
#include <functional>
#include <optional>
#include <queue>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "onnx/node_inference.h"
#include "util/error.h"

namespace geopt {
namespace {

// Classes reached from the roots through any e-node, in the order first reached.
std::vector<ClassId> reachable(const EGraph& g, const std::vector<ClassId>& roots) {
  std::vector<bool> seen(g.id_bound(), false);
  std::vector<ClassId> out, stack;
  for (ClassId r : roots) stack.push_back(g.find(r));
  while (!stack.empty()) {
    const ClassId c = stack.back();
    stack.pop_back();
    if (seen[c]) continue;
    seen[c] = true;
    ++extraction_steps();
    out.push_back(c);
    for (const ENode& n : g.eclass(c).nodes)
      for (ClassId child : n.children)
        if (child != kAbsent) stack.push_back(g.find(child));
  }
  return out;
}

// Classes children-first (post-order over every e-node's children; cycles cut where
// they close), so a bottom-up pass sees most children settled already.
std::vector<ClassId> children_first(const EGraph& g) {
  // Iterative: model depth (thousands of layers) must not bound the native stack.
  std::vector<ClassId> order;
  std::vector<uint8_t> state(g.id_bound(), 0);  // 1 open, 2 done
  struct Frame {
    ClassId id;
    size_t node = 0, child = 0;
  };
  std::vector<Frame> stack;
  for (ClassId root : g.class_ids()) {
    if (state[root]) continue;
    state[root] = 1;
    stack.push_back({root});
    while (!stack.empty()) {
      Frame& top = stack.back();
      const auto& nodes = g.eclass(top.id).nodes;
      if (top.node < nodes.size()) {
        const auto& children = nodes[top.node].children;
        if (top.child >= children.size()) {
          ++top.node;
          top.child = 0;
          continue;
        }
        const ClassId child = children[top.child++];
        if (child == kAbsent) continue;
        const ClassId c = g.find(child);
        if (state[c]) continue;
        state[c] = 1;
        stack.push_back({c});
        continue;
      }
      state[top.id] = 2;
      order.push_back(top.id);
      stack.pop_back();
    }
  }
  extraction_steps() += order.size();
  return order;
}

// Compares a class's alternatives under the current choices of everything below
// them. Their programs share most of what they compute, so the walk starts at each
// alternative's children and goes down (in rank order, a topological order of the
// chosen e-nodes) only while some class is reached by some alternatives but not all:
// what all of them reach costs them all the same. An alternative whose walk reaches
// the class itself would close a cycle.
// The greedy pass's state, per class: the chosen e-node, its cost, its rank (1 + the
// highest rank among its children: a topological order of the chosen e-nodes), and
// whether the program below it costs anything.
struct GreedyState {
  explicit GreedyState(size_t classes)
      : choice(classes, kNoChoice), own(classes, 0), rank(classes, 0), costly(classes, false) {}
  Choice choice;
  std::vector<double> own;
  std::vector<uint32_t> rank;
  std::vector<bool> costly;
};

class DifferenceWalk {
 public:
  DifferenceWalk(const EGraph& g, const GreedyState& state)
      : g_(g),
        state_(state),
        stamp_(g.id_bound(), 0),
        mask_(g.id_bound(), 0),
        in_heap_(g.id_bound(), false) {}

  // The index into `candidates` (e-nodes of class c, with their costs in `node_costs`)
  // of the cheapest acyclic alternative (`current`, the class's present choice or
  // kNoChoice, wins ties), or kNoChoice when none is.
  size_t cheapest(ClassId c, const std::vector<size_t>& candidates, const std::vector<double>& node_costs,
                  size_t current) {
    const EGraph& g = g_;
    // References, not a structured binding: lambdas below capture them (clang 14).
    const Choice& choice = state_.choice;
    const std::vector<double>& own = state_.own;
    const std::vector<uint32_t>& rank = state_.rank;
    const std::vector<bool>& costly = state_.costly;
    const size_t k = candidates.size();
    // The alternatives still compared: all but those found to close a cycle. A cyclic
    // one (a Reshape of the class itself) reaches nothing below the class, so left in,
    // every class below would look reached by some alternatives only, and the walk
    // would go down to the model's inputs (quadratic in its depth).
    uint64_t live = k == 64 ? ~uint64_t{0} : (uint64_t{1} << k) - 1;
    ++generation_;
    touched_.clear();
    heap_ = {};
    // Classes queued that not every live alternative reaches and that matter: one whose
    // program costs nothing (a weight, a weight laid out at compile time) and that
    // ranks below the class (so cannot lead back to it) changes no comparison.
    size_t partial = 0;
    uint32_t rank_c = 0;  // above every alternative's children
    for (size_t i = 0; i < k; ++i)
      for (ClassId ch : g.eclass(c).nodes[candidates[i]].children)
        if (ch != kAbsent) rank_c = std::max(rank_c, rank[g.find(ch)] + 1);
    auto matters = [&](ClassId x) { return costly[x] || rank[x] >= rank_c; };
    auto differs = [&](uint64_t m) { return (m & live) != live; };
    auto mark = [&](ClassId x, uint64_t bits) {
      if (stamp_[x] != generation_) {
        stamp_[x] = generation_;
        mask_[x] = 0;
        in_heap_[x] = false;
        touched_.push_back(x);
      }
      const uint64_t before = mask_[x];
      if ((before | bits) == before) return;
      mask_[x] = before | bits;
      if (!in_heap_[x]) {
        in_heap_[x] = true;
        heap_.push({rank[x], x});
        partial += differs(mask_[x]) && matters(x);
      } else if (differs(before) && !differs(mask_[x]) && matters(x)) {
        --partial;
      }
    };
    for (size_t i = 0; i < k; ++i)
      for (ClassId ch : g.eclass(c).nodes[candidates[i]].children)
        if (ch != kAbsent) mark(g.find(ch), uint64_t{1} << i);
    size_t pops = 0;
    bool truncated = false;
    while (!heap_.empty() && partial > 0) {
      if (++pops > kBudget) {
        truncated = true;
        break;
      }
      const ClassId x = heap_.top().second;
      heap_.pop();
      in_heap_[x] = false;
      const uint64_t m = mask_[x];
      if (differs(m) && matters(x)) --partial;
      if (x == c) {
        // The alternatives that reach the class itself are out of the comparison: what
        // only they miss no longer differs. Counted again over the queue, once per walk
        // (the class leaves the queue once).
        live &= ~m;
        partial = 0;
        for (ClassId y : touched_) partial += in_heap_[y] && differs(mask_[y]) && matters(y);
        extraction_steps() += touched_.size();
        continue;
      }
      for (ClassId ch : g.eclass(x).nodes[choice[x]].children)
        if (ch != kAbsent) mark(g.find(ch), m);
    }
    // A walk cut short cannot rule out a cycle: keep what is there.
    if (truncated && current != kNoChoice)
      return std::find(candidates.begin(), candidates.end(), current) - candidates.begin();
    std::vector<double> total(k);
    for (size_t i = 0; i < k; ++i) total[i] = node_costs[candidates[i]];
    for (ClassId x : touched_) {
      const uint64_t m = mask_[x];
      if (!differs(m) || x == c) continue;
      for (size_t i = 0; i < k; ++i)
        if (m >> i & 1) total[i] += own[x];
    }
    extraction_steps() += touched_.size();
    const uint64_t cyclic = stamp_[c] == generation_ ? mask_[c] : 0;
    size_t best = kNoChoice;
    for (size_t i = 0; i < k; ++i)
      if (candidates[i] == current && !(cyclic >> i & 1)) best = i;
    for (size_t i = 0; i < k; ++i) {
      if (cyclic >> i & 1) continue;
      if (best == kNoChoice || total[i] < total[best] - 1e-12) best = i;
    }
    return best;
  }

 private:
  static constexpr size_t kBudget = size_t{1} << 16;
  const EGraph& g_;
  const GreedyState& state_;
  uint32_t generation_ = 0;
  std::vector<uint32_t> stamp_;
  std::vector<uint64_t> mask_;
  std::vector<bool> in_heap_;
  std::vector<ClassId> touched_;
  std::priority_queue<std::pair<uint32_t, ClassId>> heap_;
};

}  // namespace

void reuse_selected(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost, Extraction& x) {
  Selection s(g, roots, cost, x.choice);
  if (!s.feasible()) return;
  for (int pass = 0; pass < 8; ++pass) {
    // Every switch that pays against this pass's program, the largest saving first (a
    // switch can take away another's saving: the LayerNorm that drops a tuple whose
    // other output would replace an Add), each priced again when its turn comes.
    struct Switch {
      double saving;
      ClassId c;
      size_t node;
    };
    std::vector<Switch> paying;
    extraction_steps() += s.order().size();
    for (ClassId c : s.order()) {
      if (!s.computes(c)) continue;
      const auto& nodes = g.eclass(c).nodes;
      for (size_t i = 0; i < nodes.size(); ++i) {
        if (i == s.choice()[c]) continue;
        bool computed_already = true;
        for (ClassId ch : nodes[i].children)
          computed_already = computed_already && (ch == kAbsent || s.computes(ch));
        if (!computed_already) continue;
        const double with = s.cost_with(c, i);  // infinite when it closes a cycle
        if (with < s.cost() - 1e-9) paying.push_back({s.cost() - with, c, i});
      }
    }
    std::stable_sort(paying.begin(), paying.end(),
                     [](const Switch& a, const Switch& b) { return a.saving > b.saving; });
    bool improved = false;
    for (const Switch& w : paying)
      if (s.computes(w.c) && s.choice()[w.c] != w.node && s.cost_with(w.c, w.node) < s.cost() - 1e-9) {
        s.switch_to(w.c, w.node);
        improved = true;
      }
    if (!improved) break;
  }
  x.choice = s.choice();
  x.cost = s.cost();
}

void share_work(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost, Extraction& x) {
  Selection s(g, roots, cost, x.choice);
  if (!s.feasible()) return;
  constexpr size_t kFreshLimit = 64;  // classes a candidate may add
  constexpr size_t kTryLimit = 4096;  // candidates walked in all: bounded work whatever the model
  constexpr int kLevelsUp = 3;        // from the added work to the classes that could read it
  // A class read by more e-nodes than this is no work near the switch but a value many
  // share (a shape constant every layer reshapes by): walking up from it would visit the
  // whole model for each candidate, quadratic in its depth.
  constexpr size_t kFanOut = 16;
  constexpr size_t kNearLimit = 4 * kFreshLimit;  // classes tried near one candidate
  size_t tries = 0;
  // The walks themselves, bounded too: a candidate's neighbours may each be priced over
  // much of the model (the cycle check walks down from what they read), and an e-graph of
  // two layouts offers thousands (PaddleOCR's INT8 detector: 5e9 steps, 7 minutes). Past
  // this many steps share_work stops where it is; the program stays a valid one.
  const size_t step_limit = extraction_steps() + std::max<size_t>(size_t{1} << 24, 256 * s.order().size());
  // Whether computing e-node `e` would add at most `limit` classes to the selection.
  auto adds_at_most = [&](const ENode& e, size_t limit) {
    std::vector<ClassId> stack;
    std::unordered_set<ClassId> seen;
    for (ClassId ch : e.children)
      if (ch != kAbsent && !s.computes(g.find(ch)) && seen.insert(g.find(ch)).second)
        stack.push_back(g.find(ch));
    while (!stack.empty()) {
      if (seen.size() > limit) return false;
      const ClassId f = stack.back();
      stack.pop_back();
      ++extraction_steps();
      const size_t k = s.choice()[f];
      if (k == kNoChoice) continue;
      for (ClassId ch : g.eclass(f).nodes[k].children)
        if (ch != kAbsent && !s.computes(g.find(ch)) && seen.insert(g.find(ch)).second)
          stack.push_back(g.find(ch));
    }
    return true;
  };
  const std::vector<ClassId> order = s.order();
  for (ClassId c : order) {
    if (tries >= kTryLimit || extraction_steps() > step_limit) break;
    if (!s.computes(c)) continue;
    const auto& nodes = g.eclass(c).nodes;
    for (size_t i = 0;
         i < nodes.size() && tries < kTryLimit && s.computes(c) && extraction_steps() <= step_limit; ++i) {
      if (i == s.choice()[c]) continue;
      ++tries;  // every candidate walked counts, shared or not
      // The classes the switch would add, and whether one of them is read by the
      // e-nodes of two classes or more (work that others could share).
      std::vector<ClassId> fresh, stack;
      std::unordered_set<ClassId> seen;
      bool shared = false, bounded = true;
      auto visit = [&](ClassId ch) {
        if (ch == kAbsent) return;
        ch = g.find(ch);
        if (!s.computes(ch) && seen.insert(ch).second) stack.push_back(ch);
      };
      for (ClassId ch : nodes[i].children) visit(ch);
      while (!stack.empty()) {
        if (fresh.size() == kFreshLimit) {
          bounded = false;
          break;
        }
        const ClassId f = stack.back();
        stack.pop_back();
        ++extraction_steps();
        fresh.push_back(f);
        const auto& parents = g.eclass(f).parents;  // read by e-nodes of two classes or more?
        for (size_t p = 1; p < parents.size() && !shared; ++p)
          shared = g.find(parents[p].second) != g.find(parents[0].second);
        const size_t k = s.choice()[f];
        if (k != kNoChoice)
          for (ClassId ch : g.eclass(f).nodes[k].children) visit(ch);
      }
      if (!shared || !bounded) continue;
      if (s.cost_with(c, i) == kInfeasible) continue;
      // The switch and the ones it makes pay are made in place and undone, latest first,
      // unless together they lower the cost: no copy of the selection per candidate (a
      // copy and a rebuild per candidate made this quadratic in the model's depth).
      const double before = s.cost();
      std::vector<std::pair<ClassId, size_t>> undo;
      auto take = [&](ClassId d, size_t j) {
        undo.emplace_back(d, s.choice()[d]);
        s.switch_to(d, j);
      };
      take(c, i);
      // Classes near the added work, computed now, that may move onto it.
      std::vector<ClassId> near, frontier = fresh;
      std::unordered_set<ClassId> up(fresh.begin(), fresh.end());
      for (int level = 0; level < kLevelsUp && !frontier.empty(); ++level) {
        std::vector<ClassId> next;
        for (ClassId f : frontier) {
          // Constants (weights, shapes, values folded at compile time) are no work to share.
          if (g.eclass(f).parents.size() > kFanOut || g.eclass(f).data.is_constant()) continue;
          for (const auto& [pn, pc] : g.eclass(f).parents) {
            const ClassId p = g.find(pc);
            ++extraction_steps();
            if (!up.insert(p).second) continue;
            next.push_back(p);
            if (p != c && s.computes(p) && near.size() < kNearLimit) near.push_back(p);
          }
        }
        frontier = std::move(next);
      }
      for (ClassId d : near) {
        if (!s.computes(d)) continue;
        const auto& alts = g.eclass(d).nodes;
        for (size_t j = 0; j < alts.size(); ++j) {
          if (j == s.choice()[d]) continue;
          // Only an alternative that adds at most kFreshLimit classes, as the candidate
          // itself: pricing one that needs more walks all it needs, which in an e-graph of
          // two layouts is the other layout's whole program, for each of thousands of
          // candidates (PaddleOCR's INT8 detector took 6 minutes).
          if (adds_at_most(alts[j], kFreshLimit) && s.cost_with(d, j) < s.cost() - 1e-9) take(d, j);
        }
      }
      if (s.cost() < before - 1e-9) continue;
      for (auto it = undo.rbegin(); it != undo.rend(); ++it) s.switch_to(it->first, it->second);
    }
  }
  x.choice = s.choice();
  x.cost = dag_cost(g, roots, x.choice,
                    cost);  // once, exact: thousands of switches and undos add rounding to s.cost()
}

double dag_cost(const EGraph& g, const std::vector<ClassId>& roots, const Choice& choice,
                const NodeCost& cost) {
  return Selection(g, roots, cost, choice).cost();
}

Extraction extract_greedy_tree(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost) {
  Extraction x;
  x.method = "greedy tree";
  x.choice.assign(g.id_bound(), kNoChoice);
  std::vector<double> best(g.id_bound(), kInfeasible);
  const std::vector<ClassId> order = children_first(g);
  for (bool changed = true; changed;) {  // Bellman-Ford style fixpoint, children first
    changed = false;
    for (ClassId c : order) {
      const auto& nodes = g.eclass(c).nodes;
      for (size_t i = 0; i < nodes.size(); ++i) {
        double total = cost(g, c, nodes[i]);
        for (ClassId child : nodes[i].children)
          if (child != kAbsent) total += best[g.find(child)];
        if (total < best[c]) {
          best[c] = total;
          x.choice[c] = i;
          changed = true;
        }
      }
    }
  }
  x.cost = dag_cost(g, roots, x.choice, cost);
  return x;
}

Extraction extract_greedy_dag(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost) {
  Extraction x;
  x.method = "greedy DAG";
  GreedyState state(g.id_bound());
  DifferenceWalk walk(g, state);
  const std::vector<ClassId> order = children_first(g);
  std::vector<size_t> candidates;
  std::vector<double> node_costs;
  for (int round = 0; round < 64; ++round) {
    bool changed = false;
    extraction_steps() += order.size();
    for (ClassId c : order) {
      const auto& nodes = g.eclass(c).nodes;
      node_costs.clear();
      candidates.clear();
      for (size_t i = 0; i < nodes.size(); ++i) {
        node_costs.push_back(cost(g, c, nodes[i]));
        if (node_costs[i] == kInfeasible) continue;
        bool ready = true;
        for (ClassId ch : nodes[i].children)
          ready = ready && (ch == kAbsent || state.choice[g.find(ch)] != kNoChoice);
        if (ready) candidates.push_back(i);
      }
      if (candidates.empty()) continue;
      // With no choice yet, no chosen e-node uses the class, so nothing can be cyclic.
      size_t pick = candidates.front();
      if (candidates.size() > 1) {
        // At most 64 alternatives a walk (one bit each); the winner meets the next batch.
        size_t winner = state.choice[c];
        for (size_t from = 0; from < candidates.size();) {
          std::vector<size_t> batch;
          if (winner != kNoChoice) batch.push_back(winner);
          while (from < candidates.size() && batch.size() < 64) {
            if (candidates[from] != winner) batch.push_back(candidates[from]);
            ++from;
          }
          const size_t b = walk.cheapest(c, batch, node_costs, winner);
          if (b != kNoChoice) winner = batch[b];
        }
        if (winner == kNoChoice) continue;
        pick = winner;
      }
      uint32_t r = 0;
      bool pays = node_costs[pick] != 0;
      for (ClassId ch : nodes[pick].children)
        if (ch != kAbsent) r = std::max(r, state.rank[g.find(ch)]), pays = pays || state.costly[g.find(ch)];
      state.rank[c] = r + 1;
      state.costly[c] = pays;
      if (pick != state.choice[c]) {
        state.choice[c] = pick;
        state.own[c] = node_costs[pick];
        changed = true;
      }
    }
    if (!changed) break;
  }
  x.choice = std::move(state.choice);
  x.cost = dag_cost(g, roots, x.choice, cost);
  return x;
}

Extraction extract_original(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost) {
  Extraction x;
  x.method = "the input program";
  x.choice.assign(g.id_bound(), kNoChoice);
  for (ClassId c : reachable(g, roots)) {
    const auto& nodes = g.eclass(c).nodes;
    for (size_t i = 0; i < nodes.size(); ++i)
      if (nodes[i].origin < 0) {
        x.choice[c] = i;
        break;
      }
  }
  x.cost = dag_cost(g, roots, x.choice, cost);
  return x;
}

Extraction extract_exact(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& cost,
                         size_t budget, const Extraction* seed) {
  Extraction best;
  if (seed) {
    best = *seed;
  } else {
    best = extract_greedy_dag(g, roots, cost);
    if (Extraction input = extract_original(g, roots, cost); input.cost < best.cost)
      best = std::move(input);  // the better bound
  }
  best.method = "exact (branch and bound)";
  std::map<ClassId, double> min_cost;
  for (ClassId c : reachable(g, roots)) {
    double m = kInfeasible;
    for (const ENode& n : g.eclass(c).nodes) m = std::min(m, cost(g, c, n));
    min_cost[c] = m;
  }
  Choice choice(g.id_bound(), kNoChoice);
  std::set<ClassId> needed;
  for (ClassId r : roots) needed.insert(g.find(r));
  size_t explored = 0;
  bool exhausted = true;
  // Depth-first over the needed classes, lowest id first, each class's e-nodes cheapest
  // first. An explicit stack: a model's e-graph has thousands of classes, one frame each.
  struct Frame {
    ClassId cls;
    std::vector<size_t> order;   // its e-nodes, cheapest first
    size_t next = 0;             // the next of them to try
    std::vector<ClassId> added;  // classes the e-node being tried made needed
    double so_far;               // the cost chosen above this class
  };
  std::vector<Frame> stack;
  // One search state: pruned, a complete selection priced, or a class to decide pushed.
  auto visit = [&](double so_far) {
    if (++explored > budget) {
      exhausted = false;
      return;
    }
    // Lower bound: what is chosen plus the cheapest node of each needed, undecided class.
    double bound = so_far;
    ClassId next = kAbsent;
    for (ClassId c : needed)
      if (choice[c] == kNoChoice) {
        bound += min_cost[c];
        if (next == kAbsent) next = c;
      }
    if (bound >= best.cost) return;
    if (next == kAbsent) {
      double total = dag_cost(g, roots, choice, cost);  // refuses cycles
      if (total < best.cost) {
        best.cost = total;
        best.choice = choice;
      }
      return;
    }
    const auto& nodes = g.eclass(next).nodes;
    Frame f{next, std::vector<size_t>(nodes.size()), 0, {}, so_far};
    for (size_t i = 0; i < f.order.size(); ++i) f.order[i] = i;
    std::stable_sort(f.order.begin(), f.order.end(),
                     [&](size_t a, size_t b) { return cost(g, next, nodes[a]) < cost(g, next, nodes[b]); });
    stack.push_back(std::move(f));
  };
  visit(0);
  while (!stack.empty()) {
    Frame& f = stack.back();
    for (ClassId a : f.added) needed.erase(a);  // the previous e-node tried here, undone
    f.added.clear();
    choice[f.cls] = kNoChoice;
    if (!exhausted || f.next == f.order.size()) {
      stack.pop_back();
      continue;
    }
    const size_t i = f.order[f.next++];
    const ENode& node = g.eclass(f.cls).nodes[i];
    const double c = cost(g, f.cls, node);
    if (c == kInfeasible) continue;
    choice[f.cls] = i;
    for (ClassId child : node.children)
      if (child != kAbsent && needed.insert(g.find(child)).second) f.added.push_back(g.find(child));
    visit(f.so_far + c);  // may push: `f` is not used after
  }
  best.explored = explored;
  best.optimal = exhausted;
  if (!exhausted) best.method = "exact (gave up after " + std::to_string(budget) + " states; best found)";
  return best;
}

const char* extraction_mode_name(ExtractionMode m) {
  switch (m) {
    case ExtractionMode::automatic:
      return "auto";
    case ExtractionMode::greedy:
      return "greedy";
    case ExtractionMode::exact:
      return "exact";
  }
  return "auto";
}

std::optional<ExtractionMode> parse_extraction_mode(std::string_view name) {
  for (ExtractionMode m : {ExtractionMode::automatic, ExtractionMode::greedy, ExtractionMode::exact})
    if (name == extraction_mode_name(m)) return m;
  return std::nullopt;
}

namespace {

Extraction best_extraction(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& node_cost,
                           size_t exact_limit, ExtractionMode mode) {
  const NodeCost cost = remember_costs(node_cost);  // every extractor below prices the same e-nodes
  size_t with_choice = 0;
  const std::vector<ClassId> live = reachable(g, roots);
  for (ClassId c : live) with_choice += g.eclass(c).nodes.size() > 1;
  // The search's bound only sees classes already reached, so it prunes late on big graphs.
  if (mode == ExtractionMode::automatic && with_choice <= exact_limit &&
      live.size() <= 8 * std::max<size_t>(exact_limit, 1)) {
    Extraction x = extract_exact(g, roots, cost, 20000);
    if (!x.optimal) reuse_selected(g, roots, cost, x), share_work(g, roots, cost, x);
    return x;
  }
  Extraction x = extract_greedy_dag(g, roots, cost);
  reuse_selected(g, roots, cost, x);
  share_work(g, roots, cost, x);
  x.method =
      "greedy DAG (" + std::to_string(with_choice) + " classes with a choice; gap to the optimum unknown)";
  Extraction input = extract_original(g, roots, cost);
  if (input.cost <= x.cost) {
    input.method = "the input program (the greedy DAG heuristic found nothing cheaper; " +
                   std::to_string(with_choice) + " classes with a choice)";
    x = std::move(input);
  }
  if (mode != ExtractionMode::exact) return x;
  // Exact on any size, from the heuristic's program: never worse than it. Each state
  // walks the needed classes, so the budget shrinks as the e-graph grows (deterministic,
  // where a time limit would not be).
  const size_t budget =
      std::clamp<size_t>(size_t{50'000'000} / std::max<size_t>(live.size(), 1), 2000, 200000);
  Extraction exact = extract_exact(g, roots, cost, budget, &x);
  if (!exact.optimal) {
    reuse_selected(g, roots, cost, exact);
    share_work(g, roots, cost, exact);
  }
  return exact;
}

}  // namespace

Extraction extract_best(const EGraph& g, const std::vector<ClassId>& roots, const NodeCost& node_cost,
                        size_t exact_limit, ExtractionMode mode) {
  const size_t steps_before = extraction_steps();
  Extraction x = best_extraction(g, roots, node_cost, exact_limit, mode);
  x.steps = extraction_steps() - steps_before;
  return x;
}

Model extraction_to_model(const Model& original, const GraphEGraph& geg, const Extraction& x,
                          std::map<std::string, std::pair<int32_t, int32_t>>* origins) {
  const EGraph& g = geg.egraph;
  Model m = original.header_copy();
  Graph& out = *m.graph;
  const Graph& src = *original.graph;
  std::map<ClassId, Value*> values;
  for (size_t i = 0; i < src.inputs().size(); ++i) {
    const Value* v = src.inputs()[i];
    Value* nv = out.add_value(v->name());
    nv->type = v->type;
    nv->doc_string = v->doc_string;
    out.add_input(nv);
    if (v->initializer) out.add_initializer(nv, v->initializer);
    values[g.find(geg.inputs[i])] = nv;
  }
  // Output names are reserved for the classes of the graph outputs.
  std::map<ClassId, std::string> reserved;
  for (size_t i = 0; i < geg.roots.size(); ++i)
    reserved.emplace(g.find(geg.roots[i]), src.outputs()[i]->name());
  std::unordered_map<std::string, ClassId> reserved_by_name;
  for (const auto& [rc, rn] : reserved) reserved_by_name.emplace(rn, rc);
  auto name_for = [&](ClassId c, const std::string& fallback) {
    auto r = reserved.find(c);
    if (r != reserved.end() && !out.find_value(r->second)) return r->second;
    const std::string& n = g.eclass(c).data.name;
    auto owner = reserved_by_name.find(n);
    const bool taken_by_output = owner != reserved_by_name.end() && owner->second != c;
    if (!n.empty() && !taken_by_output && !out.find_value(n)) return n;
    return out.unique_name(fallback);
  };
  std::map<ClassId, Node*> tuple_nodes;
  auto chosen = [&](ClassId c) -> const ENode& {
    if (c >= x.choice.size() || x.choice[c] == kNoChoice)
      throw InternalError("extraction chose nothing for class " + std::to_string(c));
    return g.eclass(c).nodes.at(x.choice[c]);
  };
  // Makes the value (or, for an op with several outputs, the node) of a class whose
  // children are made.
  auto make = [&](ClassId c) {
    const EClass& ec = g.eclass(c);
    const ENode& n = chosen(c);
    switch (n.kind) {
      case ENode::Kind::Input:
        values[c] = values.at(g.find(geg.inputs.at(n.op)));
        return;
      case ENode::Kind::Const: {
        Value* v = out.add_value(name_for(c, "const"));
        v->type = ec.data.type;
        out.add_initializer(v, g.constant_ptr(n.constant));
        values[c] = v;
        return;
      }
      case ENode::Kind::Proj: {
        Node* node = tuple_nodes.at(g.find(n.children.at(0)));
        Value* v = node->output(n.op);
        if (out.find_value(name_for(c, v->name())) == nullptr) out.rename_value(v, name_for(c, v->name()));
        if (v->type.dtype == DType::Undefined) v->type = ec.data.type;
        values[c] = v;
        return;
      }
      case ENode::Kind::Op: {
        const OpSignature& sig = g.signature(n.op);
        std::vector<Value*> inputs;
        for (ClassId child : n.children)
          inputs.push_back(child == kAbsent ? nullptr : values.at(g.find(child)));
        std::string node_name = ec.data.node_name.empty() ? "" : ec.data.node_name;
        if (!node_name.empty() && out.find_node(node_name)) node_name = out.unique_name(node_name);
        std::vector<Value*> outs;
        if (sig.num_outputs == 1) {
          outs.push_back(
              out.add_value(name_for(c, (node_name.empty() ? sig.op_type : node_name) + "_output")));
          outs.back()->type = ec.data.type;
        } else {
          for (size_t k = 0; k < sig.num_outputs; ++k)
            outs.push_back(out.add_value(out.unique_name((node_name.empty() ? sig.op_type : node_name) +
                                                         "_output_" + std::to_string(k))));
        }
        if (node_name.empty() && n.origin >= 0) node_name = out.unique_name(sig.op_type);
        Node* node = out.add_node(sig.op_type, sig.domain, node_name, inputs, outs);
        node->attributes = sig.attributes;
        if (origins && n.origin >= 0) (*origins)[node->name] = {n.origin, n.site};
        if (sig.num_outputs == 1)
          values[c] = outs[0];
        else
          tuple_nodes[c] = node;  // a tuple has no single value
        return;
      }
    }
  };
  // Depth first from each output, children in order before their user (an explicit
  // stack: model depth must not bound the native stack).
  auto made = [&](ClassId c) { return values.count(c) || tuple_nodes.count(c); };
  std::vector<std::pair<ClassId, bool>> stack;  // (class, children pushed)
  for (size_t i = 0; i < geg.roots.size(); ++i) {
    stack.push_back({g.find(geg.roots[i]), false});
    while (!stack.empty()) {
      auto [c, expanded] = stack.back();
      if (made(c)) {
        stack.pop_back();
        continue;
      }
      if (expanded) {
        stack.pop_back();
        make(c);
        continue;
      }
      stack.back().second = true;
      const ENode& n = chosen(c);
      if (n.kind == ENode::Kind::Op || n.kind == ENode::Kind::Proj)
        for (size_t k = n.children.size(); k-- > 0;)
          if (n.children[k] != kAbsent) stack.push_back({g.find(n.children[k]), false});
    }
    // The model's interface keeps its names: an output whose value is a graph input, a
    // constant or another output gets it through an Identity.
    Value* v = values.at(g.find(geg.roots[i]));
    const std::string& want = src.outputs()[i]->name();
    if (v->name() != want && !out.find_value(want)) {
      Value* named = out.add_value(want);
      named->type = v->type;
      out.add_node("Identity", "", out.unique_name(want + "_identity"), {v}, {named});
      v = named;
    }
    out.add_output(v);
  }
  // An output of a multi-output op that nothing reads was typed by no projection (a
  // FusedConv kept for its channel means alone): ONNX's inference of the op types it, as
  // the rewrite that made the op did, since a plan allocates every output a kernel writes.
  for (const auto& [c, node] : tuple_nodes) {
    const auto& outs = node->outputs();
    if (std::none_of(outs.begin(), outs.end(),
                     [](const Value* v) { return v && v->type.dtype == DType::Undefined; }))
      continue;
    std::vector<const ValueType*> in_types;
    std::vector<const Tensor*> in_constants;
    for (const Value* v : node->inputs()) {
      in_types.push_back(v ? &v->type : nullptr);
      in_constants.push_back(v ? v->initializer.get() : nullptr);
    }
    const onnx_io::InferredTypes inferred =
        onnx_io::infer_output_types(node->domain, node->op_type, node->attributes, in_types, in_constants,
                                    outs.size(), node->domain.empty() ? m.opset_version("") : 1);
    for (size_t k = 0; k < outs.size() && k < inferred.types.size(); ++k)
      if (outs[k] && outs[k]->type.dtype == DType::Undefined && inferred.types[k])
        outs[k]->type = *inferred.types[k];
  }
  if (!out.topological_sort()) throw InternalError("the extracted graph has a cycle");
  return m;
}

}  // namespace geopt
