#include "dsl/checker.h"

#include <algorithm>
#include <climits>
#include <map>
#include <set>

#include "dsl/schema_lookup.h"
#include "dsl/value_facts.h"
#include "ir/domain.h"
#include "ir/dtype.h"

namespace geopt::dsl {
namespace {

enum class VarKind { Value, Const, Attr };

struct VarInfo {
  VarKind kind = VarKind::Value;
  SourceLoc loc;
  int occurrences = 0;  // in patterns, including the defining one
  int uses = 0;         // in where, rewrite and attribute assignments
  bool list = false;    // bound inside a `...` pattern: one value per input
};

const char* kind_name(AttrKind k) { return attr_kind_name(k); }

bool literal_fits(const Literal& l, AttrKind k) {
  auto all = [&](auto pred) {
    for (const auto& i : l.items)
      if (!pred(i)) return false;
    return true;
  };
  switch (k) {
    case AttrKind::Int:
      return l.kind == Literal::Kind::Number && l.is_integer;
    case AttrKind::Float:
      return l.kind == Literal::Kind::Number;
    case AttrKind::String:
      return l.kind == Literal::Kind::String;
    case AttrKind::Ints:
      return l.kind == Literal::Kind::List &&
             all([](const Literal& i) { return i.kind == Literal::Kind::Number && i.is_integer; });
    case AttrKind::Floats:
      return l.kind == Literal::Kind::List &&
             all([](const Literal& i) { return i.kind == Literal::Kind::Number; });
    case AttrKind::Strings:
      return l.kind == Literal::Kind::List &&
             all([](const Literal& i) { return i.kind == Literal::Kind::String; });
    default:
      return false;
  }
}

class RuleChecker {
 public:
  RuleChecker(const Rule& rule, std::vector<Diagnostic>& out) : rule_(rule), out_(out) {}

  void run() {
    for (const auto& let : rule_.lets) {
      if (vars_.count(let.var)) error(let.loc, "variable " + let.var + " is defined twice");
      lets_[let.var] = &let;
      vars_[let.var] = {VarKind::Value, let.loc, 0, 0};
    }
    for (const auto& let : rule_.lets) walk(*let.pattern, true);
    int commutative = 0;
    for (const auto& root : rule_.roots) {
      walk(*root, true);
      if (root->kind != Pattern::Kind::Op && !(root->kind == Pattern::Kind::Var && lets_.count(root->var)))
        error(root->loc, "a root must be an op pattern (or a let bound to one)");
    }
    for (const auto& root : rule_.roots) commutative += count_commutative(*root);
    for (const auto& let : rule_.lets) commutative += count_commutative(*let.pattern);
    if (commutative > 8)
      error(rule_.match_loc,
            "more than 8 commutative ops in one rule (" + std::to_string(commutative) + "): split the rule");
    for (const auto& p : rule_.where) check_predicate(p);
    if (!rule_.fold && rule_.rewrites.empty())
      error(rule_.loc, "rule " + rule_.name + " has neither `rewrite` nor `fold`");
    if (rule_.fold && !rule_.rewrites.empty())
      error(rule_.loc, "rule " + rule_.name + " has both `rewrite` and `fold`");
    for (const auto& w : rule_.rewrites) {
      if (w.target.empty() && rule_.roots.size() > 1)
        error(w.loc, "with several roots, name the value to replace: rewrite %v => ...");
      if (!w.target.empty()) use_value(w.target, w.loc);
      check_replacement(*w.replacement);
    }
    for (const auto& [name, v] : vars_) {
      if (name.rfind("%_", 0) == 0) continue;
      if (lets_.count(name)) {
        if (v.occurrences == 0 && v.uses == 0) error(v.loc, "let " + name + " is never used");
      } else if (v.occurrences + v.uses <= 1) {
        error(v.loc, "variable " + name + " is bound but never used (name it %_" + name.substr(1) +
                         " to mark it unused)");
      }
    }
  }

 private:
  void error(const SourceLoc& loc, std::string msg) { out_.push_back({loc, std::move(msg)}); }

