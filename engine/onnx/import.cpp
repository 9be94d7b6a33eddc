#include "onnx/import.h"

#include <fcntl.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <spdlog/spdlog.h>
#include <unistd.h>
#include <cctype>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <map>
#include <queue>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "ir/domain.h"
#include "onnx/captures.h"
#include "onnx/proto_types.h"
#include "onnx/validate.h"
#include "util/error.h"
#include "util/input_file.h"
#include "util/text.h"

static_assert(std::endian::native == std::endian::little, "geopt stores tensors as little-endian bytes");

namespace geopt {
namespace fs = std::filesystem;
namespace {

std::string node_label(const onnx::NodeProto& n, int index) {
  std::string op = is_onnx_domain(n.domain()) ? n.op_type() : n.domain() + "::" + n.op_type();
  if (!n.name().empty()) return "node '" + n.name() + "' (" + op + ")";
  return "node #" + std::to_string(index) + " (" + op + ", unnamed)";
}

// Maps external-data side files once each and hands out slices of them.
class ExternalData {
 public:
  explicit ExternalData(fs::path model_dir) : dir_(std::move(model_dir)) {}

  // Side files must stay inside the model's folder (as ONNX Runtime requires).
  static void check_location(const std::string& location, const std::string& where) {
    if (location.empty()) throw Error(where + ": external data has no 'location'");
    fs::path rel(location);
    if (rel.is_absolute())
      throw Error(where + ": external data location '" + location + "' must be relative to the model");
    for (const auto& part : rel)
      if (part == "..")
        throw Error(where + ": external data location '" + location + "' leaves the model's folder");
  }

  BufferSlice slice(const onnx::TensorProto& t, size_t expected, const std::string& where) {
    std::string location;
    uint64_t offset = 0;
    std::optional<uint64_t> length;
    for (const auto& kv : t.external_data()) {
      if (kv.key() == "location")
        location = kv.value();
      else if (kv.key() == "offset")
        offset = parse_u64(kv.value(), where, "offset");
      else if (kv.key() == "length")
        length = parse_u64(kv.value(), where, "length");
    }
    check_location(location, where);
    // The text stays inside the folder; the file must too, once links are followed (a
    // link beside the model pointing at /etc/passwd is not the model's data).
    std::error_code ec;
    const fs::path full = fs::canonical(dir_ / location, ec);
    if (ec) throw Error(where + ": external data '" + location + "' cannot be read (" + ec.message() + ")");
    const fs::path folder = fs::canonical(dir_.empty() ? fs::path(".") : dir_, ec);
    const auto [end, at] = std::mismatch(folder.begin(), folder.end(), full.begin(), full.end());
    if (ec || end != folder.end())
      throw Error(where + ": external data '" + location + "' resolves to " + full.string() +
                  ", outside the model's folder " + folder.string());
    if (!fs::is_regular_file(full, ec))
      throw Error(where + ": external data '" + location + "' is not a regular file");
    auto& file = files_[full];
    if (!file) {
      try {
        file = std::make_shared<MappedFile>(full);
      } catch (const Error& e) {
        throw Error(where + ": external data: " + e.what());
      }
    }
    size_t file_size = file->bytes().size();
    uint64_t len = length.value_or(expected);
    if (len != expected)
      throw Error(where + ": external data length " + std::to_string(len) + " does not match the " +
                  std::to_string(expected) + " bytes its dims and dtype need");
    if (offset > file_size || len > file_size - offset)
      throw Error(where + ": external data [" + std::to_string(offset) + ", +" + std::to_string(len) +
                  ") lies beyond the end of '" + location + "' (" + std::to_string(file_size) + " bytes)");
    return BufferSlice(file, offset, len);
  }

 private:
  static uint64_t parse_u64(const std::string& s, const std::string& where, const char* key) {
    try {
      size_t used = 0;
      uint64_t v = std::stoull(s, &used);
      if (used == s.size()) return v;
    } catch (const std::exception&) {
    }
    throw Error(where + ": external data " + key + " '" + s + "' is not a number");
  }

