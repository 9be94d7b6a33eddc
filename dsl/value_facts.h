#pragma once
// Small facts about attribute and constant values, shared by the IR matcher,
// the e-graph matcher and `where` evaluation.
#include <optional>
#include <string>

#include "ir/attribute.h"

namespace geopt::dsl {

std::optional<double> attr_number(const Attribute& a);            // ints and floats
std::optional<double> constant_scalar(const Tensor* t);          // every element equal: that value
bool constant_all_equal(const Tensor* t, double number);         // compared in the constant's precision
std::string format_number(double v);                             // 9 significant digits

}  // namespace geopt::dsl
