#include "dsl/ematcher.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "dsl/schema_lookup.h"
#include "dsl/value_facts.h"
#include "dsl/where_eval.h"
#include "ir/domain.h"

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
  return attribute_answer(want) == attribute_answer(a) &&
         (a.kind != AttrKind::Int || l.is_integer || l.kind != Literal::Kind::Number ||
          std::floor(l.number) == l.number);
}

std::string attr_requires(const AttrPred& p) {
  switch (p.op) {
    case CmpOp::Approx:
      return format_number(p.value->number) + " ± " + format_number(p.tolerance);
    case CmpOp::In: {
      if (p.set.empty()) return "in " + format_number(p.lo) + " .. " + format_number(p.hi);
      std::string s = "in {";
      for (size_t i = 0; i < p.set.size(); ++i) s += (i ? ", " : "") + p.set[i].to_string();
      return s + "}";
    }
    default:
      return std::string(cmp_op_text(p.op)) + " " + p.value->to_string();
  }
}

using Cont = std::function<bool(EMatch&)>;  // returns false to stop enumerating

// The variables a pattern binds: values (and `const %c`, `Op(...) as %v`), attributes.
void pattern_vars(const Pattern& p, std::vector<std::string>& values, std::vector<std::string>& attrs) {
  if (!p.var.empty()) values.push_back(p.var);
  if (p.kind != Pattern::Kind::Op) return;
  for (const auto& a : p.attrs)
    if (!a.bind_var.empty()) attrs.push_back(a.bind_var);
  for (const auto& a : p.args) pattern_vars(*a, values, attrs);
  if (p.rest) pattern_vars(*p.rest, values, attrs);
}

class Search {
 public:
  Search(const EGraph& g, const EMatcher& m, const Alternative& alt, Miss* miss)
      : g_(g), m_(m), alt_(alt), miss_(miss) {}

  // The matched e-node of each op class (parallel to EMatch::op_classes), valid while
  // the search runs: `uses` needs to know which alternative of a class was taken.
  std::vector<const ENode*> op_nodes;
  bool tracing = true;  // off while trying candidates for further roots

  // Records a failure when it got further than any before; the text is built only then.
  template <class Text>
  bool fail(int depth, Text&& text) {
    if (miss_ && tracing && depth > miss_->depth) {
      miss_->depth = depth;
      miss_->reason = text();
    }
    return true;  // keep enumerating elsewhere
  }

  const Attribute* attr_of(const OpSignature& s, const std::string& name) const {
    if (const Attribute* a = find_attr(s, name)) return a;
    return attribute_default(s.domain, s.op_type, name, m_.opset(s.domain));
  }