  int count_commutative(const Pattern& p) {
    if (p.kind != Pattern::Kind::Op) return 0;
    int n = 0;
    if (const OpInfo* info = find_op(p.domain, p.op);
        info && info->commutative && p.args.size() == 2 && !p.rest && !p.rest_any)
      ++n;
    for (const auto& a : p.args) n += count_commutative(*a);
    return n;
  }

  void define_or_count(const std::string& var, VarKind kind, const SourceLoc& loc) {
    auto [it, inserted] = vars_.try_emplace(var, VarInfo{kind, loc, 0, 0, in_rest_ > 0});
    if (!inserted && it->second.list != (in_rest_ > 0))
      error(loc, "variable " + var +
                     " is bound both inside and outside a `...` pattern (inside, it is a list: one value per "
                     "input)");
    if (!inserted && it->second.kind != kind &&
        !(it->second.kind == VarKind::Value && kind == VarKind::Const) &&
        !(it->second.kind == VarKind::Const && kind == VarKind::Value))
      error(loc, "variable " + var + " is used both as a value and as an attribute");
    if (!inserted && kind == VarKind::Const) it->second.kind = VarKind::Const;
    ++it->second.occurrences;
  }

  void walk(const Pattern& p, bool value_position) {
    (void)value_position;
    switch (p.kind) {
      case Pattern::Kind::Var:
        define_or_count(p.var, VarKind::Value, p.loc);
        break;
      case Pattern::Kind::Const:
        if (!p.var.empty()) define_or_count(p.var, VarKind::Const, p.loc);
        break;
      case Pattern::Kind::Number:
        break;
      case Pattern::Kind::Op: {
        if (!p.var.empty()) define_or_count(p.var, VarKind::Value, p.loc);
        if (p.op != "*") check_op_pattern(p);
        for (const auto& a : p.args) walk(*a, true);
        if (p.rest) {  // `%xs...` binds each remaining input; `Op(...) as %v...`, each one's output
          ++in_rest_;
          walk(*p.rest, true);
          --in_rest_;
        }
        break;
      }
    }
  }

  const OpInfo* lookup(const std::string& domain, const std::string& op, const SourceLoc& loc) {
    if (!is_onnx_domain(domain) && domain != "ai.onnx.ml" && domain != kGeoptDomain) {
      error(loc, "unknown domain '" + domain + "' (known: ai.onnx, ai.onnx.ml, ai.geopt)");
      return nullptr;
    }
    const OpInfo* info = find_op(domain, op);
    if (!info)
      error(loc, "unknown op '" + (domain.empty() ? op : domain + "." + op) +
                     "' (not in ONNX's schemas or the ai.geopt catalog)");
    return info;
  }

  void check_op_pattern(const Pattern& p) {
    const OpInfo* info = lookup(p.domain, p.op, p.loc);
    if (!info) return;
    const int given = static_cast<int>(p.args.size());
    if (given > info->max_inputs)
      error(p.loc, p.op + " takes at most " + std::to_string(info->max_inputs) +
                       " inputs, the pattern gives " + std::to_string(given));
    // An attribute that became an input (Pad's pads) is that input when the pattern names
    // it as an attribute: `Pad(%x) { pads == %p }` reads both forms, and no other input.
    int named = 0;
    for (const auto& a : p.attrs) named += attribute_input(p.domain, p.op, a.name, 0).has_value();
    if (given + named < info->min_inputs && !p.rest && !p.rest_any)
      error(p.loc, p.op + " takes at least " + std::to_string(info->min_inputs) +
                       " inputs, the pattern gives " + std::to_string(given));
    if (p.output_index >= info->max_outputs)
      error(p.loc, p.op + " has " + std::to_string(info->max_outputs) + " output(s); [" +
                       std::to_string(p.output_index) + "] is out of range");
    for (const auto& a : p.attrs) check_attr_pred(*info, a);
  }

