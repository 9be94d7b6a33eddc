#pragma once
// Small facts about attribute and constant values, shared by the IR matcher,
// the e-graph matcher and `where` evaluation.
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ir/attribute.h"
#include "ir/value.h"

namespace geopt::dsl {

std::optional<double> attr_number(const Attribute& a);    // ints and floats
std::optional<double> constant_scalar(const Tensor* t);   // every element equal: that value
bool constant_all_equal(const Tensor* t, double number);  // compared in the constant's precision
std::string format_number(double v);                      // 9 significant digits
// dim(%v, axis) or rank(%v) of a value of this type; nullopt when not static.
struct Term;
std::optional<int64_t> shape_term_value(const Term& t, const ValueType* type);
// What a match bound, by variable name (null where unbound or not of that kind).
struct BoundLookup {
  std::function<const ValueType*(const std::string&)> type_of;
  std::function<const Attribute*(const std::string&)> attr_of;
  std::function<const Tensor*(const std::string&)> constant_of;
  // The numbers a list variable holds (`%cs...`: bound attributes or scalar constants,
  // one per input it matched); nullopt when one is not a number.
  std::function<std::optional<std::vector<double>>(const std::string&)> spliced;
};
// The numbers of a list expression at one match; nullopt (with `why`) when a dim is
// not static, an index is outside the bound attribute, or a variable is no scalar.
struct ListItem;
std::optional<std::vector<double>> list_value(const std::vector<ListItem>& items, const BoundLookup& bound,
                                              std::string* why = nullptr);
// The attribute a list expression makes: ints, or floats for a FLOATS attribute.
Attribute list_attribute(const std::string& name, AttrKind kind, const std::vector<double>& values);

}  // namespace geopt::dsl
