#pragma once
// The activations that fused kernels apply last (see docs/OPS.md).
#include <string>
#include <string_view>
#include <vector>

#include "eval/kernel.h"

namespace geopt {

// The activations a fused kernel applies last, named by its `activation` attribute.
enum class Activation {
  None,
  Relu,
  Clip,
  LeakyRelu,
  HardSwish,
  Sigmoid,
  SiLU,
  Mish,
  QuickGelu,
  Gelu,
  GeluTanh,
  Tanh
};
// The activation a name stands for ("none" and "" are None); fails (naming the node) on
// one that is not in the list.
Activation parse_activation(const KernelContext& ctx, std::string_view name);

// Applies `name` with `params` to every element of an f32 tensor, in place.
void apply_activation(const KernelContext& ctx, HostTensor& y, const std::string& name,
                      const std::vector<float>& params);
// The same on n floats, in the calling thread (a row inside a caller's parallel loop).
void apply_activation(const KernelContext& ctx, float* p, int64_t n, Activation activation,
                      const std::vector<float>& params);
// Whether the row loops (row_math.h) compute `a` in fewer cycles than oneDNN's eltwise
// post-op: Sigmoid, SiLU and QuickGelu, 0.16 ns an element a thread as AVX-512 rows
// (0.25 on the portable loop) against 0.24-0.27 ns as a 1x1 conv's post-op (Zen 4).
bool activation_rows_beat_post_ops(Activation a);
// p = act(p) * post_scale + post_shift on n floats, in the calling thread (a fused
// kernel's tail, after its sums).
void apply_activation_tail(const KernelContext& ctx, float* p, int64_t n, Activation activation,
                           const std::vector<float>& params, float post_scale, float post_shift);
// GELU of every element of an f32 tensor on the vector row loop (row_math.h).
void gelu_in_place(HostTensor& y, bool tanh_approximation);

}  // namespace geopt
