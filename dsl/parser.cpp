#include "dsl/parser.h"

#include <tao/pegtl/contrib/parse_tree.hpp>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>

#include "dsl/grammar.h"
#include "util/error.h"
#include "util/input_file.h"

namespace geopt::dsl {
namespace {

namespace pegtl = tao::pegtl;
namespace pt = tao::pegtl::parse_tree;
using namespace grammar;

template <typename Rule>
struct control : pegtl::normal<Rule> {
  template <typename Input, typename... States>
  [[noreturn]] static void raise(const Input& in, States&&...) {
    const char* msg = expected<Rule>;
    throw pegtl::parse_error(msg ? msg : "syntax error", in);
  }
};

template <typename Rule>
using selector = pt::selector<
    Rule, pt::store_content::on<
              rule_def, rule_name, tag_list, ident, doc_item, enabled_item, kw_true, kw_false, let_item,
              match_item, root_pattern, where_item, rewrite_item, fold_item, test_item, string_lit,
              triple_string, var_name, number, list_lit, op_pattern, op_name, any_op, const_pattern, ellipsis,
              rest_mark, output_index, attr_pred, attr_absent, cmp_op, approx_op, attr_compare, attr_approx,
              attr_in, tolerance, range_lit, set_lit, bind_as, predicate, term, fn_call, kw_rank, kw_dim,
              kw_dtype, kw_shape, kw_zeros, kw_is_const, kw_is_static, kw_one_use, kw_zero_rows, kw_full_rows,
              modulo, repl_op, shape_call, ratio, product, list_expr, sum_item, indexed_var, gathered_var,
              spliced_var, repl_const, repl_absent, dtype_of, attr_assign, model_text, model_path,
              expect_count, expect_fired, expect_matched, expect_equal, kw_in, arrow>>;

using Node = pt::node;

class Builder {
 public:
  Builder(std::string path, std::vector<Diagnostic>& errors) : path_(std::move(path)), errors_(errors) {}

  SourceLoc loc(const Node& n) const {
    auto p = n.begin();
    return {path_, static_cast<int>(p.line), static_cast<int>(p.column)};
  }

  void error(const Node& n, std::string message) { errors_.push_back({loc(n), std::move(message)}); }

  static std::string unquote(const std::string& s) {
    std::string out;
    for (size_t i = 1; i + 1 < s.size(); ++i) {
      if (s[i] == '\\' && i + 2 < s.size()) {
        char c = s[++i];
        out += c == 'n' ? '\n' : c == 't' ? '\t' : c;
      } else {
        out += s[i];
      }
    }
    return out;
  }

  // Grammar-checked text, so conversion cannot fail; huge values saturate instead of throwing.
  static double to_number(const Node& n) { return std::strtod(n.string().c_str(), nullptr); }
  static int64_t to_integer(const std::string& s) {
    errno = 0;
    long long v = std::strtoll(s.c_str(), nullptr, 10);
    return static_cast<int64_t>(v);
  }
  static int index_of(const Node& n) {  // "[ 2 ]" -> 2
    std::string s = n.string();
    return static_cast<int>(
        std::clamp<int64_t>(to_integer(s.substr(s.find_first_of("0123456789"))), 0, 1 << 20));
  }
  static bool integer_text(const std::string& s) { return s.find_first_of(".eE") == std::string::npos; }

  Literal build_literal(const Node& n) {
    Literal l;
    if (n.is_type<number>()) {
      l.kind = Literal::Kind::Number;
      l.number = to_number(n);
      l.is_integer = integer_text(n.string());
    } else if (n.is_type<string_lit>()) {
      l.kind = Literal::Kind::String;
      l.text = unquote(n.string());
    } else if (n.is_type<list_lit>()) {
      l.kind = Literal::Kind::List;
      for (const auto& c : n.children) l.items.push_back(build_literal(*c));
    } else {
      l.kind = Literal::Kind::Ident;
      l.text = n.string();
    }
    return l;
  }

