#pragma once
// An e-graph of tensor programs: e-classes of equivalent values, hash-consed
// e-nodes, union-find, and congruence closure restored by a deferred rebuild
// (as in egg). Ops with several outputs are one e-node whose class stands for
// the tuple, read through Proj(k) e-nodes. Constants are e-nodes holding a
// pointer to their tensor: the payload is never copied,
// and equal payloads are one class (CSE of constants). An e-class analysis
// keeps each class's type (dtype and shape, symbolic dims included), its
// constant, and the original value name users know it by.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "ir/graph.h"

namespace geopt {

using ClassId = uint32_t;
inline constexpr ClassId kAbsent = UINT32_MAX;  // an omitted optional input

// What an op e-node computes: op, domain, attributes, output count. Interned.
struct OpSignature {
  std::string domain, op_type;
  std::vector<Attribute> attributes;
  size_t num_outputs = 1;
  std::string key;  // canonical text; equal keys are the same op
};

struct ENode {
  enum class Kind : uint8_t { Op, Input, Const, Proj };
  Kind kind = Kind::Op;
  uint32_t op = 0;                   // Op: signature index; Input: graph input index; Proj: output index
  std::vector<ClassId> children;     // Op: inputs; Proj: {the tuple class}
  const Tensor* constant = nullptr;  // Const
  int32_t origin = -1;  // the rule that created it (-1: the input graph); not part of its identity
  int32_t site = -1;    // which application of that rule (to count sites, not e-nodes)

  bool operator==(const ENode& o) const {
    return kind == o.kind && op == o.op && children == o.children && constant == o.constant;
  }
};

struct ENodeHash {
  size_t operator()(const ENode& n) const;
};

struct ClassData {
  ValueType type;
  const Tensor* constant = nullptr;  // set when the class holds a Const e-node
  std::string name;                  // the first IR value name it came from
  std::string node_name;             // the IR node that produced it, if any
  // A constant not computed yet: an op of constants too large to fold while exploring,
  // folded at compile time once extraction keeps it (patterns see it as `const`).
  bool compile_time = false;
  bool is_constant() const { return constant || compile_time; }
};

struct EClass {
  ClassId id = 0;
  std::vector<ENode> nodes;
  std::vector<std::pair<ENode, ClassId>> parents;  // e-nodes that use this class, and their classes
  ClassData data;
};

class EGraph {
 public:
  // Adds an e-node (canonicalizing its children); returns its class, an existing
  // one when the node is already present (hash-consing).
  ClassId add(ENode node, const ClassData& data = {});
  ClassId add_op(const OpSignature& sig, std::vector<ClassId> children, const ClassData& data = {});
  ClassId add_constant(std::shared_ptr<const Tensor> tensor, const ClassData& data = {});
  ClassId add_input(uint32_t index, const ClassData& data);

  ClassId find(ClassId id) const;
  // Marks a class as a constant computed at compile time (ClassData::compile_time).
  void mark_compile_time(ClassId id) {
    live(find(id)).data.compile_time = true;
    touched_.push_back(find(id));
  }
  // Classes that changed since the last call (new, merged, given a new parent or new
  // data): a pattern can match anew only at them or above them. Not canonicalized.
  std::vector<ClassId> take_touched() { return std::exchange(touched_, {}); }
  // Declares two classes equal; returns the surviving root. Congruence is restored by rebuild().
  ClassId merge(ClassId a, ClassId b);
  // Restores the invariants after merges (egg's rebuild): hash-cons keys canonical,
  // congruent e-nodes in one class, no duplicate e-nodes in a class.
  void rebuild();
  bool clean() const { return pending_.empty(); }
  // egg's invariants after rebuild(), for tests: every e-node canonical and in the
  // hash-cons under its own class, no e-node in two classes (congruence), every parent
  // entry naming a live class that holds that e-node, a Const class's data holding its
  // constant. Throws InternalError naming the first one broken.
  void check_invariants() const;

  // The class's current contents. Like a reference into a vector, it lasts until the
  // next add (the table of classes may grow); copy what must outlive one.
  const EClass& eclass(ClassId id) const { return live(find(id)); }
  std::vector<ClassId> class_ids() const;  // canonical ids, ascending
  size_t node_count() const;
  // The graph's known ranges of symbolic dims (Graph::dim_ranges), for rules' conditions.
  std::map<std::string, std::pair<int64_t, int64_t>> dim_ranges;
  // E-nodes created so far (never decreases): a cheap test of whether an operation added any.
  size_t nodes_created() const { return created_; }
  size_t class_count() const;
  // One more than the largest class id ever made: the size of a table indexed by class.
  size_t id_bound() const { return parent_.size(); }
  const OpSignature& signature(uint32_t index) const { return signatures_.at(index); }
  uint32_t intern(const OpSignature& sig);
  // A fresh id for one application of a rule (ENode::site).
  int32_t new_site() { return next_site_++; }
  // The owning pointer of a constant payload.
  std::shared_ptr<const Tensor> constant_ptr(const Tensor* t) const;
  // The class an e-node lives in, if present (children canonicalized first).
  std::optional<ClassId> lookup(ENode node) const;

 private:
  ENode canonical(ENode n) const;
  void repair(ClassId id);
  // The class stored under a canonical id (throws InternalError for a merged-away one).
  const EClass& live(ClassId id) const;
  EClass& live(ClassId id) { return const_cast<EClass&>(std::as_const(*this).live(id)); }

  mutable std::vector<ClassId> parent_;  // union-find (path halving in find)
  size_t created_ = 0;
  // Indexed by id (a table, not a hash map: extraction and matching read classes in
  // every step, and a table keeps them near one another). A class merged into another
  // stays as an empty slot, is_live_ false.
  std::vector<EClass> classes_;
  std::vector<bool> is_live_;
  size_t live_classes_ = 0;
  std::unordered_map<ENode, ClassId, ENodeHash> memo_;
  std::vector<ClassId> pending_;
  std::vector<ClassId> touched_;
  std::vector<OpSignature> signatures_;
  std::unordered_map<std::string, uint32_t> signature_index_;
  std::unordered_map<const Tensor*, std::shared_ptr<const Tensor>> constants_;  // keeps payloads alive
  std::unordered_map<uint64_t, std::vector<std::pair<const Tensor*, ClassId>>> constants_by_content_;
  int32_t next_site_ = 0;
};

// The e-graph of an IR graph: one class per value. `roots` gets the class of each graph output.
struct GraphEGraph {
  EGraph egraph;
  std::vector<ClassId> roots;
  std::vector<ClassId> inputs;  // per graph input (initializers that are inputs included)
};
GraphEGraph egraph_from_graph(const Graph& graph);

// A canonical rendering of an op's identity: "domain::op|attr=..|attr=..".
std::string op_signature_key(const std::string& domain, const std::string& op_type,
                             const std::vector<Attribute>& attrs, size_t outputs);

}  // namespace geopt