  fs::path dir_;
  std::map<fs::path, std::shared_ptr<MappedFile>> files_;
};

template <class Dst, class Field>
std::string pack(const Field& field) {
  std::string out(static_cast<size_t>(field.size()) * sizeof(Dst), '\0');
  for (int i = 0; i < field.size(); ++i) {
    Dst v = static_cast<Dst>(field.Get(i));
    std::memcpy(out.data() + static_cast<size_t>(i) * sizeof(Dst), &v, sizeof(Dst));
  }
  return out;
}

// Element bytes from the typed repeated fields ONNX allows instead of raw_data.
std::string typed_field_bytes(onnx::TensorProto& t) {
  switch (static_cast<DType>(t.data_type())) {
    case DType::F32:
      return pack<float>(t.float_data());
    case DType::C64:
      return pack<float>(t.float_data());
    case DType::F64:
      return pack<double>(t.double_data());
    case DType::C128:
      return pack<double>(t.double_data());
    case DType::I64:
      return pack<int64_t>(t.int64_data());
    case DType::U32:
      return pack<uint32_t>(t.uint64_data());
    case DType::U64:
      return pack<uint64_t>(t.uint64_data());
    case DType::I32:
      return pack<int32_t>(t.int32_data());
    case DType::I16:
      return pack<int16_t>(t.int32_data());
    case DType::U16:
    case DType::F16:
    case DType::BF16:
      return pack<uint16_t>(t.int32_data());
    case DType::I8:
      return pack<int8_t>(t.int32_data());
    case DType::U8:
    case DType::Bool:
      return pack<uint8_t>(t.int32_data());
    default:
      return {};
  }
}

// Moves a TensorProto's payload into an IR tensor without copying raw bytes.
std::shared_ptr<const Tensor> take_tensor(onnx::TensorProto& tp, ExternalData& ext,
                                          const std::string& where) {
  auto t = std::make_shared<Tensor>();
  t->name = tp.name();
  t->dtype = static_cast<DType>(tp.data_type());
  t->doc_string = tp.doc_string();
  t->dims.assign(tp.dims().begin(), tp.dims().end());
  if (tp.has_segment()) throw Error(where + ": segmented tensors are not supported");
  for (int64_t d : t->dims)
    if (d < 0) throw Error(where + ": negative dimension " + std::to_string(d));
  if (t->dtype == DType::String) {
    for (auto& s : *tp.mutable_string_data()) t->strings.push_back(std::move(s));
    if (static_cast<int64_t>(t->strings.size()) != t->element_count())
      throw Error(where + ": holds " + std::to_string(t->strings.size()) + " strings, dims need " +
                  std::to_string(t->element_count()));
    return t;
  }
  size_t elem = dtype_size(t->dtype);
  if (elem == 0) throw Error(where + ": unsupported tensor dtype " + std::to_string(tp.data_type()));
  size_t expected = static_cast<size_t>(t->element_count()) * elem;
  if (tp.data_location() == onnx::TensorProto::EXTERNAL) {
    t->data = ext.slice(tp, expected, where);
    return t;
  }
  std::string bytes = tp.has_raw_data() ? std::move(*tp.mutable_raw_data()) : typed_field_bytes(tp);
  if (bytes.size() != expected)
    throw Error(where + ": holds " + std::to_string(bytes.size()) +
                " bytes of data, its dims and dtype need " + std::to_string(expected));
  t->data = BufferSlice(std::move(bytes));
  return t;
}

Attribute take_attribute(onnx::AttributeProto& ap, ExternalData& ext, const std::string& where) {
  Attribute a;
  a.name = ap.name();
  a.kind = static_cast<AttrKind>(ap.type());
  a.ref_attr_name = ap.ref_attr_name();
  a.doc_string = ap.doc_string();
  const std::string at = where + " attribute '" + ap.name() + "'";
  switch (a.kind) {
    case AttrKind::Float:
      a.f = ap.f();
      break;
    case AttrKind::Int:
      a.i = ap.i();
      break;
    case AttrKind::String:
      a.s = ap.s();
      break;
    case AttrKind::Floats:
      a.floats.assign(ap.floats().begin(), ap.floats().end());
      break;
    case AttrKind::Ints:
      a.ints.assign(ap.ints().begin(), ap.ints().end());
      break;
    case AttrKind::Strings:
      a.strings.assign(ap.strings().begin(), ap.strings().end());
      break;
    case AttrKind::Tensor:
      a.tensors.push_back(take_tensor(*ap.mutable_t(), ext, at));
      break;
    case AttrKind::Tensors:
      for (auto& t : *ap.mutable_tensors()) a.tensors.push_back(take_tensor(t, ext, at));
      break;
    case AttrKind::Graph:
      a.opaque.push_back(ap.g().SerializeAsString());
      break;
    case AttrKind::Graphs:
      for (const auto& g : ap.graphs()) a.opaque.push_back(g.SerializeAsString());
      break;
    case AttrKind::SparseTensor:
      a.opaque.push_back(ap.sparse_tensor().SerializeAsString());
      break;
    case AttrKind::SparseTensors:
      for (const auto& s : ap.sparse_tensors()) a.opaque.push_back(s.SerializeAsString());
      break;
    case AttrKind::TypeProto:
      a.opaque.push_back(ap.tp().SerializeAsString());
      break;
    case AttrKind::TypeProtos:
      for (const auto& t : ap.type_protos()) a.opaque.push_back(t.SerializeAsString());
      break;
    case AttrKind::Undefined:
      throw Error(at + ": has no type");
  }
  return a;
}

onnx::ModelProto read_model_proto(const fs::path& path) {
  InputFile file(path);  // never blocks on a named pipe
  const int fd = file.fd();
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (!ec && size > static_cast<uintmax_t>(INT_MAX))
    throw Error(path.string() +
                ": a protobuf file cannot exceed 2 GB; store the weights as ONNX external data");
  onnx::ModelProto model;
  bool ok;
  {
    // Large blocks: the weights' raw_data fields are megabytes each (fewer reads).
    google::protobuf::io::FileInputStream stream(fd, 1 << 20);
    ok = model.ParseFromZeroCopyStream(&stream) && stream.GetErrno() == 0;
  }
  if (!ok)
    throw Error(path.string() +
                ": not a valid ONNX model (protobuf parse failed: truncated or corrupt file)");
  if (!model.has_graph()) throw Error(path.string() + ": not a valid ONNX model (it has no graph)");
  if (model.ir_version() <= 0)
    throw Error(path.string() + ": not a valid ONNX model (ir_version is missing)");
  return model;
}

// Element types ONNX added after geopt's: float8 (opset 19), int4/uint4 (opset 21) and
// float4 (opset 23). geopt has no kernels for them; a model using one is refused by name.
const char* unsupported_element_type(int32_t t) {
  switch (t) {
    case 17:
      return "float8e4m3fn";
    case 18:
      return "float8e4m3fnuz";
    case 19:
      return "float8e5m2";
    case 20:
      return "float8e5m2fnuz";
    case 21:
      return "uint4";
    case 22:
      return "int4";
    case 23:
      return "float4e2m1";
    default:
      return t > 23 ? "an element type newer than ONNX 1.17" : nullptr;
  }
}

void check_element_types(const onnx::GraphProto& g, const std::string& file) {
  auto refuse = [&](int32_t t, const std::string& what) {
    if (const char* name = unsupported_element_type(t))
      throw Error(file + what + " has type " + name + " (" + std::to_string(t) +
                  "), which geopt does not support: float8, int4, uint4 and float4 tensors are refused");
  };
  auto check_type = [&](const onnx::TypeProto& type, const std::string& what) {
    if (type.has_tensor_type()) refuse(type.tensor_type().elem_type(), what);
  };
  for (const auto& v : g.input()) check_type(v.type(), "graph input '" + escaped(v.name()) + "'");
  for (const auto& v : g.output()) check_type(v.type(), "graph output '" + escaped(v.name()) + "'");
  for (const auto& v : g.value_info()) check_type(v.type(), "value '" + escaped(v.name()) + "'");
  for (const auto& t : g.initializer()) refuse(t.data_type(), "initializer '" + escaped(t.name()) + "'");
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& a : n.attribute()) {
      const std::string what = node_label(n, i) + ": attribute '" + a.name() + "'";
      if (a.has_t()) refuse(a.t().data_type(), what);
      if (a.type() == onnx::AttributeProto::INT && (a.name() == "to" || a.name() == "output_dtype"))
        refuse(static_cast<int32_t>(a.i()), what);
      if (a.has_g()) check_element_types(a.g(), file);
      for (const auto& sub : a.graphs()) check_element_types(sub, file);
    }
  }
}

