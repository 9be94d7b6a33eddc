#pragma once
// Checked reads of the small inputs and axes kernels take from a model: a hostile file
// gets a node-named error, never a read past a tensor.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "eval/kernel.h"
#include "kernels/layout.h"

namespace geopt {

// Element 0 of input i, which must hold at least one element (an integer, or a float
// holding a finite integral-enough value).
inline int64_t scalar_int_input(const KernelContext& ctx, size_t i, const char* what) {
  const HostTensor& t = ctx.input(i);
  if (t.size() < 1) ctx.fail(std::string(what) + " is empty");
  if (!is_float(t.dtype())) return t.int_at(0);
  const double v = t.real_at(0);
  if (!std::isfinite(v) || std::fabs(v) > 9e15) ctx.fail(std::string(what) + " is not a finite integer");
  return static_cast<int64_t>(v);
}

inline double scalar_real_input(const KernelContext& ctx, size_t i, const char* what) {
  const HostTensor& t = ctx.input(i);
  if (t.size() < 1) ctx.fail(std::string(what) + " is empty");
  return t.real_at(0);
}

// The one element of input i, which must hold exactly one (a per-tensor scale or zero point).
inline double single_real_input(const KernelContext& ctx, size_t i, const char* what) {
  const HostTensor& t = ctx.input(i);
  if (t.size() != 1) ctx.fail(std::string(what) + " must be a scalar, not " + t.shape_string());
  return t.real_at(0);
}

// An axis of a tensor of rank >= 1 (a scalar has none).
inline int64_t tensor_axis(const KernelContext& ctx, int64_t axis, const HostTensor& x) {
  if (x.rank() < 1) ctx.fail("the input is a scalar: it has no axis " + std::to_string(axis));
  try {
    return normalize_axis(axis, static_cast<int64_t>(x.rank()));
  } catch (const std::exception& e) {
    ctx.fail(e.what());
  }
}

// The axes an opset-18 op lists (Pad's, CenterCropPad's, Resize's), each normalized into
// [0, rank); fails on one out of range or listed twice.
inline std::vector<size_t> distinct_axes(const KernelContext& ctx, const std::vector<int64_t>& axes,
                                         int64_t rank) {
  std::vector<size_t> out;
  std::vector<bool> seen(static_cast<size_t>(std::max<int64_t>(rank, 0)), false);
  for (int64_t axis : axes) {
    if (axis < -rank || axis >= rank)
      ctx.fail("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
    const size_t a = static_cast<size_t>(axis < 0 ? axis + rank : axis);
    if (seen[a]) ctx.fail("axis " + std::to_string(axis) + " is listed twice");
    seen[a] = true;
    out.push_back(a);
  }
  return out;
}

}  // namespace geopt
