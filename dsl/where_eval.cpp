#include "dsl/where_eval.h"

#include "dsl/value_facts.h"
#include "eval/host_tensor.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <variant>

namespace geopt::dsl {
namespace {

using TermValue = std::variant<double, std::string>;

std::string as_text(const TermValue& x) {
  return std::holds_alternative<double>(x) ? format_number(std::get<double>(x)) : std::get<std::string>(x);
}

// `reason`, when given, receives why the term has no value (or names the value found);
// the matcher evaluates without it and asks again only for a predicate that failed.
std::optional<TermValue> term_value(const Term& t, const WhereContext& ctx, std::string* reason) {
  std::optional<TermValue> r;
  switch (t.kind) {
    case Term::Kind::Number:
      r = t.number;
      break;
    case Term::Kind::Ident:
      r = t.ident;
      break;
    case Term::Kind::Var: {
      if (auto a = ctx.attrs->find(t.var); a != ctx.attrs->end()) {
        if (auto n = attr_number(a->second)) r = *n;
      } else if (auto s = constant_scalar(ctx.constant_of(t.var))) {
        r = *s;
      }
      if (reason && r && ctx.name_of && !ctx.name_of(t.var).empty())
        *reason = "('" + ctx.name_of(t.var) + "')";
      if (reason && !r) *reason = t.var + " is not a scalar constant";
      break;
    }
    case Term::Kind::Rank: {
      const ValueType* vt = ctx.type_of(t.var);
      if (vt && vt->shape)
        r = static_cast<double>(vt->shape->rank());
      else if (reason)
        *reason = "the rank of " + t.var + " is unknown";
      break;
    }
    case Term::Kind::Dim: {
      const ValueType* vt = ctx.type_of(t.var);
      if (!vt || !vt->shape) {
        if (reason) *reason = "the shape of " + t.var + " is unknown";
        break;
      }
      int64_t rank = static_cast<int64_t>(vt->shape->rank());
      int64_t axis = t.axis < 0 ? t.axis + rank : t.axis;
      if (axis < 0 || axis >= rank) {
        if (reason)
          *reason = "dim(" + t.var + ", " + std::to_string(t.axis) + ") is out of range for rank " +
                    std::to_string(rank);
        break;
      }
      const Dim& d = (*vt->shape)[static_cast<size_t>(axis)];
      if (d.is_static())
        r = static_cast<double>(d.value());
      else if (d.is_symbolic() && ctx.assumed && ctx.assumed->count(d.symbol_name()))
        r = static_cast<double>(ctx.assumed->at(d.symbol_name()));
      else if (reason)
        *reason = "dim(" + t.var + ", " + std::to_string(t.axis) + ") is " +
                  (d.is_symbolic() ? "symbolic ('" + d.symbol_name() + "')" : "unknown") + ", not a number";
      break;
    }
    case Term::Kind::Shape: {  // every dim, as text: equal texts are equal shapes (a symbol is one size)
      const ValueType* vt = ctx.type_of(t.var);
      if (!vt || !vt->shape) {
        if (reason) *reason = "the shape of " + t.var + " is unknown";
        break;
      }
      for (size_t i = 0; i < vt->shape->rank(); ++i)
        if (!(*vt->shape)[i].is_static() && !(*vt->shape)[i].is_symbolic()) {
          if (reason) *reason = "dim " + std::to_string(i) + " of " + t.var + " is unknown";
          return std::nullopt;
        }
      r = vt->shape->to_string();
      break;
    }
    case Term::Kind::Zeros:
    case Term::Kind::ZeroRows:
    case Term::Kind::FullRows: {
      // Zeros of a constant (zeros), or its rows along the last axis that are all zero
      // (zero_rows) or have no zero (full_rows): an attention mask that hides every key
      // of some query.
      const Tensor* c = ctx.constant_of(t.var);
      if (!c || c->dtype == DType::String) {
        if (reason) *reason = t.var + " is not a numeric constant";
        break;
      }
      HostTensor h = HostTensor::view(*c);
      const int64_t cols = t.kind == Term::Kind::Zeros ? std::max<int64_t>(h.size(), 1)
                           : h.rank()                  ? h.dim(-1)
                                                       : 1;
      int64_t count = 0;
      for (int64_t row = 0; cols > 0 && row < h.size() / cols; ++row) {
        int64_t zeros = 0;
        for (int64_t j = 0; j < cols; ++j) zeros += h.real_at(row * cols + j) == 0 ? 1 : 0;
        count += t.kind == Term::Kind::Zeros      ? zeros
                 : t.kind == Term::Kind::ZeroRows ? zeros == cols
                                                  : zeros == 0;
      }
      r = static_cast<double>(count);
      break;
    }
    case Term::Kind::Element: {  // %k[i]: of a bound ints attribute, or of a constant by flat index
      if (auto a = ctx.attrs->find(t.var); a != ctx.attrs->end()) {
        if (t.axis < static_cast<int64_t>(a->second.ints.size()))
          r = static_cast<double>(a->second.ints[static_cast<size_t>(t.axis)]);
        else if (reason)
          *reason = t.to_string() + " is outside " + t.var + " (" + std::to_string(a->second.ints.size()) +
                    " ints)";
        break;
      }
      const Tensor* c = ctx.constant_of(t.var);
      if (!c || c->dtype == DType::String || c->dtype == DType::Undefined) {
        if (reason) *reason = t.var + " is not a numeric constant";
        break;
      }
      HostTensor h = HostTensor::view(*c);
      if (t.axis < h.size())
        r = h.real_at(t.axis);
      else if (reason)
        *reason = t.to_string() + " is outside " + t.var + " (" + std::to_string(h.size()) + " elements)";
      break;
    }
    case Term::Kind::DType: {
      const ValueType* vt = ctx.type_of(t.var);
      if (vt && vt->dtype != DType::Undefined)
        r = dtype_name(vt->dtype);
      else if (reason)
        *reason = "the dtype of " + t.var + " is unknown";
      break;
    }
  }
  if (r && t.modulo)
    if (auto* d = std::get_if<double>(&*r)) r = std::fmod(*d, *t.modulo);
  return r;
}

// The symbol a dim term names (dim(%x, 1) of an [1,seq,64] value: "seq"); nullopt for a
// number, an unknown dim, or one taken modulo something.
std::optional<std::string> symbolic_dim(const Term& t, const WhereContext& ctx) {
  if (t.kind != Term::Kind::Dim || t.modulo) return std::nullopt;
  const ValueType* vt = ctx.type_of(t.var);
  if (!vt || !vt->shape) return std::nullopt;
  const auto rank = static_cast<int64_t>(vt->shape->rank());
  const int64_t axis = t.axis < 0 ? t.axis + rank : t.axis;
  if (axis < 0 || axis >= rank) return std::nullopt;
  const Dim& d = (*vt->shape)[static_cast<size_t>(axis)];
  return d.is_symbolic() ? std::optional<std::string>(d.symbol_name()) : std::nullopt;
}

// The symbol of a dim term's dim, modulo or not; nullopt for a number or an unknown dim.
std::optional<std::string> dim_symbol(const Term& t, const WhereContext& ctx) {
  if (t.kind != Term::Kind::Dim) return std::nullopt;
  Term plain = t;
  plain.modulo.reset();
  return symbolic_dim(plain, ctx);
}

bool holds(const Predicate& pred, const WhereContext& ctx, std::string* found);

// A comparison on symbolic dims whose ranges are known holds when it holds at every size
// in range: checked at each combination of sizes (up to kMaxCombinations). nullopt when the
// predicate has no such dim (or one without a range): the usual evaluation decides.
std::optional<bool> holds_over_ranges(const Predicate& pred, const WhereContext& ctx, std::string* found) {
  constexpr int64_t kMaxCombinations = 4096;
  if (!ctx.dim_ranges || ctx.assumed || pred.kind != Predicate::Kind::Compare) return std::nullopt;
  std::vector<std::string> symbols;
  for (const Term* t : {&pred.lhs, &pred.rhs}) {
    if (t->kind != Term::Kind::Dim) continue;
    auto s = dim_symbol(*t, ctx);
    if (!s) continue;
    if (!ctx.dim_ranges->count(*s)) return std::nullopt;
    if (std::find(symbols.begin(), symbols.end(), *s) == symbols.end()) symbols.push_back(*s);
  }
  if (symbols.empty()) return std::nullopt;
  auto range_text = [&](const std::string& s) {
    const auto& [lo, hi] = ctx.dim_ranges->at(s);
    return "'" + s + "', " + std::to_string(lo) + "~" + std::to_string(hi);
  };
  int64_t combinations = 1;
  for (const std::string& s : symbols) {
    const auto& [lo, hi] = ctx.dim_ranges->at(s);
    // Counted without overflow: a span past the limit is too many whatever the rest.
    const bool wide = hi < lo || hi - lo >= kMaxCombinations;
    combinations = wide ? kMaxCombinations + 1 : combinations * (hi - lo + 1);
    if (combinations > kMaxCombinations) {
      if (found)
        *found = pred.lhs.to_string() + " is symbolic (" + range_text(s) + "): too many sizes to check each";
      return false;
    }
  }
  std::map<std::string, int64_t> at;
  for (const std::string& s : symbols) at[s] = ctx.dim_ranges->at(s).first;
  WhereContext each = ctx;
  each.assumed = &at;
  for (int64_t k = 0; k < combinations; ++k) {
    if (!holds(pred, each, nullptr)) {
      if (found) {
        std::string sizes;
        for (const std::string& s : symbols)
          sizes += (sizes.empty() ? "" : ", ") + s + " = " + std::to_string(at[s]);
        std::string ranges;
        for (const std::string& s : symbols) ranges += (ranges.empty() ? "" : "; ") + range_text(s);
        const Term& dim = pred.lhs.kind == Term::Kind::Dim ? pred.lhs : pred.rhs;
        Term plain = dim;
        plain.modulo.reset();
        *found = plain.to_string() + " is symbolic (" + ranges + "), and at " + sizes + " it does not hold";
      }
      return false;
    }
    for (const std::string& s : symbols) {  // the next combination, like an odometer
      if (++at[s] <= ctx.dim_ranges->at(s).second) break;
      at[s] = ctx.dim_ranges->at(s).first;
    }
  }
  return true;
}

// Whether the predicate holds; `found`, when given, receives what was found (for a
// failure's message), built only then.
bool holds(const Predicate& pred, const WhereContext& ctx, std::string* found) {
  bool ok = false;
  // Two dims of one symbol are one size, whatever it is at run time (a dynamic sequence
  // on both sides of a residual sum); any other comparison needs numbers.
  if (pred.op == CmpOp::Eq && !ctx.assumed)
    if (auto a = symbolic_dim(pred.lhs, ctx))
      if (auto b = symbolic_dim(pred.rhs, ctx)) {
        if (*a == *b) return true;
        if (auto over = holds_over_ranges(pred, ctx, found)) return *over;
        if (found)
          *found = pred.lhs.to_string() + " is symbolic ('" + *a + "'), " + pred.rhs.to_string() +
                   " is symbolic ('" + *b + "'): not the same symbol, so not known to be one size";
        return false;
      }
  if (auto over = holds_over_ranges(pred, ctx, found)) return *over;
  if (pred.kind == Predicate::Kind::IsConst) {
    ok = ctx.is_constant ? ctx.is_constant(pred.var) : ctx.constant_of(pred.var) != nullptr;
    if (found) *found = pred.var + " is not a constant";
    return ok;
  }
  if (pred.kind == Predicate::Kind::IsStatic) {
    const ValueType* t = ctx.type_of(pred.var);
    ok = t && t->shape && t->shape->is_static();
    if (found) *found = "the shape of " + pred.var + " is " + (t && t->shape ? t->to_string() : "unknown");
    return ok;
  }
  if (pred.kind == Predicate::Kind::OneUse) {
    auto uses = ctx.uses_of(pred.var);
    if (found) *found = pred.var + " has " + std::to_string(uses.value_or(0)) + " uses";
    return uses && *uses == 1;
  }
  std::string reason;
  std::string* why = found ? &reason : nullptr;
  auto lhs = term_value(pred.lhs, ctx, why);
  if (!lhs) {
    if (found) *found = reason;
    return false;
  }
  if (found) {
    std::string what = pred.lhs.to_string();
    if (pred.lhs.kind == Term::Kind::Var && ctx.attrs)
      if (auto a = ctx.attrs->find(pred.lhs.var); a != ctx.attrs->end())
        what += " (attribute '" + a->second.name + "')";
    *found = what + " is " + as_text(*lhs) + (reason.empty() ? "" : " " + reason);
    reason.clear();
  }
  if (pred.op == CmpOp::In) {
    if (pred.is_range)
      return std::holds_alternative<double>(*lhs) && std::get<double>(*lhs) >= pred.lo &&
             std::get<double>(*lhs) <= pred.hi;
    for (const auto& l : pred.set) {
      if (auto* d = std::get_if<double>(&*lhs))
        ok = ok || (l.kind == Literal::Kind::Number && l.number == *d);
      else
        ok = ok || (l.kind == Literal::Kind::Ident && parse_dtype(l.text) &&
                    dtype_name(*parse_dtype(l.text)) == std::get<std::string>(*lhs));
    }
    return ok;
  }
  auto rhs = term_value(pred.rhs, ctx, why);
  if (!rhs) {
    if (found) *found = reason;
    return false;
  }
  // A computed right side (dim(%w, 1), shape(%y), a bound value) is named too.
  if (found && pred.rhs.kind != Term::Kind::Number && pred.rhs.kind != Term::Kind::Ident)
    *found += ", " + pred.rhs.to_string() + " is " + as_text(*rhs);
  if (std::holds_alternative<double>(*lhs) && std::holds_alternative<double>(*rhs)) {
    double x = std::get<double>(*lhs), y = std::get<double>(*rhs);
    switch (pred.op) {
      case CmpOp::Eq:
        return x == y;
      case CmpOp::Ne:
        return x != y;
      case CmpOp::Lt:
        return x < y;
      case CmpOp::Le:
        return x <= y;
      case CmpOp::Gt:
        return x > y;
      case CmpOp::Ge:
        return x >= y;
      case CmpOp::Approx:
        return std::fabs(x - y) <= pred.tolerance;
      case CmpOp::In:
        break;
    }
    return false;
  }
  std::string x = as_text(*lhs), y = as_text(*rhs);
  if (parse_dtype(y)) y = dtype_name(*parse_dtype(y));
  return pred.op == CmpOp::Eq ? x == y : pred.op == CmpOp::Ne ? x != y : false;
}

}  // namespace

std::string first_failed_predicate(const std::vector<Predicate>& where, const WhereContext& ctx) {
  for (const Predicate& pred : where) {
    if (holds(pred, ctx, nullptr)) continue;
    std::string found;
    holds(pred, ctx, &found);
    return "where " + pred.to_string() + " fails: " + found + " (" + pred.loc.to_string() + ")";
  }
  return "";
}

}  // namespace geopt::dsl
