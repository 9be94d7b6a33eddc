#include "quantize/qdq_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>

#include "util/error.h"

namespace geopt::quantize {
namespace {

bool computed_float(const Graph& g, const Value* v) {
  return v && v->type.dtype == DType::F32 && !g.constant_value(v);
}

const Tensor* float_weight(const Graph& g, const Value* v, size_t min_rank, size_t max_rank) {
  const Tensor* t = v ? g.constant_value(v) : nullptr;
  if (!t || t->dtype != DType::F32 || t->dims.size() < min_rank || t->dims.size() > max_rank) return nullptr;
  return t->element_count() > 0 ? t : nullptr;
}

template <class T>
std::string bytes_of(const std::vector<T>& v) {
  std::string s(v.size() * sizeof(T), '\0');
  if (!v.empty()) std::memcpy(s.data(), v.data(), s.size());
  return s;
}

Value* zero_point_constant(Graph& g, const std::string& prefix, DType t, int32_t z,
                           std::vector<int64_t> dims) {
  const size_t n = dims.empty() ? 1 : static_cast<size_t>(dims[0]);
  std::string bytes(n, '\0');
  if (t == DType::U8)
    std::memset(bytes.data(), static_cast<uint8_t>(z), n);
  else
    std::memset(bytes.data(), static_cast<int8_t>(z), n);
  return add_constant(g, prefix, t, std::move(dims), std::move(bytes));
}

// The activation behind a Q/DQ pair: the dequantized value its layers read.
Value* quantize_activation(Graph& g, Value* x, const LinearQuant& q, ActivationType type) {
  const DType qt = type == ActivationType::U8 ? DType::U8 : DType::I8;
  Value* scale = add_constant(g, x->name() + "_scale", DType::F32, {}, bytes_of(std::vector<float>{q.scale}));
  Value* zero = zero_point_constant(g, x->name() + "_zero_point", qt, q.zero_point, {});
  Value* xq = g.add_value(g.unique_name(x->name() + "_quantized"));
  xq->type = x->type;
  xq->type.dtype = qt;
  Value* xdq = g.add_value(g.unique_name(x->name() + "_dequantized"));
  xdq->type = x->type;
  g.add_node("QuantizeLinear", kOnnxDomain, g.unique_name(x->name() + "_QuantizeLinear"), {x, scale, zero},
             {xq});
  g.add_node("DequantizeLinear", kOnnxDomain, g.unique_name(x->name() + "_DequantizeLinear"),
             {xq, scale, zero}, {xdq});
  return xdq;
}

// The weight as int8 behind a DequantizeLinear (quantize_weight_values).
Value* quantize_weight(Graph& g, Value* w, const Tensor& data, int64_t axis) {
  const Int8Weight iw = quantize_weight_values(data, axis);
  const int64_t len = static_cast<int64_t>(iw.scales.size());
  const std::vector<int8_t>& q = iw.values;
  const std::vector<float>& scales = iw.scales;
  Value* wq = add_constant(g, w->name() + "_quantized", DType::I8, data.dims, bytes_of(q));
  const std::vector<int64_t> scale_dims = axis >= 0 ? std::vector<int64_t>{len} : std::vector<int64_t>{};
  Value* scale = add_constant(g, w->name() + "_scale", DType::F32, scale_dims, bytes_of(scales));
  Value* zero = zero_point_constant(g, w->name() + "_zero_point", DType::I8, 0, scale_dims);
  Value* wdq = g.add_value(g.unique_name(w->name() + "_dequantized"));
  wdq->type = w->type;
  wdq->type.dtype = DType::F32;
  Node* dq = g.add_node("DequantizeLinear", kOnnxDomain, g.unique_name(w->name() + "_DequantizeLinear"),
                        {wq, scale, zero}, {wdq});
  if (axis >= 0) dq->attributes.push_back(Attribute::make_int("axis", axis));
  return wdq;
}

}  // namespace

Value* add_constant(Graph& g, const std::string& prefix, DType dtype, std::vector<int64_t> dims,
                    std::string bytes) {
  Value* v = g.add_value(g.unique_name(prefix));
  v->type.dtype = dtype;
  v->type.shape = Shape(std::vector<Dim>(dims.begin(), dims.end()));
  auto t = std::make_shared<Tensor>();
  t->name = v->name();
  t->dtype = dtype;
  t->dims = std::move(dims);
  t->data = BufferSlice(std::move(bytes));
  g.add_initializer(v, std::move(t));
  return v;
}

int64_t stored_weight_axis(const Model& model, const QuantizableLayer& layer) {
  return model.opset_version("") >= 13 ? layer.weight_axis : -1;
}

Int8Weight quantize_weight_values(const Tensor& data, int64_t axis) {
  const std::vector<float> values = data.to_vector<float>();
  const int64_t n = static_cast<int64_t>(values.size());
  int64_t len = 1, inner = 1;
  if (axis >= 0) {
    len = data.dims[static_cast<size_t>(axis)];
    for (size_t a = static_cast<size_t>(axis) + 1; a < data.dims.size(); ++a) inner *= data.dims[a];
  }
  auto slot = [&](int64_t i) { return axis >= 0 ? i / inner % len : 0; };
  Int8Weight w;
  w.inner = inner;
  w.scales.assign(static_cast<size_t>(len), 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float a =
        std::isfinite(values[static_cast<size_t>(i)]) ? std::fabs(values[static_cast<size_t>(i)]) : 0.0f;
    float& s = w.scales[static_cast<size_t>(slot(i))];
    s = std::max(s, a);
  }
  for (float& s : w.scales) s = s / 127.0f >= kScaleFloor ? s / 127.0f : 1.0f;
  w.values.resize(values.size());
  for (int64_t i = 0; i < n; ++i) {
    // As QuantizeLinear computes it: divide in float, round half to even, saturate.
    const float r = std::nearbyint(values[static_cast<size_t>(i)] / w.scales[static_cast<size_t>(slot(i))]);
    w.values[static_cast<size_t>(i)] =
        static_cast<int8_t>(std::clamp(std::isnan(r) ? 0.0f : r, -127.0f, 127.0f));
  }
  return w;
}

std::vector<QuantizableLayer> find_quantizable_layers(const Model& model) {
  std::vector<QuantizableLayer> layers;
  const Graph& g = *model.graph;
  if (model.opset_version("") < 10) return layers;  // QuantizeLinear is opset 10
  const auto& nodes = g.nodes();
  for (size_t i = 0; i < nodes.size(); ++i) {
    const Node& n = *nodes[i];
    if (!n.domain.empty() || !computed_float(g, n.input(0))) continue;
    // The ops quantized, the ranks of their float weight (input 1) and its output-channel axis.
    struct Weighted {
      LayerKind kind;
      size_t min_rank, max_rank;
      int64_t channel_axis;
    };
    static const std::map<std::string, Weighted, std::less<>> kQuantized = {
        {"Conv", {LayerKind::Conv, 3, 5, 0}},
        {"MatMul", {LayerKind::MatMul, 2, 2, 1}},
        {"Gemm", {LayerKind::Gemm, 2, 2, 1}}};
    auto q = kQuantized.find(n.op_type);
    if (q == kQuantized.end() || !float_weight(g, n.input(1), q->second.min_rank, q->second.max_rank))
      continue;
    int64_t axis = q->second.channel_axis;
    if (const Attribute* tb = n.attr("transB"); tb && tb->i != 0) axis = 0;  // Gemm's B transposed
    QuantizableLayer l;
    l.kind = q->second.kind;
    l.node_index = i;
    l.name = !n.name.empty() ? n.name : n.output(0) ? n.output(0)->name() : n.describe();
    l.op_type = n.op_type;
    l.activation = n.input(0)->name();
    l.weight = n.input(1)->name();
    l.weight_axis = axis;
    layers.push_back(std::move(l));
  }
  return layers;
}

ActivationType parse_activation_type(const std::string& name) {
  if (name == "uint8") return ActivationType::U8;
  if (name == "int8") return ActivationType::I8;
  throw UsageError("unknown activation type '" + name + "': expected uint8 (asymmetric) or int8 (symmetric)");
}

LinearQuant activation_quant(ValueRange r, ActivationType type) {
  const float lo = std::min(r.lo, 0.0f), hi = std::max(r.hi, 0.0f);
  LinearQuant q;
  if (type == ActivationType::I8) {
    const float a = std::max(-lo, hi);
    q.scale = a / 127.0f >= kScaleFloor ? a / 127.0f : 1.0f;
    return q;
  }
  // A range of subnormal width has a scale of 0 (a division by zero in every
  // QuantizeLinear): below the floor the tensor is as good as constant, and scale 1 with
  // zero point 0 quantizes it to 0, as ONNX Runtime's quantizer does.
  if (!((hi - lo) / 255.0f >= kScaleFloor)) return q;
  q.scale = (hi - lo) / 255.0f;
  q.zero_point = static_cast<int32_t>(std::clamp(std::nearbyint(-lo / q.scale), 0.0f, 255.0f));
  return q;
}

Model write_qdq(const Model& model, const std::vector<QuantizableLayer>& layers,
                const std::map<std::string, ValueRange>& ranges, ActivationType type) {
  Model out = model.clone();
  Graph& g = *out.graph;
  std::map<std::string, Value*> activations, weights;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  for (const QuantizableLayer& l : layers) {
    if (l.node_index >= nodes.size())
      throw InternalError("write_qdq: layer '" + l.name + "' is past the graph's nodes");
    Node* n = nodes[l.node_index];
    Value* x = n->input(0);
    Value* w = n->input(1);
    if (!x || !w || x->name() != l.activation || w->name() != l.weight)
      throw InternalError("write_qdq: layer '" + l.name + "' does not read what find_quantizable_layers saw");
    auto range = ranges.find(l.activation);
    if (range == ranges.end()) throw InternalError("write_qdq: no range for '" + l.activation + "'");
    auto [a, fresh_a] = activations.try_emplace(l.activation, nullptr);
    if (fresh_a) a->second = quantize_activation(g, x, activation_quant(range->second, type), type);
    const std::string weight_key = l.weight + "@" + std::to_string(l.weight_axis);
    auto [wv, fresh_w] = weights.try_emplace(weight_key, nullptr);
    if (fresh_w) wv->second = quantize_weight(g, w, *g.constant_value(w), stored_weight_axis(out, l));
    g.set_input(n, 0, a->second);
    g.set_input(n, 1, wv->second);
  }
  if (!g.topological_sort()) throw InternalError("write_qdq: the quantized graph has a cycle");
  g.remove_dead_code();
  return out;
}

}  // namespace geopt::quantize
