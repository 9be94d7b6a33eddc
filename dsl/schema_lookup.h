#pragma once
// What the rule language needs to know about an op: whether it exists, its
// attributes (name, type, default) and its input/output counts, from libonnx's
// schemas (every opset version) and the ai.geopt catalog.
#include <map>
#include <optional>
#include <string>

#include "ir/attribute.h"

namespace geopt::dsl {

struct AttrInfo {
  AttrKind kind = AttrKind::Undefined;
  std::optional<Attribute> default_value;  // as the latest schema defines it
};

struct OpInfo {
  std::string domain, op;
  int min_inputs = 0, max_inputs = 0;  // max_inputs: INT_MAX when variadic
  int min_outputs = 0, max_outputs = 0;
  std::map<std::string, AttrInfo> attrs;  // union over all versions
  bool commutative = false;              // binary ops whose operands may swap
};

// nullptr when no version of the op exists in that domain ("" and "ai.onnx" are the same).
const OpInfo* find_op(const std::string& domain, const std::string& op);
// An attribute of the given kind holding a rule literal's value.
struct Literal;
Attribute literal_attribute(const std::string& name, AttrKind kind, const Literal& l);

// The schema default of an attribute at the given opset (nullptr when none).
const Attribute* attribute_default(const std::string& domain, const std::string& op, const std::string& name, int64_t opset);

}  // namespace geopt::dsl
