#include "dsl/matcher.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "dsl/schema_lookup.h"
#include "dsl/value_facts.h"
#include "dsl/where_eval.h"

namespace geopt::dsl {
namespace {

std::string op_label(const Node& n) { return (n.domain.empty() ? "" : n.domain + "::") + n.op_type; }


std::string attr_value_text(const Attribute& a) {
  std::string s = a.to_string();
  return s.substr(s.find('=') + 1);
}


bool literal_equals(const Attribute& a, const Literal& l) {
  switch (a.kind) {
    case AttrKind::Int: return l.kind == Literal::Kind::Number && static_cast<double>(a.i) == l.number;
    case AttrKind::Float: return l.kind == Literal::Kind::Number && a.f == static_cast<float>(l.number);
    case AttrKind::String: return (l.kind == Literal::Kind::String || l.kind == Literal::Kind::Ident) && a.s == l.text;
    case AttrKind::Ints:
      if (l.kind != Literal::Kind::List || l.items.size() != a.ints.size()) return false;
      for (size_t i = 0; i < a.ints.size(); ++i)
        if (static_cast<double>(a.ints[i]) != l.items[i].number) return false;
      return true;
    case AttrKind::Floats:
      if (l.kind != Literal::Kind::List || l.items.size() != a.floats.size()) return false;
      for (size_t i = 0; i < a.floats.size(); ++i)
        if (a.floats[i] != static_cast<float>(l.items[i].number)) return false;
      return true;
    case AttrKind::Strings:
      if (l.kind != Literal::Kind::List || l.items.size() != a.strings.size()) return false;
      for (size_t i = 0; i < a.strings.size(); ++i)
        if (a.strings[i] != l.items[i].text) return false;
      return true;
    default: return false;
  }
}

bool same_attr(const Attribute& a, const Attribute& b) { return a.kind == b.kind && a.to_string().substr(a.name.size()) == b.to_string().substr(b.name.size()); }



}  // namespace

Matcher::Matcher(const RuleSet& rules, const Model& model) : rules_(rules), model_(model) {}

const Tensor* Matcher::constant_of(const Value* v) const { return model_.graph->constant_value(v); }

namespace {

// The state of one full-match attempt.
class Attempt {
 public:
  Attempt(const Matcher& m, const Model& model, const Alternative& alt, Match& out, std::string* why)
      : matcher_(m), model_(model), alt_(alt), out_(out), why_(why) {}

  bool fail(const std::string& reason) {
    if (why_ && why_->empty()) *why_ = reason;
    return false;
  }

  const Attribute* attr_of(const Node& n, const std::string& name) {
    if (const Attribute* a = n.attr(name)) return a;
    return attribute_default(n.domain, n.op_type, name, model_.opset_version(n.domain));
  }

  bool attr_holds(const Node& n, const AttrPred& p) {
    const bool ok = attr_check(n, p);
    if (!ok) value_failed_ = true;
    return ok;
  }

  bool attr_check(const Node& n, const AttrPred& p) {
    const std::string where = "attribute '" + p.name + "' of " + n.describe();
    if (p.absent) return n.attr(p.name) ? fail(where + " is set, the rule requires it absent (" + p.loc.to_string() + ")") : true;
    const Attribute* a = attr_of(n, p.name);
    if (!a) return fail(where + " is missing and has no default (" + p.loc.to_string() + ")");
    if (!p.bind_var.empty()) {
      auto it = out_.attrs.find(p.bind_var);
      if (it == out_.attrs.end()) {
        out_.attrs.emplace(p.bind_var, *a);
        return true;
      }
      return same_attr(it->second, *a) ? true : fail(where + " is " + attr_value_text(*a) + ", but " + p.bind_var + " is " + attr_value_text(it->second));
    }
    std::optional<double> num = attr_number(*a);
    auto requires_text = [&]() -> std::string {
      switch (p.op) {
        case CmpOp::Approx: return format_number(p.value->number) + " ± " + format_number(p.tolerance);
        case CmpOp::In: {
          if (p.set.empty()) return "in " + format_number(p.lo) + " .. " + format_number(p.hi);
          std::string s = "in {";
          for (size_t i = 0; i < p.set.size(); ++i) s += (i ? ", " : "") + p.set[i].to_string();
          return s + "}";
        }
        default: return std::string(cmp_op_text(p.op)) + " " + p.value->to_string();
      }
    };
    bool ok = false;
    switch (p.op) {
      case CmpOp::Eq: ok = literal_equals(*a, *p.value); break;
      case CmpOp::Ne: ok = !literal_equals(*a, *p.value); break;
      case CmpOp::Lt: ok = num && *num < p.value->number; break;
      case CmpOp::Le: ok = num && *num <= p.value->number; break;
      case CmpOp::Gt: ok = num && *num > p.value->number; break;
      case CmpOp::Ge: ok = num && *num >= p.value->number; break;
      case CmpOp::Approx: ok = num && std::fabs(*num - p.value->number) <= p.tolerance; break;
      case CmpOp::In:
        if (p.set.empty()) {
          ok = num && *num >= p.lo && *num <= p.hi;
        } else {
          for (const auto& l : p.set) ok = ok || literal_equals(*a, l);
        }
        break;
    }
    if (ok) return true;
    return fail(where + " is " + attr_value_text(*a) + ", the rule requires " + requires_text() + " (" + p.loc.to_string() + ")");
  }

