#include "dsl/ematcher.h"

#include <algorithm>

#include <cmath>
#include <functional>
#include <set>
#include <unordered_map>

#include "dsl/schema_lookup.h"
#include "dsl/value_facts.h"
#include "dsl/where_eval.h"

namespace geopt::dsl {
namespace {

std::string op_label(const OpSignature& s) { return (s.domain.empty() ? "" : s.domain + "::") + s.op_type; }

const Attribute* find_attr(const OpSignature& s, const std::string& name) {
  for (const auto& a : s.attributes)
    if (a.name == name) return &a;
  return nullptr;
}

bool literal_equals(const Attribute& a, const Literal& l) {
  Attribute want = literal_attribute(a.name, a.kind, l);
  return attribute_answer(want) == attribute_answer(a) && (a.kind != AttrKind::Int || l.is_integer || l.kind != Literal::Kind::Number || std::floor(l.number) == l.number);
}




using Cont = std::function<bool(EMatch&)>;  // returns false to stop enumerating

class Search {
 public:
  Search(const EGraph& g, const EMatcher& m, const Alternative& alt) : g_(g), m_(m), alt_(alt) {}

  const Attribute* attr_of(const OpSignature& s, const std::string& name) const {
    if (const Attribute* a = find_attr(s, name)) return a;
    return attribute_default(s.domain, s.op_type, name, m_.opset(s.domain));
  }

  bool attr_holds(const OpSignature& s, const AttrPred& p, EMatch& b) const {
    if (p.absent) return find_attr(s, p.name) == nullptr;
    const Attribute* a = attr_of(s, p.name);
    if (!a) return false;
    if (!p.bind_var.empty()) {
      auto it = b.attrs.find(p.bind_var);
      if (it == b.attrs.end()) {
        b.attrs.emplace(p.bind_var, *a);
        return true;
      }
      return attribute_answer(it->second) == attribute_answer(*a);
    }
    auto num = attr_number(*a);
    switch (p.op) {
      case CmpOp::Eq: return literal_equals(*a, *p.value);
      case CmpOp::Ne: return !literal_equals(*a, *p.value);
      case CmpOp::Lt: return num && *num < p.value->number;
      case CmpOp::Le: return num && *num <= p.value->number;
      case CmpOp::Gt: return num && *num > p.value->number;
      case CmpOp::Ge: return num && *num >= p.value->number;
      case CmpOp::Approx: return num && std::fabs(*num - p.value->number) <= p.tolerance;
      case CmpOp::In:
        if (p.set.empty()) return num && *num >= p.lo && *num <= p.hi;
        for (const auto& l : p.set)
          if (literal_equals(*a, l)) return true;
        return false;
    }
    return false;
  }

  // Matches pattern p against class c; calls k for every way it matches.
  bool value(const Pattern& p, ClassId c, EMatch& b, const Cont& k) const {
    if (c == kAbsent) return true;  // nothing here: no match, keep enumerating elsewhere
    c = g_.find(c);
    const EClass& ec = g_.eclass(c);
    switch (p.kind) {
      case Pattern::Kind::Var: {
        auto it = b.values.find(p.var);
        if (it != b.values.end()) return g_.find(it->second) == c ? k(b) : true;
        // Every step below undoes its own bindings, so undoing ours restores b (no copy).
        b.values[p.var] = c;
        auto let = alt_.lets.find(p.var);
        bool go_on = let == alt_.lets.end() ? k(b) : value(*let->second, c, b, k);
        b.values.erase(p.var);
        return go_on;
      }
      case Pattern::Kind::Const: {
        if (!ec.data.is_constant()) return true;
        if (p.var.empty()) return k(b);
        return bind_and(p.var, c, b, k);
      }
      case Pattern::Kind::Number:
        return constant_all_equal(ec.data.constant, p.number) ? k(b) : true;
      case Pattern::Kind::Op: {
        if (!p.var.empty()) {
          auto it = b.values.find(p.var);
          if (it != b.values.end() && g_.find(it->second) != c) return true;
        }
        for (const ENode& n : ec.nodes) {
          // An op's k-th output is a Proj(k) of the op's tuple class, or the op itself when it has one output.
          if (n.kind == ENode::Kind::Proj) {
            if (static_cast<int>(n.op) != p.output_index) continue;
            for (const ENode& t : g_.eclass(n.children[0]).nodes)
              if (!node_then(p, c, t, b, k)) return false;
          } else if (n.kind == ENode::Kind::Op && p.output_index == 0 && g_.signature(n.op).num_outputs == 1) {
            if (!node_then(p, c, n, b, k)) return false;
          }
        }
        return true;
      }
    }
    return true;
  }

  bool bind_and(const std::string& var, ClassId c, EMatch& b, const Cont& k) const {
    auto it = b.values.find(var);
    if (it != b.values.end()) return g_.find(it->second) == c ? k(b) : true;
    b.values[var] = c;
    bool go_on = k(b);
    b.values.erase(var);
    return go_on;
  }

