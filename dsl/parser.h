#pragma once
// Parses .gerule text into a RuleFile. Syntax errors become diagnostics (with
// file:line:col); after an error the parser skips to the next `rule` and goes
// on, so one error does not hide the rest.
#include <string>
#include <vector>

#include "dsl/ast.h"
#include "dsl/diagnostic.h"

namespace geopt::dsl {

struct ParseResult {
  RuleFile file;
  std::vector<Diagnostic> errors;
};

ParseResult parse_rules(const std::string& text, const std::string& path);
// Reads and parses a file; an unreadable file is one diagnostic at line 0.
ParseResult parse_rule_file(const std::string& path);

}  // namespace geopt::dsl
