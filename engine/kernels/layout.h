#pragma once
// Byte-level data movement shared by shape kernels (and later, layout transforms).
#include <cstdint>
#include <vector>

#include "eval/host_tensor.h"

namespace geopt {

// y = x permuted: y.dims[i] = x.dims[perm[i]].
HostTensor transpose(const HostTensor& x, const std::vector<int64_t>& perm);
// Normalizes a possibly negative axis into [0, rank); throws a plain message on range errors.
int64_t normalize_axis(int64_t axis, int64_t rank);
// Row-major strides of dims, in elements.
std::vector<int64_t> strides_of(const std::vector<int64_t>& dims);

// Ascend's NC1HWC0: [N, C, H, W] -> [N, ceil(C/C0), H, W, C0], channels padded with
// zeros (C0 = 32 for 8-bit types, 16 otherwise), and back (`channels` = C).
int64_t nc1hwc0_c0(DType t);
HostTensor to_nc1hwc0(const HostTensor& nchw);
HostTensor from_nc1hwc0(const HostTensor& x5, int64_t channels);

// The Cube's weight layouts, zero-padded, as CANN lays them out:
//   FRACTAL_Z  conv weights [N, C, H, W] -> [ceil(C/C0) * H * W, ceil(N/16), 16, C0]
//   FRACTAL_NZ matrices [..., H, W]       -> [..., ceil(W/C0), ceil(H/16), 16, C0]
// and back, given the plain dims (the padding is dropped; FRACTAL_Z back gives
// `channels` input channels, so padded ones may be asked for).
HostTensor to_fractal_z(const HostTensor& oihw);
HostTensor from_fractal_z(const HostTensor& z, const std::vector<int64_t>& oihw);
HostTensor to_fractal_nz(const HostTensor& x);
HostTensor from_fractal_nz(const HostTensor& z, int64_t rows, int64_t cols);
// from_fractal_* of a constant weight, computed once per weight and kept while the
// weight lives (a kernel reading fractal weights on every call converts them once).
HostTensor unpacked_weight(const HostTensor& packed, const std::vector<int64_t>& plain, bool nz);
// Records that `packed` was packed from the constant `plain` (TransData of a weight), so
// unpacked_weight of it returns `plain` instead of unpacking: the same values, without
// a pass over the weight.
void remember_plain(const HostTensor& packed, const HostTensor& plain);

}  // namespace geopt