  // Matches an op pattern against one e-node whose value is class c.
  bool node_then(const Pattern& p, ClassId c, const ENode& n, EMatch& b, const Cont& k) const {
    if (n.kind != ENode::Kind::Op) return true;
    const OpSignature& s = g_.signature(n.op);
    if (p.op != "*") {
      const std::string want_domain = p.domain == "ai.onnx" ? "" : p.domain;
      if (s.op_type != p.op || s.domain != want_domain) return true;
    }
    for (size_t i = p.args.size(); i < n.children.size(); ++i)
      if (n.children[i] != kAbsent && !p.rest && !p.rest_any) return true;
    // What this call adds to b, undone before it returns (every step below undoes its
    // own): attribute bindings, and this op's class. Copying b instead costs a malloc storm.
    std::vector<const std::string*> bound;
    const size_t ops_before = b.op_classes.size();
    auto undo = [&] {
      for (const std::string* key : bound) b.attrs.erase(*key);
      b.op_classes.resize(ops_before);
      b.op_origins.resize(ops_before);
    };
    for (const auto& a : p.attrs) {
      const bool binds = !a.bind_var.empty() && !b.attrs.count(a.bind_var);
      if (!attr_holds(s, a, b)) {
        undo();
        return true;
      }
      if (binds) bound.push_back(&a.bind_var);
    }
    b.op_classes.push_back(c);
    b.op_origins.emplace_back(n.origin, n.site);
    // Inputs one after another; `rest` applies to the remaining present inputs.
    std::function<bool(size_t, EMatch&)> input = [&](size_t i, EMatch& bb) -> bool {
      if (i < p.args.size()) {
        if (i >= n.children.size() || n.children[i] == kAbsent) return true;
        return value(*p.args[i], n.children[i], bb, [&](EMatch& b2) { return input(i + 1, b2); });
      }
      if (p.rest && i < n.children.size()) {
        if (n.children[i] == kAbsent) return input(i + 1, bb);
        return value(*p.rest, n.children[i], bb, [&](EMatch& b2) { return input(i + 1, b2); });
      }
      if (!p.var.empty()) return bind_and(p.var, c, bb, k);
      return k(bb);
    };
    bool go_on = input(0, b);
    undo();
    return go_on;
  }

