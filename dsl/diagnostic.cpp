#include "dsl/diagnostic.h"

#include <fstream>
#include <map>
#include <sstream>

#include "util/error.h"
#include "util/input_file.h"

namespace geopt::dsl {

std::string format_diagnostic(const Diagnostic& d, const std::string& source_text) {
  std::string out = d.loc.to_string() + ": error: " + d.message + "\n";
  std::istringstream in(source_text);
  std::string line;
  for (int i = 1; std::getline(in, line); ++i) {
    if (i != d.loc.line) continue;
    std::string caret;
    for (int c = 1; c < d.loc.column && c <= static_cast<int>(line.size()); ++c)
      caret += line[static_cast<size_t>(c - 1)] == '\t' ? '\t' : ' ';
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
      // The source line is shown for a position in the file; a file-wide error (line 0,
      // such as one too long to be a rule file) is not read again, and no read goes
      // past the parser's 16 MiB.
      std::string text;
      if (d.loc.line > 0) {
        try {  // opened as the parser opened it: a pipe read again is empty, never a wait
          InputFile in(d.loc.file);
          char buffer[1 << 16];
          for (size_t got; text.size() <= (size_t{16} << 20) && (got = in.read(buffer, sizeof buffer)) > 0;)
            text.append(buffer, got);
        } catch (const Error&) {
          text.clear();  // the line is then not shown
        }
      }
      it = texts.emplace(d.loc.file, std::move(text)).first;
    }
    out += format_diagnostic(d, it->second);
  }
  return out;
}

}  // namespace geopt::dsl
