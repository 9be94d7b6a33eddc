#include "ir/dot.h"

#include <map>
#include <sstream>

namespace geopt {
namespace {

std::string escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out;
}

}  // namespace

std::string to_dot(const Graph& g, const std::unordered_map<const Node*, std::string>& notes) {
  std::ostringstream os;
  os << "digraph \"" << escape(g.name)
     << "\" {\n  rankdir=TB;\n  node [fontname=\"Helvetica\", fontsize=10];\n";
  std::map<const Value*, std::string> source;  // value -> the DOT node that produces it
  size_t k = 0;
  for (const Value* v : g.inputs()) {
    if (v->initializer) continue;
    std::string id = "in" + std::to_string(k++);
    os << "  " << id << " [shape=ellipse, label=\"" << escape(v->name()) << "\\n"
       << escape(v->type.to_string()) << "\"];\n";
    source[v] = id;
  }
  k = 0;
  for (const auto& n : g.nodes()) {
    std::string id = "n" + std::to_string(k++);
    std::string label = (n->domain.empty() ? "" : n->domain + "::") + n->op_type + "\\n" + escape(n->name);
    const bool fused = n->domain == "ai.geopt";
    const std::string rule_prefix = "geopt: rule ";
    if (n->doc_string.rfind(rule_prefix, 0) == 0)
      label += "\\n[" + escape(n->doc_string.substr(rule_prefix.size())) + "]";
    if (auto note = notes.find(n.get()); note != notes.end()) label += "\\n" + escape(note->second);
    os << "  " << id << " [shape=box, style=\"rounded" << (fused ? ",filled\", fillcolor=\"#cfe3ff\"" : "\"")
       << ", label=\"" << label << "\"];\n";
    for (const Value* out : n->outputs())
      if (out) source[out] = id;
  }
  k = 0;
  for (const auto& n : g.nodes()) {
    std::string id = "n" + std::to_string(k++);
    for (const Value* in : n->inputs()) {
      auto it = in ? source.find(in) : source.end();
      if (it == source.end()) continue;
      os << "  " << it->second << " -> " << id << " [label=\"" << escape(in->type.to_string())
         << "\", fontsize=8];\n";
    }
  }
  k = 0;
  for (const Value* v : g.outputs()) {
    std::string id = "out" + std::to_string(k++);
    os << "  " << id << " [shape=ellipse, label=\"" << escape(v->name()) << "\\n"
       << escape(v->type.to_string()) << "\"];\n";
    if (auto it = source.find(v); it != source.end()) os << "  " << it->second << " -> " << id << ";\n";
  }
  os << "}\n";
  return os.str();
}

}  // namespace geopt
