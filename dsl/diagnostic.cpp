#include "dsl/diagnostic.h"

#include <fstream>
#include <map>
#include <sstream>

namespace geopt::dsl {

std::string format_diagnostic(const Diagnostic& d, const std::string& source_text) {
  std::string out = d.loc.to_string() + ": error: " + d.message + "\n";
  std::istringstream in(source_text);
  std::string line;
  for (int i = 1; std::getline(in, line); ++i) {
    if (i != d.loc.line) continue;
    std::string caret;
    for (int c = 1; c < d.loc.column && c <= static_cast<int>(line.size()); ++c) caret += line[static_cast<size_t>(c - 1)] == '\t' ? '\t' : ' ';
    out += "    " + line + "\n    " + caret + "^\n";
    break;
  }
  return out;
}

std::string format_diagnostics(const std::vector<Diagnostic>& ds) {
  std::map<std::string, std::string> texts;
  std::string out;
  for (const auto& d : ds) {
    auto it = texts.find(d.loc.file);
    if (it == texts.end()) {
      std::ifstream in(d.loc.file, std::ios::binary);
      std::stringstream ss;
      ss << in.rdbuf();
      it = texts.emplace(d.loc.file, ss.str()).first;
    }
    out += format_diagnostic(d, it->second);
  }
  return out;
}

}  // namespace geopt::dsl