  // nullopt when the predicate holds; else why not.
  std::optional<std::string> attr_fails(const OpSignature& s, ClassId c, const ENode& n, const AttrPred& p,
                                        EMatch& b) const {
    auto where = [&] { return "attribute '" + p.name + "' of " + describe_enode(g_, c, n); };
    auto value_text = [](const Attribute& a) { return a.to_string().substr(a.name.size() + 1); };
    // An attribute the op takes as an input at the model's opset (ReduceMean's axes since
    // 18) is that input's constant; absent input, unset attribute.
    std::optional<Attribute> from_input;
    const Attribute* a = nullptr;
    bool set = false;
    if (const auto k = m_.moved_attribute(n.op, p.name)) {
      const ClassId child = *k < n.children.size() ? n.children[*k] : kAbsent;
      if (child != kAbsent) {
        const ClassData& d = g_.eclass(child).data;
        if (!d.constant)
          return where() + " is input " + std::to_string(*k) + " ('" + d.name +
                 "') at this opset, and not a constant (" + p.loc.to_string() + ")";
        from_input = attribute_from_input(s.domain, s.op_type, p.name, *d.constant);
        if (!from_input)
          return where() + " is input " + std::to_string(*k) + " ('" + d.name +
                 "') at this opset, of a shape the attribute cannot hold (" + p.loc.to_string() + ")";
        a = &*from_input;
        set = true;
      } else if ((from_input = moved_attribute_default(s.domain, s.op_type, p.name))) {
        a = &*from_input;  // absent input: the value the attribute took by default
      }
    } else {
      a = attr_of(s, p.name);
      set = find_attr(s, p.name) != nullptr;
    }
    if (p.absent) {
      if (!set) return std::nullopt;
      return where() + " is set, the rule requires it absent (" + p.loc.to_string() + ")";
    }
    // An attribute the op does not have at the model's opset (BatchNormalization's
    // training_mode before opset 14) is unequal to any value.
    if (!a && p.op == CmpOp::Ne && p.bind_var.empty()) return std::nullopt;
    if (!a && !p.bind_var.empty()) {
      // Unset, with no default (Conv's dilations, pads, strides when an exporter leaves
      // them out): bound as unset, so a rewrite that copies it leaves it unset too.
      auto it = b.attrs.find(p.bind_var);
      if (it == b.attrs.end()) {
        Attribute unset;
        unset.name = p.name;
        b.attrs.emplace(p.bind_var, std::move(unset));
        return std::nullopt;
      }
      if (it->second.kind == AttrKind::Undefined) return std::nullopt;
      return where() + " is unset, but " + p.bind_var + " is " + value_text(it->second);
    }
    if (!a) return where() + " is missing and has no default (" + p.loc.to_string() + ")";
    if (!p.bind_var.empty()) {
      auto it = b.attrs.find(p.bind_var);
      if (it == b.attrs.end()) {
        b.attrs.emplace(p.bind_var, *a);
        return std::nullopt;
      }
      if (it->second.same_value(*a)) return std::nullopt;
      return where() + " is " + value_text(*a) + ", but " + p.bind_var + " is " + value_text(it->second);
    }
    auto num = attr_number(*a);
    bool ok = false;
    switch (p.op) {
      case CmpOp::Eq:
        ok = literal_equals(*a, *p.value);
        break;
      case CmpOp::Ne:
        ok = !literal_equals(*a, *p.value);
        break;
      case CmpOp::Lt:
        ok = num && *num < p.value->number;
        break;
      case CmpOp::Le:
        ok = num && *num <= p.value->number;
        break;
      case CmpOp::Gt:
        ok = num && *num > p.value->number;
        break;
      case CmpOp::Ge:
        ok = num && *num >= p.value->number;
        break;
      case CmpOp::Approx:
        ok = num && std::fabs(*num - p.value->number) <= p.tolerance;
        break;
      case CmpOp::In:
        if (p.set.empty()) {
          ok = num && *num >= p.lo && *num <= p.hi;
        } else {
          for (const auto& l : p.set) ok = ok || literal_equals(*a, l);
        }
        break;
    }
    if (ok) return std::nullopt;
    return where() + " is " + value_text(*a) + ", the rule requires " + attr_requires(p) + " (" +
           p.loc.to_string() + ")";
  }

