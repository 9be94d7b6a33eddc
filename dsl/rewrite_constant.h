#pragma once
// The tensor a `const DTYPE VALUE` replacement makes at one match: a 1-D tensor
// from a list expression (`const i64 [dim(%x, 0), -1]`), a scalar from a number or a
// bound scalar (`const dtype(%x) %eps`). Both drivers (IR and e-graph) build it here.
#include <optional>
#include <string>

#include "dsl/ast.h"
#include "dsl/value_facts.h"
#include "eval/host_tensor.h"

namespace geopt::dsl {

std::optional<HostTensor> rewrite_constant(const Replacement& r, const BoundLookup& bound,
                                           std::string* why = nullptr);

}  // namespace geopt::dsl
