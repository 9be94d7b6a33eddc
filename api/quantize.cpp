// geopt quantize as a library call: INT8 post-training quantization into ONNX's QDQ form.
#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "ascend/device_ops/device_ops.h"
#include "guard.h"
#include "json_text.h"
#include "model_handles.h"
#include "onnx/export.h"
#include "quantize/post_training_quantization.h"
#include "settings.h"
#include "text_format.h"
#include "util/error.h"

namespace geopt::api {
namespace {

std::string layer_counts(const std::vector<quantize::LayerReport>& layers, bool quantized) {
  std::map<std::string, size_t> by_op;
  for (const auto& l : layers)
    if (l.quantized == quantized) ++by_op[l.layer.op_type];
  std::string s;
  for (const auto& [op, n] : by_op) s += (s.empty() ? "" : ", ") + op + " " + std::to_string(n);
  return s;
}

nlohmann::ordered_json agreement_json(const quantize::Agreement& a) {
  return {{"cosine", a.cosine}, {"max_relative", a.max_relative}};
}

// "auto (per tensor: minmax 3, percentile 40)": what each activation's range came from.
std::string method_text(const quantize::QuantizeOptions& q,
                        const std::vector<quantize::LayerReport>& layers) {
  std::string s = quantize::calibration_method_name(q.method);
  if (q.method == quantize::CalibrationMethod::Auto) {
    std::map<std::string, std::set<std::string>> by_method;  // activations per chosen method
    for (const auto& l : layers)
      by_method[quantize::calibration_method_name(l.method)].insert(l.layer.activation);
    std::string counts;
    for (const auto& [m, a] : by_method)
      counts += (counts.empty() ? "" : ", ") + m + " " + std::to_string(a.size());
    s += " (per tensor: " + counts + ")";
  }
  return s;
}

struct BiasSummary {
  size_t corrected = 0, left = 0;
  double largest = 0;
  std::string first_reason;  // of the first layer left as it was
};

BiasSummary bias_summary(const std::vector<quantize::LayerReport>& layers) {
  BiasSummary b;
  for (const auto& l : layers) {
    if (!l.bias) continue;
    if (l.bias->applied) {
      ++b.corrected;
      b.largest = std::max(b.largest, l.bias->largest_shift);
    } else {
      if (b.left++ == 0) b.first_reason = l.layer.name + ": " + l.bias->not_applied_because;
    }
  }
  return b;
}

QuantizeResult quantize_model(const ModelSource& source, const QuantizeOptions& o) {
  const std::string model_name = source.name();
  quantize::QuantizeOptions q;
  q.method = quantize::parse_calibration_method(o.method);
  q.activation_type = quantize::parse_activation_type(o.activation_type);
  // The ranges the CLI's options check.
  if (!(o.percentile >= 50 && o.percentile <= 100))
    throw geopt::UsageError("--percentile " + std::to_string(o.percentile) + ": must be from 50 to 100");
  if (o.accuracy_target && !(*o.accuracy_target >= 0 && *o.accuracy_target <= 1))
    throw geopt::UsageError("--accuracy-target " + std::to_string(*o.accuracy_target) +
                            ": must be from 0 to 1");
  q.percentile = o.percentile;
  q.bias_correction = o.bias_correction;
  if (!(o.holdout >= 0 && o.holdout <= 0.5))
    throw geopt::UsageError("--holdout " + std::to_string(o.holdout) + ": must be from 0 to 0.5");
  q.holdout = o.holdout;
  q.skip_layers = o.skip_layers;
  q.quantize_image_convs = o.quantize_image_convs;
  q.sensitivity = o.sensitivity;
  q.accuracy_target = o.accuracy_target;
  const Model model = quantize::quantizable(import_model(source, import_options(o.input_shape)), model_name,
                                            ascend::op_registry());
  const auto samples = quantize::read_calibration_set(o.calibration, model, ascend::op_registry());
  quantize::QuantizeResult r = quantize::quantize_model(ascend::op_registry(), model, samples, q, o.progress);
  if (!o.output.empty()) export_onnx(r.model, o.output);

  size_t quantized = 0;
  for (const auto& l : r.layers) quantized += l.quantized;
  const char* activation_text =
      q.activation_type == quantize::ActivationType::U8 ? "uint8 (asymmetric)" : "int8 (symmetric)";
  const char* weight_text = "int8 per output channel (symmetric)";
  QuantizeResult result;
  {
    nlohmann::ordered_json j;
    j["model"] = model_name;
    j["output"] = o.output;
    j["calibration"] = {{"folder", o.calibration},
                        {"samples", r.samples},
                        {"held_out_samples", r.held_out_samples},
                        {"method", quantize::calibration_method_name(q.method)},
                        {"bias_correction", q.bias_correction}};
    if (q.method == quantize::CalibrationMethod::Percentile || q.method == quantize::CalibrationMethod::Auto)
      j["calibration"]["percentile"] = q.percentile;
    j["activations"] = activation_text;
    j["weights"] = weight_text;
    auto layers = nlohmann::ordered_json::array();
    for (const auto& l : r.layers) {
      nlohmann::ordered_json lj = {{"name", l.layer.name},
                                   {"op", l.layer.op_type},
                                   {"quantized", l.quantized},
                                   {"activation", l.layer.activation},
                                   {"range", {l.range.lo, l.range.hi}},
                                   {"method", quantize::calibration_method_name(l.method)},
                                   {"scale", l.activation.scale},
                                   {"zero_point", l.activation.zero_point}};
      if (l.alone) lj["alone"] = agreement_json(*l.alone);
      if (l.bias && l.bias->applied) lj["bias_shift"] = l.bias->largest_shift;
      if (l.bias && !l.bias->applied) lj["bias_not_corrected"] = l.bias->not_applied_because;
      if (!l.quantized) lj["kept_because"] = l.kept_because;
      layers.push_back(lj);
    }
    j["layers"] = layers;
    j["quantized"] = quantized;
    j["accuracy"] = agreement_json(r.agreement);
    if (r.held_out_agreement) j["accuracy"]["held_out"] = agreement_json(*r.held_out_agreement);
    if (q.accuracy_target) j["accuracy"]["target"] = *q.accuracy_target;
    j["evaluations"] = r.evaluations;
    result.report_json = json_text(j);
  }
  std::string& t = result.report_text;
  appendf(t, "model            %s\n", model_name.c_str());
  appendf(t, "calibration      %s: %zu sample(s)", o.calibration.c_str(), r.samples);
  if (r.held_out_samples) appendf(t, " and %zu held out", r.held_out_samples);
  appendf(t, ", %s", method_text(q, r.layers).c_str());
  if (q.method == quantize::CalibrationMethod::Percentile || q.method == quantize::CalibrationMethod::Auto)
    appendf(t, " (%g%%)", q.percentile);
  appendf(t, "\nquantization     activations %s, weights %s; QDQ form\n", activation_text, weight_text);
  if (q.bias_correction) {
    const BiasSummary b = bias_summary(r.layers);
    appendf(t, "bias correction  %zu layer(s) corrected, the largest shift %.3g", b.corrected, b.largest);
    if (b.left) appendf(t, "; %zu left as they were (%s)", b.left, b.first_reason.c_str());
    appendf(t, "\n");
  }
  const std::string kept = layer_counts(r.layers, false);
  appendf(t, "layers           %zu of %zu quantized (%s)%s%s\n", quantized, r.layers.size(),
          layer_counts(r.layers, true).c_str(), kept.empty() ? "" : "; kept in float: ", kept.c_str());
  const bool alone = q.sensitivity || q.accuracy_target;
  int width = 5;
  for (const auto& l : r.layers) width = std::max(width, static_cast<int>(l.layer.name.size()));
  appendf(t, "                 %-*s %-6s %-22s %-10s %-10s %-5s %s\n", width, "layer", "op",
          "activation range", "method", "scale", "zero", alone ? "alone: cosine" : "");
  for (const auto& l : r.layers) {
    std::string range;
    appendf(range, "[%.4g, %.4g]", static_cast<double>(l.range.lo), static_cast<double>(l.range.hi));
    std::string tail = l.alone ? std::to_string(l.alone->cosine).substr(0, 8) : "";
    if (!l.quantized) tail += (tail.empty() ? "" : "  ") + std::string("float: ") + l.kept_because;
    appendf(t, "                 %-*s %-6s %-22s %-10s %-10.4g %-5d %s\n", width, l.layer.name.c_str(),
            l.layer.op_type.c_str(), range.c_str(), quantize::calibration_method_name(l.method),
            static_cast<double>(l.activation.scale), l.activation.zero_point, tail.c_str());
  }
  // The target is judged where the choices were: on the held-out split when there is one.
  const quantize::Agreement& judged = r.held_out_agreement ? *r.held_out_agreement : r.agreement;
  const char* verdict = !q.accuracy_target                    ? ""
                        : judged.cosine >= *q.accuracy_target ? "; target met"
                                                              : "; target NOT met";
  appendf(t,
          "accuracy         outputs' cosine against float %.6f, max abs error %.3g of the output's scale "
          "(calibration samples)%s\n",
          r.agreement.cosine, r.agreement.max_relative, r.held_out_agreement ? "" : verdict);
  if (r.held_out_agreement)
    appendf(t,
            "                 %.6f, max abs error %.3g on the %zu held-out sample(s), which set no range%s\n",
            r.held_out_agreement->cosine, r.held_out_agreement->max_relative, r.held_out_samples, verdict);
  if (!o.output.empty()) appendf(t, "written          %s\n", o.output.c_str());
  auto impl = std::make_shared<OptimizedModel::Impl>();
  impl->model = std::move(r.model);
  result.model = OptimizedModel(std::move(impl));
  return result;
}

}  // namespace

QuantizeResult quantize(const ModelSource& model, const QuantizeOptions& options) {
  return guarded([&] { return quantize_model(model, options); });
}

}  // namespace geopt::api
