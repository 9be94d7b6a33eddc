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

// What calibration decided, per activation: its range and the method that chose it,
// and, for bias correction, its per-channel means (float and through its Q/DQ pair).
struct Calibration {
  std::vector<NamedTensors> reference;  // the float model's outputs, per calibration sample
  std::map<std::string, ValueRange> ranges;
  std::map<std::string, CalibrationMethod> methods;
  std::map<std::string, ChannelMeans> means;  // by channel_means_key
};

// A copy of the model whose outputs also give `activations`, read on each run.
Model probe_model(const Model& model, const std::vector<std::string>& activations) {
  Model probe = model.clone();
  Graph& g = *probe.graph;
  std::set<std::string> outputs;
  for (const Value* v : g.outputs()) outputs.insert(v->name());
  for (const std::string& a : activations)
    if (outputs.insert(a).second) g.add_output(g.find_value(a));
  return probe;
}

// A sample the float model computes NaN on (values near float's limit, 3e38, overflow
// on the way) gives nothing to compare the quantized model with.
void check_reference(const NamedTensors& out, const CalibrationSample& sample) {
  for (const auto& [name, t] : out)
    if (is_float(t.dtype()))
      for (int64_t e = 0; e < t.size(); ++e)
        if (std::isnan(t.real_at(e)))
          throw Error("calibration sample '" + sample.name + "': the float model's output '" + name +
                      "' is NaN at element " + std::to_string(e) +
                      ": calibration samples must be inputs the model computes numbers for");
}

// The float model's outputs on each of `samples`.
std::vector<NamedTensors> reference_outputs(const OpRegistry& ops, const Model& model,
                                            const std::vector<CalibrationSample>& samples,
                                            const QuantizeProgress& progress) {
  const Evaluator evaluator(model, ops);
  std::vector<NamedTensors> outputs;
  for (size_t i = 0; i < samples.size(); ++i) {
    outputs.push_back(run_sample(evaluator, samples[i]));
    check_reference(outputs.back(), samples[i]);
    if (progress) progress("held-out float outputs", i + 1, samples.size());
  }
  return outputs;
}

// Up to three passes over the samples: the extremes (and the float outputs), the
// histograms (methods other than min-max), the per-channel means (bias correction).
Calibration calibrate(const OpRegistry& ops, const Model& model, const std::vector<QuantizableLayer>& layers,
                      const std::vector<CalibrationSample>& samples, const QuantizeOptions& o,
                      const QuantizeProgress& progress) {
  std::vector<std::string> activations;  // each once, in graph order
  for (const QuantizableLayer& l : layers)
    if (std::find(activations.begin(), activations.end(), l.activation) == activations.end())
      activations.push_back(l.activation);
  const size_t model_outputs = model.graph->outputs().size();
  const Model probe = probe_model(model, activations);  // the evaluator keeps a reference
  const Evaluator evaluator(probe, ops);
  std::map<std::string, ValueStats> stats;
  for (const std::string& a : activations) stats[a];
  // One pass: f(activation name, its tensor) for each sample's float activations.
  auto pass = [&](std::string_view stage, auto&& f, auto&& with_outputs) {
    for (size_t i = 0; i < samples.size(); ++i) {
      NamedTensors out = run_sample(evaluator, samples[i]);
      for (const auto& [name, t] : out)
        if (stats.count(name) && t.dtype() == DType::F32) f(name, t);
      out.resize(model_outputs);
      with_outputs(samples[i], std::move(out));
      if (progress) progress(stage, i + 1, samples.size());
    }
  };
  auto ignore_outputs = [](const CalibrationSample&, NamedTensors&&) {};
  Calibration c;
  pass(
      "calibrating",
      [&](const std::string& name, const HostTensor& t) {
        stats[name].add_extremes(t.data<float>(), t.size());
      },
      [&](const CalibrationSample& sample, NamedTensors&& out) {
        check_reference(out, sample);
        c.reference.push_back(std::move(out));
      });
  if (o.method != CalibrationMethod::MinMax)
    pass(
        "histograms",
        [&](const std::string& name, const HostTensor& t) {
          stats[name].add_to_histogram(t.data<float>(), t.size());
        },
        ignore_outputs);
  const bool symmetric = o.activation_type == ActivationType::I8;
  for (const std::string& a : activations) {
    const ValueStats& s = stats[a];
    // One side of 0 gets 127 steps in int8; non-negative values (after a ReLU) get all 255 in uint8.
    const int levels = !symmetric && s.extremes().lo >= 0 ? 255 : 128;
    // Auto's search (three ranges, entropy's over every bin count) runs once.
    const CalibrationMethod method = s.has_values()
                                         ? s.chosen_method(o.method, o.percentile, symmetric, levels)
                                         : CalibrationMethod::MinMax;
    const ValueRange r = s.range(method, o.percentile, symmetric, levels);
    // Its int8 step must be a float: a range of +-3e38 has a step of 2.4e36 in int8, but
    // one of width 6e38 has no float width at all.
    if (!(static_cast<double>(r.hi) - std::min(static_cast<double>(r.lo), 0.0) <=
          std::numeric_limits<float>::max()))
      throw Error("calibration: tensor '" + a + "' ranges over [" + std::to_string(r.lo) + ", " +
                  std::to_string(r.hi) +
                  "], wider than a float holds: the calibration samples reach values near float's limit");
    c.ranges[a] = r;
    c.methods[a] = method;
  }
  if (o.bias_correction) {
    std::multimap<std::string, ChannelMeans*> by_activation;
    for (const QuantizableLayer& l : layers) {
      const int64_t axis = activation_channel_axis(model, l);
      auto [m, fresh] =
          c.means.try_emplace(channel_means_key(l.activation, axis), axis,
                              activation_quant(c.ranges[l.activation], o.activation_type), o.activation_type);
      if (fresh) by_activation.emplace(l.activation, &m->second);
    }
    pass(
        "channel means",
        [&](const std::string& name, const HostTensor& t) {
          for (auto [m, end] = by_activation.equal_range(name); m != end; ++m) m->second->add(t);
        },
        ignore_outputs);
  }
  return c;
}

