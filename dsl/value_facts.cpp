#include "dsl/value_facts.h"

#include <sstream>

#include "dsl/ast.h"
#include "eval/host_tensor.h"

namespace geopt::dsl {

std::optional<double> attr_number(const Attribute& a) {
  if (a.kind == AttrKind::Int) return static_cast<double>(a.i);
  if (a.kind == AttrKind::Float) return static_cast<double>(a.f);
  return std::nullopt;
}

std::optional<double> constant_scalar(const Tensor* t) {
  if (!t || t->dtype == DType::String || t->dtype == DType::Undefined) return std::nullopt;
  HostTensor h = HostTensor::view(*t);
  if (h.size() == 0) return std::nullopt;
  double first = h.real_at(0);
  for (int64_t i = 1; i < h.size(); ++i)
    if (h.real_at(i) != first) return std::nullopt;
  return first;
}

bool constant_all_equal(const Tensor* t, double number) {
  auto s = constant_scalar(t);
  if (!s) return false;
  if (t->dtype == DType::F32 || t->dtype == DType::F16 || t->dtype == DType::BF16)
    return static_cast<float>(*s) == static_cast<float>(number);
  return *s == number;
}

std::optional<int64_t> shape_term_value(const Term& t, const ValueType* type) {
  if (type && t.kind == Term::Kind::DType)  // ONNX's TensorProto code, as a Cast's `to` takes it
    return type->dtype == DType::Undefined ? std::nullopt
                                           : std::optional<int64_t>(static_cast<int64_t>(type->dtype));
  if (!type || !type->shape) return std::nullopt;
  const int64_t rank = static_cast<int64_t>(type->shape->rank());
  if (t.kind == Term::Kind::Rank) return rank;
  if (t.kind != Term::Kind::Dim) return std::nullopt;  // shape(): a list, not a number
  int64_t axis = t.axis < 0 ? t.axis + rank : t.axis;
  if (axis < 0 || axis >= rank) return std::nullopt;
  const Dim& d = (*type->shape)[static_cast<size_t>(axis)];
  if (!d.is_static()) return std::nullopt;
  return d.value();
}

std::string format_number(double v) {
  std::ostringstream os;
  os.precision(9);
  os << v;
  return os.str();
}

std::optional<std::vector<double>> list_value(const std::vector<ListItem>& items, const BoundLookup& bound,
                                              std::string* why) {
  auto fail = [why](std::string message) -> std::optional<std::vector<double>> {
    if (why) *why = std::move(message);
    return std::nullopt;
  };
  std::vector<double> out;
  for (const ListItem& item : items) {
    if (!item.addends.empty()) {  // a sum: each addend one number
      double sum = 0;
      for (const ListItem& addend : item.addends) {
        auto v = list_value({addend}, bound, why);
        if (!v) return std::nullopt;
        if (v->size() != 1)
          return fail("an addend of a sum holds " + std::to_string(v->size()) + " numbers, not one");
        sum += v->front();
      }
      out.push_back(sum);
    } else if (item.number) {
      out.push_back(*item.number);
    } else if (item.splice) {  // %cs...: every number the list variable holds
      auto v = bound.spliced ? bound.spliced(item.var) : std::nullopt;
      if (!v) return fail(item.var + "... holds something that is not a number at this match");
      out.insert(out.end(), v->begin(), v->end());
    } else if (item.term && item.term->kind == Term::Kind::Shape) {  // every dim
      const ValueType* t = bound.type_of(item.term->var);
      if (!t || !t->shape || !t->shape->is_static())
        return fail(item.term->to_string() + " is not static at this match");
      for (const Dim& d : t->shape->dims()) out.push_back(static_cast<double>(d.value()));
    } else if (item.term) {
      auto v = shape_term_value(*item.term, bound.type_of(item.term->var));
      if (!v) return fail(item.term->to_string() + " is not a static number at this match");
      out.push_back(static_cast<double>(*v));
    } else if (!item.gather_var.empty()) {  // %p[%q]: p's elements in q's order
      const Attribute* a = bound.attr_of(item.var);
      const Attribute* q = bound.attr_of(item.gather_var);
      if (!a || !q) return fail(item.var + "[" + item.gather_var + "] needs two bound ints attributes");
      const auto n = static_cast<int64_t>(a->ints.size());
      for (int64_t i : q->ints) {
        const int64_t k = i < 0 ? i + n : i;
        if (k < 0 || k >= n)
          return fail(item.gather_var + " holds " + std::to_string(i) + ", outside " + item.var + " (" +
                      std::to_string(n) + " elements)");
        out.push_back(static_cast<double>(a->ints[static_cast<size_t>(k)]));
      }
    } else if (const Attribute* a = bound.attr_of(item.var)) {
      if (item.index < 0) {
        auto v = attr_number(*a);
        if (!v) return fail(item.var + " is not a number");
        out.push_back(*v);
      } else if (static_cast<size_t>(item.index) < a->ints.size()) {
        out.push_back(static_cast<double>(a->ints[static_cast<size_t>(item.index)]));
      } else {
        return fail(item.var + "[" + std::to_string(item.index) + "] is outside the bound list");
      }
    } else if (item.index >= 0) {  // %c[i]: element i of a bound constant
      const Tensor* c = bound.constant_of ? bound.constant_of(item.var) : nullptr;
      if (!c || c->dtype == DType::String || c->dtype == DType::Undefined)
        return fail(item.var + " is not a numeric constant at this match");
      HostTensor h = HostTensor::view(*c);
      if (item.index >= h.size())
        return fail(item.var + "[" + std::to_string(item.index) + "] is outside the constant (" +
                    std::to_string(h.size()) + " elements)");
      out.push_back(h.real_at(item.index));
    } else {  // a bound scalar constant
      auto v = bound.constant_of ? constant_scalar(bound.constant_of(item.var)) : std::nullopt;
      if (!v) return fail(item.var + " is not a scalar constant at this match");
      out.push_back(*v);
    }
  }
  return out;
}

Attribute list_attribute(const std::string& name, AttrKind kind, const std::vector<double>& values) {
  if (kind == AttrKind::Floats)
    return Attribute::make_floats(name, std::vector<float>(values.begin(), values.end()));
  std::vector<int64_t> ints;
  for (double v : values) ints.push_back(static_cast<int64_t>(v));
  return Attribute::make_ints(name, ints);
}

}  // namespace geopt::dsl
