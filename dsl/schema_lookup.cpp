#include "dsl/schema_lookup.h"

#include <onnx/defs/schema.h>

#include <algorithm>
#include <climits>
#include <mutex>
#include <set>

#include "dsl/ast.h"
#include "onnx/validate.h"

namespace geopt::dsl {
namespace {

std::string norm_domain(const std::string& d) { return d == "ai.onnx" ? "" : d; }

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

const std::set<std::string> kCommutative = {"Add", "Mul", "Max", "Min", "Sum", "Mean", "And", "Or", "Xor", "Equal"};

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
    case AttrKind::Int: a.i = static_cast<int64_t>(l.number); break;
    case AttrKind::Float: a.f = static_cast<float>(l.number); break;
    case AttrKind::String: a.s = l.text; break;
    case AttrKind::Ints: for (const auto& i : l.items) a.ints.push_back(static_cast<int64_t>(i.number)); break;
    case AttrKind::Floats: for (const auto& i : l.items) a.floats.push_back(static_cast<float>(i.number)); break;
    case AttrKind::Strings: for (const auto& i : l.items) a.strings.push_back(i.text); break;
    default: break;
  }
  return a;
}

const OpInfo* find_op(const std::string& domain_in, const std::string& op) {
  onnx_io::register_geopt_schemas();
  const std::string domain = norm_domain(domain_in);
  Catalog& c = catalog();
  std::lock_guard lock(c.mutex);
  auto [it, inserted] = c.ops.try_emplace({domain, op});
  if (!inserted) return it->second ? &*it->second : nullptr;
  // Every version of the op, straight from the registry (copying the
  // whole registry with its history costs more than loading all the rules).
  std::vector<const onnx::OpSchema*> versions;
  for (const onnx::OpSchema* v = onnx::OpSchemaRegistry::Schema(op, INT_MAX, domain); v;
       v = v->SinceVersion() > 1 ? onnx::OpSchemaRegistry::Schema(op, v->SinceVersion() - 1, domain) : nullptr)
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
      if (s.SinceVersion() >= latest && a.default_value.has_type()) ai.default_value = from_proto(name, a.default_value);
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
  info.commutative = domain.empty() && kCommutative.count(op);
  it->second = std::move(info);
  return &*it->second;
}

const Attribute* attribute_default(const std::string& domain_in, const std::string& op, const std::string& name, int64_t opset) {
  onnx_io::register_geopt_schemas();
  const std::string domain = norm_domain(domain_in);
  Catalog& c = catalog();
  std::lock_guard lock(c.mutex);
  auto key = std::make_tuple(domain, op, name, opset);
  auto [it, inserted] = c.defaults.try_emplace(key);
  if (inserted) {
    const onnx::OpSchema* s = onnx::OpSchemaRegistry::Schema(op, static_cast<int>(opset > 0 ? opset : INT_MAX), domain);
    if (s) {
      auto a = s->attributes().find(name);
      if (a != s->attributes().end() && a->second.default_value.has_type()) it->second = from_proto(name, a->second.default_value);
    }
  }
  return it->second ? &*it->second : nullptr;
}

}  // namespace geopt::dsl
