#pragma once
// Small facts about attribute and constant values, shared by the IR matcher,
// the e-graph matcher and `where` evaluation.
#include <optional>
#include <string>

#include "ir/attribute.h"
#include "ir/value.h"

namespace geopt::dsl {

std::optional<double> attr_number(const Attribute& a);            // ints and floats
std::optional<double> constant_scalar(const Tensor* t);          // every element equal: that value
bool constant_all_equal(const Tensor* t, double number);         // compared in the constant's precision
std::string format_number(double v);                             // 9 significant digits
// dim(%v, axis) or rank(%v) of a value of this type; nullopt when not static.
struct Term;
std::optional<int64_t> shape_term_value(const Term& t, const ValueType* type);

}  // namespace geopt::dsl
