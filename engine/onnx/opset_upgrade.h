#pragma once
// A model moved to a newer opset of the default domain by ONNX's version converter:
// for a pass that writes ops of that opset into a model exported at an older one
// (quantization's per-axis DequantizeLinear needs opset 13; PaddleOCR exports at 9).
#include <cstdint>
#include <filesystem>

#include "ir/graph.h"

namespace geopt {

// The model at `target` (as it is when already there). The converter's adapters read
// shapes (Softmax before 13 works on a 2-D view), so fold the model's shape computations
// first (propagate_static_shapes). Throws geopt::Error naming `where` and the converter's
// reason when an op cannot be converted.
Model upgrade_opset(const Model& model, int64_t target, const std::filesystem::path& where);

}  // namespace geopt
