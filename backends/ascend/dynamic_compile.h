#pragma once
// Plans that serve more than one input shape (docs/LOWERING.md, "Dynamic shapes"):
//  - a plan of gears (ATC's --dynamic_batch_size, --dynamic_image_size, --dynamic_dims):
//    each gear compiled as a static plan of its own (optimized at its shapes, so every
//    shape condition of the rules is decided exactly), with one weight region that all
//    gears share, each distinct weight stored once;
//  - a range plan (ATC's --input_shape_range): one kernel sequence optimized on the
//    symbolic model, every value whose dims depend on the inputs' bounded and planned at
//    the range's upper bound (offsets valid at every size in range), its shapes set at
//    run time by the kernels; the cost model prices it at the upper bound.
#include <vector>

#include "ascend/compile.h"
#include "ascend/dynamic_shapes.h"

namespace geopt::ascend {

struct GearedCompileResult {
  std::vector<InputShapes> shapes;   // per gear
  std::vector<CompileResult> gears;  // per gear; their plans moved into `plan`
  plan::Plan plan;                   // the plan of gears, weights shared
  uint64_t gear_weight_bytes = 0;    // the gears' weight regions summed, before sharing
};

// `given` is the model with the gears' dims open (symbolic). Each gear is checked
// against `given` at its shapes (--check-input feeds only for the gear they fit).
GearedCompileResult compile_gears(const Model& given, const std::vector<InputShapes>& gears,
                                  const HardwareProfile& profile, const CompileOptions& options);

struct RangeCompileResult {
  CompileResult compiled;
  InputRanges ranges;
  // The sizes the check ran the plan at (the ranges' minimum, middle and maximum), as
  // input shapes, and the LOAD of the static plan at each: the range plan's pool is
  // planned at the maximum.
  std::vector<InputShapes> checked_at;
  std::vector<uint64_t> load_at;
};

RangeCompileResult compile_range(const Model& given, const InputRanges& ranges,
                                 const HardwareProfile& profile, const CompileOptions& options);

// The plan of gears from plans compiled each with its own weight region: one region,
// each distinct run of weight bytes stored once (content compared; a run equal to the
// start of a stored one reuses it), every gear's weight references moved to it.
plan::Plan share_gear_weights(std::vector<plan::Plan> gears, const std::vector<std::string>& names);

}  // namespace geopt::ascend
