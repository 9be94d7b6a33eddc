#include "ir/graph_text.h"

#include <cstdio>
#include <sstream>

namespace geopt {

std::string bytes_digest(std::span<const std::byte> bytes) {
  uint64_t h = 1469598103934665603ull;
  for (std::byte b : bytes) {
    h ^= static_cast<uint64_t>(b);
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

namespace {

std::string tensor_text(const Tensor& t) {
  std::string s = dtype_name(t.dtype) + "[";
  for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? "," : "") + std::to_string(t.dims[i]);
  s += "] ";
  if (t.dtype == DType::String) {
    std::string all;
    for (const auto& str : t.strings) all += str + '\0';
    return s + "strings:" + bytes_digest(std::as_bytes(std::span(all)));
  }
  return s + "bytes:" + bytes_digest(t.bytes());
}

std::string attribute_text(const Attribute& a) {
  if (a.kind == AttrKind::Tensor || a.kind == AttrKind::Tensors) {
    std::string s = a.name + "=";
    for (const auto& t : a.tensors) s += "<" + tensor_text(*t) + ">";
    return s;
  }
  if (!a.opaque.empty()) {
    std::string all;
    for (const auto& o : a.opaque) all += o;
    return a.name + "=<" + attr_kind_name(a.kind) + " " + bytes_digest(std::as_bytes(std::span(all))) + ">";
  }
  return a.to_string();
}

std::string value_ref(const Value* v) { return v ? v->name() : "<none>"; }

}  // namespace

std::string to_text(const Model& m) {
  std::ostringstream os;
  os << "ir_version " << m.ir_version << "\n";
  for (const auto& o : m.opsets)
    os << "opset " << (o.domain.empty() ? "ai.onnx" : o.domain) << " " << o.version << "\n";
  os << "producer \"" << m.producer_name << "\" \"" << m.producer_version << "\"\n";
  for (const auto& [k, v] : m.metadata) os << "metadata " << k << " = \"" << v << "\"\n";
  os << "functions " << m.opaque_functions.size() << "\n";
  const Graph& g = *m.graph;
  os << "graph \"" << g.name << "\"\n";
  for (const Value* v : g.inputs()) os << "  input " << v->name() << ": " << v->type.to_string() << "\n";
  for (const Value* v : g.initializers())
    os << "  initializer " << v->name() << ": " << tensor_text(*v->initializer) << "\n";
  for (const auto& n : g.nodes()) {
    os << "  node \"" << n->name << "\" " << (n->domain.empty() ? "" : n->domain + "::") << n->op_type << "(";
    for (size_t i = 0; i < n->inputs().size(); ++i) os << (i ? ", " : "") << value_ref(n->inputs()[i]);
    os << ") -> (";
    for (size_t i = 0; i < n->outputs().size(); ++i) {
      const Value* out = n->outputs()[i];
      os << (i ? ", " : "") << value_ref(out);
      if (out) os << ": " << out->type.to_string();
    }
    os << ")";
    for (const auto& a : n->attributes) os << " " << attribute_text(a);
    os << "\n";
  }
  for (const Value* v : g.outputs()) os << "  output " << v->name() << ": " << v->type.to_string() << "\n";
  return os.str();
}

}  // namespace geopt