  Term build_shape_call(const Node& v) {
    Term t;
    t.loc = loc(v);
    const Node& fn = *v.children.at(0);
    t.kind = fn.is_type<kw_dim>()     ? Term::Kind::Dim
             : fn.is_type<kw_rank>()  ? Term::Kind::Rank
             : fn.is_type<kw_dtype>() ? Term::Kind::DType
                                      : Term::Kind::Shape;
    const size_t want = t.kind == Term::Kind::Dim ? 3 : 2;
    if (v.children.size() != want || !v.children[1]->is_type<var_name>()) {
      error(v, t.kind == Term::Kind::Dim ? "`dim` takes (%var, axis)" : "`" + fn.string() + "` takes (%var)");
    } else {
      t.var = v.children[1]->string();
      if (t.kind == Term::Kind::Dim) {
        if (!integer_text(v.children[2]->string()))
          error(*v.children[2], "the axis of dim() must be an integer");
        t.axis = to_integer(v.children[2]->string());
      }
    }
    return t;
  }

  static void split_op(const std::string& full, std::string& domain, std::string& op) {
    auto dot = full.rfind('.');
    if (dot == std::string::npos) {
      domain.clear();
      op = full;
    } else {
      domain = full.substr(0, dot);
      op = full.substr(dot + 1);
    }
  }

  static CmpOp cmp(const std::string& s) {
    if (s == "==") return CmpOp::Eq;
    if (s == "!=") return CmpOp::Ne;
    if (s == "<") return CmpOp::Lt;
    if (s == "<=") return CmpOp::Le;
    if (s == ">") return CmpOp::Gt;
    return CmpOp::Ge;
  }

  AttrPred build_attr_pred(const Node& n) {
    AttrPred a;
    a.loc = loc(n);
    const Node& first = *n.children.at(0);
    if (first.is_type<attr_absent>()) {
      a.name = first.string().substr(1);
      a.absent = true;
      return a;
    }
    a.name = first.string();
    const Node& check = *n.children.at(1);
    if (check.is_type<attr_compare>()) {
      a.op = cmp(check.children.at(0)->string());
      const Node& v = *check.children.at(1);
      if (v.is_type<var_name>())
        a.bind_var = v.string();
      else
        a.value = build_literal(v);
    } else if (check.is_type<attr_approx>()) {
      a.op = CmpOp::Approx;
      a.value = build_literal(*check.children.at(1));
      if (check.children.size() > 2)
        a.tolerance = to_number(*check.children.at(2)->children.at(0));
      else
        error(check, "`~=` needs an explicit tolerance: `" + a.name +
                         " ~= " + check.children.at(1)->string() + " +- 1e-9`");
    } else {
      a.op = CmpOp::In;
      const Node& what = *check.children.at(1);
      if (what.is_type<range_lit>()) {
        a.lo = to_number(*what.children.at(0));
        a.hi = to_number(*what.children.at(1));
      } else {
        for (const auto& c : what.children) a.set.push_back(build_literal(*c));
      }
    }
    return a;
  }

  PatternPtr build_pattern(const Node& n) {
    auto p = std::make_shared<Pattern>();
    p->loc = loc(n);
    if (n.is_type<var_name>()) {
      p->kind = Pattern::Kind::Var;
      p->var = n.string();
    } else if (n.is_type<number>()) {
      p->kind = Pattern::Kind::Number;
      p->number = to_number(n);
    } else if (n.is_type<const_pattern>()) {
      p->kind = Pattern::Kind::Const;
      if (!n.children.empty()) p->var = n.children[0]->string();
    } else if (n.is_type<op_pattern>()) {
      p->kind = Pattern::Kind::Op;
      for (const auto& c : n.children) {
        if (c->is_type<op_name>())
          split_op(c->string(), p->domain, p->op);
        else if (c->is_type<any_op>())
          p->op = "*";
        else if (c->is_type<ellipsis>())
          p->rest_any = true;
        else if (c->is_type<rest_mark>()) {  // the argument just read applies to every remaining input
          if (p->rest || p->rest_any || p->args.empty())
            error(*c, "`...` must be the last argument");
          else {
            p->rest = p->args.back();
            p->args.pop_back();
          }
        } else if (c->is_type<output_index>())
          p->output_index = index_of(*c);
        else if (c->is_type<attr_pred>())
          p->attrs.push_back(build_attr_pred(*c));
        else if (c->is_type<bind_as>())
          p->var = c->children.at(0)->string();
        else {
          if (p->rest || p->rest_any) error(*c, "`...` must be the last argument");
          p->args.push_back(build_pattern(*c));
        }
      }
    }
    return p;
  }

