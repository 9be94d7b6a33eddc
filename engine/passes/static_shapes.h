#pragma once
// Graph preparation before lowering (GE runs the same two steps in its graph
// prepare stage): shape computations are folded into constants and types are
// re-inferred downstream, so that a model whose inputs were fixed with
// --input_shape gets static shapes everywhere. Exporters compute shapes at run
// time (Shape -> Gather -> Unsqueeze -> Concat -> Reshape, Range over a computed
// length, Expand to a computed shape); ONNX's static inference stops there.
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace geopt {

class OpRegistry;

struct StaticShapeOptions {
  // Nodes are folded only when each output has at most this many elements:
  // shape subgraphs are tiny, and no Tile or Expand may blow up the model.
  int64_t max_elements = 1 << 16;  // (a fold no larger than its constant inputs runs past it)
  // Ops that fold whatever their size (the backend's weight layouts, computed once here).
  std::function<bool(const Node&)> always_fold;
  // false: nodes nothing reads once folding is done stay, with their types (for a
  // caller that reads every value's type at these shapes, as a range plan does).
  bool remove_dead_code = true;
};

struct StaticShapeReport {
  size_t folded = 0;   // nodes replaced by constants
  size_t refined = 0;  // values whose type became more precise
  // Values that still have a shape that is not static, in graph order.
  std::vector<std::string> dynamic;
};

// Folds every node whose inputs are all constants (initializers that are not
// graph inputs), and Shape/Size of values whose shape is static, evaluated with
// the kernels of `ops`; re-infers each remaining node's output types with
// ONNX's per-op inference and keeps what is more precise. Graph outputs are
// never folded (they stay computed). Throws geopt::Error when inference
// contradicts a static dim already known. Then makes the window ops' attributes
// explicit (window_attributes.h).
StaticShapeReport propagate_static_shapes(Model& model, const OpRegistry& ops,
                                          const StaticShapeOptions& options = {});

}  // namespace geopt
