// Softmax, LogSoftmax and Hardmax. Before opset 13 the input is coerced to 2-D
// at `axis` (default 1); from 13 on they work along `axis` (default -1).
#include <cmath>
#include <limits>
#include <type_traits>

#include "eval/kernel.h"
#include "kernels/dispatch.h"
#include "kernels/layout.h"
#include "kernels/row_math.h"
#include "kernels/softmax.h"
#include "util/team_region.h"

namespace geopt {
namespace {

enum class Kind { Softmax, LogSoftmax, Hardmax };

// Calls f(base, stride, n) for every lane of length n along `axis` (opset 13's
// semantics), the lanes shared among the threads for a large tensor.
template <class F>
void for_each_lane_along(const std::vector<int64_t>& dims, int64_t size, int64_t axis, F&& f) {
  const int64_t n = dims[static_cast<size_t>(axis)];
  const int64_t stride = strides_of(dims)[static_cast<size_t>(axis)];
  const int64_t outer = n ? size / (n * stride) : 0;
  team_region(size > (1 << 15), [&] {
#pragma omp for collapse(2)
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t s = 0; s < stride; ++s) f(o * n * stride + s, stride, n);
  });
}

// Calls f(base, stride, n) for every lane of length n along the reduction.
template <class F>
void for_each_lane(const HostTensor& x, const KernelContext& ctx, F&& f) {
  const int64_t rank = static_cast<int64_t>(x.rank());
  if (ctx.opset() < 13) {
    int64_t axis = ctx.attr_int("axis", 1);
    if (axis < 0) axis += rank;
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < rank; ++d) (d < axis ? outer : inner) *= x.dims()[static_cast<size_t>(d)];
    team_region(outer * inner > (1 << 15), [&] {
#pragma omp for
      for (int64_t o = 0; o < outer; ++o) f(o * inner, int64_t{1}, inner);
    });
    return;
  }
  for_each_lane_along(x.dims(), x.size(), normalize_axis(ctx.attr_int("axis", -1), rank), f);
}

template <class T>
void lane(const T* x, T* y, int64_t stride, int64_t n, Kind kind) {
  if (n == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (stride == 1 && kind != Kind::Hardmax) {  // contiguous: the vector row loops
      const float mx = row_max(x, n);
      const float sum = exp_row(x, y, n, mx);
      if (kind == Kind::Softmax) {
        scale_row(y, n, 1.0f / sum);
      } else {
        const float shift = mx + std::log(sum);
        for (int64_t i = 0; i < n; ++i) y[i] = x[i] - shift;
      }
      return;
    }
  }
  T mx = x[0];
  int64_t arg = 0;
  for (int64_t i = 1; i < n; ++i)
    if (x[i * stride] > mx) {
      mx = x[i * stride];
      arg = i;
    }
  if (kind == Kind::Hardmax) {
    for (int64_t i = 0; i < n; ++i) y[i * stride] = i == arg ? T(1) : T(0);
    return;
  }
  T sum = 0;
  for (int64_t i = 0; i < n; ++i) {
    T e = std::exp(x[i * stride] - mx);
    if (kind == Kind::Softmax) y[i * stride] = e;
    sum += e;
  }
  if (kind == Kind::Softmax) {
    T inv = T(1) / sum;
    for (int64_t i = 0; i < n; ++i) y[i * stride] *= inv;
  } else {
    T log_sum = std::log(sum);
    for (int64_t i = 0; i < n; ++i) y[i * stride] = x[i * stride] - mx - log_sum;
  }
}

void add(OpRegistry& r, const char* name, Kind kind) {
  r.add("", name, [kind, name](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    dispatch_float(
        x.dtype(),
        [&]<class T>() {
          HostTensor y = ctx.new_output(0, x.dtype(), x.dims());  // every lane is written
          const T* px = x.data<T>();
          T* py = y.mutable_data<T>();
          for_each_lane(x, ctx, [&](int64_t base, int64_t stride, int64_t n) {
            lane(px + base, py + base, stride, n, kind);
          });
          ctx.outputs[0] = std::move(y);
        },
        name);
  });
}

}  // namespace

void softmax_along(const std::vector<int64_t>& dims, int64_t axis, const float* x, float* y) {
  int64_t size = 1;
  for (int64_t d : dims) size *= d;
  for_each_lane_along(dims, size, axis, [&](int64_t base, int64_t stride, int64_t n) {
    lane(x + base, y + base, stride, n, Kind::Softmax);
  });
}

void register_softmax_kernels(OpRegistry& r) {
  add(r, "Softmax", Kind::Softmax);
  add(r, "LogSoftmax", Kind::LogSoftmax);
  add(r, "Hardmax", Kind::Hardmax);
}

}  // namespace geopt