void check_names(const onnx::GraphProto& g, const std::string& file) {
  auto check = [&](const std::string& name, const std::string& what) {
    if (!valid_utf8(name)) throw Error(file + what + " '" + escaped(name) + "' is not valid UTF-8");
  };
  check(g.name(), "the graph's name");
  for (const auto& v : g.input()) check(v.name(), "graph input");
  for (const auto& v : g.output()) check(v.name(), "graph output");
  for (const auto& v : g.initializer()) check(v.name(), "initializer");
  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    const std::string where = "node #" + std::to_string(i) + " '" + escaped(n.name()) + "'";
    check(n.name(), "node #" + std::to_string(i) + "'s name");
    check(n.op_type(), where + ": its op type");
    check(n.domain(), where + ": its domain");
    for (const auto& in : n.input()) check(in, where + ": input");
    for (const auto& out : n.output()) check(out, where + ": output");
  }
}

// Checks what ONNX's checker reports poorly (dangling inputs, unknown ops) with
// messages that name the node, and puts the nodes in topological order.
void check_structure_and_sort(onnx::ModelProto& model, const fs::path& path) {
  const std::string file = path.string() + ": ";
  auto& g = *model.mutable_graph();
  check_names(g, file);
  check_element_types(g, file);
  std::unordered_map<std::string, int> producer;  // value name -> node index, -1 for graph-level
  auto define = [&](const std::string& name, int index, const std::string& what) {
    if (name.empty()) return;
    auto [it, inserted] = producer.emplace(name, index);
    if (!inserted && index >= 0)
      throw Error(file + what + ": output '" + name + "' is already defined" +
                  (it->second >= 0 ? " by " + node_label(g.node(it->second), it->second) : " by the graph"));
  };
  for (const auto& in : g.input()) define(in.name(), -1, "graph input");
  for (const auto& init : g.initializer()) {
    producer.emplace(init.name(), -1);
    for (const auto& kv : init.external_data())
      if (kv.key() == "location")
        ExternalData::check_location(kv.value(), file + "initializer '" + init.name() + "'");
  }
  for (const auto& sp : g.sparse_initializer()) producer.emplace(sp.values().name(), -1);
  for (int i = 0; i < g.node_size(); ++i)
    for (const auto& out : g.node(i).output()) define(out, i, node_label(g.node(i), i));

  for (int i = 0; i < g.node_size(); ++i) {
    const auto& n = g.node(i);
    for (const auto& in : n.input())
      if (!in.empty() && !producer.count(in))
        throw Error(file + node_label(n, i) + ": input '" + in +
                    "' is not a graph input, an initializer or the output of any node");
    if (!onnx_io::has_schema(model, n)) {
      const std::string& d = n.domain();
      bool standard = is_onnx_domain(d) || d == "ai.onnx.ml" || d == kGeoptDomain;
      std::string domain = d.empty() ? "ai.onnx" : d;
      int64_t version = 0;
      for (const auto& o : model.opset_import())
        if (canonical_domain(o.domain()) == canonical_domain(d)) version = o.version();
      if (version == 0)
        throw Error(file + node_label(n, i) + ": domain '" + domain +
                    "' is not in the model's opset imports");
      if (standard)
        throw Error(file + node_label(n, i) + ": unknown operator '" + n.op_type() + "' in domain '" +
                    domain + "' at opset " + std::to_string(version));
      spdlog::warn("{}{}: no schema for domain '{}'; its output types stay unknown", file, node_label(n, i),
                   domain);
    }
  }
  for (const auto& out : g.output())
    if (!producer.count(out.name()))
      throw Error(file + "graph output '" + out.name() +
                  "' is not produced by any node, input or initializer");

  // Kahn's algorithm over node indices, earliest first, so sorted graphs keep their order.
  const int count = g.node_size();
  std::vector<std::vector<int>> consumers(count);
  std::vector<int> pending(count, 0);
  for (int i = 0; i < count; ++i) {
    std::unordered_set<int> deps;
    // What a node's bodies read of this graph orders it too (its captures, once imported).
    std::vector<std::string> reads(g.node(i).input().begin(), g.node(i).input().end());
    for (const auto& a : g.node(i).attribute()) {
      if (a.has_g())
        for (const auto& name : outer_names(a.g())) reads.push_back(name);
      for (const auto& sub : a.graphs())
        for (const auto& name : outer_names(sub)) reads.push_back(name);
    }
    for (const auto& in : reads) {
      auto it = in.empty() ? producer.end() : producer.find(in);
      if (it != producer.end() && it->second >= 0) deps.insert(it->second);
    }
    for (int d : deps) consumers[d].push_back(i);
    pending[i] = static_cast<int>(deps.size());
  }
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int i = 0; i < count; ++i)
    if (pending[i] == 0) ready.push(i);
  std::vector<int> order;
  order.reserve(count);
  while (!ready.empty()) {
    int i = ready.top();
    ready.pop();
    order.push_back(i);
    for (int c : consumers[i])
      if (--pending[c] == 0) ready.push(c);
  }
  if (static_cast<int>(order.size()) != count) {
    for (int i = 0; i < count; ++i)
      if (pending[i] > 0) throw Error(file + node_label(g.node(i), i) + ": is part of a cycle");
  }
  bool sorted = true;
  for (int i = 0; i < count; ++i) sorted = sorted && order[i] == i;
  if (sorted) return;
  spdlog::info("{}nodes were not in topological order; reordered", file);
  std::vector<onnx::NodeProto*> released(count);
  for (int i = count - 1; i >= 0; --i) released[i] = g.mutable_node()->ReleaseLast();
  for (int i : order) g.mutable_node()->AddAllocated(released[i]);
}

