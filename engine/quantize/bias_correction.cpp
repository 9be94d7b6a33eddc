#include "quantize/bias_correction.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "util/error.h"

namespace geopt::quantize {
namespace {

int64_t int_attr(const Node& n, std::string_view name, int64_t fallback) {
  const Attribute* a = n.attr(name);
  return a ? a->i : fallback;
}

float float_attr(const Node& n, std::string_view name, float fallback) {
  const Attribute* a = n.attr(name);
  return a ? a->f : fallback;
}

// The activation value as its QuantizeLinear/DequantizeLinear pair gives it back.
double fake_quantized(float x, LinearQuant q, ActivationType type) {
  const double lo = type == ActivationType::U8 ? 0 : -128, hi = type == ActivationType::U8 ? 255 : 127;
  const float r = std::nearbyint(x / q.scale);  // QuantizeLinear: divide in float, round half to even
  const double level = std::clamp(static_cast<double>(r) + q.zero_point, lo, hi);
  return (level - q.zero_point) * static_cast<double>(q.scale);
}

// A weight seen as output channel o, input channel i (within its group) and tap k: the
// element at o * out_stride + i * in_stride + k (taps are contiguous).
struct WeightLayout {
  int64_t outputs = 0, inputs_per_group = 0, taps = 1, groups = 1;
  int64_t out_stride = 0, in_stride = 0;
  size_t index(int64_t o, int64_t i, int64_t k) const {
    return static_cast<size_t>(o * out_stride + i * in_stride + k);
  }
};

// The shift of each output channel's mean given the activation's per-channel means.
std::vector<double> mean_shift(const Tensor& weight, const Int8Weight& quantized, const WeightLayout& l,
                               const std::vector<double>& float_mean,
                               const std::vector<double>& quantized_mean) {
  const std::vector<float> w = weight.to_vector<float>();
  std::vector<double> shift(static_cast<size_t>(l.outputs), 0.0);
  const int64_t outputs_per_group = l.outputs / l.groups;
  for (int64_t o = 0; o < l.outputs; ++o) {
    const int64_t first_input = o / outputs_per_group * l.inputs_per_group;
    double s = 0;
    for (int64_t i = 0; i < l.inputs_per_group; ++i) {
      const double mx = float_mean[static_cast<size_t>(first_input + i)];
      const double mq = quantized_mean[static_cast<size_t>(first_input + i)];
      for (int64_t k = 0; k < l.taps; ++k) {
        const size_t at = l.index(o, i, k);
        s += static_cast<double>(w[at]) * mx - static_cast<double>(quantized.dequantized(at)) * mq;
      }
    }
    shift[static_cast<size_t>(o)] = s;
  }
  return shift;
}

// Where a layer's bias lives, and the node input that takes the corrected one.
struct BiasSlot {
  Node* node = nullptr;
  size_t input = 0;
  const Tensor* current = nullptr;  // null: there is none yet
  double divide_by = 1;             // Gemm's beta
};

std::string shape_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// A bias tensor that adds one value per output channel: [N], or [1, N] for Gemm.
bool per_channel_bias(const Tensor& t, int64_t outputs) {
  if (t.dtype != DType::F32) return false;
  if (t.dims.size() == 1) return t.dims[0] == outputs;
  return t.dims.size() == 2 && t.dims[0] == 1 && t.dims[1] == outputs;
}

}  // namespace

int64_t activation_channel_axis(const Model& model, const QuantizableLayer& layer) {
  const Node& n = *model.graph->nodes().at(layer.node_index);
  switch (layer.kind) {
    case LayerKind::Conv:
      return 1;
    case LayerKind::Gemm:
      return int_attr(n, "transA", 0) ? 0 : 1;
    case LayerKind::MatMul:
      break;
  }
  return -1;  // the last axis
}

std::string channel_means_key(const std::string& activation, int64_t axis) {
  return activation + "@" + std::to_string(axis);
}

void ChannelMeans::add(const HostTensor& t) {
  if (t.dtype() != DType::F32 || t.rank() == 0) {
    consistent_ = false;
    return;
  }
  const int64_t rank = static_cast<int64_t>(t.rank());
  const int64_t axis = axis_ < 0 ? axis_ + rank : axis_;
  if (axis < 0 || axis >= rank) {
    consistent_ = false;
    return;
  }
  const int64_t channels = t.dims()[static_cast<size_t>(axis)];
  int64_t inner = 1;
  for (int64_t a = axis + 1; a < rank; ++a) inner *= t.dims()[static_cast<size_t>(a)];
  if (float_sums_.empty() && per_channel_ == 0) {
    float_sums_.assign(static_cast<size_t>(channels), 0.0);
    quantized_sums_.assign(static_cast<size_t>(channels), 0.0);
  } else if (static_cast<int64_t>(float_sums_.size()) != channels) {
    consistent_ = false;
    return;
  }
  const float* v = t.data<float>();
  for (int64_t e = 0; e < t.size(); ++e) {
    const size_t c = static_cast<size_t>(e / inner % channels);
    // A non-finite value would poison the mean; the range already ignores it.
    if (!std::isfinite(v[e])) continue;
    float_sums_[c] += v[e];
    quantized_sums_[c] += fake_quantized(v[e], q_, type_);
  }
  per_channel_ += channels > 0 ? static_cast<double>(t.size() / channels) : 0;
}

std::vector<double> ChannelMeans::means(const std::vector<double>& sums) const {
  if (!consistent_ || per_channel_ == 0) return {};
  std::vector<double> m(sums.size());
  for (size_t c = 0; c < sums.size(); ++c) m[c] = sums[c] / per_channel_;
  return m;
}

Model correct_biases(const Model& model, const std::vector<QuantizableLayer>& layers,
                     const std::map<std::string, ChannelMeans>& means, std::vector<BiasCorrection>* report) {
  Model out = model.clone();
  Graph& g = *out.graph;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (const QuantizableLayer& layer : layers) {
    BiasCorrection r;
    r.node_index = layer.node_index;
    auto skip = [&](std::string why) {
      r.not_applied_because = std::move(why);
      if (report) report->push_back(r);
    };
    if (layer.node_index >= nodes.size())
      throw InternalError("correct_biases: layer '" + layer.name + "' is past the graph's nodes");
    Node& n = *nodes[layer.node_index];
    const Tensor* weight = g.constant_value(n.input(1));
    if (!weight || weight->dtype != DType::F32)
      throw InternalError("correct_biases: '" + layer.name + "' has no float weight");
    auto m = means.find(channel_means_key(layer.activation, activation_channel_axis(model, layer)));
    const std::vector<double> mx = m != means.end() ? m->second.float_means() : std::vector<double>{};
    const std::vector<double> mq = m != means.end() ? m->second.quantized_means() : std::vector<double>{};

    // The weight's layout as output channel, input channel and tap.
    const std::vector<int64_t>& d = weight->dims;
    WeightLayout l;
    BiasSlot slot;
    if (layer.kind == LayerKind::Conv) {
      l.groups = std::max<int64_t>(1, int_attr(n, "group", 1));
      l.outputs = d[0];
      l.inputs_per_group = d[1];
      for (size_t a = 2; a < d.size(); ++a) l.taps *= d[a];
      l.out_stride = l.inputs_per_group * l.taps;
      l.in_stride = l.taps;
      if (l.outputs % l.groups != 0) {
        skip("its output channels do not divide into its groups");
        continue;
      }
      slot = {&n, 2, n.input(2) ? g.constant_value(n.input(2)) : nullptr, 1};
      if (n.input(2) && !slot.current) {
        skip("its bias is computed, not a constant");
        continue;
      }
    } else {
      const bool transposed = layer.kind == LayerKind::Gemm && int_attr(n, "transB", 0) != 0;  // W is [N, K]
      const int64_t k_dim = transposed ? d[1] : d[0], n_dim = transposed ? d[0] : d[1];
      l.outputs = n_dim;
      l.inputs_per_group = k_dim;
      l.out_stride = transposed ? k_dim : 1;
      l.in_stride = transposed ? 1 : n_dim;
      if (layer.kind == LayerKind::Gemm) {
        const double beta = float_attr(n, "beta", 1.0f);
        if (beta == 0) {
          skip("its beta is 0");
          continue;
        }
        slot = {&n, 2, n.input(2) ? g.constant_value(n.input(2)) : nullptr, beta};
        if (n.input(2) && !slot.current) {
          skip("its C is computed, not a constant");
          continue;
        }
      } else {
        // MatMul: the bias is the constant of the one Add that reads its output.
        const Value* y = n.output(0);
        Node* add = y && y->uses().size() == 1 ? y->uses()[0].node : nullptr;
        if (!add || add->op_type != "Add" || !add->domain.empty() || add->inputs().size() != 2) {
          skip("its output is not read by one Add");
          continue;
        }
        const size_t other = y->uses()[0].input_index == 0 ? 1 : 0;
        const Tensor* c = g.constant_value(add->input(other));
        if (!c || c->dtype != DType::F32 || c->dims.size() != 1 || c->dims[0] != n_dim) {
          skip("the Add after it has no constant [" + std::to_string(n_dim) + "] bias");
          continue;
        }
        slot = {add, other, c, 1};
      }
    }
    if (mx.size() != static_cast<size_t>(l.inputs_per_group * l.groups) || mq.size() != mx.size()) {
      skip("its activation's channels did not stay the same over the calibration set");
      continue;
    }
    if (slot.current && !per_channel_bias(*slot.current, l.outputs)) {
      skip("its bias has shape " + shape_text(slot.current->dims) + ", not one value per output channel");
      continue;
    }
    const Int8Weight q = quantize_weight_values(*weight, stored_weight_axis(model, layer));
    std::vector<double> shift = mean_shift(*weight, q, l, mx, mq);
    if (layer.kind == LayerKind::Gemm) {
      const double alpha = float_attr(n, "alpha", 1.0f);
      for (double& s : shift) s *= alpha;
    }
    std::vector<float> bias = slot.current ? slot.current->to_vector<float>()
                                           : std::vector<float>(static_cast<size_t>(l.outputs), 0.0f);
    for (size_t o = 0; o < shift.size(); ++o) {
      const double moved = static_cast<double>(bias[o]) + shift[o] / slot.divide_by;
      if (!std::isfinite(static_cast<float>(moved))) continue;  // a mean past float's range: leave it
      bias[o] = static_cast<float>(moved);
      r.largest_shift = std::max(r.largest_shift, std::fabs(shift[o]));
    }
    std::string bytes(bias.size() * sizeof(float), '\0');
    std::memcpy(bytes.data(), bias.data(), bytes.size());
    const std::vector<int64_t> dims = slot.current ? slot.current->dims : std::vector<int64_t>{l.outputs};
    Value* corrected = add_constant(g, layer.name + "_bias_corrected", DType::F32, dims, std::move(bytes));
    g.set_input(slot.node, slot.input, corrected);
    r.applied = true;
    if (report) report->push_back(r);
  }
  // The replaced biases stay until write_qdq removes what is unused: removing them here
  // could move the layers' node indices.
  return out;
}

}  // namespace geopt::quantize
