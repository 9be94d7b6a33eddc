#pragma once
// ONNX (numpy) multidirectional broadcasting.
#include <cstddef>
#include <cstdint>
#include <vector>

namespace geopt {

// The broadcast shape of several shapes; returns false if they are incompatible.
bool broadcast_shape(const std::vector<std::vector<int64_t>>& shapes, std::vector<int64_t>& out);

// Element strides of `dims` when read as `out` (right-aligned; 0 on broadcast axes).
std::vector<int64_t> broadcast_strides(const std::vector<int64_t>& dims, const std::vector<int64_t>& out);

// Calls f(out_index, offsets) for every element of `out`, where offsets[k] is the
// element offset in input k (strides from broadcast_strides). Rows are walked
// innermost-first so the common cases stay cheap.
template <size_t N, class F>
void for_each_broadcast(const std::vector<int64_t>& out, const std::vector<int64_t> (&strides)[N], F&& f) {
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total == 0) return;
  const size_t rank = out.size();
  if (rank == 0) {
    int64_t offs[N] = {};
    f(int64_t{0}, offs);
    return;
  }
  const int64_t inner = out[rank - 1];
  int64_t inner_stride[N];
  for (size_t k = 0; k < N; ++k) inner_stride[k] = strides[k][rank - 1];
  std::vector<int64_t> counter(rank, 0);
  int64_t base[N] = {};
  for (int64_t row_start = 0; row_start < total; row_start += inner) {
    int64_t offs[N];
    for (size_t k = 0; k < N; ++k) offs[k] = base[k];
    for (int64_t j = 0; j < inner; ++j) {
      f(row_start + j, offs);
      for (size_t k = 0; k < N; ++k) offs[k] += inner_stride[k];
    }
    // Advance the outer counter (all axes but the last).
    for (size_t d = rank - 1; d-- > 0;) {
      ++counter[d];
      for (size_t k = 0; k < N; ++k) base[k] += strides[k][d];
      if (counter[d] < out[d]) break;
      for (size_t k = 0; k < N; ++k) base[k] -= strides[k][d] * out[d];
      counter[d] = 0;
    }
  }
}

}  // namespace geopt
