#include "kernels/layout.h"

#include <algorithm>
#include <cstring>

#include "util/error.h"

namespace geopt {

std::vector<int64_t> strides_of(const std::vector<int64_t>& dims) {
  std::vector<int64_t> s(dims.size(), 1);
  for (size_t i = dims.size(); i-- > 1;) s[i - 1] = s[i] * dims[i];
  return s;
}

int64_t normalize_axis(int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= std::max<int64_t>(rank, 1))
    throw Error("axis " + std::to_string(axis) + " is out of range for rank " + std::to_string(rank));
  return a;
}

namespace {

template <class E>
void permute_copy(const E* in, E* out, const std::vector<int64_t>& out_dims,
                  const std::vector<int64_t>& in_strides) {
  const size_t rank = out_dims.size();
  int64_t total = 1;
  for (int64_t d : out_dims) total *= d;
  if (total == 0) return;
  if (rank == 0) {
    out[0] = in[0];
    return;
  }
  std::vector<int64_t> counter(rank, 0);
  const int64_t inner = out_dims[rank - 1];
  const int64_t inner_stride = in_strides[rank - 1];
  int64_t base = 0;
  for (int64_t o = 0; o < total; o += inner) {
    const E* src = in + base;
    for (int64_t j = 0; j < inner; ++j) out[o + j] = src[j * inner_stride];
    for (size_t d = rank - 1; d-- > 0;) {
      base += in_strides[d];
      if (++counter[d] < out_dims[d]) break;
      base -= in_strides[d] * out_dims[d];
      counter[d] = 0;
    }
  }
}

}  // namespace

HostTensor transpose(const HostTensor& x, const std::vector<int64_t>& perm) {
  const size_t rank = x.rank();
  std::vector<int64_t> out_dims(rank), in_strides(rank);
  auto xs = strides_of(x.dims());
  for (size_t i = 0; i < rank; ++i) {
    out_dims[i] = x.dims()[static_cast<size_t>(perm[i])];
    in_strides[i] = xs[static_cast<size_t>(perm[i])];
  }
  HostTensor y(x.dtype(), out_dims);
  if (x.dtype() == DType::String) {
    std::vector<std::string> src = x.strings;
    // Strings: permute indices through an index tensor.
    HostTensor idx(DType::I64, x.dims());
    for (int64_t i = 0; i < idx.size(); ++i) idx.mutable_data<int64_t>()[i] = i;
    HostTensor p = transpose(idx, perm);
    for (int64_t i = 0; i < p.size(); ++i)
      y.strings[static_cast<size_t>(i)] = src[static_cast<size_t>(p.data<int64_t>()[i])];
    return y;
  }
  switch (dtype_size(x.dtype())) {
    case 1:
      permute_copy(x.data<uint8_t>(), y.mutable_data<uint8_t>(), out_dims, in_strides);
      break;
    case 2:
      permute_copy(x.data<uint16_t>(), y.mutable_data<uint16_t>(), out_dims, in_strides);
      break;
    case 4:
      permute_copy(x.data<uint32_t>(), y.mutable_data<uint32_t>(), out_dims, in_strides);
      break;
    case 8:
      permute_copy(x.data<uint64_t>(), y.mutable_data<uint64_t>(), out_dims, in_strides);
      break;
    default:
      throw Error("transpose: unsupported element size");
  }
  return y;
}

}  // namespace geopt
