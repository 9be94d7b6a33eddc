#pragma once
// Ascend's device layouts on the host (layout.h has their shapes): the conversions
// TransData makes, and the unpacking of packed weights that FusedConv and FusedMatMul
// read. C0 is c0_for(dtype): 16, or 32 for 8-bit types.
#include <cstdint>
#include <vector>

#include "eval/host_tensor.h"

namespace geopt::ascend {

// NC1HWC0: [N, C, H, W] -> [N, ceil(C/C0), H, W, C0], channels padded with zeros, and
// back (`channels` = C).
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

}  // namespace geopt::ascend
