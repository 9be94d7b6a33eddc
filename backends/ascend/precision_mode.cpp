#include "ascend/precision_mode.h"
#include "device_ops/device_ops.h"

#include <onnx/defs/schema.h>
#include <algorithm>
#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "eval/numerical_check.h"
#include "ir/node.h"
#include "onnx/validate.h"
#include "util/error.h"
#include "util/input_file.h"

namespace geopt::ascend {

namespace {

const std::set<std::string, std::less<>>& cube_ops() {
  static const std::set<std::string, std::less<>> ops = {
      "Conv",      "ConvTranspose", "MatMul",         "Gemm",
      "Einsum",  // ONNX's products
      "FusedConv", "FusedMatMul",   "FlashAttention", "FlashAttentionLayerNorm",
      "SwiGLU",    "QuantConv",     "QuantMatMul"};  // int8 products, float outputs
  return ops;
}

// An op type some schema knows, in ONNX's domain or geopt's.
bool known_op(const std::string& op) {
  register_op_schemas();
  return onnx::OpSchemaRegistry::Schema(op, INT_MAX, "") ||
         onnx::OpSchemaRegistry::Schema(op, INT_MAX, std::string(kGeoptDomain));
}

}  // namespace

MixClass MixList::classify(std::string_view op_type) const {
  const std::string op(op_type);
  if (black.count(op)) return MixClass::Black;
  if (white.count(op)) return MixClass::White;
  return MixClass::Gray;
}

bool is_cube_op(std::string_view op_type) { return cube_ops().count(op_type) > 0; }

const MixList& default_mix_list() {
  static const MixList list = [] {
    MixList l;
    for (const auto& op : cube_ops()) l.white.insert(op);
    l.white.insert({"MaxPool", "AveragePool"});
    // Precision-sensitive: statistics and normalizations, exponentials and logarithms,
    // reductions and running sums (their sums outgrow fp16's 11 bits), and ops whose
    // arguments are large (positions, angles).
    l.black = {"Softmax",
               "LogSoftmax",
               "LayerNormalization",
               "LayerNorm",
               "AddLayerNorm",
               "RMSNorm",
               "GroupNormalization",
               "InstanceNormalization",
               "LpNormalization",
               "MeanVarianceNormalization",
               "Exp",
               "Log",
               "Pow",
               "Softplus",
               "ReduceSum",
               "ReduceMean",
               "ReduceProd",
               "ReduceL1",
               "ReduceL2",
               "ReduceLogSum",
               "ReduceLogSumExp",
               "ReduceSumSquare",
               "GlobalAveragePool",
               "GlobalLpPool",
               "LpPool",
               "CumSum",
               "Range",
               "Sin",
               "Cos",
               "Tan",
               "LSTM",
               "GRU",
               "RNN"};
    return l;
  }();
  return list;
}

MixList load_mix_list(const std::string& path, const MixList& base) {
  const std::string body = read_regular_file(path, kOptionFileCap, "the --modify_mixlist file");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(body);
  } catch (const nlohmann::json::out_of_range& e) {  // a number past double's range (1e999999)
    throw Error(path + ": not usable JSON: " + e.what());
  } catch (const nlohmann::json::parse_error& e) {
    // nlohmann reports a byte offset: turn it into line:col.
    size_t line = 1, col = 1;
    for (size_t i = 0; i + 1 < e.byte && i < body.size(); ++i) {
      if (body[i] == '\n')
        ++line, col = 1;
      else
        ++col;
    }
    throw Error(path + ":" + std::to_string(line) + ":" + std::to_string(col) + ": not JSON: " + e.what());
  }
  if (!j.is_object())
    throw Error(path + ": expected an object of \"black-list\", \"white-list\" and \"gray-list\"");
  MixList out = base;
  auto list_named = [&](const std::string& name) -> std::set<std::string>* {
    if (name == "white-list") return &out.white;
    if (name == "black-list") return &out.black;
    if (name == "gray-list") return &out.gray;
    return nullptr;
  };
  for (const auto& [name, change] : j.items()) {
    std::set<std::string>* list = list_named(name);
    if (!list)
      throw Error(path + ": unknown list \"" + name + "\" (expected black-list, white-list or gray-list)");
    if (!change.is_object())
      throw Error(path + ": \"" + name + "\" must be an object with \"to-add\" and/or \"to-remove\"");
    for (const auto& [action, ops] : change.items()) {
      if (action != "to-add" && action != "to-remove")
        throw Error(path + ": \"" + name + "\": unknown key \"" + action +
                    "\" (expected to-add or to-remove)");
      if (!ops.is_array())
        throw Error(path + ": \"" + name + "\".\"" + action + "\" must be an array of op types");
      for (const auto& op : ops) {
        if (!op.is_string())
          throw Error(path + ": \"" + name + "\".\"" + action + "\": " + op.dump() + " is not an op type");
        const std::string type = op.get<std::string>();
        if (!known_op(type))
          throw Error(path + ": \"" + name + "\".\"" + action + "\": no ONNX or ai.geopt op is called \"" +
                      type + "\"");
        if (action == "to-add") {
          out.white.erase(type);
          out.black.erase(type);
          out.gray.erase(type);
          list->insert(type);
        } else {
          list->erase(type);
        }
      }
    }
  }
  return out;
}