  bool bind_value(const std::string& var, Value* v, const SourceLoc& loc) {
    auto [it, inserted] = out_.values.emplace(var, v);
    if (inserted || it->second == v) return true;
    return fail(var + " is '" + it->second->name() + "' but here it would be '" + v->name() + "' (" + loc.to_string() + ")");
  }

  bool match_value(const Pattern& p, Value* v, const std::string& context) {
    if (!v) return fail(context + " is absent, the rule expects one (" + p.loc.to_string() + ")");
    switch (p.kind) {
      case Pattern::Kind::Var: {
        if (out_.values.count(p.var)) return bind_value(p.var, v, p.loc);
        auto let = alt_.lets.find(p.var);
        if (!bind_value(p.var, v, p.loc)) return false;
        return let == alt_.lets.end() ? true : match_value(*let->second, v, context);
      }
      case Pattern::Kind::Const: {
        if (!matcher_.constant_of(v)) return value_failed_ = depth_ >= 2, fail(context + " '" + v->name() + "' is not a constant (" + p.loc.to_string() + ")");
        return p.var.empty() || bind_value(p.var, v, p.loc);
      }
      case Pattern::Kind::Number: {
        const Tensor* t = matcher_.constant_of(v);
        value_failed_ = depth_ >= 2;  // a value mismatch below the root's own operands: a near miss
        if (!t) return fail(context + " '" + v->name() + "' is not a constant (" + p.loc.to_string() + ")");
        if (!constant_all_equal(t, p.number)) {
          auto s = constant_scalar(t);
          return fail(context + " '" + v->name() + "' is " + (s ? format_number(*s) : std::string("not one repeated value")) + ", the rule requires " + format_number(p.number) + " (" + p.loc.to_string() + ")");
        }
        value_failed_ = false;
        return true;
      }
      case Pattern::Kind::Op: {
        Node* n = v->producer();
        if (!n) return fail(context + " '" + v->name() + "' is a graph input or initializer, the rule expects " + p.op + " (" + p.loc.to_string() + ")");
        if (static_cast<int>(v->producer_output()) != p.output_index)
          return fail(context + " is output " + std::to_string(v->producer_output()) + " of " + n->describe() + ", the rule expects output " + std::to_string(p.output_index));
        if (!p.var.empty() && !bind_value(p.var, v, p.loc)) return false;
        return match_node(p, *n);
      }
    }
    return false;
  }

  bool match_node(const Pattern& p, Node& n) {
    ++depth_;
    if (p.op != "*") {
      const std::string want_domain = p.domain == "ai.onnx" ? "" : p.domain;
      if (n.op_type != p.op || n.domain != want_domain)
        return fail(n.describe() + " is " + op_label(n) + ", the rule expects " + (want_domain.empty() ? "" : want_domain + "::") + p.op + " (" + p.loc.to_string() + ")");
    }
    for (const auto& a : p.attrs)
      if (!attr_holds(n, a)) return false;
    const size_t given = p.args.size();
    for (size_t i = 0; i < given; ++i)
      if (!match_value(*p.args[i], n.input(i), "input " + std::to_string(i) + " of " + n.describe())) return false;
    for (size_t i = given; i < n.inputs().size(); ++i) {
      Value* in = n.input(i);
      if (!in || p.rest_any) continue;
      if (!p.rest) return fail(n.describe() + " has input " + std::to_string(i) + " ('" + in->name() + "'), the rule allows " + std::to_string(given) + " (" + p.loc.to_string() + ")");
      if (!match_value(*p.rest, in, "input " + std::to_string(i) + " of " + n.describe())) return false;
    }
    out_.nodes.push_back(&n);
    return true;
  }

 private:
  const Matcher& matcher_;
  const Model& model_;
  const Alternative& alt_;
  Match& out_;
  std::string* why_;

