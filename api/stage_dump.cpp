#include "stage_dump.h"

#include <spdlog/spdlog.h>

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <vector>

#include "ir/dot.h"
#include "onnx/export.h"
#include "util/atomic_file.h"
#include "util/error.h"

namespace geopt::api {
namespace {

// Renders DOT as SVG with Graphviz's `dot` when it is installed. Run with an argument
// vector, never through a shell: the paths are the user's.
void render_svg(const std::string& dot_file, const std::string& svg_file) {
  const std::string output = "-o" + svg_file;
  std::vector<char*> argv{const_cast<char*>("dot"), const_cast<char*>("-Tsvg"),
                          const_cast<char*>(dot_file.c_str()), const_cast<char*>(output.c_str()), nullptr};
  posix_spawn_file_actions_t quiet;
  posix_spawn_file_actions_init(&quiet);
  posix_spawn_file_actions_addopen(&quiet, 2, "/dev/null", O_WRONLY, 0);
  pid_t pid = 0;
  const int started = posix_spawnp(&pid, "dot", &quiet, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&quiet);
  if (started != 0) return;  // no Graphviz: the DOT file is there
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) spdlog::warn("dot could not render {}", dot_file);
}

}  // namespace

void dump_stage(const std::string& dir, const std::string& stage, Model& model,
                const std::unordered_map<const Node*, std::string>& notes) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw geopt::Error("--dump-graph " + dir + ": cannot create the folder (" + ec.message() + ")");
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
  // Absolute, so no path reads as one of dot's options.
  const fs::path absolute = fs::absolute(base, ec);
  render_svg(absolute.string() + ".dot", absolute.string() + ".svg");
}

}  // namespace geopt::api
