#pragma once
// Byte-level data movement shared by the shape kernels.
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

}  // namespace geopt
