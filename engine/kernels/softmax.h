#pragma once
// Softmax's lanes, for the kernels that compute one inside (QuantSoftmax).
#include <cstdint>
#include <vector>

namespace geopt {

// y = Softmax(x) along `axis` (normalized, in [0, rank)) of an f32 tensor of `dims`, as
// ONNX's Softmax from opset 13 computes it, bit for bit.
void softmax_along(const std::vector<int64_t>& dims, int64_t axis, const float* x, float* y);

}  // namespace geopt
