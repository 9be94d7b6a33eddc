#include "stage_dump.h"

#include <spdlog/spdlog.h>

#include <cstdlib>
#include <filesystem>

#include "ir/dot.h"
#include "onnx/export.h"
#include "util/atomic_file.h"

namespace geopt::api {

void dump_stage(const std::string& dir, const std::string& stage, Model& model,
                const std::unordered_map<const Node*, std::string>& notes) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  fs::path base = fs::path(dir) / stage;
  // The notes go into the exported doc strings only; the model is left as it was.
  std::unordered_map<Node*, std::string> saved;
  for (const auto& n : model.graph->nodes())
    if (auto note = notes.find(n.get()); note != notes.end()) {
      saved[n.get()] = n->doc_string;
      n->doc_string += (n->doc_string.empty() ? "" : "\n") + note->second;
    }
  try {
    export_onnx(model, base.string() + ".onnx");
  } catch (...) {
    for (auto& [n, doc] : saved) n->doc_string = std::move(doc);
    throw;
  }
  for (auto& [n, doc] : saved) n->doc_string = std::move(doc);
  write_file_atomically(base.string() + ".dot", to_dot(*model.graph, notes));
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    std::string cmd = "dot -Tsvg '" + base.string() + ".dot' -o '" + base.string() + ".svg' 2>/dev/null";
    if (std::system(cmd.c_str()) != 0) spdlog::warn("dot could not render {}.dot", base.string());
  }
}

}  // namespace geopt::api
