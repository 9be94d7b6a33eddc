#pragma once
// What the rule language needs to know about an op: whether it exists, its
// attributes (name, type, default) and its input/output counts, from libonnx's
// schemas (every opset version) and the ai.geopt catalog.
#include <map>
#include <optional>
#include <string>

#include "eval/host_tensor.h"
#include "ir/attribute.h"
#include "ir/tensor.h"

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
  bool commutative = false;               // binary ops whose operands may swap
};

// nullptr when no version of the op exists in that domain ("" and "ai.onnx" are the same).
const OpInfo* find_op(const std::string& domain, const std::string& op);
// An attribute of the given kind holding a rule literal's value.
struct Literal;
Attribute literal_attribute(const std::string& name, AttrKind kind, const Literal& l);

// The schema default of an attribute at the given opset (nullptr when none).
const Attribute* attribute_default(const std::string& domain, const std::string& op, const std::string& name,
                                   int64_t opset);

// Where the op takes, at this opset, what an older version took as attribute `name`: the
// index of the input that replaced it (ReduceMean's axes since opset 18, ReduceSum's,
// Squeeze's and Unsqueeze's axes and Split's split since 13, Pad's pads and value and
// Clip's min and max since 11). nullopt where `name` is still an attribute, or never was
// one. Rules name such a value as an attribute at every opset: the matcher reads it from
// the input's constant and a rewrite writes it as one (one rule for every opset).
std::optional<size_t> attribute_input(const std::string& domain, const std::string& op,
                                      const std::string& name, int64_t opset);
// Whether input `index` of the op at this opset is such an input (for any attribute).
bool is_attribute_input(const std::string& domain, const std::string& op, size_t index, int64_t opset);
// The value an attribute-input holds, as the attribute it replaced (its kind as the older
// versions declare it); nullopt when the tensor does not fit that kind.
std::optional<Attribute> attribute_from_input(const std::string& domain, const std::string& op,
                                              const std::string& name, const Tensor& value);
// The value such an attribute took by default where its input is absent (Clip's min: the
// lowest float), as the versions that had the attribute define it; nullopt when none.
std::optional<Attribute> moved_attribute_default(const std::string& domain, const std::string& op,
                                                 const std::string& name);
// The input a rewrite writes for such an attribute: int64 for integers, `float_type` (the
// op's data type: Clip's and Pad's values are of it) for floats; a list is 1-D.
HostTensor attribute_as_input(const Attribute& a, DType float_type);

}  // namespace geopt::dsl
