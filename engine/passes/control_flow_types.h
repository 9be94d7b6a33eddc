#pragma once
// Output types of control-flow nodes (If, Loop, Scan) from their bodies, for the
// static-shape pass: ONNX's per-node inference cannot see into a body. Each body is
// imported, given the types the node feeds it (its inputs and its captured values),
// and its shapes propagated the same way, bodies nested in it included.
#include <optional>
#include <vector>

#include "ir/graph.h"

namespace geopt {

class OpRegistry;

// One entry per node output; nullopt where nothing can be told. An If branch that cannot
// be typed at these shapes leaves the outputs to the other branch's types. `constant` gives a
// node input's value where it is a constant (a Loop's trip count), else null.
std::vector<std::optional<ValueType>> infer_control_flow_types(
    const Node& n, const Model& model, const std::vector<const Tensor*>& input_constants,
    const OpRegistry& ops);

// Body `attr` of control-flow node n as a model of its own (the opsets of `model`, whose
// graph holds n): its first graph inputs typed `input_types`, and each value it reads
// from the enclosing graph an initializer where that value is a constant there, else a
// graph input of its name and type after the op's own body inputs. Not yet propagated.
Model body_as_model(const Node& n, const Model& model, const char* attr,
                    const std::vector<ValueType>& input_types);

// The types n feeds its body's inputs: a Loop's trip number, condition and carried
// values; a Scan's states and slices (opset 9 on); nothing for If.
std::vector<ValueType> body_input_types(const Node& n);

// The output types of an If's branches, propagated (folding with `ops`): {then's, else's}.
std::pair<std::vector<ValueType>, std::vector<ValueType>> branch_output_types(const Node& n,
                                                                              const Model& model,
                                                                              const OpRegistry& ops);

// Whether n is an If, Loop or Scan of the ONNX domain.
bool is_control_flow(const Node& n);

}  // namespace geopt
