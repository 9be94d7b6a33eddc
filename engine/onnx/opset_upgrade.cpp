#include "onnx/opset_upgrade.h"

#include <onnx/version_converter/convert.h>
#include <spdlog/spdlog.h>

#include "onnx/export.h"
#include "onnx/import.h"
#include "onnx/validate.h"
#include "util/error.h"

namespace geopt {

Model upgrade_opset(const Model& model, int64_t target, const std::filesystem::path& where) {
  const int64_t from = model.opset_version("");
  if (from == 0 || from >= target) return model.clone();
  onnx::ModelProto proto = model_to_proto(model);
  onnx_io::run_shape_inference(proto, where);
  onnx::ModelProto converted;
  try {
    converted = onnx::version_conversion::ConvertVersion(proto, static_cast<int>(target));
  } catch (const std::exception& e) {
    throw Error(where.string() + ": cannot convert the model from opset " + std::to_string(from) + " to " +
                std::to_string(target) + " (ONNX's version converter: " + e.what() + ")");
  }
  spdlog::info("{}: converted from opset {} to {}", where.string(), from, target);
  return import_onnx_proto(std::move(converted), where);
}

}  // namespace geopt