// ", computed by Split node #3 'name' from 'x', 'sizes'" for a value a node of `gp` makes
// (a dim shape inference derived from a node's inputs), else "".
std::string produced_by(const onnx::GraphProto& gp, const std::string& value) {
  for (int i = 0; i < gp.node_size(); ++i) {
    const onnx::NodeProto& n = gp.node(i);
    if (std::find(n.output().begin(), n.output().end(), value) == n.output().end()) continue;
    std::string inputs;
    for (const auto& in : n.input())
      if (!in.empty()) inputs += (inputs.empty() ? "'" : ", '") + escaped(in) + "'";
    return ", computed by " + n.op_type() + " node #" + std::to_string(i) +
           (n.name().empty() ? "" : " '" + escaped(n.name()) + "'") +
           (inputs.empty() ? "" : " from " + inputs);
  }
  return {};
}

// The graph part of a model or of a control-flow body. With `outer_refs`, names the
// body uses but does not define become values with no producer (outer-scope references).
void graph_from_proto(onnx::GraphProto& gp, ExternalData& ext, const std::string& file, Graph& g,
                      bool outer_refs) {
  g.name = gp.name();
  g.doc_string = gp.doc_string();
  auto checked_add = [&](const std::string& name, const std::string& what) {
    try {
      return g.add_value(name);
    } catch (const Error& e) {
      throw Error(file + what + ": " + e.what());
    }
  };
  // A declared dim below zero is no size: refused naming the value, before any kernel
  // or --input_shape meets it.
  auto typed = [&](const onnx::ValueInfoProto& vi, const std::string& what) {
    ValueType t = onnx_io::value_type_from_proto(vi.type());
    if (t.shape)
      for (const Dim& d : t.shape->dims())
        if (d.is_static() && d.value() < 0)
          throw Error(file + what + " '" + vi.name() + "' has the negative dimension " +
                      std::to_string(d.value()) + " in " + t.to_string() +
                      // ONNX's inference adds and multiplies dims in int64 without a check
                      (d.value() < -(int64_t{1} << 62)
                           ? " (a size past 2^63, wrapped negative by shape inference)"
                           : "") +
                      produced_by(gp, vi.name()));
    if (t.shape) {  // a size no tensor can have is refused here, where the value has a name
      int64_t n = 1;
      for (const Dim& d : t.shape->dims())
        if (d.is_static() && __builtin_mul_overflow(n, d.value(), &n))
          throw Error(file + what + " '" + vi.name() + "' would have more elements than 2^63 in " +
                      t.to_string() + produced_by(gp, vi.name()));
    }
    return t;
  };
  for (const auto& in : gp.input()) {
    Value* v = checked_add(in.name(), "graph input");
    v->type = typed(in, "graph input");
    v->doc_string = in.doc_string();
    g.add_input(v);
  }
  for (auto& init : *gp.mutable_initializer()) {
    const std::string where = file + "initializer '" + init.name() + "'";
    Value* v = g.find_value(init.name());
    if (v && v->initializer) throw Error(where + ": defined twice");
    if (!v) v = checked_add(init.name(), "initializer");
    auto t = take_tensor(init, ext, where);
    if (v->type.dtype == DType::Undefined) {
      v->type.dtype = t->dtype;
      v->type.shape = Shape(std::vector<Dim>(t->dims.begin(), t->dims.end()));
    }
    g.add_initializer(v, std::move(t));
  }
  for (const auto& sp : gp.sparse_initializer()) {
    g.opaque_sparse_initializers.push_back(sp.SerializeAsString());
    if (!g.find_value(sp.values().name())) checked_add(sp.values().name(), "sparse initializer");
  }
  for (const auto& qa : gp.quantization_annotation())
    g.opaque_quantization_annotations.push_back(qa.SerializeAsString());

  for (int i = 0; i < gp.node_size(); ++i) {
    auto& np = *gp.mutable_node(i);
    const std::string where = file + node_label(np, i);
    std::vector<Value*> inputs, outputs;
    for (const auto& in : np.input()) {
      Value* v = in.empty() ? nullptr : g.find_value(in);
      // A body's reference to a value of an enclosing graph: a value with no producer
      // that the evaluator looks up in the outer scope by name.
      if (!v && !in.empty() && outer_refs) v = checked_add(in, "outer-scope value");
      inputs.push_back(v);
    }
    for (const auto& out : np.output())
      outputs.push_back(out.empty() ? nullptr : checked_add(out, node_label(np, i)));
    Node* n = g.add_node(np.op_type(), np.domain(), np.name(), inputs, outputs);
    n->doc_string = np.doc_string();
    for (auto& ap : *np.mutable_attribute()) n->attributes.push_back(take_attribute(ap, ext, where));
  }
  // Unnamed nodes (onnx.helper's default) take their op's name, made unique: reports name
  // every node (fusion, profiles, explain), and a rewrite's record of the nodes it covered
  // tells them apart.
  for (const auto& n : g.nodes())
    if (n->name.empty()) g.rename_node(n.get(), g.unique_name(n->op_type));
  for (const auto& vi : gp.value_info()) {
    if (Value* v = g.find_value(vi.name())) {
      v->type = typed(vi, "value");
      v->doc_string = vi.doc_string();
    }
  }
  for (const auto& out : gp.output()) {
    Value* v = g.find_value(out.name());
    if (!v && outer_refs) v = checked_add(out.name(), "outer-scope value");
    if (!v) throw Error(file + "graph output '" + out.name() + "' is never defined");
    ValueType t = typed(out, "graph output");
    if (t.dtype != DType::Undefined || !t.is_tensor()) v->type = t;
    if (!out.doc_string().empty()) v->doc_string = out.doc_string();
    g.add_output(v);
  }
}

