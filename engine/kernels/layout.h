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

}  // namespace geopt