DType Precision::low() const {
  return mode == PrecisionMode::AllowFp32ToBf16 || mode == PrecisionMode::AllowMixPrecisionBf16 ? DType::BF16
                                                                                                : DType::F16;
}

DType Precision::planned(std::string_view op_type, DType origin) const {
  if (applied || !is_float(origin) || origin == DType::F64) return origin;
  switch (mode) {
    case PrecisionMode::MustKeepOriginDtype:
      return origin;
    case PrecisionMode::ForceFp16:
      return DType::F16;
    case PrecisionMode::ForceFp32:
      return is_cube_op(op_type) ? DType::F16 : DType::F32;
    case PrecisionMode::AllowFp32ToFp16:
    case PrecisionMode::AllowFp32ToBf16:
      return is_cube_op(op_type) ? low() : origin;
    case PrecisionMode::AllowMixPrecision:
    case PrecisionMode::AllowMixPrecisionBf16:
      return list().classify(op_type) == MixClass::Black ? DType::F32 : low();
  }
  return origin;
}

Tolerance Precision::check_tolerance(bool computed, const ModelPrecision& model) const {
  return tolerance_for(model, computed ? tolerance() : Tolerance{});
}

Tolerance Precision::tolerance() const {
  // fp16 keeps 11 significant bits (unit roundoff 4.9e-4) and bf16 8 (3.9e-3); a
  // model's outputs carry the rounding of every layer, a few tens of units.
  switch (mode) {
    case PrecisionMode::MustKeepOriginDtype:
      return {};
    case PrecisionMode::AllowFp32ToBf16:
    case PrecisionMode::AllowMixPrecisionBf16:
      return {0.25, 0.25};
    default:
      return {0.05, 0.05};
  }
}

std::string Precision::name() const { return precision_mode_name(mode); }

const std::map<std::string, PrecisionMode>& precision_mode_names() {
  static const std::map<std::string, PrecisionMode> names = {
      {"must_keep_origin_dtype", PrecisionMode::MustKeepOriginDtype},
      {"force_fp16", PrecisionMode::ForceFp16},
      {"force_fp32", PrecisionMode::ForceFp32},
      {"cube_fp16in_fp32out", PrecisionMode::ForceFp32},
      {"allow_fp32_to_fp16", PrecisionMode::AllowFp32ToFp16},
      {"allow_fp32_to_bf16", PrecisionMode::AllowFp32ToBf16},
      {"allow_mix_precision", PrecisionMode::AllowMixPrecision},
      {"allow_mix_precision_fp16", PrecisionMode::AllowMixPrecision},
      {"allow_mix_precision_bf16", PrecisionMode::AllowMixPrecisionBf16},
  };
  return names;
}

PrecisionMode parse_precision_mode(std::string_view name) {
  auto it = precision_mode_names().find(std::string(name));
  if (it != precision_mode_names().end()) return it->second;
  std::string known;
  for (const auto& [n, m] : precision_mode_names()) known += (known.empty() ? "" : ", ") + n;
  throw UsageError("unknown --precision_mode '" + std::string(name) + "' (known: " + known + ")");
}

std::string precision_mode_name(PrecisionMode mode) {
  switch (mode) {
    case PrecisionMode::MustKeepOriginDtype:
      return "must_keep_origin_dtype";
    case PrecisionMode::ForceFp16:
      return "force_fp16";
    case PrecisionMode::ForceFp32:
      return "force_fp32";
    case PrecisionMode::AllowFp32ToFp16:
      return "allow_fp32_to_fp16";
    case PrecisionMode::AllowFp32ToBf16:
      return "allow_fp32_to_bf16";
    case PrecisionMode::AllowMixPrecision:
      return "allow_mix_precision";
    case PrecisionMode::AllowMixPrecisionBf16:
      return "allow_mix_precision_bf16";
  }
  return "?";
}

}  // namespace geopt::ascend
