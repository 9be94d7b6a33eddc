#pragma once
// ATC's dynamic-shape options, read against a model's inputs: the gears of
// --dynamic_batch_size, --dynamic_image_size and --dynamic_dims (each with --input_shape
// marking the dynamic dims as -1), and the ranges of --input_shape_range.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"

namespace geopt::ascend {

// Input name -> static dims: one gear.
using InputShapes = std::map<std::string, std::vector<int64_t>>;

struct DimRange {
  int64_t min = 0, max = 0;
};
// Input name -> each dim's range (min == max for a fixed one).
using InputRanges = std::map<std::string, std::vector<DimRange>>;

enum class GearKind {
  batch_size,  // --dynamic_batch_size "1,2,4,8": each gear one value, for every -1
  image_size,  // --dynamic_image_size "320,320;640,640": each gear H,W, for each input's two -1s
  dims,        // --dynamic_dims "32;64;128" or "20,20;40,40": each gear a value per -1, in order
};

// The gears, as each input's static dims. `input_shape` is ATC's --input_shape with -1 at
// the dynamic dims (inputs it leaves out must be static in the model). For --dynamic_dims a
// gear may also give one value per distinct symbol behind the -1s (input_ids:1,-1 and
// attention_mask:1,-1 both at 'seq': "32;64;128"). Throws geopt::Error naming the option and
// the entry at fault.
std::vector<InputShapes> parse_gears(const Model& model, const std::string& input_shape, GearKind kind,
                                     const std::string& gears);

// ATC's --input_shape_range: "input_ids:[1,1~512];attention_mask:[1,1~512]". Each dim is a
// size or MIN~MAX; -1 (or MIN~-1) is unbounded, refused here: the memory plan needs an upper
// bound. Inputs it leaves out must be static in the model.
InputRanges parse_input_shape_range(const Model& model, const std::string& text);

// "input_ids:1,32;attention_mask:1,32", inputs in the model's order.
std::string input_shapes_text(const Model& model, const InputShapes& shapes);
// ATC's --input_shape_range text of the ranges, inputs in the model's order.
std::string input_ranges_text(const Model& model, const InputRanges& ranges);

// Records, for each symbolic input dim a range covers, its range in the model's graph
// (Graph::dim_ranges), so rules prove their conditions over it. Throws when two inputs
// give one symbol two ranges.
void set_dim_ranges(Model& model, const InputRanges& ranges);

// A copy of the model whose graph inputs have these static dims (the others as they
// are); types downstream are left for propagate_static_shapes to refine.
Model with_input_dims(const Model& model, const InputShapes& shapes);

}  // namespace geopt::ascend