  // Matches pattern p against class c (an operand described by `context`); calls k for
  // every way it matches.
  bool value(const Pattern& p, ClassId c, EMatch& b, const Cont& k,
             const std::function<std::string()>& context) {
    const int here = static_cast<int>(b.op_classes.size());
    if (c == kAbsent)
      return fail(here,
                  [&] { return context() + " is absent, the rule expects one (" + p.loc.to_string() + ")"; });
    c = g_.find(c);
    const EClass& ec = g_.eclass(c);
    auto named = [&] { return context() + " '" + ec.data.name + "'"; };
    // A value check below the root's own operands failed: the structure matched that far.
    const int value_depth = here >= 2 ? 500 + here : here;
    switch (p.kind) {
      case Pattern::Kind::Var: {
        auto it = b.values.find(p.var);
        if (it != b.values.end()) {
          if (g_.find(it->second) == c) return k(b);
          return fail(here, [&] {
            return p.var + " is '" + g_.eclass(it->second).data.name + "' but here it would be '" +
                   ec.data.name + "' (" + p.loc.to_string() + ")";
          });
        }
        // Every step below undoes its own bindings, so undoing ours restores b (no copy).
        b.values[p.var] = c;
        auto let = alt_.lets.find(p.var);
        bool go_on = let == alt_.lets.end() ? k(b) : value(*let->second, c, b, k, context);
        b.values.erase(p.var);
        return go_on;
      }
      case Pattern::Kind::Const: {
        if (!ec.data.is_constant())
          return fail(value_depth,
                      [&] { return named() + " is not a constant (" + p.loc.to_string() + ")"; });
        if (p.var.empty()) return k(b);
        return bind_and(p.var, c, b, k);
      }
      case Pattern::Kind::Number: {
        if (!ec.data.constant)
          return fail(value_depth,
                      [&] { return named() + " is not a constant (" + p.loc.to_string() + ")"; });
        if (constant_all_equal(ec.data.constant, p.number)) return k(b);
        return fail(value_depth, [&] {
          auto s = constant_scalar(ec.data.constant);
          return named() + " is " + (s ? format_number(*s) : std::string("not one repeated value")) +
                 ", the rule requires " + format_number(p.number) + " (" + p.loc.to_string() + ")";
        });
      }
      case Pattern::Kind::Op: {
        if (!p.var.empty()) {
          auto it = b.values.find(p.var);
          if (it != b.values.end() && g_.find(it->second) != c)
            return fail(here, [&] {
              return p.var + " is '" + g_.eclass(it->second).data.name + "' but here it would be '" +
                     ec.data.name + "' (" + p.loc.to_string() + ")";
            });
        }
        bool any_op = false;
        for (const ENode& n : ec.nodes) {
          // An op's k-th output is a Proj(k) of the op's tuple class, or the op itself when it has one
          // output.
          if (n.kind == ENode::Kind::Proj) {
            any_op = true;
            const ClassId tuple = g_.find(n.children[0]);
            if (static_cast<int>(n.op) != p.output_index) {
              for (const ENode& t : g_.eclass(tuple).nodes)
                fail(here, [&] {
                  return context() + " is output " + std::to_string(n.op) + " of " +
                         describe_enode(g_, tuple, t) + ", the rule expects output " +
                         std::to_string(p.output_index);
                });
              continue;
            }
            for (const ENode& t : g_.eclass(tuple).nodes)
              if (!node_then(p, c, t, b, k)) return false;
          } else if (n.kind == ENode::Kind::Op) {
            any_op = true;
            if (p.output_index == 0 && g_.signature(n.op).num_outputs == 1) {
              if (!node_then(p, c, n, b, k)) return false;
            } else {
              fail(here, [&] {
                return context() + " is output 0 of " + describe_enode(g_, c, n) +
                       ", the rule expects output " + std::to_string(p.output_index);
              });
            }
          }
        }
        if (!any_op)
          fail(here, [&] {
            return named() + " is a graph input or initializer, the rule expects " + p.op + " (" +
                   p.loc.to_string() + ")";
          });
        return true;
      }
    }
    return true;
  }

  bool bind_and(const std::string& var, ClassId c, EMatch& b, const Cont& k) {
    auto it = b.values.find(var);
    if (it != b.values.end()) return g_.find(it->second) == c ? k(b) : true;
    b.values[var] = c;
    bool go_on = k(b);
    b.values.erase(var);
    return go_on;
  }