  Term build_term(const Node& n) {
    Term t;
    t.loc = loc(n);
    const Node& head = *n.children.at(0);
    if (head.is_type<fn_call>()) {
      const Node& fn = *head.children.at(0);
      std::vector<const Node*> args;
      for (size_t i = 1; i < head.children.size(); ++i) args.push_back(head.children[i].get());
      auto need_var = [&](size_t count) {
        if (args.size() != count || !args[0]->is_type<var_name>()) {
          error(head, "`" + fn.string() + "` takes " + (count == 1 ? "(%var)" : "(%var, axis)"));
          return false;
        }
        return true;
      };
      if (fn.is_type<kw_rank>()) {
        t.kind = Term::Kind::Rank;
        if (need_var(1)) t.var = args[0]->string();
      } else if (fn.is_type<kw_dtype>() || fn.is_type<kw_shape>() || fn.is_type<kw_zeros>() ||
                 fn.is_type<kw_zero_rows>() || fn.is_type<kw_full_rows>()) {
        t.kind = fn.is_type<kw_dtype>()       ? Term::Kind::DType
                 : fn.is_type<kw_shape>()     ? Term::Kind::Shape
                 : fn.is_type<kw_zero_rows>() ? Term::Kind::ZeroRows
                 : fn.is_type<kw_full_rows>() ? Term::Kind::FullRows
                                              : Term::Kind::Zeros;
        if (need_var(1)) t.var = args[0]->string();
      } else if (fn.is_type<kw_dim>()) {
        t.kind = Term::Kind::Dim;
        if (need_var(2)) {
          t.var = args[0]->string();
          if (!args[1]->is_type<number>() || !integer_text(args[1]->string()))
            error(*args[1], "the axis of dim() must be an integer");
          else
            t.axis = to_integer(args[1]->string());
        }
      } else {  // is_const / is_static / one_use are predicates; the caller handles them
        t.kind = Term::Kind::Ident;
        t.ident = fn.string();
        if (need_var(1)) t.var = args[0]->string();
      }
    } else if (head.is_type<indexed_var>()) {
      t.kind = Term::Kind::Element;
      t.var = head.children.at(0)->string();
      const std::string text = head.string();
      t.axis = to_integer(text.substr(text.find('[') + 1, text.find(']') - text.find('[') - 1));
    } else if (head.is_type<var_name>()) {
      t.kind = Term::Kind::Var;
      t.var = head.string();
    } else if (head.is_type<number>()) {
      t.kind = Term::Kind::Number;
      t.number = to_number(head);
    } else {
      t.kind = Term::Kind::Ident;
      t.ident = head.string();
    }
    if (n.children.size() > 1) t.modulo = to_number(*n.children[1]->children.at(0));
    return t;
  }

  Predicate build_predicate(const Node& n) {
    Predicate p;
    p.loc = loc(n);
    p.lhs = build_term(*n.children.at(0));
    if (n.children.size() == 1) {
      if (p.lhs.kind == Term::Kind::Ident &&
          (p.lhs.ident == "is_const" || p.lhs.ident == "is_static" || p.lhs.ident == "one_use")) {
        p.kind = p.lhs.ident == "is_const"    ? Predicate::Kind::IsConst
                 : p.lhs.ident == "is_static" ? Predicate::Kind::IsStatic
                                              : Predicate::Kind::OneUse;
        p.var = p.lhs.var;
      } else {
        error(n,
              "a predicate needs a comparison (==, ~=, in, ...) unless it is is_const(%v), is_static(%v) or "
              "one_use(%v)");
      }
      return p;
    }
    // pred_rest is not stored: its pieces follow the term directly.
    size_t i = 1;
    const Node& op = *n.children.at(i++);
    if (op.is_type<approx_op>()) {
      p.op = CmpOp::Approx;
      p.rhs = build_term(*n.children.at(i++));
      if (i < n.children.size() && n.children[i]->is_type<tolerance>())
        p.tolerance = to_number(*n.children[i]->children.at(0));
      else
        error(op, "`~=` needs an explicit tolerance: `... ~= value +- 1e-9`");
    } else if (op.is_type<cmp_op>()) {
      p.op = cmp(op.string());
      p.rhs = build_term(*n.children.at(i++));
    } else {
      p.op = CmpOp::In;
      const Node& what = *n.children.at(i);
      if (what.is_type<range_lit>()) {
        p.is_range = true;
        p.lo = to_number(*what.children.at(0));
        p.hi = to_number(*what.children.at(1));
      } else {
        for (const auto& c : what.children) p.set.push_back(build_literal(*c));
      }
    }
    return p;
  }

