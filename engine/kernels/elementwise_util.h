#pragma once
// Shared machinery for elementwise kernels: broadcast planning and the loop.
#include <algorithm>
#include <array>
#include <vector>

#include <omp.h>

#include "eval/kernel.h"
#include "kernels/broadcast.h"
#include "util/team_region.h"

namespace geopt {

// run(begin, end) over [0, n) in runs of 16384 elements, shared among the threads when n
// is large (for a small tensor an OpenMP region costs more than the pass).
template <class Run>
void for_each_run(int64_t n, Run&& run) {
  constexpr int64_t kRun = 1 << 14;
  team_region(n > (1 << 16), [&] {
#pragma omp for
    for (int64_t c = 0; c < (n + kRun - 1) / kRun; ++c) run(c * kRun, std::min(n, (c + 1) * kRun));
  });
}

template <size_t N>
struct BroadcastPlan {
  std::vector<int64_t> dims;
  std::vector<int64_t> strides[N];
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
  for (size_t k = 0; k < N; ++k) p.strides[k] = broadcast_strides(in[k]->dims(), p.dims);
  coalesce_broadcast(p);
  return p;
}

// Walks the coalesced output in tiles of about 4096 elements: tile(out_index, offsets,
// steps, count, rows, row_steps) covers output elements out_index .. out_index + rows *
// count - 1, row r reading input k at offsets[k] + r * row_steps[k] + j * steps[k]. Short
// innermost rows come many to a tile (a channel-blocked tensor's rows of 16 lanes, 256 a tile, so the
// per-row bookkeeping is paid once per tile); a long one is cut into tiles of one row.
// Tiles are shared among the threads when the tensor is large: `tile` must only write
// the output elements it is given.
template <size_t N, class Tile>
void apply_broadcast_tiles(const BroadcastPlan<N>& p, Tile&& tile) {
  constexpr int64_t kTile = 4096;
  const size_t rank = p.loop_dims.size();
  const int64_t inner = p.loop_dims[rank - 1];
  const int64_t mid = rank >= 2 ? p.loop_dims[rank - 2] : 1;
  int64_t total = 1;
  for (int64_t d : p.loop_dims) total *= d;
  if (total == 0) return;
  const int64_t outer = total / (inner * mid);
  const int64_t cols = std::min(inner, kTile), col_chunks = (inner + cols - 1) / cols;
  const int64_t rows = col_chunks > 1 ? 1 : std::clamp<int64_t>(kTile / inner, 1, mid),
                row_chunks = (mid + rows - 1) / rows;
  int64_t steps[N], row_steps[N];
  for (size_t k = 0; k < N; ++k) {
    steps[k] = p.loop_strides[k][rank - 1];
    row_steps[k] = rank >= 2 ? p.loop_strides[k][rank - 2] : 0;
  }
  team_region(total > (1 << 16), [&] {
#pragma omp for
    for (int64_t t = 0; t < outer * row_chunks * col_chunks; ++t) {
      const int64_t first_col = t % col_chunks * cols, first_row = t / col_chunks % row_chunks * rows,
                    o = t / col_chunks / row_chunks;
      int64_t base[N];
      for (size_t k = 0; k < N; ++k) base[k] = first_row * row_steps[k] + first_col * steps[k];
      for (size_t d = rank >= 2 ? rank - 2 : 0, rest = static_cast<size_t>(o); d-- > 0;) {
        const int64_t c = static_cast<int64_t>(rest % static_cast<size_t>(p.loop_dims[d]));
        rest /= static_cast<size_t>(p.loop_dims[d]);
        for (size_t k = 0; k < N; ++k) base[k] += c * p.loop_strides[k][d];
      }
      tile((o * mid + first_row) * inner + first_col, static_cast<const int64_t*>(base),
           static_cast<const int64_t*>(steps), std::min(cols, inner - first_col),
           std::min(rows, mid - first_row), static_cast<const int64_t*>(row_steps));
    }
  });
}

// Calls f(out_index, offsets) for every output element (in parallel for large tensors:
// f must only write the element it is given).
template <size_t N, class F>
void apply_broadcast(const BroadcastPlan<N>& p, F&& f) {
  apply_broadcast_tiles(p, [&](int64_t i, const int64_t* base, const int64_t* steps, int64_t count,
                               int64_t rows, const int64_t* row_steps) {
    for (int64_t r = 0; r < rows; ++r) {
      int64_t offs[N];
      for (size_t k = 0; k < N; ++k) offs[k] = base[k] + r * row_steps[k];
      for (int64_t j = 0; j < count; ++j) {
        f(i + r * count + j, static_cast<const int64_t*>(offs));
        for (size_t k = 0; k < N; ++k) offs[k] += steps[k];
      }
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
  team_region(n > (1 << 16), [&] {
#pragma omp for
    for (int64_t i = 0; i < n; ++i) py[i] = f(px[i]);
  });
  return y;
}

}  // namespace geopt