void to_ir(onnx::ModelProto& mp, ExternalData& ext, const fs::path& path, Model& m) {
  const std::string file = path.string() + ": ";
  m.ir_version = mp.ir_version();
  for (const auto& o : mp.opset_import()) m.opsets.push_back({canonical_domain(o.domain()), o.version()});
  m.producer_name = mp.producer_name();
  m.producer_version = mp.producer_version();
  m.domain = mp.domain();
  m.model_version = mp.model_version();
  m.doc_string = mp.doc_string();
  for (const auto& kv : mp.metadata_props()) m.metadata.emplace_back(kv.key(), kv.value());
  for (const auto& f : mp.functions()) m.opaque_functions.push_back(f.SerializeAsString());
  for (const auto& t : mp.training_info()) m.opaque_training_info.push_back(t.SerializeAsString());

  graph_from_proto(*mp.mutable_graph(), ext, file, *m.graph, false);
  make_captures_explicit(*m.graph);
}

}  // namespace

std::shared_ptr<const Tensor> import_tensor(const fs::path& path) {
  InputFile file(path);
  const int fd = file.fd();
  onnx::TensorProto proto;
  bool ok;
  {
    google::protobuf::io::FileInputStream stream(fd);
    ok = proto.ParseFromZeroCopyStream(&stream);
  }
  if (!ok) throw Error(path.string() + ": not a serialized onnx.TensorProto");
  ExternalData ext(path.parent_path());
  return take_tensor(proto, ext, path.string());
}

