#include "device_ops/device_ops.h"

#include <mutex>

#include "eval/kernel.h"
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
  });
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
    return r;
  }();
  return registry;
}

}  // namespace geopt::ascend