  // The items of a list expression `[dim(%x, 2), %k[0], %p[%q], %alpha, %a[1] + %b[0], 1]`.
  std::vector<ListItem> build_list_items(const Node& list) {
    std::vector<ListItem> items;
    for (const auto& item : list.children) {
      ListItem li;
      if (item->is_type<sum_item>()) {
        li.addends = build_list_items(*item);
      } else if (item->is_type<shape_call>()) {
        li.term = build_shape_call(*item);
      } else if (item->is_type<gathered_var>()) {
        li.var = item->children.at(0)->string();
        li.gather_var = item->children.at(1)->string();
      } else if (item->is_type<indexed_var>()) {
        li.var = item->children.at(0)->string();
        const std::string text = item->string();
        li.index = to_integer(text.substr(text.find('[') + 1, text.find(']') - text.find('[') - 1));
      } else if (item->is_type<spliced_var>()) {
        li.var = item->children.at(0)->string();
        li.splice = true;
      } else if (item->is_type<var_name>()) {
        li.var = item->string();
      } else {
        li.number = to_number(*item);
      }
      items.push_back(std::move(li));
    }
    return items;
  }

  ReplacementPtr build_replacement(const Node& n) {
    auto r = std::make_shared<Replacement>();
    r->loc = loc(n);
    if (n.is_type<var_name>() || n.is_type<spliced_var>()) {
      r->kind = Replacement::Kind::Var;
      r->splice = n.is_type<spliced_var>();
      r->var = r->splice ? n.children.at(0)->string() : n.string();
      return r;
    }
    if (n.is_type<repl_absent>()) {
      r->kind = Replacement::Kind::Absent;
      return r;
    }
    if (n.is_type<repl_const>()) {
      r->kind = Replacement::Kind::Const;
      const Node& type = *n.children.at(0);
      if (type.is_type<dtype_of>())
        r->const_dtype_of = type.children.back()->string();
      else
        r->const_dtype = type.string();
      const Node& value = *n.children.at(1);
      r->const_is_list = value.is_type<list_expr>();
      if (r->const_is_list) {
        r->const_items = build_list_items(value);
      } else {
        ListItem li;
        if (value.is_type<var_name>())
          li.var = value.string();
        else
          li.number = to_number(value);
        r->const_items.push_back(std::move(li));
      }
      return r;
    }
    r->kind = Replacement::Kind::Op;
    for (const auto& c : n.children) {
      if (c->is_type<op_name>())
        split_op(c->string(), r->domain, r->op);
      else if (c->is_type<output_index>())
        r->output_index = index_of(*c);
      else if (c->is_type<attr_assign>()) {
        AttrAssign a;
        a.loc = loc(*c);
        a.name = c->children.at(0)->string();
        const Node& v = *c->children.at(1);
        if (v.is_type<shape_call>()) {
          a.term = build_shape_call(v);
        } else if (v.is_type<list_expr>()) {
          a.list = build_list_items(v);
          const bool all_numbers = std::all_of(a.list.begin(), a.list.end(),
                                               [](const ListItem& li) { return li.number.has_value(); });
          if (all_numbers) {  // a plain list of numbers: the literal it reads as
            Literal l;
            l.kind = Literal::Kind::List;
            for (const auto& item : v.children) l.items.push_back(build_literal(*item));
            a.value = std::move(l);
            a.list.clear();
          }
        } else if (v.is_type<ratio>()) {
          a.numerator = to_number(*v.children.at(0));
          a.var = v.children.at(1)->string();
        } else if (v.is_type<product>()) {
          a.var = v.children.at(0)->string();
          a.factor = v.children.at(1)->string();
        } else if (v.is_type<var_name>()) {
          a.var = v.string();
        } else {
          a.value = build_literal(v);
        }
        r->attrs.push_back(std::move(a));
      } else {
        r->args.push_back(build_replacement(*c));
      }
    }
    return r;
  }