  // Matches an op pattern against one e-node whose value is class c.
  bool node_then(const Pattern& p, ClassId c, const ENode& n, EMatch& b, const Cont& k) {
    if (n.kind != ENode::Kind::Op) return true;
    const int here = static_cast<int>(b.op_classes.size()) + 1;
    const OpSignature& s = g_.signature(n.op);
    if (p.op != "*") {
      const std::string want_domain = canonical_domain(p.domain);
      if (s.op_type != p.op || s.domain != want_domain)
        return fail(here, [&] {
          return describe_enode(g_, c, n) + " is " + op_label(s) + ", the rule expects " +
                 (want_domain.empty() ? "" : want_domain + "::") + p.op + " (" + p.loc.to_string() + ")";
        });
    }
    // What this call adds to b, undone before it returns (every step below undoes its
    // own): attribute bindings, and this op's class. Copying b instead costs a malloc storm.
    std::vector<const std::string*> bound;
    const size_t ops_before = b.op_classes.size();
    auto undo = [&] {
      for (const std::string* key : bound) b.attrs.erase(*key);
      b.op_classes.resize(ops_before);
      b.op_origins.resize(ops_before);
      op_nodes.resize(ops_before);
    };
    for (const auto& a : p.attrs) {
      const bool binds = !a.bind_var.empty() && !b.attrs.count(a.bind_var);
      if (auto why = attr_fails(s, c, n, a, b)) {
        fail(500 + here, [&] { return *why; });
        undo();
        return true;
      }
      if (binds) bound.push_back(&a.bind_var);
    }
    for (size_t i = p.args.size(); i < n.children.size(); ++i)
      if (n.children[i] != kAbsent && !p.rest && !p.rest_any &&
          !is_attribute_input(s.domain, s.op_type, i, m_.opset(s.domain))) {
        undo();
        return fail(here, [&] {
          return describe_enode(g_, c, n) + " has input " + std::to_string(i) + " ('" +
                 g_.eclass(n.children[i]).data.name + "'), the rule allows " + std::to_string(p.args.size()) +
                 " (" + p.loc.to_string() + ")";
        });
      }
    b.op_classes.push_back(c);
    b.op_origins.emplace_back(n.origin, n.site);
    op_nodes.push_back(&n);
    // Inputs one after another; `rest` applies to the remaining present inputs.
    std::function<bool(size_t, EMatch&)> input = [&](size_t i, EMatch& bb) -> bool {
      auto context = [&, i] { return "input " + std::to_string(i) + " of " + describe_enode(g_, c, n); };
      if (i < p.args.size()) {
        const ClassId child = i < n.children.size() ? n.children[i] : kAbsent;
        return value(
            *p.args[i], child, bb, [&](EMatch& b2) { return input(i + 1, b2); }, context);
      }
      if (p.rest && i < n.children.size()) {
        if (n.children[i] == kAbsent) return input(i + 1, bb);
        // The rest pattern's variables are lists: this input's bindings join them and the
        // next input binds them afresh; put back before returning, for the steps below
        // to undo as they do.
        return value(
            *p.rest, n.children[i], bb,
            [&](EMatch& b2) {
              std::vector<std::string> value_vars, attr_vars;
              pattern_vars(*p.rest, value_vars, attr_vars);
              std::vector<std::pair<std::string, ClassId>> moved_values;
              std::vector<std::pair<std::string, Attribute>> moved_attrs;
              for (const std::string& v : value_vars)
                if (auto it = b2.values.find(v); it != b2.values.end()) {
                  b2.lists[v].push_back(it->second);
                  moved_values.emplace_back(*it);
                  b2.values.erase(it);
                }
              for (const std::string& v : attr_vars)
                if (auto it = b2.attrs.find(v); it != b2.attrs.end()) {
                  b2.attr_lists[v].push_back(it->second);
                  moved_attrs.emplace_back(it->first, std::move(it->second));
                  b2.attrs.erase(it);
                }
              const bool go_on = input(i + 1, b2);
              for (auto& [v, c] : moved_values) {
                b2.lists[v].pop_back();
                if (b2.lists[v].empty()) b2.lists.erase(v);
                b2.values[v] = c;
              }
              for (auto& [v, a] : moved_attrs) {
                b2.attr_lists[v].pop_back();
                if (b2.attr_lists[v].empty()) b2.attr_lists.erase(v);
                b2.attrs[v] = std::move(a);
              }
              return go_on;
            },
            context);
      }
      if (!p.var.empty()) return bind_and(p.var, c, bb, k);
      return k(bb);
    };
    bool go_on = input(0, b);
    undo();
    return go_on;
  }

  // The values computed from `value` outside the match: its consumers' classes, less
  // those that are only alternatives of the matched computation (what the other
  // e-nodes of a matched class read, down to the match's bound values). On a graph as
  // written every class has one e-node, so that is the node's consumers.
  size_t uses_outside(ClassId value, const EMatch& b, int depth) const {
    value = g_.find(value);
    std::unordered_set<ClassId> matched, bound, shadow;
    for (ClassId c : b.op_classes) matched.insert(g_.find(c));
    for (const auto& [var, c] : b.values) bound.insert(g_.find(c));
    for (const auto& [var, cs] : b.lists)
      for (ClassId c : cs) bound.insert(g_.find(c));
    std::vector<ClassId> frontier;
    auto enter = [&](ClassId child, std::vector<ClassId>& into) {
      if (child == kAbsent) return;
      child = g_.find(child);
      if (child == value || matched.count(child) || bound.count(child) || !shadow.insert(child).second)
        return;
      into.push_back(child);
    };
    for (size_t i = 0; i < b.op_classes.size(); ++i)
      for (const ENode& n : g_.eclass(b.op_classes[i]).nodes)
        if (!(n == *op_nodes[i]))
          for (ClassId ch : n.children) enter(ch, frontier);
    // As deep as a fused computation reaches (a primitive LayerNorm chain reads its input
    // 8 levels down), or the rule's own patterns if deeper.
    for (int level = 0; level < depth && !frontier.empty(); ++level) {
      std::vector<ClassId> next;
      for (ClassId c : frontier)
        for (const ENode& n : g_.eclass(c).nodes)
          for (ClassId ch : n.children) enter(ch, next);
      frontier = std::move(next);
    }
    std::set<ClassId> users;
    for (const auto& [n, c] : g_.eclass(value).parents) {
      ClassId user = g_.find(c);
      // A node of the value's own class reading it (Transpose(Transpose(x)) merged with
      // x) is a cycle, which no extraction can take: no use.
      if (user != value && !shadow.count(user)) users.insert(user);
    }
    return users.size();
  }

