#include "ir/attribute.h"

#include <charconv>
#include <cstring>
#include <span>
#include <sstream>

#include "ir/graph_text.h"

namespace geopt {

const char* attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::Float:
      return "float";
    case AttrKind::Int:
      return "int";
    case AttrKind::String:
      return "string";
    case AttrKind::Tensor:
      return "tensor";
    case AttrKind::Graph:
      return "graph";
    case AttrKind::Floats:
      return "floats";
    case AttrKind::Ints:
      return "ints";
    case AttrKind::Strings:
      return "strings";
    case AttrKind::Tensors:
      return "tensors";
    case AttrKind::Graphs:
      return "graphs";
    case AttrKind::SparseTensor:
      return "sparse_tensor";
    case AttrKind::SparseTensors:
      return "sparse_tensors";
    case AttrKind::TypeProto:
      return "type_proto";
    case AttrKind::TypeProtos:
      return "type_protos";
    case AttrKind::Undefined:
      break;
  }
  return "undefined";
}

Attribute Attribute::make_int(std::string name, int64_t v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Int;
  a.i = v;
  return a;
}

Attribute Attribute::make_float(std::string name, float v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Float;
  a.f = v;
  return a;
}

Attribute Attribute::make_string(std::string name, std::string v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::String;
  a.s = std::move(v);
  return a;
}

Attribute Attribute::make_ints(std::string name, std::vector<int64_t> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Ints;
  a.ints = std::move(v);
  return a;
}

Attribute Attribute::make_floats(std::string name, std::vector<float> v) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Floats;
  a.floats = std::move(v);
  return a;
}

Attribute Attribute::make_tensor(std::string name, std::shared_ptr<const Tensor> t) {
  Attribute a;
  a.name = std::move(name);
  a.kind = AttrKind::Tensor;
  a.tensors.push_back(std::move(t));
  return a;
}

namespace {

template <class T>
void join(std::ostringstream& os, const std::vector<T>& v) {
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? "," : "") << v[i];
  os << "]";
}

std::string tensor_summary(const Tensor& t) {
  std::string s = "<" + dtype_name(t.dtype) + "[";
  for (size_t i = 0; i < t.dims.size(); ++i) s += (i ? "," : "") + std::to_string(t.dims[i]);
  return s + "]>";
}

}  // namespace

std::string Attribute::to_string() const {
  std::ostringstream os;
  os.precision(9);
  os << name << "=";
  switch (kind) {
    case AttrKind::Float:
      os << f;
      break;
    case AttrKind::Int:
      os << i;
      break;
    case AttrKind::String:
      os << '"' << s << '"';
      break;
    case AttrKind::Floats:
      join(os, floats);
      break;
    case AttrKind::Ints:
      join(os, ints);
      break;
    case AttrKind::Strings: {
      os << "[";
      for (size_t k = 0; k < strings.size(); ++k) os << (k ? "," : "") << '"' << strings[k] << '"';
      os << "]";
      break;
    }
    case AttrKind::Tensor:
    case AttrKind::Tensors: {
      os << (kind == AttrKind::Tensors ? "[" : "");
      for (size_t k = 0; k < tensors.size(); ++k) os << (k ? "," : "") << tensor_summary(*tensors[k]);
      os << (kind == AttrKind::Tensors ? "]" : "");
      break;
    }
    default:
      os << "<" << attr_kind_name(kind) << " x" << opaque.size() << ">";
      break;
  }
  if (!ref_attr_name.empty()) os << " (ref " << ref_attr_name << ")";
  return os.str();
}

std::string Attribute::identity_key() const {
  if (kind == AttrKind::Tensor || kind == AttrKind::Tensors) {
    std::string s = "<";
    for (const auto& t : tensors) {
      s += dtype_name(t->dtype) + "[";
      for (int64_t d : t->dims) s += std::to_string(d) + ",";
      s += "]:" + bytes_digest(t->bytes()) + ";";
    }
    return s + ">";
  }
  if (!opaque.empty()) {  // subgraphs: two Ifs with other branches are other ops
    std::string s = "<";
    for (const auto& o : opaque) s += bytes_digest(std::as_bytes(std::span(o.data(), o.size()))) + ",";
    return s + ">";
  }
  // Everything else in a compact form, no stream: hash-consing and the automaton ask
  // for this on every e-node they see. Floats go by their bits (as same_value compares
  // them), strings with their lengths, so the key is injective.
  std::string key(1, static_cast<char>('A' + static_cast<int>(kind)));
  char buf[24];
  auto put_int = [&](int64_t v) {
    key.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, v).ptr - buf));
    key += ',';
  };
  auto put_float = [&](float v) {
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    key.append(buf, static_cast<size_t>(std::to_chars(buf, buf + sizeof buf, bits, 16).ptr - buf));
    key += ',';
  };
  auto put_string = [&](const std::string& v) {
    put_int(static_cast<int64_t>(v.size()));
    key += v;
  };
  switch (kind) {
    case AttrKind::Float:
      put_float(f);
      break;
    case AttrKind::Int:
      put_int(i);
      break;
    case AttrKind::String:
      put_string(s);
      break;
    case AttrKind::Floats:
      for (float v : floats) put_float(v);
      break;
    case AttrKind::Ints:
      for (int64_t v : ints) put_int(v);
      break;
    case AttrKind::Strings:
      for (const auto& v : strings) put_string(v);
      break;
    default:
      break;
  }
  if (!ref_attr_name.empty()) key += "@" + ref_attr_name;
  return key;
}

bool Attribute::same_value(const Attribute& o) const {
  if (kind != o.kind || i != o.i || s != o.s || ints != o.ints || strings != o.strings ||
      opaque != o.opaque || ref_attr_name != o.ref_attr_name)
    return false;
  // Bitwise for floats: NaN equals itself, and -0 is not 0 (an attribute is data, not arithmetic).
  auto same_float = [](float a, float b) { return std::memcmp(&a, &b, sizeof a) == 0; };
  if (!same_float(f, o.f) || floats.size() != o.floats.size() || tensors.size() != o.tensors.size())
    return false;
  for (size_t k = 0; k < floats.size(); ++k)
    if (!same_float(floats[k], o.floats[k])) return false;
  for (size_t k = 0; k < tensors.size(); ++k)
    if (!tensors[k]->same_contents(*o.tensors[k])) return false;
  return true;
}

}  // namespace geopt
