#pragma once
// Ascend's device formats, with shapes exactly as CANN computes them
// (transfer_shape_utils): C0 is 16 for 16-bit types and 32 for int8.
//   NC1HWC0    [N, C, H, W]  -> [N, ceil(C/C0), H, W, C0]
//   FRACTAL_Z  [N, C, H, W]  -> [ceil(C/C0) * H * W, ceil(N/16), 16, C0]   (conv weights)
//   FRACTAL_NZ [..., H, W]   -> [..., ceil(W/C0), ceil(H/16), 16, C0]      (matmul operands)
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/node.h"

namespace geopt::ascend {

enum class Format { ND, NCHW, NC1HWC0, FRACTAL_Z, FRACTAL_NZ };

const char* format_name(Format f);
// The format of that name (an attribute's value); nullopt for none.
std::optional<Format> parse_format(std::string_view name);
int64_t c0_for(DType t);  // 32 for 8-bit types, 16 otherwise
// The device shape of a tensor of `dims` in `format` (dims as NCHW for the 4-D formats).
// Throws geopt::Error when the rank does not fit the format.
std::vector<int64_t> device_shape(const std::vector<int64_t>& dims, Format format, DType t);
// Elements the device shape holds (padding included).
int64_t padded_elements(const std::vector<int64_t>& dims, Format format, DType t);

// A TransData into FRACTAL_Z or FRACTAL_NZ: a weight laid out for the Cube, computed
// once when the model is compiled (as ATC does), never at run time.
bool is_weight_layout(const Node& n);

}  // namespace geopt::ascend