 private:
  const EGraph& g_;
  const EMatcher& m_;
  const Alternative& alt_;
  Miss* miss_;
};

}  // namespace

std::string describe_enode(const EGraph& g, ClassId cls, const ENode& n) {
  const ClassData& d = g.eclass(cls).data;
  std::string op = n.kind == ENode::Kind::Op ? op_label(g.signature(n.op)) : "value";
  if (n.origin < 0 && !d.node_name.empty()) return op + " '" + d.node_name + "'";
  return op + " (value '" + d.name + "')";
}

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
        if (n->kind != ENode::Kind::Op || static_cast<size_t>(idx) >= n->children.size() ||
            n->children[static_cast<size_t>(idx)] == kAbsent)
          continue;
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
          if (n->kind == ENode::Kind::Op) result.insert(label_of(n->op));
        break;
      case Question::Kind::OutputIndex:
        for (ClassId c : classes)
          for (const ENode& n : g_.eclass(c).nodes)
            result.insert(n.kind == ENode::Kind::Proj ? std::to_string(n.op) : "0");
        break;
      case Question::Kind::IsConst:
        for (ClassId c : classes) result.insert(g_.eclass(c).data.is_constant() ? "1" : "0");
        break;
      case Question::Kind::AttrValue:
        for (const ENode* n : nodes)
          if (n->kind == ENode::Kind::Op)
            if (const std::string* answer = attribute_answer_of(*n, q.attr)) result.insert(*answer);
        break;
    }
    return answers.emplace(qi, std::vector<std::string>(result.begin(), result.end())).first->second;
  };
  return a.run(answer);
}

const std::string& EMatcher::label_of(uint32_t signature) const {
  if (signature >= labels_.size()) {
    labels_.resize(signature + 1);
    labelled_.resize(signature + 1, false);
  }
  if (!labelled_[signature]) {
    labels_[signature] = op_label(g_.signature(signature));
    labelled_[signature] = true;
  }
  return labels_[signature];
}

std::optional<size_t> EMatcher::moved_attribute(uint32_t signature, const std::string& attr) const {
  auto [it, fresh] = moved_attributes_.try_emplace({signature, attr});
  if (fresh) {
    const OpSignature& s = g_.signature(signature);
    it->second = attribute_input(s.domain, s.op_type, attr, opset(s.domain));
  }
  return it->second;
}

const std::string* EMatcher::attribute_answer_of(const ENode& node, const std::string& attr) const {
  const uint32_t signature = node.op;
  const OpSignature& sig = g_.signature(signature);
  if (const auto k = moved_attribute(signature, attr)) {
    // An attribute-input: the answer is its constant's, which differs node by node.
    const ClassId child = *k < node.children.size() ? node.children[*k] : kAbsent;
    const Tensor* constant = child == kAbsent ? nullptr : g_.eclass(child).data.constant;
    std::optional<Attribute> a = constant ? attribute_from_input(sig.domain, sig.op_type, attr, *constant)
                                 : child == kAbsent ? moved_attribute_default(sig.domain, sig.op_type, attr)
                                                    : std::nullopt;
    if (!a) return nullptr;
    input_attribute_answer_ = attribute_answer(*a);
    return &input_attribute_answer_;
  }
  auto [it, fresh] = attribute_answers_.try_emplace({signature, attr});
  if (fresh) {
    const OpSignature& s = g_.signature(signature);
    const Attribute* at = find_attr(s, attr);
    if (!at) at = attribute_default(s.domain, s.op_type, attr, opset(s.domain));
    if (at) it->second = attribute_answer(*at);
  }
  return it->second ? &*it->second : nullptr;
}

