#include "onnx/export.h"

#include <google/protobuf/io/coded_stream.h>
#include <onnx/onnx_pb.h>

#include <climits>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "onnx/captures.h"
#include "onnx/proto_types.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace geopt {
namespace fs = std::filesystem;
namespace {

using google::protobuf::io::CodedOutputStream;

constexpr size_t kExternalAlignment = 64;  // keeps each external tensor SIMD-aligned when mapped

// Protobuf's length-delimited wire type: tag = (field number << 3) | 2.
uint32_t length_delimited_tag(int field) { return (static_cast<uint32_t>(field) << 3) | 2u; }

std::string varint(uint64_t v) {
  uint8_t buf[10];
  uint8_t* end = CodedOutputStream::WriteVarint64ToArray(v, buf);
  return std::string(reinterpret_cast<char*>(buf), static_cast<size_t>(end - buf));
}

void value_info_to_proto(const Value& v, onnx::ValueInfoProto* out) {
  out->set_name(v.name());
  onnx_io::value_type_to_proto(v.type, out->mutable_type());
  if (!v.doc_string.empty()) out->set_doc_string(v.doc_string);
}

// Everything except initializer payloads.
onnx::ModelProto model_skeleton(const Model& m) {
  onnx::ModelProto mp;
  mp.set_ir_version(m.ir_version);
  for (const auto& o : m.opsets) {
    auto* op = mp.add_opset_import();
    op->set_domain(o.domain);
    op->set_version(o.version);
  }
  if (!m.producer_name.empty()) mp.set_producer_name(m.producer_name);
  if (!m.producer_version.empty()) mp.set_producer_version(m.producer_version);
  if (!m.domain.empty()) mp.set_domain(m.domain);
  if (m.model_version) mp.set_model_version(m.model_version);
  if (!m.doc_string.empty()) mp.set_doc_string(m.doc_string);
  for (const auto& [k, v] : m.metadata) {
    auto* kv = mp.add_metadata_props();
    kv->set_key(k);
    kv->set_value(v);
  }
  for (const auto& f : m.opaque_functions) mp.add_functions()->ParseFromString(f);
  for (const auto& t : m.opaque_training_info) mp.add_training_info()->ParseFromString(t);

  const Graph& g = *m.graph;
  auto* gp = mp.mutable_graph();
  gp->set_name(g.name);
  if (!g.doc_string.empty()) gp->set_doc_string(g.doc_string);
  std::unordered_set<const Value*> listed;
  // ONNX's checker requires a dtype and a shape (of known rank) on graph inputs and outputs.
  auto require_type = [](const Value* v, const char* what) {
    if (!v->type.is_tensor()) return;
    if (v->type.dtype == DType::Undefined)
      throw Error(std::string(what) + " '" + v->name() + "' has no type");
    if (!v->type.shape)
      throw Error(std::string(what) + " '" + v->name() + "' has no shape (not even a rank)");
  };
  for (const Value* v : g.inputs()) {
    require_type(v, "graph input");
    value_info_to_proto(*v, gp->add_input());
    listed.insert(v);
  }
  for (const Value* v : g.outputs()) {
    require_type(v, "graph output");
    value_info_to_proto(*v, gp->add_output());
    listed.insert(v);
  }
  // ONNX's single assignment spans nested graphs: a node output that a pass gave a name
  // some body defines is written under a fresh name (graph inputs and outputs keep theirs).
  std::set<std::string> inner;
  for (const auto& n : g.nodes())
    for (const auto& a : n->attributes)
      if (a.kind == AttrKind::Graph || a.kind == AttrKind::Graphs)
        for (const auto& bytes : a.opaque) inner.merge(names_defined(bytes));
  std::unordered_map<const Value*, std::string> renamed_apart;
  if (!inner.empty())
    for (const auto& n : g.nodes())
      for (const Value* out : n->outputs()) {
        if (!out || !inner.count(out->name()) || listed.count(out)) continue;
        std::string fresh = g.unique_name(out->name() + "_outer");
        while (inner.count(fresh)) fresh = g.unique_name(out->name() + "_outer");
        renamed_apart[out] = fresh;
      }
  auto name_of = [&](const Value* v) -> std::string {
    auto it = renamed_apart.find(v);
    return it == renamed_apart.end() ? v->name() : it->second;
  };
  for (const auto& n : g.nodes()) {
    // Captured values go back to being the bodies' references by name.
    const size_t captures = capture_count(*n);
    const size_t explicit_inputs = n->inputs().size() - captures;
    std::map<std::string, std::string> renames;
    if (const Attribute* names = n->attr(kCapturesAttr))
      for (size_t i = 0; i < captures; ++i) {
        const Value* v = n->input(explicit_inputs + i);
        if (v && name_of(v) != names->strings[i]) renames[names->strings[i]] = name_of(v);
      }
    auto* np = gp->add_node();
    if (!n->name.empty()) np->set_name(n->name);
    np->set_op_type(n->op_type);
    if (!n->domain.empty()) np->set_domain(n->domain);
    if (!n->doc_string.empty()) np->set_doc_string(n->doc_string);
    for (size_t i = 0; i < explicit_inputs; ++i) np->add_input(n->input(i) ? name_of(n->input(i)) : "");
    for (const Value* out : n->outputs()) np->add_output(out ? name_of(out) : "");
    for (const auto& a : n->attributes) {
      if (a.name == kCapturesAttr) continue;
      if (renames.empty() || (a.kind != AttrKind::Graph && a.kind != AttrKind::Graphs)) {
        onnx_io::attribute_to_proto(a, np->add_attribute());
        continue;
      }
      Attribute renamed = a;
      for (auto& bytes : renamed.opaque) bytes = rename_outer_references(bytes, renames);
      onnx_io::attribute_to_proto(renamed, np->add_attribute());
    }
    for (const Value* out : n->outputs()) {
      if (!out || listed.count(out)) continue;
      onnx::ValueInfoProto vi;
      vi.set_name(name_of(out));
      if (onnx_io::value_type_to_proto(out->type, vi.mutable_type())) {
        if (!out->doc_string.empty()) vi.set_doc_string(out->doc_string);
        *gp->add_value_info() = std::move(vi);
      }
    }
  }
  for (const auto& s : g.opaque_sparse_initializers) gp->add_sparse_initializer()->ParseFromString(s);
  for (const auto& q : g.opaque_quantization_annotations)
    gp->add_quantization_annotation()->ParseFromString(q);
  return mp;
}

struct InitializerEntry {
  std::string header;                      // serialized TensorProto without its payload
  std::span<const std::byte> inline_data;  // written as raw_data after the header
  size_t size() const {
    size_t n = header.size();
    if (!inline_data.empty())
      n += 1 /* raw_data tag */ + CodedOutputStream::VarintSize64(inline_data.size()) + inline_data.size();
    return n;
  }
};

}  // namespace