Model import_onnx(const fs::path& path, const ImportOptions& options) {
  return import_onnx_proto(read_model_proto(path), path, options);
}

std::unique_ptr<Graph> import_subgraph(const std::string& serialized, const std::string& where) {
  onnx::GraphProto gp;
  if (!gp.ParseFromString(serialized)) throw Error(where + ": the body is not a serialized onnx.GraphProto");
  ExternalData none{fs::path{}};
  auto g = std::make_unique<Graph>();
  graph_from_proto(gp, none, where + ": ", *g, true);
  make_captures_explicit(*g, true);
  return g;
}

Attribute import_attribute(onnx::AttributeProto proto, const std::string& where) {
  ExternalData none{fs::path{}};
  return take_attribute(proto, none, where);
}

std::map<std::string, std::vector<int64_t>> parse_input_shapes(const std::string& text) {
  std::map<std::string, std::vector<int64_t>> shapes;
  for (auto& [name, dims] : parse_input_shape_entries(text))
    if (!shapes.emplace(name, std::move(dims)).second)
      throw UsageError("--input_shape names input '" + name + "' twice");
  return shapes;
}

std::vector<std::pair<std::string, std::vector<int64_t>>> parse_input_shape_entries(const std::string& text) {
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  std::stringstream entries(text);
  std::string entry;
  while (std::getline(entries, entry, ';')) {
    if (entry.empty()) continue;
    auto colon = entry.rfind(':');
    if (colon == std::string::npos || colon == 0)
      throw UsageError("--input_shape '" + entry + "': expected NAME:D1,D2,... (e.g. input_ids:1,128)");
    std::vector<int64_t> dims;
    std::stringstream list(entry.substr(colon + 1));
    std::string d;
    const std::string dims_text = entry.substr(colon + 1);
    if (!dims_text.empty() && dims_text.back() == ',')  // "x:" alone is a scalar
      throw UsageError("--input_shape '" + entry +
                       "': a dimension is empty (give a size, or -1 for a dynamic one)");
    while (std::getline(list, d, ',')) {
      if (d.empty() || std::isspace(static_cast<unsigned char>(d.front())))
        throw UsageError("--input_shape '" + entry +
                         "': a dimension is empty (give a size, or -1 for a dynamic one)");
      size_t used = 0;
      long long v = -1;
      try {
        v = std::stoll(d, &used);
      } catch (const std::exception&) {
      }
      if (used != d.size() || v < -1)
        throw UsageError("--input_shape '" + entry + "': '" + d +
                         "' is not a dimension (a size, or -1 for a dynamic one)");
      dims.push_back(v);
    }
    shapes.emplace_back(entry.substr(0, colon), std::move(dims));
  }
  return shapes;
}