 public:
  int depth_ = 0;             // op patterns entered: how far a failed attempt got
  bool value_failed_ = false;  // it failed on a value (attribute, constant), not on the structure
};

}  // namespace

std::vector<std::pair<int, int>> Matcher::candidates_at(Node* node, size_t* asked) const {
  const Automaton& a = rules_.automaton();
  std::unordered_map<int, std::vector<std::string>> answers;  // each question asked once per candidate node
  auto answer = [&](int qi) -> const std::vector<std::string>& {
    auto it = answers.find(qi);
    if (it != answers.end()) return it->second;
    if (asked) ++*asked;
    const Question& q = a.questions()[static_cast<size_t>(qi)];
    std::string result = "<none>";
    Node* at = node;
    Value* value = nullptr;
    for (int idx : q.path) {
      value = at ? at->input(static_cast<size_t>(idx)) : nullptr;
      at = value ? value->producer() : nullptr;
    }
    switch (q.kind) {
      case Question::Kind::Op:
        if (at) result = op_label(*at);
        break;
      case Question::Kind::OutputIndex:
        if (value) result = std::to_string(value->producer_output());
        break;
      case Question::Kind::IsConst: result = constant_of(value) ? "1" : "0"; break;
      case Question::Kind::AttrValue: {
        if (at) {
          const Attribute* attr = at->attr(q.attr);
          if (!attr) attr = attribute_default(at->domain, at->op_type, q.attr, model_.opset_version(at->domain));
          if (attr) result = attribute_answer(*attr);
        }
        break;
      }
    }
    return answers.emplace(qi, std::vector<std::string>{std::move(result)}).first->second;
  };
  return a.run(answer);
}

bool Matcher::try_rule(int rule, int alternative, Node* node, Match& out, std::string* why, int* depth) const {
  const CompiledRule& cr = rules_.rules()[static_cast<size_t>(rule)];
  const Alternative& alt = cr.alternatives[static_cast<size_t>(alternative)];
  out = Match{};
  out.rule = rule;
  out.alternative = alternative;
  Attempt attempt(*this, model_, alt, out, why);
  const Pattern& root = *alt.roots.front();
  const Pattern* root_op = &root;
  if (root.kind == Pattern::Kind::Var) {  // `match %v` with %v a let
    root_op = alt.lets.at(root.var).get();
    out.values[root.var] = node->output(static_cast<size_t>(root_op->output_index));
  }
  if (root_op->var.size() && node->output(static_cast<size_t>(root_op->output_index)))
    out.values[root_op->var] = node->output(static_cast<size_t>(root_op->output_index));
  if (!attempt.match_node(*root_op, *node)) {
    // A failed value check means the structure matched up to there: a near miss.
    if (depth) *depth = attempt.value_failed_ ? 500 + attempt.depth_ : attempt.depth_;
    return false;
  }
  if (depth) *depth = attempt.depth_ + 1000;  // past the pattern: roots and where clauses come after
  out.roots.push_back(node);
  // Further roots: nodes that consume a value bound so far (greedy, first that matches).
  for (size_t r = 1; r < alt.roots.size(); ++r) {
    const Pattern& p = *alt.roots[r];
    bool found = false;
    std::vector<Node*> candidates;
    for (const auto& [var, v] : out.values)
      for (const Use& u : v->uses())
        if (std::find(out.roots.begin(), out.roots.end(), u.node) == out.roots.end() &&
            std::find(candidates.begin(), candidates.end(), u.node) == candidates.end())
          candidates.push_back(u.node);
    if (alt.alike_previous[r]) {  // alike roots in graph order: the earliest first, each after the one before
      auto position = [this](const Node* n) {
        const auto& nodes = model_.graph->nodes();
        return std::find_if(nodes.begin(), nodes.end(), [n](const auto& m) { return m.get() == n; }) - nodes.begin();
      };
      const auto after = position(out.roots.back());
      std::vector<std::pair<std::ptrdiff_t, Node*>> ordered;
      for (Node* c : candidates)
        if (auto at = position(c); at > after) ordered.emplace_back(at, c);
      std::sort(ordered.begin(), ordered.end());
      candidates.clear();
      for (const auto& [at, c] : ordered) candidates.push_back(c);
    }
    for (Node* cand : candidates) {
      Match saved = out;
      std::string ignored;
      Attempt sub(*this, model_, alt, out, &ignored);
      if (!p.var.empty()) out.values[p.var] = cand->output(static_cast<size_t>(p.output_index));
      if (sub.match_node(p, *cand)) {
        out.roots.push_back(cand);
        found = true;
        break;
      }
      out = saved;
    }
    if (!found) return attempt.fail("no node matches root " + std::to_string(r + 1) + " (" + p.loc.to_string() + ")");
  }
  // where clauses
  WhereContext ctx;
  auto value_of = [&](const std::string& var) -> Value* { return out.values.count(var) ? out.values.at(var) : nullptr; };
  ctx.type_of = [&](const std::string& var) -> const ValueType* {
    Value* v = value_of(var);
    return v ? &v->type : nullptr;
  };
  ctx.constant_of = [&](const std::string& var) { return constant_of(value_of(var)); };
  ctx.uses_of = [&](const std::string& var) -> std::optional<size_t> {
    Value* v = value_of(var);
    if (!v) return std::nullopt;
    return v->uses().size();
  };
  ctx.attrs = &out.attrs;
  ctx.name_of = [&](const std::string& var) -> std::string {
    Value* v = value_of(var);
    return v ? v->name() : "";
  };
  std::string failed = first_failed_predicate(cr.ast->where, ctx);
  if (!failed.empty()) return attempt.fail(failed);
  return true;
}

std::vector<Match> Matcher::match_at(Node* node, size_t* asked) const {
  std::vector<Match> out;
  int last_rule = -1;
  for (const auto& [rule, alt] : candidates_at(node, asked)) {
    if (rule == last_rule) continue;  // first matching alternative per rule
    Match m;
    if (try_rule(rule, alt, node, m, nullptr)) {
      out.push_back(std::move(m));
      last_rule = rule;
    }
  }
  return out;
}

}  // namespace geopt::dsl
