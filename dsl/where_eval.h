#pragma once
// Evaluates `where` predicates against bound variables, for the IR matcher and
// the e-graph matcher alike (they differ only in how a variable's type,
// constant and use count are looked up).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "ir/attribute.h"
#include "ir/value.h"

namespace geopt::dsl {

struct WhereContext {
  std::function<const ValueType*(const std::string& var)> type_of;  // null when unbound
  std::function<const Tensor*(const std::string& var)>
      constant_of;  // null when not constant (or not computed yet)
  // Constant, whether or not its value is at hand (e-graph classes folded at compile
  // time); unset: constant_of decides.
  std::function<bool(const std::string& var)> is_constant;
  std::function<std::optional<size_t>(const std::string& var)> uses_of;
  const std::map<std::string, Attribute>* attrs = nullptr;
  std::function<std::string(const std::string& var)> name_of;  // the bound value's name, for messages
  // Known ranges of symbolic dims (Graph::dim_ranges): a comparison on such a dim holds
  // when it holds at every size in range (checked one by one, up to 4096 combinations).
  const std::map<std::string, std::pair<int64_t, int64_t>>* dim_ranges = nullptr;
  // The sizes assumed for symbols while a comparison is checked over their ranges.
  const std::map<std::string, int64_t>* assumed = nullptr;
};

// "" when every predicate holds, else "where P fails: <what was found> (file:line:col)".
std::string first_failed_predicate(const std::vector<Predicate>& where, const WhereContext& ctx);

}  // namespace geopt::dsl
