#include "dsl/schema_lookup.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <climits>
#include <map>
#include <mutex>
#include <set>

#include "dsl/ast.h"
#include "eval/host_tensor.h"
#include "ir/domain.h"
#include "kernels/cast.h"
#include "onnx/validate.h"
#include "ops/op_traits.h"
#include "util/error.h"

namespace geopt::dsl {
namespace {

Attribute from_proto(const std::string& name, const onnx::AttributeProto& a) {
  Attribute out;
  out.name = name;
  out.kind = static_cast<AttrKind>(a.type());
  out.f = a.f();
  out.i = a.i();
  out.s = a.s();
  out.floats.assign(a.floats().begin(), a.floats().end());
  out.ints.assign(a.ints().begin(), a.ints().end());
  out.strings.assign(a.strings().begin(), a.strings().end());
  return out;
}

struct Catalog {
  std::mutex mutex;
  std::map<std::pair<std::string, std::string>, std::optional<OpInfo>> ops;
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, std::optional<Attribute>> defaults;
};

Catalog& catalog() {
  static Catalog c;
  return c;
}

}  // namespace

Attribute literal_attribute(const std::string& name, AttrKind kind, const Literal& l) {
  Attribute a;
  a.name = name;
  a.kind = kind;
  switch (kind) {
    case AttrKind::Int:
      a.i = static_cast<int64_t>(l.number);
      break;
    case AttrKind::Float:
      a.f = static_cast<float>(l.number);
      break;
    case AttrKind::String:
      a.s = l.text;
      break;
    case AttrKind::Ints:
      for (const auto& i : l.items) a.ints.push_back(static_cast<int64_t>(i.number));
      break;
    case AttrKind::Floats:
      for (const auto& i : l.items) a.floats.push_back(static_cast<float>(i.number));
      break;
    case AttrKind::Strings:
      for (const auto& i : l.items) a.strings.push_back(i.text);
      break;
    default:
      break;
  }
  return a;
}

const OpInfo* find_op(const std::string& domain_in, const std::string& op) {
  onnx_io::register_geopt_schemas();
  const std::string domain = canonical_domain(domain_in);
  Catalog& c = catalog();
  std::lock_guard lock(c.mutex);
  auto [it, inserted] = c.ops.try_emplace({domain, op});
  if (!inserted) return it->second ? &*it->second : nullptr;
  // Every version of the op, straight from the registry (copying the
  // whole registry with its history costs more than loading all the rules).
  std::vector<const onnx::OpSchema*> versions;
  for (const onnx::OpSchema* v = onnx::OpSchemaRegistry::Schema(op, INT_MAX, domain); v;
       v = v->SinceVersion() > 1 ? onnx::OpSchemaRegistry::Schema(op, v->SinceVersion() - 1, domain)
                                 : nullptr)
    versions.push_back(v);
  std::reverse(versions.begin(), versions.end());  // oldest first: the newest version's word is the last
  OpInfo info;
  bool found = false;
  int latest = -1;
  for (const onnx::OpSchema* v : versions) {
    const onnx::OpSchema& s = *v;
    found = true;
    for (const auto& [name, a] : s.attributes()) {
      AttrInfo& ai = info.attrs[name];
      ai.kind = static_cast<AttrKind>(a.type);
      if (s.SinceVersion() >= latest && a.default_value.has_type())
        ai.default_value = from_proto(name, a.default_value);
    }
    if (s.SinceVersion() >= latest) {
      latest = s.SinceVersion();
      info.min_inputs = s.min_input();
      info.max_inputs = s.max_input() == std::numeric_limits<int>::max() ? INT_MAX : s.max_input();
      info.min_outputs = s.min_output();
      info.max_outputs = s.max_output() == std::numeric_limits<int>::max() ? INT_MAX : s.max_output();
    }
  }
  if (!found) return nullptr;
  info.domain = domain;
  info.op = op;
  info.commutative = standard_op_traits(domain, op).commutative;
  it->second = std::move(info);
  return &*it->second;
}

const Attribute* attribute_default(const std::string& domain_in, const std::string& op,
                                   const std::string& name, int64_t opset) {
  onnx_io::register_geopt_schemas();
  const std::string domain = canonical_domain(domain_in);
  Catalog& c = catalog();
  std::lock_guard lock(c.mutex);
  auto key = std::make_tuple(domain, op, name, opset);
  auto [it, inserted] = c.defaults.try_emplace(key);
  if (inserted) {
    const onnx::OpSchema* s =
        onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset > 0 ? opset : INT_MAX), domain);
    if (s) {
      auto a = s->attributes().find(name);
      if (a != s->attributes().end() && a->second.default_value.has_type())
        it->second = from_proto(name, a->second.default_value);
    }
  }
  return it->second ? &*it->second : nullptr;
}

