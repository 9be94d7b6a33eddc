#include "device_ops/device_ops.h"

#include <map>
#include <mutex>
#include <string>

#include "eval/kernel.h"
#include "ir/domain.h"
#include "onnx/validate.h"

namespace geopt::ascend {

void register_op_schemas() {
  static std::once_flag once;
  std::call_once(once, [] {
    onnx_io::register_geopt_schemas();  // the ai.geopt domain's version range, engine's ops
    register_trans_data_schema();
    register_fused_conv_schema();
    register_fused_matmul_schema();
    register_layer_norm_schema();
    register_channel_ops_schemas();
    register_fused_quant_conv_schema();
    register_ascend_quant_schema();
  });
}

std::optional<Format> written_format(const Node& n) {
  if (n.domain != kGeoptDomain) return std::nullopt;
  // Per op, the attribute naming its output's format (null: it always writes `format`),
  // and that attribute's default.
  struct Written {
    const char* attribute;
    Format format;
  };
  static const std::map<std::string, Written, std::less<>> kWritten = {
      {"TransData", {"dst_format", Format::ND}},      {"FusedConv", {"data_format", Format::NCHW}},
      {"LayerNorm", {"data_format", Format::ND}},     {"ChannelMove", {nullptr, Format::NC1HWC0}},
      {"FusedQuantConv", {nullptr, Format::NC1HWC0}}, {"AscendQuant", {nullptr, Format::NC1HWC0}},
  };
  auto it = kWritten.find(n.op_type);
  if (it == kWritten.end()) return std::nullopt;
  const Attribute* a = it->second.attribute ? n.attr(it->second.attribute) : nullptr;
  return a ? parse_format(a->s) : std::optional<Format>(it->second.format);
}

void add_device_op(OpRegistry& r, std::string_view op, KernelFn fn, bool half_via_f32, OpTraits traits) {
  traits.per_sample = true;
  r.add(kGeoptDomain, op, std::move(fn), half_via_f32);
  r.set_traits(kGeoptDomain, op, traits);
}

const OpRegistry& op_registry() {
  static const OpRegistry registry = [] {
    register_op_schemas();
    OpRegistry r;
    register_standard_ops(r);
    add_trans_data(r);
    add_fused_conv(r);
    add_fused_matmul(r);
    add_layer_norm(r);
    add_channel_ops(r);
    add_fused_quant_conv(r);
    add_ascend_quant(r);
    return r;
  }();
  return registry;
}

}  // namespace geopt::ascend
