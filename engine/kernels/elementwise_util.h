#pragma once
// Shared machinery for elementwise kernels: broadcast planning and the loop.
#include <array>
#include <vector>

#include <omp.h>

#include "eval/kernel.h"
#include "kernels/broadcast.h"

namespace geopt {

template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides[N];
  bool same = true;  // every input already has the output's shape
  // The walk: dims with no size-1 axis and adjacent axes merged wherever every input
  // steps through them as one (numpy's coalescing), so the innermost axis is as long as
  // it can be. At least one axis.
  std::vector<int64_t> loop_dims;
  std::vector<int64_t> loop_strides[N];
};

template <size_t N>
void coalesce_broadcast(BroadcastPlan<N>& p) {
  for (size_t d = 0; d < p.dims.size(); ++d) {
    if (p.dims[d] == 1) continue;
    const bool merge = !p.loop_dims.empty() && [&] {
      for (size_t k = 0; k < N; ++k)
        if (p.loop_strides[k].back() != p.strides[k][d] * p.dims[d]) return false;
      return true;
    }();
    if (merge) {
      p.loop_dims.back() *= p.dims[d];
      for (size_t k = 0; k < N; ++k) p.loop_strides[k].back() = p.strides[k][d];
    } else {
      p.loop_dims.push_back(p.dims[d]);
      for (size_t k = 0; k < N; ++k) p.loop_strides[k].push_back(p.strides[k][d]);
    }
  }
  if (p.loop_dims.empty()) {  // a single element
    p.loop_dims.push_back(1);
    for (size_t k = 0; k < N; ++k) p.loop_strides[k].push_back(0);
  }
}

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
  coalesce_broadcast(p);
  return p;
}

// Calls row(out_index, offsets, steps, count) for every innermost row of the coalesced
// walk: output elements out_index .. out_index + count - 1 read input k at offsets[k] +
// j * steps[k]. Rows are shared among the threads when the tensor is large, so `row`
// must only write the output elements it is given.
template <size_t N, class Row>
void apply_broadcast_rows(const BroadcastPlan<N>& p, Row&& row) {
  const size_t rank = p.loop_dims.size();
  const int64_t inner = p.loop_dims[rank - 1];
  int64_t total = 1;
  for (int64_t d : p.loop_dims) total *= d;
  if (total == 0) return;
  const int64_t rows = total / inner;
  int64_t steps[N];
  for (size_t k = 0; k < N; ++k) steps[k] = p.loop_strides[k][rank - 1];
#pragma omp parallel if (total > (1 << 16))
  {
    // Each thread walks one contiguous range of rows, its counter set up once.
    const int64_t threads = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = rows * t / threads, end = rows * (t + 1) / threads;
    std::vector<int64_t> counter(rank, 0);
    int64_t base[N] = {};
    for (size_t d = rank - 1, rest = static_cast<size_t>(begin); d-- > 0;) {
      counter[d] = static_cast<int64_t>(rest % static_cast<size_t>(p.loop_dims[d]));
      rest /= static_cast<size_t>(p.loop_dims[d]);
      for (size_t k = 0; k < N; ++k) base[k] += counter[d] * p.loop_strides[k][d];
    }
    for (int64_t r = begin; r < end; ++r) {
      row(r * inner, static_cast<const int64_t*>(base), static_cast<const int64_t*>(steps), inner);
      for (size_t d = rank - 1; d-- > 0;) {  // the next row: advance the outer counter
        ++counter[d];
        for (size_t k = 0; k < N; ++k) base[k] += p.loop_strides[k][d];
        if (counter[d] < p.loop_dims[d]) break;
        for (size_t k = 0; k < N; ++k) base[k] -= p.loop_strides[k][d] * p.loop_dims[d];
        counter[d] = 0;
      }
    }
  }
}

// Calls f(out_index, offsets) for every output element (in parallel for large tensors:
// f must only write the element it is given).
template <size_t N, class F>
void apply_broadcast(const BroadcastPlan<N>& p, F&& f) {
  apply_broadcast_rows(p, [&](int64_t i, const int64_t* base, const int64_t* steps, int64_t count) {
    int64_t offs[N];
    for (size_t k = 0; k < N; ++k) offs[k] = base[k];
    for (int64_t j = 0; j < count; ++j) {
      f(i + j, static_cast<const int64_t*>(offs));
      for (size_t k = 0; k < N; ++k) offs[k] += steps[k];
    }
  });
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