void EMatcher::match(int rule, int alternative, ClassId cls, const ENode& node, std::vector<EMatch>& out,
                     size_t limit, Miss* miss) const {
  const CompiledRule& cr = rules_.rules()[static_cast<size_t>(rule)];
  const Alternative& alt = cr.alternatives[static_cast<size_t>(alternative)];
  Search search(g_, *this, alt, miss);
  const Pattern& root = *alt.roots.front();
  const Pattern* root_op = root.kind == Pattern::Kind::Var ? alt.lets.at(root.var).get() : &root;
  // The root stands for a value: a multi-output op's pattern stands for one of its
  // outputs (`Op(...)[k]`, default 0), the Proj(k) of the op's tuple class, never the
  // tuple itself (a rewrite must not merge a tuple with a value).
  ClassId root_value = g_.find(cls);
  if (node.kind == ENode::Kind::Op && g_.signature(node.op).num_outputs > 1) {
    root_value = kAbsent;
    for (const auto& [parent, parent_cls] : g_.eclass(cls).parents)
      if (parent.kind == ENode::Kind::Proj && static_cast<int>(parent.op) == root_op->output_index)
        root_value = g_.find(parent_cls);
    if (root_value == kAbsent) return;  // that output is never read: nothing to rewrite
  }
  EMatch b;
  b.rule = rule;
  b.alternative = alternative;
  b.root_node = node;
  if (root.kind == Pattern::Kind::Var) b.values[root.var] = root_value;
  int uses_depth = 12;
  for (int d : alt.root_depth) uses_depth = std::max(uses_depth, d + 1);
  // Further roots, then the where clauses.
  std::function<bool(size_t, EMatch&)> more_roots = [&](size_t r, EMatch& bb) -> bool {
    const int past_patterns = 1000 + static_cast<int>(bb.op_classes.size());
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
      ctx.uses_of = [&](const std::string& var) -> std::optional<size_t> {
        auto it = bb.values.find(var);
        if (it == bb.values.end()) return std::nullopt;
        return search.uses_outside(it->second, bb, uses_depth);
      };
      ctx.name_of = [&](const std::string& var) -> std::string {
        auto it = bb.values.find(var);
        return it == bb.values.end() ? "" : g_.eclass(it->second).data.name;
      };
      ctx.attrs = &bb.attrs;
      ctx.dim_ranges = g_.dim_ranges.empty() ? nullptr : &g_.dim_ranges;
      std::string failed = first_failed_predicate(cr.ast->where, ctx);
      if (!failed.empty()) return search.fail(past_patterns + 1, [&] { return failed; });
      out.push_back(bb);
      return out.size() < limit;
    }
    const Pattern& p = *alt.roots[r];
    std::set<ClassId> tried;
    const size_t found_before = out.size();
    bool reached_end = false;
    for (const auto& [var, v] : EMatch(bb).values)
      for (const auto& [pnode, pcls] : g_.eclass(v).parents) {
        ClassId value_cls = g_.find(pcls);
        if (!tried.insert(value_cls).second) continue;
        bool already = false;
        for (ClassId rc : bb.roots) already = already || g_.find(rc) == value_cls;
        if (already) continue;
        if (alt.alike_previous[r] && value_cls <= g_.find(bb.roots.back()))
          continue;  // alike roots in class order
        const bool was_tracing = search.tracing;
        search.tracing = false;  // a candidate that is not this root is no miss
        bool go_on = search.value(
            p, value_cls, bb,
            [&](EMatch& b2) {
              search.tracing = was_tracing;
              reached_end = true;
              b2.roots.push_back(value_cls);
              bool more = more_roots(r + 1, b2);
              b2.roots.pop_back();
              search.tracing = false;
              return more;
            },
            [] { return std::string(); });
        search.tracing = was_tracing;
        if (!go_on) return false;
      }
    if (!reached_end && out.size() == found_before)
      search.fail(past_patterns, [&] {
        return "no node matches root " + std::to_string(r + 1) + " (" + p.loc.to_string() + ")";
      });
    return true;
  };
  search.node_then(*root_op, root_value, node, b, [&](EMatch& bb) {
    bb.roots.push_back(root_value);
    bool more = more_roots(1, bb);
    bb.roots.pop_back();
    return more;
  });
}

}  // namespace geopt::dsl
