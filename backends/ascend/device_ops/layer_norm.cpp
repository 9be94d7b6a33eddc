// LayerNorm: over axes axis..-1 (ND), or over the channels at each position of an NCHW
// or NC1HWC0 tensor (ConvNeXt's LayerNorm2d, kept in the Cube's layout).
#include <onnx/defs/schema.h>

#include <optional>
#include <string>

#include "device_ops/device_ops.h"
#include "eval/kernel.h"
#include "ir/domain.h"
#include "kernels/norm.h"
#include "layout.h"
#include "onnx/schema_helpers.h"

namespace geopt::ascend {
namespace {

using onnx::AttributeProto;
using onnx::OpSchema;
using onnx_io::norm;

void layer_norm(KernelContext& ctx) {
  const std::string name = ctx.attr_string("data_format", "ND");
  const std::optional<Format> format = parse_format(name);
  if (format == Format::ND) return layer_norm_over_axes(ctx);
  if (format == Format::NCHW || format == Format::NC1HWC0)
    return channel_layer_norm(ctx, format == Format::NC1HWC0);
  ctx.fail("data_format '" + name + "' is not ND, NCHW or NC1HWC0");
}

}  // namespace

void register_layer_norm_schema() {
  OpSchema s = norm("LayerNorm",
                    "Y = (X - mean) / sqrt(var + epsilon) * Scale + B over axes axis..-1 (ND), or over the "
                    "channels at each position (NCHW, NC1HWC0).",
                    1e-5f, true);
  s.Attr("data_format",
         "ND: over axes axis..rank-1. NCHW: over axis 1 of [N, C, ...], Scale and B [C]. NC1HWC0: over the "
         "`channels` real channels of [N, C1, H, W, C0], padding left 0.",
         AttributeProto::STRING, std::string("ND"));
  s.Attr("channels", "C, the real channels of an NC1HWC0 input.", AttributeProto::INT, false);
  onnx::RegisterSchema(std::move(s));
}

void add_layer_norm(OpRegistry& r) { add_device_op(r, "LayerNorm", layer_norm, /*half_via_f32=*/true); }

}  // namespace geopt::ascend
