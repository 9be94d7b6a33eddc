#pragma once
// Errors found in rule files, each at a file:line:col, printed with the source
// line and a caret under the column.
#include <string>
#include <vector>

#include "dsl/ast.h"

namespace geopt::dsl {

struct Diagnostic {
  SourceLoc loc;
  std::string message;
};

// "file:3:14: error: expected `=>`\n    rewrite %y ai.geopt...\n               ^"
std::string format_diagnostic(const Diagnostic& d, const std::string& source_text);
// All of them, in order, each formatted against its file's text (read from disk if needed).
std::string format_diagnostics(const std::vector<Diagnostic>& ds);

}  // namespace geopt::dsl
