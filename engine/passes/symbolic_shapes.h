#pragma once
// Shapes computed at run time, followed symbolically. Exporters compute a Reshape's
// target or a Range's length from Shape(x): `Shape -> Gather -> Unsqueeze -> Concat ->
// Reshape`, `Range(0, Gather(Shape(ids), 1), 1)`. With x's dims symbolic (a dynamic
// sequence), ONNX's inference gives such outputs fresh names (unk__0) or none, so two
// values of one size no longer look alike and rules that compare dims stop firing.
// This tracks the small int64 tensors whose elements are dims, and gives the ops that
// consume them (Reshape, Expand, ConstantOfShape, Range, Slice, Resize) the dims they
// produce; and names the spatial dims a Conv or pooling makes of a symbolic one by their
// formula ("floor((height-1)/2)+1"), so two branches that stride alike agree.
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "ir/graph.h"

namespace geopt {

class SymbolicShapeValues {
 public:
  // `ranges`: known ranges of symbols (Graph::dim_ranges), which settle a Slice's
  // min(end, dim) when the end is a symbol no larger than the dim.
  explicit SymbolicShapeValues(const std::map<std::string, std::pair<int64_t, int64_t>>* ranges = nullptr)
      : ranges_(ranges) {}
  // Records what node n computes, when its output is a tensor of dims (after its
  // inputs were recorded: call in topological order).
  void record(const Node& n);
  // The shape n's first output has by the dims its inputs carry, where that says more
  // than its type; nullopt when nothing is known.
  std::optional<Shape> output_shape(const Node& n) const;
  // An earlier recorded value that holds the same dims as v (same type, same elements:
  // the same numbers at every size), so v's readers may read it instead; else null.
  const Value* earlier_equal(const Value* v) const;

 private:
  // The elements of v, if it is a tensor of dims (a constant's too).
  std::optional<std::vector<Dim>> elements(const Value* v) const;
  // What record() keeps for each op it knows: the dims its output holds.
  std::optional<std::vector<Dim>> shape_dims(const Node& n) const;
  std::optional<std::vector<Dim>> gather_dims(const Node& n) const;
  std::optional<std::vector<Dim>> same_dims(const Node& n) const;
  std::optional<std::vector<Dim>> concat_dims(const Node& n) const;
  std::optional<std::vector<Dim>> arithmetic_dims(const Node& n) const;
  std::optional<std::vector<Dim>> slice_elements_dims(const Node& n) const;
  // output_shape of each op it knows.
  std::optional<Shape> constant_of_shape_shape(const Node& n) const;
  std::optional<Shape> range_shape(const Node& n) const;
  std::optional<Shape> reshape_shape(const Node& n) const;
  std::optional<Shape> slice_shape(const Node& n) const;
  std::optional<Shape> window_shape(const Node& n) const;
  std::optional<Shape> resize_shape(const Node& n) const;
  std::optional<Shape> expand_shape(const Node& n) const;
  const std::map<std::string, std::pair<int64_t, int64_t>>* ranges_;
  std::unordered_map<const Value*, std::vector<Dim>> dims_;
  std::unordered_map<std::string, const Value*> first_by_content_;  // type and elements -> first value
  std::unordered_map<const Value*, const Value*> same_as_;
};

// ONNX's inference names a dim it cannot tell unk__N: a placeholder, not a size.
bool is_placeholder_dim(const Dim& d);

}  // namespace geopt