  RuleTest build_test(const Node& n) {
    RuleTest t;
    t.loc = loc(n);
    t.name = unquote(n.children.at(0)->string());
    for (size_t i = 1; i < n.children.size(); ++i) {
      const Node& s = *n.children[i];
      if (s.is_type<model_text>()) {
        std::string raw = s.children.at(0)->string();
        t.model_text = raw.substr(3, raw.size() - 6);
      } else if (s.is_type<model_path>()) {
        t.model_file = unquote(s.children.at(0)->string());
      } else {
        Expectation e;
        e.loc = loc(s);
        if (s.is_type<expect_count>() || s.is_type<expect_fired>() || s.is_type<expect_matched>()) {
          e.kind = s.is_type<expect_count>()   ? Expectation::Kind::Count
                   : s.is_type<expect_fired>() ? Expectation::Kind::Fired
                                               : Expectation::Kind::Matched;
          if (e.kind == Expectation::Kind::Count)
            split_op(s.children.at(0)->string(), e.domain, e.op);
          else
            e.rule = s.children.at(0)->string();
          e.cmp = cmp(s.children.at(1)->string());
          const Node& num = *s.children.at(2);
          if (!integer_text(num.string()))
            error(num, "expected an integer count");
          else
            e.value = to_integer(num.string());
        } else {
          e.kind = Expectation::Kind::OutputsEqual;
          if (!s.children.empty()) e.tolerance = to_number(*s.children[0]);
        }
        t.expectations.push_back(std::move(e));
      }
    }
    if (t.model_text.empty() && t.model_file.empty()) error(n, "test \"" + t.name + "\" has no `model`");
    return t;
  }

  Rule build_rule(const Node& n) {
    Rule r;
    r.loc = loc(n);
    bool saw_match = false;
    for (const auto& c : n.children) {
      if (c->is_type<rule_name>()) {
        r.name = c->string();
      } else if (c->is_type<tag_list>()) {
        for (const auto& t : c->children) r.tags.push_back(t->string());
      } else if (c->is_type<doc_item>()) {
        r.doc = unquote(c->children.at(0)->string());
      } else if (c->is_type<enabled_item>()) {
        r.enabled = c->children.at(0)->is_type<kw_true>();
      } else if (c->is_type<let_item>()) {
        r.lets.push_back({loc(*c), c->children.at(0)->string(), build_pattern(*c->children.at(1))});
      } else if (c->is_type<match_item>()) {
        if (saw_match) error(*c, "a rule has one `match` (list several roots with commas)");
        saw_match = true;
        r.match_loc = loc(*c);
        for (const auto& root : c->children) {
          if (root->children.size() == 2) {  // %name = pattern
            PatternPtr p = build_pattern(*root->children[1]);
            if (p->kind == Pattern::Kind::Op && p->var.empty())
              p->var = root->children[0]->string();
            else
              r.lets.push_back({loc(*root), root->children[0]->string(), p});
            r.roots.push_back(p->kind == Pattern::Kind::Op ? p : build_pattern(*root->children[0]));
          } else {
            r.roots.push_back(build_pattern(*root->children.at(0)));
          }
        }
      } else if (c->is_type<where_item>()) {
        for (const auto& p : c->children) r.where.push_back(build_predicate(*p));
      } else if (c->is_type<rewrite_item>()) {
        Rewrite w;
        w.loc = loc(*c);
        size_t i = 0;
        if (c->children.at(0)->is_type<var_name>()) w.target = c->children[i++]->string();
        ++i;  // the arrow
        w.replacement = build_replacement(*c->children.at(i));
        r.rewrites.push_back(std::move(w));
      } else if (c->is_type<fold_item>()) {
        r.fold = true;
        std::string text = c->string();
        auto eq = text.find('=');
        if (eq != std::string::npos)
          r.fold_max_elements =
              to_integer(text.substr(eq + 1 + text.substr(eq + 1).find_first_of("0123456789")));
      } else if (c->is_type<test_item>()) {
        r.tests.push_back(build_test(*c));
      }
    }
    if (!saw_match) error(n, "rule " + r.name + " has no `match`");
    return r;
  }