  void check_attr_pred(const OpInfo& info, const AttrPred& a) {
    auto it = info.attrs.find(a.name);
    if (it == info.attrs.end()) {
      error(a.loc, info.op + " has no attribute '" + a.name + "'");
      return;
    }
    AttrKind k = it->second.kind;
    if (!a.bind_var.empty()) {
      if (a.op != CmpOp::Eq) error(a.loc, "bind an attribute with `" + a.name + " == %var`");
      define_or_count(a.bind_var, VarKind::Attr, a.loc);
      return;
    }
    if (a.absent) return;
    auto mistyped = [&](const std::string& got) {
      error(a.loc, "attribute '" + a.name + "' of " + info.op + " is " + kind_name(k) +
                       ", the rule compares it with " + got);
    };
    if (a.op == CmpOp::Approx || a.op == CmpOp::Lt || a.op == CmpOp::Le || a.op == CmpOp::Gt ||
        a.op == CmpOp::Ge || (a.op == CmpOp::In && a.set.empty())) {
      if (k != AttrKind::Float && k != AttrKind::Int)
        mistyped(std::string("a numeric `") + cmp_op_text(a.op) + "`");
      return;
    }
    if (a.op == CmpOp::In) {
      for (const auto& l : a.set)
        if (!literal_fits(l, k)) mistyped(l.to_string());
      return;
    }
    if (a.value && !literal_fits(*a.value, k)) mistyped(a.value->to_string());
  }

  // The variable a single-valued use names; null (with the error reported) when it is
  // unbound or a list variable.
  VarInfo* single(const std::string& var, const SourceLoc& loc) {
    auto it = vars_.find(var);
    if (it == vars_.end()) {
      error(loc, "unbound variable " + var);
      return nullptr;
    }
    if (it->second.list) {
      error(loc,
            var +
                " is a list variable (bound by the pattern before `...`, one value per input): splice it, " +
                var + "... among a rewrite's inputs or [" + var + "...] in a list");
      return nullptr;
    }
    ++it->second.uses;
    return &it->second;
  }

  void use_value(const std::string& var, const SourceLoc& loc) {
    if (VarInfo* v = single(var, loc); v && v->kind == VarKind::Attr)
      error(loc, var + " is an attribute value, not a tensor value");
  }

  void use_scalar(const std::string& var, const SourceLoc& loc) {
    if (VarInfo* v = single(var, loc); v && v->kind == VarKind::Value)
      error(loc, var + " is a tensor value; bind it with `const " + var + "` to use its value");
  }

  // A bound ints attribute read in a list (`%p[%q]`, or a bare `%k` where scalars are not taken).
  void use_attr_list(const std::string& var, const SourceLoc& loc) {
    if (VarInfo* v = single(var, loc); v && v->kind != VarKind::Attr)
      error(loc, var + " in a list needs an attribute bound with `== " + var + "`");
  }

  // `%k[i]`: element i of a bound ints attribute or of a bound constant.
  void use_indexed(const std::string& var, const SourceLoc& loc) {
    if (VarInfo* v = single(var, loc); v && v->kind == VarKind::Value)
      error(loc, var + "[i] needs an attribute bound with `== " + var + "` or a constant bound with `const " +
                     var + "`");
  }

  // `%v...`: a list variable spliced; `attribute`: its elements are attributes or
  // scalar constants (in a list), else tensor values (among an op's inputs).
  void use_list(const std::string& var, const SourceLoc& loc, bool attribute) {
    auto it = vars_.find(var);
    if (it == vars_.end()) {
      error(loc, "unbound variable " + var);
      return;
    }
    if (!it->second.list)
      error(loc,
            var + "... splices a list variable, but " + var + " is bound once (outside any `...` pattern)");
    else if (attribute && it->second.kind == VarKind::Value)
      error(loc, var + " holds tensor values; in a list, splice attributes or `const` scalars");
    else if (!attribute && it->second.kind == VarKind::Attr)
      error(loc, var + " holds attribute values, not tensor values");
    ++it->second.uses;
  }

  // The variables a list expression reads. `scalars`: a bare %v may be a bound scalar
  // constant as well as a bound attribute.
  void check_list(const std::vector<ListItem>& items, const SourceLoc& loc, bool scalars) {
    for (const ListItem& item : items) {
      if (!item.addends.empty()) {
        check_list(item.addends, loc, true);
      } else if (item.splice) {
        use_list(item.var, loc, true);
      } else if (item.term) {
        use_value(item.term->var, loc);
      } else if (!item.gather_var.empty()) {
        use_attr_list(item.var, loc);
        use_attr_list(item.gather_var, loc);
      } else if (!item.var.empty()) {
        if (item.index >= 0)
          use_indexed(item.var, loc);
        else if (scalars)
          use_scalar(item.var, loc);
        else
          use_attr_list(item.var, loc);
      }
    }
  }

