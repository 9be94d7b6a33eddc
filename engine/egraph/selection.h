#pragma once
// A selection: one chosen e-node per e-class, and the program it spans from the
// roots (the classes it computes, how many chosen e-nodes and roots use each, its
// DAG cost: every computed class paid once). Switching one class to another e-node
// is priced by walking only what the switch adds and what it leaves unused, so
// improving a selection one class at a time costs time in proportion to the
// change, not to the program. That keeps extraction linear in the model's size.
#include <cstddef>
#include <functional>
#include <limits>
#include <map>
#include <vector>

#include "egraph/egraph.h"

namespace geopt {

inline constexpr double kInfeasible = std::numeric_limits<double>::infinity();
// The cost of one e-node (its kernel), excluding its children.
using NodeCost = std::function<double(const EGraph&, ClassId, const ENode&)>;

// The same costs, each e-node's computed once: for an e-graph that no longer changes
// (the memo is keyed by the e-node's address). Extraction prices e-nodes many times.
NodeCost remember_costs(NodeCost cost);

// Classes visited by extraction on this thread, counted where it walks or allocates per
// class: a deterministic measure of its cost, which Extraction::steps reports and a test
// compares across model depths (time is no deterministic measure).
size_t& extraction_steps();

// The chosen e-node of each class, indexed by class id (EGraph::id_bound() entries).
inline constexpr size_t kNoChoice = std::numeric_limits<size_t>::max();
using Choice = std::vector<size_t>;

class Selection {
 public:
  // Infeasible (cost() infinite) when a class the roots need has no choice, its
  // chosen e-node costs infinity, or the chosen e-nodes close a cycle.
  Selection(const EGraph& g, std::vector<ClassId> roots, const NodeCost& cost, Choice choice);

  double cost() const { return cost_; }
  bool feasible() const { return cost_ < kInfeasible; }
  const Choice& choice() const { return choice_; }
  // Whether the program computes class c (reached from a root through chosen e-nodes).
  bool computes(ClassId c) const { return uses_.at(g_.find(c)) > 0; }
  // The computed classes, children before parents (after switch_to, also classes a
  // switch left unused: ask computes()). Listed anew after switches (n log n), so
  // callers take it once per pass, not once per switch.
  const std::vector<ClassId>& order() const;

  // The DAG cost of the program with class c switched to its e-node `node`. Classes
  // the switch newly needs take their own choice, else their choice in `fill`;
  // infinite when one has none or the switch closes a cycle. The selection must be
  // feasible; a class it does not compute changes nothing.
  double cost_with(ClassId c, size_t node, const Choice* fill = nullptr) const;
  // Makes that switch (feasible ones only: check cost_with first).
  void switch_to(ClassId c, size_t node, const Choice* fill = nullptr);

 private:
  struct Change;
  bool plan_switch(ClassId c, size_t node, const Choice* fill, Change& change) const;
  bool reaches(const std::vector<ClassId>& from, ClassId target, const Change& change) const;
  bool added_cycle(const Change& change) const;
  void recompute();
  void place_added(ClassId c, const Change& change, std::vector<ClassId>& group);
  void reorder_after_switch(const std::vector<ClassId>& group);
  void relabel();

  const EGraph& g_;
  std::vector<ClassId> roots_;
  NodeCost cost_fn_;
  Choice choice_;
  std::vector<uint32_t> uses_;  // chosen e-nodes and roots using each class
  std::vector<double> own_;     // cost of each computed class's chosen e-node
  // Each placed class's label: labels rise children first, with gaps, so a switch that
  // computes new classes gives them labels below the switched class without moving the
  // rest (they are relabelled only when a gap runs out).
  std::vector<uint64_t> position_;
  std::map<uint64_t, ClassId> labels_;  // label -> class, for every placed class
  mutable std::vector<ClassId> order_;
  mutable bool order_stale_ = false;
  double cost_ = kInfeasible;
};

}  // namespace geopt
