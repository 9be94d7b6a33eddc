#pragma once
// Every control-flow body of a model as a model of its own (body_as_model), for the
// reports that look inside bodies as well as at the graph: explain's matches and the
// kernel counts of optimize and compile.
#include <string>
#include <vector>

#include "ir/graph.h"

namespace geopt {

// Where a body sits: "If 'cond' then_branch", nested ones joined by " > ".
std::string body_scope(const Node& n, const std::string& attr);
std::string nested_scope(const std::string& outer, const std::string& inner);

struct ScopedBody {
  std::string scope;
  Model model;
};

class OpRegistry;

enum class BodyShapes {
  AsGiven,     // the body's types as the model states them
  Propagated,  // static shapes propagated, as optimize sees the body
};

// The bodies of the graph's If, Loop and Scan nodes (Scan from opset 9, as plans take
// it), then the bodies nested in each, parents first. A body that cannot be read as a
// model is left out (logged at debug level): the evaluator and compile report it.
// Propagated folds with `ops` (required there).
std::vector<ScopedBody> control_flow_bodies(const Model& model, BodyShapes shapes,
                                            const OpRegistry* ops = nullptr);

}  // namespace geopt