namespace {

void fix_input_shapes(onnx::ModelProto& proto, const std::map<std::string, std::vector<int64_t>>& shapes,
                      const fs::path& path) {
  auto& g = *proto.mutable_graph();
  for (const auto& [name, dims] : shapes) {
    onnx::ValueInfoProto* input = nullptr;
    for (auto& in : *g.mutable_input())
      if (in.name() == name) input = &in;
    if (!input)
      throw Error(path.string() + ": --input_shape names '" + name + "', which is not an input of the model");
    if (!input->type().has_tensor_type())
      throw Error(path.string() + ": input '" + name + "' is not a tensor");
    auto* shape = input->mutable_type()->mutable_tensor_type()->mutable_shape();
    if (shape->dim_size() != static_cast<int>(dims.size()))
      throw Error(path.string() + ": --input_shape gives input '" + name + "' " +
                  std::to_string(dims.size()) + " dims, the model declares " +
                  std::to_string(shape->dim_size()));
    for (int i = 0; i < shape->dim_size(); ++i) {
      auto* d = shape->mutable_dim(i);
      if (dims[static_cast<size_t>(i)] < 0) continue;  // -1: dynamic, as declared
      if (d->has_dim_value() && d->dim_value() != dims[static_cast<size_t>(i)])
        throw Error(path.string() + ": --input_shape sets dim " + std::to_string(i) + " of input '" + name +
                    "' to " + std::to_string(dims[static_cast<size_t>(i)]) + ", the model fixes it at " +
                    std::to_string(d->dim_value()));
      d->set_dim_value(dims[static_cast<size_t>(i)]);
    }
  }
  // Shapes recorded for the symbolic model would contradict the fixed ones.
  g.clear_value_info();
  for (auto& out : *g.mutable_output())
    if (out.type().has_tensor_type() && out.type().tensor_type().has_shape())
      for (auto& d : *out.mutable_type()->mutable_tensor_type()->mutable_shape()->mutable_dim())
        if (d.has_dim_param()) d.clear_dim_param();
}

}  // namespace

Model import_onnx_proto(onnx::ModelProto proto, const fs::path& path, const ImportOptions& options) {
  if (!proto.has_graph()) throw Error(path.string() + ": not a valid ONNX model (it has no graph)");
  if (proto.ir_version() <= 0)
    throw Error(path.string() + ": not a valid ONNX model (ir_version is missing)");
  if (!options.input_shapes.empty()) fix_input_shapes(proto, options.input_shapes, path);
  check_structure_and_sort(proto, path);
  onnx_io::run_checker(proto, path);
  if (options.infer_shapes) onnx_io::run_shape_inference(proto, path);
  ExternalData ext(path.parent_path());
  Model model;
  to_ir(proto, ext, path, model);
  spdlog::debug("imported {}: {} nodes, {} initializers", path.string(), model.graph->nodes().size(),
                model.graph->initializers().size());
  return model;
}

}  // namespace geopt