 private:
  const EGraph& g_;
  const EMatcher& m_;
  const Alternative& alt_;
};

}  // namespace

EMatcher::EMatcher(const RuleSet& rules, const EGraph& egraph, const std::vector<OpsetImport>& opsets)
    : rules_(rules), g_(egraph), opsets_(opsets) {}

int64_t EMatcher::opset(const std::string& domain) const {
  for (const auto& o : opsets_)
    if (o.domain == domain) return o.version;
  return 0;
}

std::vector<std::pair<int, int>> EMatcher::candidates(ClassId cls, const ENode& node, size_t* asked) const {
  const Automaton& a = rules_.automaton();
  std::unordered_map<int, std::vector<std::string>> answers;
  // The e-nodes that can stand at a path: every choice along the way.
  auto nodes_at = [&](const std::vector<int>& path, std::vector<ClassId>* classes_out) {
    std::vector<const ENode*> frontier{&node};
    std::vector<ClassId> classes{cls};
    for (int idx : path) {
      std::vector<const ENode*> next;
      std::vector<ClassId> next_classes;
      std::set<ClassId> seen;
      for (const ENode* n : frontier) {
        if (n->kind != ENode::Kind::Op || static_cast<size_t>(idx) >= n->children.size() || n->children[static_cast<size_t>(idx)] == kAbsent) continue;
        ClassId child = g_.find(n->children[static_cast<size_t>(idx)]);
        if (!seen.insert(child).second) continue;
        next_classes.push_back(child);
        for (const ENode& m : g_.eclass(child).nodes) {
          if (m.kind == ENode::Kind::Proj)
            for (const ENode& t : g_.eclass(m.children[0]).nodes) next.push_back(&t);
          else
            next.push_back(&m);
        }
      }
      frontier = std::move(next);
      classes = std::move(next_classes);
    }
    if (classes_out) *classes_out = classes;
    return frontier;
  };
  auto answer = [&](int qi) -> const std::vector<std::string>& {
    auto it = answers.find(qi);
    if (it != answers.end()) return it->second;
    if (asked) ++*asked;
    const Question& q = a.questions()[static_cast<size_t>(qi)];
    std::set<std::string> result;
    std::vector<ClassId> classes;
    auto nodes = nodes_at(q.path, &classes);
    switch (q.kind) {
      case Question::Kind::Op:
        for (const ENode* n : nodes)
          if (n->kind == ENode::Kind::Op) result.insert(op_label(g_.signature(n->op)));
        break;
      case Question::Kind::OutputIndex:
        for (ClassId c : classes)
          for (const ENode& n : g_.eclass(c).nodes) result.insert(n.kind == ENode::Kind::Proj ? std::to_string(n.op) : "0");
        break;
      case Question::Kind::IsConst:
        for (ClassId c : classes) result.insert(g_.eclass(c).data.is_constant() ? "1" : "0");
        break;
      case Question::Kind::AttrValue:
        for (const ENode* n : nodes) {
          if (n->kind != ENode::Kind::Op) continue;
          const OpSignature& s = g_.signature(n->op);
          const Attribute* at = find_attr(s, q.attr);
          if (!at) at = attribute_default(s.domain, s.op_type, q.attr, opset(s.domain));
          if (at) result.insert(attribute_answer(*at));
        }
        break;
    }
    return answers.emplace(qi, std::vector<std::string>(result.begin(), result.end())).first->second;
  };
  return a.run(answer);
}

void EMatcher::match(int rule, int alternative, ClassId cls, const ENode& node, std::vector<EMatch>& out, size_t limit) const {
  const CompiledRule& cr = rules_.rules()[static_cast<size_t>(rule)];
  const Alternative& alt = cr.alternatives[static_cast<size_t>(alternative)];
  Search search(g_, *this, alt);
  const Pattern& root = *alt.roots.front();
  const Pattern* root_op = root.kind == Pattern::Kind::Var ? alt.lets.at(root.var).get() : &root;
  EMatch b;
  b.rule = rule;
  b.alternative = alternative;
  if (root.kind == Pattern::Kind::Var) b.values[root.var] = g_.find(cls);
  // Further roots, then the where clauses.
  std::function<bool(size_t, EMatch&)> more_roots = [&](size_t r, EMatch& bb) -> bool {
    if (r == alt.roots.size()) {
      WhereContext ctx;
      ctx.type_of = [&](const std::string& var) -> const ValueType* {
        auto it = bb.values.find(var);
        return it == bb.values.end() ? nullptr : &g_.eclass(it->second).data.type;
      };
      ctx.is_constant = [&](const std::string& var) {
        auto it = bb.values.find(var);
        return it != bb.values.end() && g_.eclass(it->second).data.is_constant();
      };
      ctx.constant_of = [&](const std::string& var) -> const Tensor* {
        auto it = bb.values.find(var);
        return it == bb.values.end() ? nullptr : g_.eclass(it->second).data.constant;
      };
      // Users inside the matched root's own alternatives do not count: in the
      // e-graph the primitive LayerNorm chain still reads the residual sum that
      // the fused LayerNorm (the same class) reads too.
      ctx.uses_of = [&](const std::string& var) -> std::optional<size_t> {
        auto it = bb.values.find(var);
        if (it == bb.values.end()) return std::nullopt;
        // Only as deep as a fused computation reaches (the primitive LayerNorm chain reads
        // its input 8 levels down; 12 leaves room), or the rule's own patterns if deeper:
        // below that a user is no alternative of the matched computation, and the walk
        // would cover the rest of the network (through a fused op's inputs).
        int depth = 12;
        for (int d : alt.root_depth) depth = std::max(depth, d + 1);
        std::set<ClassId> below_roots;
        std::vector<ClassId> frontier;
        for (ClassId rc : bb.roots) frontier.push_back(g_.find(rc));
        const ClassId value = g_.find(it->second);
        for (int level = 0; level <= depth && !frontier.empty(); ++level) {
          std::vector<ClassId> next;
          for (ClassId c : frontier) {
            if (c == value || !below_roots.insert(c).second) continue;
            for (const ENode& n : g_.eclass(c).nodes)
              for (ClassId ch : n.children)
                if (ch != kAbsent) next.push_back(g_.find(ch));
          }
          frontier = std::move(next);
        }
        std::set<ClassId> users;
        for (const auto& [n, c] : g_.eclass(value).parents) {
          ClassId user = g_.find(c);
          const bool is_root = std::find(bb.roots.begin(), bb.roots.end(), user) != bb.roots.end();
          if (is_root || !below_roots.count(user)) users.insert(user);
        }
        return users.size();
      };
      ctx.attrs = &bb.attrs;
      if (!first_failed_predicate(cr.ast->where, ctx).empty()) return true;
      out.push_back(bb);
      return out.size() < limit;
    }
    const Pattern& p = *alt.roots[r];
    std::set<ClassId> tried;
    for (const auto& [var, v] : EMatch(bb).values)
      for (const auto& [pnode, pcls] : g_.eclass(v).parents) {
        ClassId value_cls = g_.find(pcls);
        if (!tried.insert(value_cls).second) continue;
        bool already = false;
        for (ClassId rc : bb.roots) already = already || g_.find(rc) == value_cls;
        if (already) continue;
        if (alt.alike_previous[r] && value_cls <= g_.find(bb.roots.back())) continue;  // alike roots in class order
        bool go_on = search.value(p, value_cls, bb, [&](EMatch& b2) {
          b2.roots.push_back(value_cls);
          bool more = more_roots(r + 1, b2);
          b2.roots.pop_back();
          return more;
        });
        if (!go_on) return false;
      }
    return true;
  };
  search.node_then(*root_op, g_.find(cls), node, b, [&](EMatch& bb) {
    bb.roots.push_back(g_.find(cls));
    bool more = more_roots(1, bb);
    bb.roots.pop_back();
    return more;
  });
}

}  // namespace geopt::dsl