namespace {

// Inputs named otherwise than the attribute they replaced.
std::string input_name_for(const std::string& op, const std::string& attribute) {
  static const std::map<std::pair<std::string, std::string>, std::string, std::less<>> kRenamed = {
      {{"Pad", "value"}, "constant_value"},
      {{"TopK", "k"}, "K"},
  };
  auto it = kRenamed.find(std::make_pair(op, attribute));
  return it == kRenamed.end() ? attribute : it->second;
}

struct AttributeInputs {
  std::mutex mutex;
  std::map<std::tuple<std::string, std::string, std::string, int64_t>, std::optional<size_t>> by_name;
};

AttributeInputs& attribute_inputs() {
  static AttributeInputs a;
  return a;
}

}  // namespace

std::optional<size_t> attribute_input(const std::string& domain_in, const std::string& op,
                                      const std::string& name, int64_t opset) {
  const std::string domain = canonical_domain(domain_in);
  if (!domain.empty()) return std::nullopt;  // only the standard ops moved attributes to inputs
  const OpInfo* info = find_op(domain, op);
  if (!info || !info->attrs.count(name)) return std::nullopt;  // never an attribute
  AttributeInputs& a = attribute_inputs();
  std::lock_guard lock(a.mutex);
  auto [it, inserted] = a.by_name.try_emplace({domain, op, name, opset});
  if (inserted) {
    const onnx::OpSchema* s =
        onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset > 0 ? opset : INT_MAX), domain);
    if (s && !s->attributes().count(name)) {
      const std::string input = input_name_for(op, name);
      const auto& inputs = s->inputs();
      for (size_t i = 0; i < inputs.size(); ++i)
        if (inputs[i].GetName() == input) it->second = i;
    }
  }
  return it->second;
}

bool is_attribute_input(const std::string& domain, const std::string& op, size_t index, int64_t opset) {
  const OpInfo* info = find_op(domain, op);
  if (!info) return false;
  for (const auto& [name, attr] : info->attrs)
    if (attribute_input(domain, op, name, opset) == index) return true;
  return false;
}

std::optional<Attribute> attribute_from_input(const std::string& domain, const std::string& op,
                                              const std::string& name, const Tensor& value) {
  const OpInfo* info = find_op(domain, op);
  if (!info || !info->attrs.count(name)) return std::nullopt;
  const HostTensor t = HostTensor::view(value);
  Attribute a;
  a.name = name;
  a.kind = info->attrs.at(name).kind;
  const bool integer = !is_float(t.dtype());
  switch (a.kind) {
    case AttrKind::Ints:
      if (!integer || t.rank() > 1) return std::nullopt;
      a.ints = t.ints();
      return a;
    case AttrKind::Floats:
      if (t.rank() > 1) return std::nullopt;
      for (int64_t i = 0; i < t.size(); ++i) a.floats.push_back(static_cast<float>(t.real_at(i)));
      return a;
    case AttrKind::Int:
      if (!integer || t.size() != 1) return std::nullopt;
      a.i = t.int_at(0);
      return a;
    case AttrKind::Float:
      if (t.size() != 1) return std::nullopt;
      a.f = static_cast<float>(t.real_at(0));
      return a;
    default:
      return std::nullopt;
  }
}

std::optional<Attribute> moved_attribute_default(const std::string& domain, const std::string& op,
                                                 const std::string& name) {
  const OpInfo* info = find_op(domain, op);
  if (!info) return std::nullopt;
  auto it = info->attrs.find(name);
  if (it == info->attrs.end() || !it->second.default_value) return std::nullopt;
  return it->second.default_value;
}

HostTensor attribute_as_input(const Attribute& a, DType float_type) {
  switch (a.kind) {
    case AttrKind::Ints:
      return HostTensor::from_vector<int64_t>(DType::I64, {static_cast<int64_t>(a.ints.size())}, a.ints);
    case AttrKind::Int:  // TopK's K: a 1-D tensor of one value
      return HostTensor::from_vector<int64_t>(DType::I64, {1}, std::vector<int64_t>{a.i});
    case AttrKind::Floats:
    case AttrKind::Float: {
      const std::vector<float> values = a.kind == AttrKind::Float ? std::vector<float>{a.f} : a.floats;
      std::vector<int64_t> dims;
      if (a.kind == AttrKind::Floats) dims.push_back(static_cast<int64_t>(values.size()));
      HostTensor t = HostTensor::from_vector<float>(DType::F32, dims, values);
      // Of the op's data type (Clip's bounds on int32 data are int32).
      const bool real = float_type != DType::Undefined && float_type != DType::Bool &&
                        float_type != DType::String && float_type != DType::C64 && float_type != DType::C128;
      return real && float_type != DType::F32 ? cast_tensor(t, float_type) : t;
    }
    default:
      throw Error("attribute '" + a.name + "' has no input form");
  }
}

}  // namespace geopt::dsl