onnx::ModelProto model_to_proto(const Model& model) {
  onnx::ModelProto mp = model_skeleton(model);
  onnx::GraphProto& gp = *mp.mutable_graph();
  for (const Value* v : model.graph->initializers()) {
    const Tensor& t = *v->initializer;
    onnx::TensorProto* tp = gp.add_initializer();
    onnx_io::tensor_header_to_proto(t, tp);
    tp->set_name(v->name());
    if (t.dtype != DType::String)
      tp->set_raw_data(std::string(reinterpret_cast<const char*>(t.bytes().data()), t.byte_size()));
  }
  return mp;
}

onnx::GraphProto graph_to_proto(const Model& model) {
  onnx::ModelProto mp = model_to_proto(model);
  return std::move(*mp.mutable_graph());
}

void export_onnx(const Model& model, const fs::path& path, const ExportOptions& options) {
  const Graph& g = *model.graph;
  onnx::ModelProto skeleton;
  try {
    skeleton = model_skeleton(model);  // validates before any file is touched
  } catch (const Error& e) {
    throw Error(path.string() + ": cannot export: " + e.what());
  }
  std::optional<AtomicFile> side;
  size_t side_offset = 0;
  if (!options.external_data.empty()) {
    fs::path loc(options.external_data);
    if (loc.is_absolute() || loc.has_parent_path())
      throw Error(path.string() + ": external data location '" + options.external_data +
                  "' must be a plain file name");
    side.emplace(path.parent_path() / loc);
  }

  std::vector<InitializerEntry> entries;
  entries.reserve(g.initializers().size());
  for (const Value* v : g.initializers()) {
    const Tensor& t = *v->initializer;
    onnx::TensorProto tp;
    onnx_io::tensor_header_to_proto(t, &tp);
    tp.set_name(v->name());
    InitializerEntry e;
    bool external = side && t.dtype != DType::String && t.byte_size() >= options.external_threshold;
    if (external) {
      size_t pad = (kExternalAlignment - side_offset % kExternalAlignment) % kExternalAlignment;
      static const char zeros[kExternalAlignment] = {};
      side->write(zeros, pad);
      side_offset += pad;
      side->write(t.bytes().data(), t.byte_size());
      tp.set_data_location(onnx::TensorProto::EXTERNAL);
      auto add = [&](const char* key, std::string value) {
        auto* kv = tp.add_external_data();
        kv->set_key(key);
        kv->set_value(std::move(value));
      };
      add("location", options.external_data);
      add("offset", std::to_string(side_offset));
      add("length", std::to_string(t.byte_size()));
      side_offset += t.byte_size();
    } else if (t.dtype != DType::String) {
      if (t.byte_size() == 0) tp.set_raw_data("");
      e.inline_data = t.bytes();
    }
    e.header = tp.SerializeAsString();
    entries.push_back(std::move(e));
  }

  std::string graph_bytes = skeleton.graph().SerializeAsString();
  skeleton.clear_graph();
  std::string model_bytes = skeleton.SerializeAsString();

  const uint32_t init_tag = length_delimited_tag(onnx::GraphProto::kInitializerFieldNumber);
  const uint32_t raw_tag = length_delimited_tag(onnx::TensorProto::kRawDataFieldNumber);
  const uint32_t graph_tag = length_delimited_tag(onnx::ModelProto::kGraphFieldNumber);
  uint64_t graph_size = graph_bytes.size();
  for (const auto& e : entries)
    graph_size +=
        CodedOutputStream::VarintSize32(init_tag) + CodedOutputStream::VarintSize64(e.size()) + e.size();
  uint64_t total = model_bytes.size() + CodedOutputStream::VarintSize32(graph_tag) +
                   CodedOutputStream::VarintSize64(graph_size) + graph_size;
  if (total > static_cast<uint64_t>(INT_MAX))
    throw Error(path.string() + ": the model would be " + std::to_string(total >> 20) +
                " MiB, over protobuf's 2 GB limit; write the weights as external data");

  AtomicFile out(path);
  out.write(model_bytes);
  out.write(varint(graph_tag));
  out.write(varint(graph_size));
  out.write(graph_bytes);
  for (const auto& e : entries) {
    out.write(varint(init_tag));
    out.write(varint(e.size()));
    out.write(e.header);
    if (!e.inline_data.empty()) {
      out.write(varint(raw_tag));
      out.write(varint(e.inline_data.size()));
      out.write(e.inline_data.data(), e.inline_data.size());
    }
  }
  if (side) side->commit();  // the side file first: the model must never point at missing data
  out.commit();
}

}  // namespace geopt