  void check_term(const Term& t) {
    switch (t.kind) {
      case Term::Kind::Var:
        use_scalar(t.var, t.loc);
        break;
      case Term::Kind::Rank:
      case Term::Kind::Dim:
      case Term::Kind::DType:
      case Term::Kind::Shape:
      case Term::Kind::Zeros:
      case Term::Kind::ZeroRows:
      case Term::Kind::FullRows:
        use_value(t.var, t.loc);
        break;
      case Term::Kind::Element:
        use_indexed(t.var, t.loc);
        break;
      case Term::Kind::Ident:
        if (!parse_dtype(t.ident))
          error(t.loc, "'" + t.ident + "' is not a dtype name (f32, f16, bf16, i64, ...)");
        break;
      case Term::Kind::Number:
        break;
    }
  }

  void check_predicate(const Predicate& p) {
    if (p.kind != Predicate::Kind::Compare) {
      use_value(p.var, p.loc);
      return;
    }
    check_term(p.lhs);
    if (p.op != CmpOp::In) check_term(p.rhs);
    bool dtype_lhs = p.lhs.kind == Term::Kind::DType;
    if (p.op == CmpOp::In && !p.is_range)
      for (const auto& l : p.set)
        if (dtype_lhs ? (l.kind != Literal::Kind::Ident || !parse_dtype(l.text))
                      : l.kind != Literal::Kind::Number)
          error(p.loc, "set element " + l.to_string() + " does not fit " + p.lhs.to_string());
    if (dtype_lhs && p.op != CmpOp::Eq && p.op != CmpOp::Ne && !(p.op == CmpOp::In && !p.is_range))
      error(p.loc, "compare dtype(...) with ==, != or `in {..}`");
    if ((p.lhs.kind == Term::Kind::Shape) != (p.op != CmpOp::In && p.rhs.kind == Term::Kind::Shape) ||
        (p.lhs.kind == Term::Kind::Shape && p.op != CmpOp::Eq && p.op != CmpOp::Ne))
      error(p.loc, "compare shape(...) with another shape(...), by == or !=");
  }

