#pragma once
// Shared machinery for elementwise kernels: broadcast planning and the loop.
#include <array>

#include "eval/kernel.h"
#include "kernels/broadcast.h"

namespace geopt {

template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides[N];
  bool same = true;  // every input already has the output's shape
};

template <size_t N>
BroadcastPlan<N> plan_broadcast(const KernelContext& ctx, const std::array<const HostTensor*, N>& in) {
  BroadcastPlan<N> p;
  std::vector<std::vector<int64_t>> shapes;
  for (const HostTensor* t : in) shapes.push_back(t->dims());
  if (!broadcast_shape(shapes, p.dims)) {
    std::string s;
    for (const HostTensor* t : in) s += (s.empty() ? "" : " and ") + t->shape_string();
    ctx.fail("shapes " + s + " do not broadcast");
  }
  for (size_t k = 0; k < N; ++k) {
    p.strides[k] = broadcast_strides(in[k]->dims(), p.dims);
    p.same = p.same && in[k]->dims() == p.dims;
  }
  return p;
}

// Calls f(out_index, offsets) for every output element, in parallel when shapes match.
template <size_t N, class F>
void apply_broadcast(const BroadcastPlan<N>& p, F&& f) {
  if (p.same) {
    int64_t total = 1;
    for (int64_t d : p.dims) total *= d;
#pragma omp parallel for if (total > (1 << 16))
    for (int64_t i = 0; i < total; ++i) {
      int64_t offs[N];
      for (size_t k = 0; k < N; ++k) offs[k] = i;
      f(i, offs);
    }
    return;
  }
  for_each_broadcast(p.dims, p.strides, f);
}

// y[i] = f(x[i]) over one tensor of type T (output type Out).
template <class T, class Out = T, class F>
HostTensor map_unary(const HostTensor& x, DType out_dtype, F&& f) {
  HostTensor y = HostTensor::uninitialized(out_dtype, x.dims());
  const T* px = x.data<T>();
  Out* py = y.mutable_data<Out>();
  const int64_t n = x.size();
#pragma omp parallel for if (n > (1 << 16))
  for (int64_t i = 0; i < n; ++i) py[i] = f(px[i]);
  return y;
}

}  // namespace geopt