 private:
  std::string path_;
  std::vector<Diagnostic>& errors_;
};

// Skips blanks and comments; returns false at the end of the text.
bool skip_blank(const std::string& text, size_t& pos, size_t& line, size_t& col) {
  while (pos < text.size()) {
    char c = text[pos];
    if (c == '#') {
      while (pos < text.size() && text[pos] != '\n') ++pos, ++col;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(c))) return true;
    ++pos;
    if (c == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return false;
}

// How deep brackets nest, outside strings and comments: refused past kMaxNesting before
// the grammar (which recurses once per level) ever sees it, so no hostile file can
// exhaust the stack in parsing, checking or matching.
constexpr int kMaxNesting = 256;

std::optional<Diagnostic> too_deep(const std::string& text, const std::string& path) {
  int depth = 0, line = 1, col = 1;
  for (size_t i = 0; i < text.size(); ++i, ++col) {
    const char c = text[i];
    if (c == '\n') {
      ++line;
      col = 0;
    } else if (c == '#') {
      while (i + 1 < text.size() && text[i + 1] != '\n') ++i;
    } else if (c == '"') {
      const bool triple = text.compare(i, 3, "\"\"\"") == 0;
      size_t end = std::string::npos;
      if (triple) {
        end = text.find("\"\"\"", i + 3);
      } else {  // as the grammar reads it: a backslash escapes the next character
        for (size_t k = i + 1; k < text.size(); ++k) {
          if (text[k] == '\\' && k + 1 < text.size() && text[k + 1] != '\n') {
            ++k;
            continue;
          }
          if (text[k] == '"' || text[k] == '\n') {
            end = k;
            break;
          }
        }
      }
      const size_t stop = end == std::string::npos ? text.size() - 1 : end + (triple ? 2 : 0);
      for (; i < stop; ++i, ++col)
        if (text[i + 1] == '\n') ++line, col = 0;
    } else if (c == '(' || c == '[' || c == '{') {
      if (++depth > kMaxNesting)
        return Diagnostic{
            {path, line, col},
            "brackets nest deeper than " + std::to_string(kMaxNesting) + " levels; split the pattern"};
    } else if (c == ')' || c == ']' || c == '}') {
      depth = std::max(0, depth - 1);
    }
  }
  return std::nullopt;
}

}  // namespace

ParseResult parse_rules(const std::string& text, const std::string& path) {
  ParseResult result;
  result.file.path = path;
  if (auto deep = too_deep(text, path)) {
    result.errors.push_back(*deep);
    return result;
  }
  Builder b(path, result.errors);
  size_t pos = 0, line = 1, col = 1;
  while (skip_blank(text, pos, line, col)) {
    size_t consumed = 0;
    try {
      pegtl::memory_input<> in(text.data() + pos, text.data() + text.size(), path, pos, line, col);
      auto root = pt::parse<top_item, selector, pegtl::nothing, control>(in);
      if (root && !root->children.empty()) {
        const Node& rule_node = *root->children.front();
        result.file.rules.push_back(b.build_rule(rule_node));
        consumed = static_cast<size_t>(rule_node.end().byte) - pos;
      }
    } catch (const pegtl::parse_error& e) {
      const auto& p = e.positions().front();
      result.errors.push_back(
          {{path, static_cast<int>(p.line), static_cast<int>(p.column)}, std::string(e.message())});
    }
    if (consumed == 0) {
      // Resynchronize: skip to the next line that starts with `rule`.
      size_t next = pos;
      while (true) {
        next = text.find('\n', next);
        if (next == std::string::npos) return result;
        ++next;
        size_t k = next;
        while (k < text.size() && (text[k] == ' ' || text[k] == '\t')) ++k;
        if (text.compare(k, 4, "rule") == 0 &&
            (k + 4 >= text.size() || !std::isalnum(static_cast<unsigned char>(text[k + 4]))))
          break;
      }
      consumed = next - pos;
    }
    for (size_t i = pos; i < pos + consumed; ++i) {
      if (text[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    pos += consumed;
  }
  return result;
}

ParseResult parse_rule_file(const std::string& path) {
  // A rule file is text a person wrote: past 16 MiB it is not one (and /dev/zero, a
  // pipe that never ends, is read no further than that).
  constexpr size_t kMaxRuleFileBytes = size_t{16} << 20;
  auto refuse = [&](const std::string& why) {
    ParseResult r;
    r.file.path = path;
    r.errors.push_back({{path, 0, 0}, why});
    return r;
  };
  std::string text;
  try {
    InputFile in(path);  // a named pipe with no writer reads as empty, never hangs
    char buffer[1 << 16];
    for (size_t got; (got = in.read(buffer, sizeof buffer)) > 0;) {
      text.append(buffer, got);
      if (text.size() > kMaxRuleFileBytes) return refuse("longer than 16 MiB: not a rule file");
    }
  } catch (const Error&) {
    return refuse("cannot read the rule file");
  }
  return parse_rules(text, path);
}

}  // namespace geopt::dsl
