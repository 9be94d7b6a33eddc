#include "onnx/captures.h"

#include <onnx/onnx_pb.h>

#include "ir/value.h"
#include "util/error.h"

namespace geopt {
namespace {

std::set<std::string> defined_in(const onnx::GraphProto& g) {
  std::set<std::string> defined;
  for (const auto& v : g.input()) defined.insert(v.name());
  for (const auto& t : g.initializer()) defined.insert(t.name());
  for (const auto& n : g.node())
    for (const auto& o : n.output()) defined.insert(o);
  return defined;
}

void rename_in(onnx::GraphProto& g, std::map<std::string, std::string> renames) {
  for (const auto& name : defined_in(g)) renames.erase(name);  // shadowed here
  if (renames.empty()) return;
  auto renamed = [&](const std::string& s) {
    auto it = renames.find(s);
    return it == renames.end() ? s : it->second;
  };
  for (auto& n : *g.mutable_node()) {
    for (auto& in : *n.mutable_input()) in = renamed(in);
    for (auto& a : *n.mutable_attribute()) {
      if (a.has_g()) rename_in(*a.mutable_g(), renames);
      for (auto& sub : *a.mutable_graphs()) rename_in(sub, renames);
    }
  }
  for (auto& o : *g.mutable_output()) o.set_name(renamed(o.name()));
}

}  // namespace

std::set<std::string> outer_names(const onnx::GraphProto& g) {
  const std::set<std::string> defined = defined_in(g);
  std::set<std::string> used;
  for (const auto& n : g.node()) {
    for (const auto& i : n.input())
      if (!i.empty()) used.insert(i);
    for (const auto& a : n.attribute()) {
      if (a.has_g()) used.merge(outer_names(a.g()));
      for (const auto& sub : a.graphs()) used.merge(outer_names(sub));
    }
  }
  for (const auto& o : g.output()) used.insert(o.name());
  std::set<std::string> out;
  for (const auto& u : used)
    if (!defined.count(u)) out.insert(u);
  return out;
}

void make_captures_explicit(Graph& g, bool outer_refs) {
  for (const auto& n : g.nodes()) {
    if (n->attr(kCapturesAttr)) continue;
    std::set<std::string> names;
    bool has_body = false;
    for (const auto& a : n->attributes) {
      if (a.kind != AttrKind::Graph && a.kind != AttrKind::Graphs) continue;
      has_body = true;
      for (const auto& bytes : a.opaque) {
        onnx::GraphProto body;
        if (!body.ParseFromString(bytes))
          throw Error(n->describe() + ": attribute '" + a.name + "' is not a serialized graph");
        names.merge(outer_names(body));
      }
    }
    if (!has_body) continue;
    Attribute captures;
    captures.name = kCapturesAttr;
    captures.kind = AttrKind::Strings;
    for (const auto& name : names) {
      Value* v = g.find_value(name);
      if (!v && outer_refs) v = g.add_value(name);
      if (!v) continue;
      captures.strings.push_back(name);
      g.set_input(n.get(), n->inputs().size(), v);
    }
    if (!captures.strings.empty()) n->attributes.push_back(std::move(captures));
  }
}

size_t capture_count(const Node& n) {
  const Attribute* a = n.attr(kCapturesAttr);
  return a ? a->strings.size() : 0;
}

namespace {

void collect_defined(const onnx::GraphProto& g, std::set<std::string>& out) {
  out.merge(defined_in(g));
  for (const auto& n : g.node())
    for (const auto& a : n.attribute()) {
      if (a.has_g()) collect_defined(a.g(), out);
      for (const auto& sub : a.graphs()) collect_defined(sub, out);
    }
}

}  // namespace

std::set<std::string> names_defined(const std::string& serialized_body) {
  onnx::GraphProto g;
  if (!g.ParseFromString(serialized_body)) throw Error("a control-flow body is not a serialized graph");
  std::set<std::string> out;
  collect_defined(g, out);
  return out;
}

std::string rename_outer_references(const std::string& serialized_body,
                                    const std::map<std::string, std::string>& renames) {
  onnx::GraphProto g;
  if (!g.ParseFromString(serialized_body)) throw Error("a control-flow body is not a serialized graph");
  rename_in(g, renames);
  return g.SerializeAsString();
}

}  // namespace geopt
