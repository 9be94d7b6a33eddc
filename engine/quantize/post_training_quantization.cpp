#include "quantize/post_training_quantization.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <set>

#include "eval/evaluator.h"
#include "onnx/opset_upgrade.h"
#include "passes/static_shapes.h"
#include "util/error.h"

namespace geopt::quantize {
namespace {

NamedTensors run_sample(const Evaluator& evaluator, const CalibrationSample& sample) {
  try {
    return evaluator.run(sample.inputs);
  } catch (const Error& e) {
    throw Error("calibration sample '" + sample.name + "': " + e.what());
  }
}

// The float model's outputs on every sample, and the calibrated ranges of `activations`.
struct Calibration {
  std::vector<NamedTensors> reference;  // per sample
  std::map<std::string, ValueRange> ranges;
};

Calibration calibrate(const OpRegistry& ops, const Model& model, const std::vector<std::string>& activations,
                      const std::vector<CalibrationSample>& samples, const QuantizeOptions& o,
                      const QuantizeProgress& progress) {
  // The activations become extra outputs of a copy of the model, read on each run.
  Model probe = model.clone();
  Graph& g = *probe.graph;
  const size_t model_outputs = g.outputs().size();
  std::set<std::string> outputs;
  for (const Value* v : g.outputs()) outputs.insert(v->name());
  for (const std::string& a : activations)
    if (outputs.insert(a).second) g.add_output(g.find_value(a));
  const Evaluator evaluator(probe, ops);
  std::map<std::string, ValueStats> stats;
  for (const std::string& a : activations) stats[a];
  auto for_each_activation = [&](const NamedTensors& out, auto&& f) {
    for (const auto& [name, t] : out)
      if (auto s = stats.find(name); s != stats.end() && t.dtype() == DType::F32) f(s->second, t);
  };
  Calibration c;
  for (size_t i = 0; i < samples.size(); ++i) {
    NamedTensors out = run_sample(evaluator, samples[i]);
    for_each_activation(
        out, [](ValueStats& s, const HostTensor& t) { s.add_extremes(t.data<float>(), t.size()); });
    out.resize(model_outputs);
    // A sample the float model computes NaN on (values near float's limit, 3e38, overflow
    // on the way) gives nothing to compare the quantized model with.
    for (const auto& [name, t] : out)
      if (is_float(t.dtype()))
        for (int64_t e = 0; e < t.size(); ++e)
          if (std::isnan(t.real_at(e)))
            throw Error("calibration sample '" + samples[i].name + "': the float model's output '" + name +
                        "' is NaN at element " + std::to_string(e) +
                        ": calibration samples must be inputs the model computes numbers for");
    c.reference.push_back(std::move(out));
    if (progress) progress("calibrating", i + 1, samples.size());
  }
  if (o.method != CalibrationMethod::MinMax)
    for (size_t i = 0; i < samples.size(); ++i) {
      const NamedTensors out = run_sample(evaluator, samples[i]);
      for_each_activation(
          out, [](ValueStats& s, const HostTensor& t) { s.add_to_histogram(t.data<float>(), t.size()); });
      if (progress) progress("histograms", i + 1, samples.size());
    }
  const bool symmetric = o.activation_type == ActivationType::I8;
  for (const std::string& a : activations) {
    const ValueStats& s = stats[a];
    // One side of 0 gets 127 steps in int8; non-negative values (after a ReLU) get all 255 in uint8.
    const int levels = !symmetric && s.extremes().lo >= 0 ? 255 : 128;
    const ValueRange r = s.range(o.method, o.percentile, symmetric, levels);
    // Its int8 step must be a float: a range of +-3e38 has a step of 2.4e36 in int8, but
    // one of width 6e38 has no float width at all.
    if (!(static_cast<double>(r.hi) - std::min(static_cast<double>(r.lo), 0.0) <=
          std::numeric_limits<float>::max()))
      throw Error("calibration: tensor '" + a + "' ranges over [" + std::to_string(r.lo) + ", " +
                  std::to_string(r.hi) +
                  "], wider than a float holds: the calibration samples reach values near float's limit");
    c.ranges[a] = r;
  }
  return c;
}

// How `candidate`'s outputs compare with the float model's over the calibration set.
Agreement agreement(const OpRegistry& ops, const Model& candidate,
                    const std::vector<CalibrationSample>& samples, const Calibration& c,
                    std::string_view stage, const QuantizeProgress& progress) {
  const Evaluator evaluator(candidate, ops);
  struct Sums {
    double dot = 0, got = 0, ref = 0, max_abs = 0, max_ref = 0;
  };
  std::vector<Sums> sums;
  for (size_t i = 0; i < samples.size(); ++i) {
    const NamedTensors out = run_sample(evaluator, samples[i]);
    const NamedTensors& ref = c.reference[i];
    if (out.size() < ref.size())
      throw InternalError("quantize: the candidate model has fewer outputs than the original");
    sums.resize(ref.size());
    for (size_t k = 0; k < ref.size(); ++k) {
      const HostTensor& a = out[k].second;
      const HostTensor& b = ref[k].second;
      if (!is_float(b.dtype()) || a.size() != b.size()) continue;
      Sums& s = sums[k];
      for (int64_t e = 0; e < b.size(); ++e) {
        const double x = a.real_at(e), y = b.real_at(e);
        s.dot += x * y;
        s.got += x * x;
        s.ref += y * y;
        s.max_abs = std::max(s.max_abs, std::fabs(x - y));
        s.max_ref = std::max(s.max_ref, std::fabs(y));
      }
    }
    if (progress) progress(stage, i + 1, samples.size());
  }
  Agreement r;
  for (const Sums& s : sums) {
    const double cosine = s.got == 0 && s.ref == 0   ? 1.0
                          : s.got == 0 || s.ref == 0 ? 0.0
                                                     : s.dot / std::sqrt(s.got * s.ref);
    r.cosine = std::min(r.cosine, std::isnan(cosine) ? 0.0 : cosine);
    r.max_relative = std::max(r.max_relative, s.max_ref > 0 ? s.max_abs / s.max_ref : s.max_abs);
  }
  return r;
}

}  // namespace

Model quantizable(Model model, const std::filesystem::path& where, const OpRegistry& ops) {
  if (model.opset_version("") >= kQuantizeOpset || model.opset_version("") == 0) return model;
  propagate_static_shapes(model, ops);
  return upgrade_opset(model, kQuantizeOpset, where);
}

namespace {

void check_options(const QuantizeOptions& o) {
  if (o.accuracy_target && !(*o.accuracy_target > 0 && *o.accuracy_target <= 1))
    throw Error("--accuracy-target " + std::to_string(*o.accuracy_target) +
                ": the outputs' cosine to reach, in (0, 1]");
  if (!(o.percentile > 0 && o.percentile <= 100))
    throw Error("--percentile " + std::to_string(o.percentile) + ": must be in (0, 100]");
}

// --skip-layers: each named layer (by its node or its output) stays in float; a name that
// is no quantizable layer is refused with the model's layers.
void keep_skipped_layers(const Model& model, const std::vector<std::string>& skip_layers,
                         std::vector<LayerReport>& layers) {
  for (const std::string& skip : skip_layers) {
    bool found = false;
    for (LayerReport& r : layers) {
      const Node& n = *model.graph->nodes()[r.layer.node_index];
      if (r.layer.name == skip || (n.output(0) && n.output(0)->name() == skip)) {
        r.quantized = false;
        r.kept_because = "--skip-layers";
        found = true;
      }
    }
    if (!found) {
      std::string names;
      for (size_t i = 0; i < layers.size() && i < 5; ++i) names += (i ? ", " : "") + layers[i].layer.name;
      throw Error(
          "--skip-layers '" + skip +
          "' names no quantizable layer (Conv, MatMul or Gemm with a constant weight); the model's are " +
          names + (layers.size() > 5 ? ", ... (" + std::to_string(layers.size()) + " in all)" : ""));
    }
  }
}

}  // namespace

QuantizeResult quantize_model(const OpRegistry& ops, const Model& model,
                              const std::vector<CalibrationSample>& samples, const QuantizeOptions& o,
                              const QuantizeProgress& progress) {
  if (samples.empty()) throw Error("quantize: the calibration set is empty");
  check_options(o);
  const std::vector<QuantizableLayer> layers = find_quantizable_layers(model);
  if (layers.empty())
    throw Error(model.opset_version("") < 10
                    ? "quantize: the model's opset " + std::to_string(model.opset_version("")) +
                          " predates QuantizeLinear (opset 10)"
                    : "quantize: the model has no Conv, MatMul or Gemm with a constant float weight and a "
                      "float input");
  QuantizeResult result;
  result.samples = samples.size();
  for (const QuantizableLayer& l : layers)
    result.layers.push_back(LayerReport{l, true, {}, std::nullopt, {}, {}});

  keep_skipped_layers(model, o.skip_layers, result.layers);

  std::vector<std::string> activations;  // each once, in graph order
  std::set<std::string> listed;
  for (const QuantizableLayer& l : layers)
    if (listed.insert(l.activation).second) activations.push_back(l.activation);
  const Calibration c = calibrate(ops, model, activations, samples, o, progress);
  for (LayerReport& r : result.layers) {
    r.range = c.ranges.at(r.layer.activation);
    r.activation = activation_quant(r.range, o.activation_type);
  }

  auto quantized_model = [&](const std::vector<const LayerReport*>& chosen) {
    std::vector<QuantizableLayer> ls;
    for (const LayerReport* r : chosen) ls.push_back(r->layer);
    return write_qdq(model, ls, c.ranges, o.activation_type);
  };
  std::vector<LayerReport*> candidates;
  for (LayerReport& r : result.layers)
    if (r.quantized) candidates.push_back(&r);

  if (o.sensitivity || o.accuracy_target) {
    for (LayerReport* r : candidates) {
      r->alone = agreement(ops, quantized_model({r}), samples, c, "sensitivity " + r->layer.name, progress);
      ++result.evaluations;
    }
  }

  std::optional<Agreement> final_agreement;
  if (o.accuracy_target && !candidates.empty()) {
    // The most sensitive first: keeping the first k in float, the cosine grows with k.
    std::vector<LayerReport*> order = candidates;
    std::stable_sort(order.begin(), order.end(), [](const LayerReport* a, const LayerReport* b) {
      return a->alone->cosine < b->alone->cosine;
    });
    auto with_first_kept = [&](size_t k) {
      std::vector<const LayerReport*> chosen(order.begin() + static_cast<std::ptrdiff_t>(k), order.end());
      ++result.evaluations;
      return agreement(ops, quantized_model(chosen), samples, c, "accuracy", progress);
    };
    std::map<size_t, Agreement> tried;
    tried[0] = with_first_kept(0);
    size_t keep = 0;
    if (tried[0].cosine < *o.accuracy_target) {
      // The smallest k that reaches the target, by bisection (k = all layers is the float model).
      size_t lo = 1, hi = order.size();
      while (lo < hi) {
        const size_t mid = lo + (hi - lo) / 2;
        tried[mid] = with_first_kept(mid);
        if (tried[mid].cosine >= *o.accuracy_target)
          hi = mid;
        else
          lo = mid + 1;
      }
      keep = lo;
    }
    for (size_t i = 0; i < keep; ++i) {
      LayerReport& r = *order[i];
      r.quantized = false;
      char why[160];
      std::snprintf(
          why, sizeof why,
          "--accuracy-target %g: quantized alone the outputs' cosine is %.6f, %zu of %zu by sensitivity",
          *o.accuracy_target, r.alone->cosine, i + 1, order.size());
      r.kept_because = why;
    }
    if (tried.count(keep)) final_agreement = tried[keep];
  }

  std::vector<const LayerReport*> chosen;
  for (const LayerReport& r : result.layers)
    if (r.quantized) chosen.push_back(&r);
  result.model = quantized_model(chosen);
  if (final_agreement) {
    result.agreement = *final_agreement;
  } else {
    result.agreement = agreement(ops, result.model, samples, c, "accuracy", progress);
    ++result.evaluations;
  }
  return result;
}

}  // namespace geopt::quantize
