#pragma once
// The activations that fused kernels apply last (see docs/OPS.md).
#include <string>
#include <vector>

#include "eval/kernel.h"

namespace geopt {

// Applies `name` with `params` to every element of an f32 tensor, in place.
void apply_activation(const KernelContext& ctx, HostTensor& y, const std::string& name,
                      const std::vector<float>& params);
// GELU of every element of an f32 tensor on the vector row loop (row_math.h).
void gelu_in_place(HostTensor& y, bool tanh_approximation);

}  // namespace geopt