  void check_replacement(const Replacement& r, bool input = false) {
    if (r.kind == Replacement::Kind::Absent) {
      if (!input) error(r.loc, "`_` leaves an input absent: it stands among an op's inputs, not for a value");
      return;
    }
    if (r.kind == Replacement::Kind::Var) {
      if (r.splice && !input)
        error(r.loc,
              r.var + "... splices inputs: it stands among an op's inputs, not for a whole replacement");
      if (r.splice)
        use_list(r.var, r.loc, false);
      else
        use_value(r.var, r.loc);
      return;
    }
    if (r.kind == Replacement::Kind::Const) {
      if (!r.const_dtype_of.empty())
        use_value(r.const_dtype_of, r.loc);
      else if (auto d = parse_dtype(r.const_dtype); !d || *d == DType::String)
        error(r.loc, "'" + r.const_dtype + "' is not a numeric dtype name (f32, f16, bf16, i64, ...)");
      check_list(r.const_items, r.loc, true);
      return;
    }
    const OpInfo* info = lookup(r.domain, r.op, r.loc);
    for (const auto& a : r.args) check_replacement(*a, true);
    if (!info) return;
    const int given = static_cast<int>(r.args.size());
    for (int i = 0; i < std::min(given, info->min_inputs); ++i)
      if (r.args[static_cast<size_t>(i)]->kind == Replacement::Kind::Absent)
        error(r.args[static_cast<size_t>(i)]->loc,
              "input " + std::to_string(i) + " of " + r.op + " is required: `_` cannot leave it absent");
    const bool spliced =
        std::any_of(r.args.begin(), r.args.end(), [](const ReplacementPtr& a) { return a->splice; });
    const int fixed = static_cast<int>(
        std::count_if(r.args.begin(), r.args.end(), [](const ReplacementPtr& a) { return !a->splice; }));
    // A splice gives any number of inputs (counted again at each match): the fixed ones
    // must still leave room.
    if (spliced ? fixed > info->max_inputs : (given > info->max_inputs || given < info->min_inputs))
      error(r.loc, r.op + " takes " + std::to_string(info->min_inputs) +
                       (info->max_inputs == INT_MAX ? " or more" : ".." + std::to_string(info->max_inputs)) +
                       " inputs, the rewrite gives " +
                       (spliced ? std::to_string(fixed) + " and a splice" : std::to_string(given)));
    if (r.output_index >= info->max_outputs)
      error(r.loc, r.op + " has " + std::to_string(info->max_outputs) + " output(s); [" +
                       std::to_string(r.output_index) + "] is out of range");
    for (const auto& a : r.attrs) {
      auto it = info->attrs.find(a.name);
      if (it == info->attrs.end()) {
        error(a.loc, r.op + " has no attribute '" + a.name + "'");
        continue;
      }
      if (a.term) {
        use_value(a.term->var, a.loc);
        if (a.term->kind == Term::Kind::Shape)
          error(a.loc, "shape() gives a list: write [shape(" + a.term->var + ")]");
        else if (it->second.kind != AttrKind::Int)
          error(a.loc, "attribute '" + a.name + "' of " + r.op + " is " + kind_name(it->second.kind) +
                           "; dim() and rank() give an int");
      } else if (!a.list.empty()) {
        const bool floats = it->second.kind == AttrKind::Floats;
        if (it->second.kind != AttrKind::Ints && !floats)
          error(a.loc, "attribute '" + a.name + "' of " + r.op + " is " + kind_name(it->second.kind) +
                           "; a list expression gives ints or floats");
        check_list(a.list, a.loc, true);
        if (!floats)
          for (const ListItem& item : a.list)
            if (item.number && *item.number != static_cast<double>(static_cast<int64_t>(*item.number)))
              error(a.loc,
                    "attribute '" + a.name + "': " + format_number(*item.number) + " is not an integer");
      } else if (!a.var.empty()) {
        use_scalar(a.var, a.loc);
        if (!a.factor.empty()) use_scalar(a.factor, a.loc);
        if (a.numerator && it->second.kind != AttrKind::Float)
          error(a.loc, "attribute '" + a.name + "' of " + r.op + " is " + kind_name(it->second.kind) +
                           "; `n / %var` gives a float");
        if (!a.factor.empty() && it->second.kind != AttrKind::Float)
          error(a.loc, "attribute '" + a.name + "' of " + r.op + " is " + kind_name(it->second.kind) +
                           "; `%a * %b` gives a float");
      } else if (!literal_fits(*a.value, it->second.kind))
        error(a.loc, "attribute '" + a.name + "' of " + r.op + " is " + kind_name(it->second.kind) +
                         ", got " + a.value->to_string());
    }
  }

  const Rule& rule_;
  std::vector<Diagnostic>& out_;
  std::map<std::string, VarInfo> vars_;
  std::map<std::string, const Let*> lets_;
  int in_rest_ = 0;  // depth inside `...` patterns while walking
};

}  // namespace

void check_rules(const std::vector<const RuleFile*>& files, std::vector<Diagnostic>& out) {
  std::map<std::string, SourceLoc> names;
  for (const RuleFile* f : files)
    for (const Rule& r : f->rules) {
      auto [it, inserted] = names.emplace(r.name, r.loc);
      if (!inserted)
        out.push_back({r.loc, "duplicate rule name '" + r.name + "' (first defined at " +
                                  it->second.to_string() + ")"});
    }
  for (const RuleFile* f : files)
    for (const Rule& r : f->rules) {
      RuleChecker(r, out).run();
      for (const auto& t : r.tests)
        for (const auto& e : t.expectations) {
          if ((e.kind == Expectation::Kind::Fired || e.kind == Expectation::Kind::Matched) &&
              !names.count(e.rule))
            out.push_back({e.loc, "test expects unknown rule '" + e.rule + "'"});
          if (e.kind == Expectation::Kind::Count && !find_op(e.domain, e.op))
            out.push_back({e.loc, "test counts unknown op '" +
                                      (e.domain.empty() ? e.op : e.domain + "." + e.op) + "'"});
        }
    }
}

}  // namespace geopt::dsl
