#include "kernels/layout.h"

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
void permute_copy(const E* in, E* out, const std::vector<int64_t>& out_dims, const std::vector<int64_t>& in_strides) {
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

int64_t nc1hwc0_c0(DType t) { return dtype_size(t) == 1 ? 32 : 16; }

namespace {

// Copies between the two layouts element by element: `to5` picks the direction.
void convert_5hd(const HostTensor& src, HostTensor& dst, const std::vector<int64_t>& nchw, int64_t c0, bool to5) {
  const int64_t n = nchw[0], c = nchw[1], hw = nchw[2] * nchw[3], c1 = (c + c0 - 1) / c0;
  const size_t esz = dtype_size(src.dtype());
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t p = 0; p < hw; ++p) {
        const int64_t plain = (b * c + ch) * hw + p;
        const int64_t blocked = (((b * c1 + ch / c0) * hw + p) * c0) + ch % c0;
        const int64_t from = to5 ? plain : blocked, to = to5 ? blocked : plain;
        std::memcpy(dst.mutable_raw() + to * static_cast<int64_t>(esz), src.raw() + from * static_cast<int64_t>(esz), esz);
      }
}

}  // namespace

HostTensor to_nc1hwc0(const HostTensor& x) {
  if (x.rank() != 4) throw Error("NCHW -> NC1HWC0 needs a 4-D tensor, got " + x.shape_string());
  const int64_t c0 = nc1hwc0_c0(x.dtype());
  HostTensor y(x.dtype(), {x.dims()[0], (x.dims()[1] + c0 - 1) / c0, x.dims()[2], x.dims()[3], c0});  // zero padding
  convert_5hd(x, y, x.dims(), c0, true);
  return y;
}

HostTensor from_nc1hwc0(const HostTensor& x, int64_t channels) {
  const int64_t c0 = nc1hwc0_c0(x.dtype());
  if (x.rank() != 5 || x.dims()[4] != c0 || channels <= 0 || (channels + c0 - 1) / c0 != x.dims()[1])
    throw Error("NC1HWC0 -> NCHW: " + x.shape_string() + " does not hold " + std::to_string(channels) + " channels");
  std::vector<int64_t> nchw{x.dims()[0], channels, x.dims()[2], x.dims()[3]};
  HostTensor y = HostTensor::uninitialized(x.dtype(), nchw);
  convert_5hd(x, y, nchw, c0, false);
  return y;
}

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
    for (int64_t i = 0; i < p.size(); ++i) y.strings[static_cast<size_t>(i)] = src[static_cast<size_t>(p.data<int64_t>()[i])];
    return y;
  }
  switch (dtype_size(x.dtype())) {
    case 1: permute_copy(x.data<uint8_t>(), y.mutable_data<uint8_t>(), out_dims, in_strides); break;
    case 2: permute_copy(x.data<uint16_t>(), y.mutable_data<uint16_t>(), out_dims, in_strides); break;
    case 4: permute_copy(x.data<uint32_t>(), y.mutable_data<uint32_t>(), out_dims, in_strides); break;
    case 8: permute_copy(x.data<uint64_t>(), y.mutable_data<uint64_t>(), out_dims, in_strides); break;
    default: throw Error("transpose: unsupported element size");
  }
  return y;
}

}  // namespace geopt
