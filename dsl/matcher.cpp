#include "dsl/matcher.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_map>

#include "dsl/schema_lookup.h"
#include "eval/host_tensor.h"

namespace geopt::dsl {
namespace {

std::string op_label(const Node& n) { return (n.domain.empty() ? "" : n.domain + "::") + n.op_type; }

std::string fmt(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

std::string attr_value_text(const Attribute& a) {
  std::string s = a.to_string();
  return s.substr(s.find('=') + 1);
}

// Numeric view of an attribute (ints and floats), for comparisons.
std::optional<double> attr_number(const Attribute& a) {
  if (a.kind == AttrKind::Int) return static_cast<double>(a.i);
  if (a.kind == AttrKind::Float) return static_cast<double>(a.f);
  return std::nullopt;
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

// All elements of a constant equal `number` (compared in the constant's own precision).
bool constant_all_equal(const Tensor& t, double number) {
  HostTensor h = HostTensor::view(t);
  if (h.size() == 0 || t.dtype == DType::String) return false;
  for (int64_t i = 0; i < h.size(); ++i) {
    double v = h.real_at(i);
    if (t.dtype == DType::F32 || t.dtype == DType::F16 || t.dtype == DType::BF16) {
      if (static_cast<float>(v) != static_cast<float>(number)) return false;
    } else if (v != number) {
      return false;
    }
  }
  return true;
}

std::optional<double> constant_scalar(const Tensor& t) {
  HostTensor h = HostTensor::view(t);
  if (h.size() == 0 || t.dtype == DType::String || t.dtype == DType::Undefined) return std::nullopt;
  double first = h.real_at(0);
  for (int64_t i = 1; i < h.size(); ++i)
    if (h.real_at(i) != first) return std::nullopt;
  return first;
}

}  // namespace

Matcher::Matcher(const RuleSet& rules, const Model& model) : rules_(rules), model_(model) {
  for (const Value* v : model.graph->inputs()) graph_inputs_[v] = true;
}

const Tensor* Matcher::constant_of(const Value* v) const {
  if (!v) return nullptr;
  if (v->initializer) return graph_inputs_.count(v) ? nullptr : v->initializer.get();
  const Node* p = v->producer();
  if (p && p->op_type == "Constant" && p->domain.empty()) {
    const Attribute* a = p->attr("value");
    if (a && !a->tensors.empty()) return a->tensors[0].get();
  }
  return nullptr;
}

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
        case CmpOp::Approx: return fmt(p.value->number) + " ± " + fmt(p.tolerance);
        case CmpOp::In: {
          if (p.set.empty()) return "in " + fmt(p.lo) + " .. " + fmt(p.hi);
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
        if (!matcher_.constant_of(v)) return fail(context + " '" + v->name() + "' is not a constant (" + p.loc.to_string() + ")");
        return p.var.empty() || bind_value(p.var, v, p.loc);
      }
      case Pattern::Kind::Number: {
        const Tensor* t = matcher_.constant_of(v);
        if (!t) return fail(context + " '" + v->name() + "' is not a constant (" + p.loc.to_string() + ")");
        if (!constant_all_equal(*t, p.number)) {
          auto s = constant_scalar(*t);
          return fail(context + " '" + v->name() + "' is " + (s ? fmt(*s) : std::string("not one repeated value")) + ", the rule requires " + fmt(p.number) + " (" + p.loc.to_string() + ")");
        }
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
};

}  // namespace

std::vector<std::pair<int, int>> Matcher::candidates_at(Node* node, size_t* asked) const {
  const Automaton& a = rules_.automaton();
  std::vector<std::pair<int, int>> out;
  std::unordered_map<int, std::string> answers;  // each question asked once per candidate node
  auto answer = [&](int qi) -> const std::string& {
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
    return answers.emplace(qi, std::move(result)).first->second;
  };
  std::vector<const AutomatonNode*> stack{a.root()};
  while (!stack.empty()) {
    const AutomatonNode* n = stack.back();
    stack.pop_back();
    if (!n) continue;
    out.insert(out.end(), n->accept.begin(), n->accept.end());
    if (n->otherwise) stack.push_back(n->otherwise.get());
    if (n->question >= 0) {
      auto it = n->on_answer.find(answer(n->question));
      if (it != n->on_answer.end()) stack.push_back(it->second.get());
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool Matcher::try_rule(int rule, int alternative, Node* node, Match& out, std::string* why) const {
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
  if (!attempt.match_node(*root_op, *node)) return false;
  out.roots.push_back(node);
  // Further roots: nodes that consume a value bound so far (greedy, first that matches).
  for (size_t r = 1; r < alt.roots.size(); ++r) {
    const Pattern& p = *alt.roots[r];
    bool found = false;
    std::vector<Node*> tried;
    for (const auto& [var, v] : Match(out).values) {
      for (const Use& u : v->uses()) {
        Node* cand = u.node;
        if (std::find(out.roots.begin(), out.roots.end(), cand) != out.roots.end()) continue;
        if (std::find(tried.begin(), tried.end(), cand) != tried.end()) continue;
        tried.push_back(cand);
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
      if (found) break;
    }
    if (!found) return attempt.fail("no node matches root " + std::to_string(r + 1) + " (" + p.loc.to_string() + ")");
  }
  // where clauses
  for (const Predicate& pred : cr.ast->where) {
    std::string reason;
    auto value_of = [&](const std::string& var) { return out.values.count(var) ? out.values.at(var) : nullptr; };
    auto term_value = [&](const Term& t) -> std::optional<std::variant<double, std::string>> {
      std::optional<std::variant<double, std::string>> r;
      switch (t.kind) {
        case Term::Kind::Number: r = t.number; break;
        case Term::Kind::Ident: r = t.ident; break;
        case Term::Kind::Var: {
          if (auto a = out.attrs.find(t.var); a != out.attrs.end()) {
            if (auto n = attr_number(a->second)) r = *n;
          } else if (const Tensor* c = constant_of(value_of(t.var))) {
            if (auto s = constant_scalar(*c)) r = *s;
          }
          if (!r) reason = t.var + " is not a scalar constant";
          break;
        }
        case Term::Kind::Rank: {
          Value* v = value_of(t.var);
          if (v && v->type.shape) r = static_cast<double>(v->type.shape->rank());
          else reason = "the rank of " + t.var + " is unknown";
          break;
        }
        case Term::Kind::Dim: {
          Value* v = value_of(t.var);
          if (!v || !v->type.shape) {
            reason = "the shape of " + t.var + " is unknown";
            break;
          }
          int64_t rank = static_cast<int64_t>(v->type.shape->rank());
          int64_t axis = t.axis < 0 ? t.axis + rank : t.axis;
          if (axis < 0 || axis >= rank) {
            reason = "dim(" + t.var + ", " + std::to_string(t.axis) + ") is out of range for rank " + std::to_string(rank);
            break;
          }
          const Dim& d = (*v->type.shape)[static_cast<size_t>(axis)];
          if (d.is_static()) r = static_cast<double>(d.value());
          else reason = "dim(" + t.var + ", " + std::to_string(t.axis) + ") is " + (d.is_symbolic() ? "symbolic ('" + d.symbol_name() + "')" : "unknown") + ", not a number";
          break;
        }
        case Term::Kind::DType: {
          Value* v = value_of(t.var);
          if (v && v->type.dtype != DType::Undefined) r = dtype_name(v->type.dtype);
          else reason = "the dtype of " + t.var + " is unknown";
          break;
        }
      }
      if (r && t.modulo) {
        if (auto* d = std::get_if<double>(&*r)) r = std::fmod(*d, *t.modulo);
      }
      return r;
    };
    bool ok = false;
    std::string found_text;
    if (pred.kind == Predicate::Kind::IsConst) {
      ok = constant_of(value_of(pred.var)) != nullptr;
      found_text = pred.var + " is not a constant";
    } else if (pred.kind == Predicate::Kind::OneUse) {
      Value* v = value_of(pred.var);
      ok = v && v->uses().size() == 1;
      found_text = pred.var + " has " + std::to_string(v ? v->uses().size() : 0) + " uses";
    } else {
      auto lhs = term_value(pred.lhs);
      if (lhs) {
        auto as_text = [](const std::variant<double, std::string>& x) { return std::holds_alternative<double>(x) ? fmt(std::get<double>(x)) : std::get<std::string>(x); };
        found_text = pred.lhs.to_string() + " is " + as_text(*lhs);
        if (pred.op == CmpOp::In) {
          if (pred.is_range) {
            ok = std::holds_alternative<double>(*lhs) && std::get<double>(*lhs) >= pred.lo && std::get<double>(*lhs) <= pred.hi;
          } else {
            for (const auto& l : pred.set) {
              if (auto* d = std::get_if<double>(&*lhs)) ok = ok || (l.kind == Literal::Kind::Number && l.number == *d);
              else ok = ok || (l.kind == Literal::Kind::Ident && parse_dtype(l.text) && dtype_name(*parse_dtype(l.text)) == std::get<std::string>(*lhs));
            }
          }
        } else if (auto rhs = term_value(pred.rhs)) {
          if (std::holds_alternative<double>(*lhs) && std::holds_alternative<double>(*rhs)) {
            double x = std::get<double>(*lhs), y = std::get<double>(*rhs);
            switch (pred.op) {
              case CmpOp::Eq: ok = x == y; break;
              case CmpOp::Ne: ok = x != y; break;
              case CmpOp::Lt: ok = x < y; break;
              case CmpOp::Le: ok = x <= y; break;
              case CmpOp::Gt: ok = x > y; break;
              case CmpOp::Ge: ok = x >= y; break;
              case CmpOp::Approx: ok = std::fabs(x - y) <= pred.tolerance; break;
              case CmpOp::In: break;
            }
          } else {
            std::string x = as_text(*lhs), y = as_text(*rhs);
            if (parse_dtype(y)) y = dtype_name(*parse_dtype(y));
            ok = pred.op == CmpOp::Eq ? x == y : pred.op == CmpOp::Ne ? x != y : false;
          }
        } else {
          found_text = reason;
        }
      } else {
        found_text = reason;
      }
    }
    if (!ok) return attempt.fail("where " + pred.to_string() + " fails: " + found_text + " (" + pred.loc.to_string() + ")");
  }
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