// How `candidate`'s outputs compare with the float model's (`reference`, per sample).
Agreement agreement(const OpRegistry& ops, const Model& candidate,
                    const std::vector<CalibrationSample>& samples, const std::vector<NamedTensors>& reference,
                    std::string_view stage, const QuantizeProgress& progress) {
  const Evaluator evaluator(candidate, ops);
  struct Sums {
    double dot = 0, got = 0, ref = 0, max_abs = 0, max_ref = 0;
  };
  std::vector<Sums> sums;
  for (size_t i = 0; i < samples.size(); ++i) {
    const NamedTensors out = run_sample(evaluator, samples[i]);
    const NamedTensors& ref = reference[i];
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
  if (!(o.holdout >= 0 && o.holdout <= 0.5))
    throw Error("--holdout " + std::to_string(o.holdout) + ": the share of samples held out, from 0 to 0.5");
}

// The held-out split: round(holdout x n) samples, at least one, spread evenly over the
// folder's order; the others calibrate.
void split_samples(const std::vector<CalibrationSample>& samples, double holdout,
                   std::vector<CalibrationSample>& calibrating, std::vector<CalibrationSample>& held_out) {
  const size_t n = samples.size();
  size_t held = holdout > 0
                    ? std::max<size_t>(1, static_cast<size_t>(std::lround(holdout * static_cast<double>(n))))
                    : 0;
  if (held > 0 && n < 2)
    throw Error("--holdout " + std::to_string(holdout) + ": the calibration set has " + std::to_string(n) +
                " sample; holding one out needs at least 2");
  held = std::min(held, n - 1);
  std::set<size_t> held_indices;
  for (size_t j = 0; j < held; ++j)
    held_indices.insert(static_cast<size_t>((static_cast<double>(j) + 0.5) * static_cast<double>(n) /
                                            static_cast<double>(held)));
  for (size_t i = 0; i < n; ++i) (held_indices.count(i) ? held_out : calibrating).push_back(samples[i]);
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

// A Conv reading a model input of at most 4 channels (QuantizeOptions::quantize_image_convs).
bool reads_input_image(const Model& model, const QuantizableLayer& l) {
  if (l.kind != LayerKind::Conv) return false;
  const Graph& g = *model.graph;
  const Node& n = *g.nodes()[l.node_index];
  const auto& inputs = g.inputs();
  if (std::find(inputs.begin(), inputs.end(), n.input(0)) == inputs.end()) return false;
  const Tensor* w = g.constant_value(n.input(1));  // a constant: find_quantizable_layers saw to it
  const Attribute* group = n.attr("group");
  return w && w->dims.size() >= 2 && w->dims[1] * (group ? group->i : 1) <= 4;
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
  std::vector<CalibrationSample> calibrating, held_out;
  split_samples(samples, o.holdout, calibrating, held_out);
  QuantizeResult result;
  result.samples = calibrating.size();
  result.held_out_samples = held_out.size();
  for (const QuantizableLayer& l : layers)
    result.layers.push_back(LayerReport{l, true, {}, std::nullopt, {}, {}, {}, {}});

  keep_skipped_layers(model, o.skip_layers, result.layers);
  if (!o.quantize_image_convs) {
    size_t image_convs = 0;
    for (LayerReport& r : result.layers)
      if (r.quantized && reads_input_image(model, r.layer)) {
        r.quantized = false;
        r.kept_because = "reads the input image (--quantize-image-convs to quantize it)";
        ++image_convs;
      }
    // A model that would come out all float by this default alone is refused, not written.
    if (image_convs > 0 && std::none_of(result.layers.begin(), result.layers.end(),
                                        [](const LayerReport& r) { return r.quantized; }))
      throw Error(
          "quantize: every quantizable layer is a conv reading the input image (at most 4 channels), "
          "kept in float by default; --quantize-image-convs quantizes it");
  }

  const Calibration c = calibrate(ops, model, layers, calibrating, o, progress);
  for (LayerReport& r : result.layers) {
    r.range = c.ranges.at(r.layer.activation);
    r.method = c.methods.at(r.layer.activation);
    r.activation = activation_quant(r.range, o.activation_type);
  }
  // Choices (sensitivity, the accuracy target) are judged on the held-out split when there is one.
  const std::vector<NamedTensors> held_out_reference =
      held_out.empty() ? std::vector<NamedTensors>{} : reference_outputs(ops, model, held_out, progress);
  const std::vector<CalibrationSample>& judging = held_out.empty() ? calibrating : held_out;
  const std::vector<NamedTensors>& judging_reference = held_out.empty() ? c.reference : held_out_reference;
  auto judge = [&](const Model& candidate, std::string_view stage) {
    ++result.evaluations;
    return agreement(ops, candidate, judging, judging_reference, stage, progress);
  };

  auto quantized_model = [&](const std::vector<const LayerReport*>& chosen,
                             std::vector<BiasCorrection>* biases = nullptr) {
    std::vector<QuantizableLayer> ls;
    for (const LayerReport* r : chosen) ls.push_back(r->layer);
    if (!o.bias_correction) return write_qdq(model, ls, c.ranges, o.activation_type);
    return write_qdq(correct_biases(model, ls, c.means, biases), ls, c.ranges, o.activation_type);
  };
  std::vector<LayerReport*> candidates;
  for (LayerReport& r : result.layers)
    if (r.quantized) candidates.push_back(&r);

  if (o.sensitivity || o.accuracy_target)
    for (LayerReport* r : candidates) r->alone = judge(quantized_model({r}), "sensitivity " + r->layer.name);

  std::optional<Agreement> final_agreement;
  if (o.accuracy_target && !candidates.empty()) {
    // The most sensitive first: keeping the first k in float, the cosine grows with k.
    std::vector<LayerReport*> order = candidates;
    std::stable_sort(order.begin(), order.end(), [](const LayerReport* a, const LayerReport* b) {
      return a->alone->cosine < b->alone->cosine;
    });
    auto with_first_kept = [&](size_t k) {
      std::vector<const LayerReport*> chosen(order.begin() + static_cast<std::ptrdiff_t>(k), order.end());
      return judge(quantized_model(chosen), "accuracy");
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
      char why[200];
      std::snprintf(
          why, sizeof why,
          "--accuracy-target %g: quantized alone the outputs' cosine is %.6f%s, %zu of %zu by sensitivity",
          *o.accuracy_target, r.alone->cosine, held_out.empty() ? "" : " (held out)", i + 1, order.size());
      r.kept_because = why;
    }
    if (tried.count(keep)) final_agreement = tried[keep];
  }

  std::vector<const LayerReport*> chosen;
  for (const LayerReport& r : result.layers)
    if (r.quantized) chosen.push_back(&r);
  std::vector<BiasCorrection> biases;
  result.model = quantized_model(chosen, &biases);
  for (BiasCorrection& b : biases)
    for (LayerReport& r : result.layers)
      if (r.quantized && r.layer.node_index == b.node_index) r.bias = b;
  if (held_out.empty()) {
    result.agreement = final_agreement ? *final_agreement : judge(result.model, "accuracy");
  } else {
    result.held_out_agreement = final_agreement ? *final_agreement : judge(result.model, "held-out accuracy");
    ++result.evaluations;
    result.agreement = agreement(ops, result.model, calibrating, c.reference, "accuracy", progress);
  }
  return result;
}

}  // namespace geopt::quantize
