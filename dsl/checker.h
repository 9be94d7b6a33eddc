#pragma once
// Semantic checks of parsed rules: unknown ops (against libonnx's schemas and
// the ai.geopt catalog), unknown or mistyped attributes, unbound and unused
// variables, wrong arities, rewrites that cannot be built, duplicate names.
#include <vector>

#include "dsl/ast.h"
#include "dsl/diagnostic.h"

namespace geopt::dsl {

// Checks all files together (rule names are global); appends to `out`.
void check_rules(const std::vector<const RuleFile*>& files, std::vector<Diagnostic>& out);

}  // namespace geopt::dsl
