#include "cost_model.h"

#include "memory_plan.h"
#include "passes/control_flow_bodies.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_set>

namespace geopt::ascend {
namespace {

const std::set<std::string> kViews = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity",
                                      "Dropout", "Shape",   "Size",      "Constant"};
const std::set<std::string> kDataMovement = {
    "Transpose", "Concat", "Split", "Slice",           "Gather", "GatherElements", "Expand", "Tile",
    "Pad",       "Resize", "Cast",  "ConstantOfShape", "Range",  "Trilu",          "Where",  "TransData"};
// Vector operations per element: transcendentals take several passes of the Vector unit.
const std::map<std::string, double> kVectorWeight = {
    {"Exp", 4},
    {"Log", 4},
    {"Erf", 6},
    {"Tanh", 5},
    {"Sigmoid", 5},
    {"RotaryEmbedding", 4},
    {"Softplus", 6},
    {"Pow", 4},
    {"Sqrt", 2},
    {"Rsqrt", 2},
    {"Reciprocal", 2},
    {"Div", 2},
    {"HardSwish", 3},
    {"Elu", 5},
    {"Gelu", 8},
    {"LayerNorm", 8},
    {"LayerNormalization", 8},
    {"RMSNorm", 5},
    {"AddLayerNorm", 9},
    {"Softmax", 6},
    {"LogSoftmax", 7},
    {"BatchNormalization", 2},
    {"InstanceNormalization", 8},
    // ONNX Runtime's contrib ops, priced as the geopt kernel doing the same work, so a
    // graph ONNX Runtime optimized compares under one cost model (bench/kernel_bench.sh).
    {"SkipLayerNormalization", 9},
    {"SimplifiedLayerNormalization", 5},
    {"SkipSimplifiedLayerNormalization", 6},
    {"FastGelu", 8},
    {"BiasGelu", 9},
    {"QuickGelu", 6}};
// Ops that need a whole row (the last axis) in UB in one pass.
const std::set<std::string> kRowOps = {"LayerNorm",
                                       "LayerNormalization",
                                       "RMSNorm",
                                       "AddLayerNorm",
                                       "Softmax",
                                       "LogSoftmax",
                                       "SkipLayerNormalization",
                                       "SimplifiedLayerNormalization",
                                       "SkipSimplifiedLayerNormalization"};

int64_t dim_value(const Dim& d, const CostOptions& o) {
  return d.is_static() ? d.value() : o.symbolic_dim_value;
}

// Static element count and dims of a value (symbolic dims replaced), read from its
// shape in place: the extractor prices every e-node, so this allocates nothing.
struct Extent {
  const Shape* shape = nullptr;
  int64_t symbolic = 1;
  double elements = 0;
  DType dtype = DType::F32;
  bool known = false;

  size_t rank() const { return shape ? shape->rank() : 0; }
  bool empty() const { return rank() == 0; }
  int64_t dim(size_t i) const { return (*shape)[i].is_static() ? (*shape)[i].value() : symbolic; }
  int64_t front() const { return dim(0); }
  int64_t back() const { return dim(rank() - 1); }
};

Extent extent(const ValueType* t, const CostOptions& o) {
  Extent e;
  if (!t || !t->shape) return e;
  e.shape = &*t->shape;
  e.symbolic = o.symbolic_dim_value;
  e.known = true;
  e.dtype = t->dtype == DType::Undefined ? DType::F32 : t->dtype;
  e.elements = 1;
  for (const Dim& d : t->shape->dims()) e.elements *= static_cast<double>(dim_value(d, o));
  return e;
}

// Bytes per element of a value the op reads or writes, in the dtype it computes in.
double compute_bytes(DType t, const std::string& op_type, const CostOptions& o) {
  return static_cast<double>(std::max<size_t>(dtype_size(o.precision.planned(op_type, t)), 1));
}

const Attribute* find_attr(const KernelDesc& k, const char* name) {
  if (!k.attributes) return nullptr;
  for (const auto& a : *k.attributes)
    if (a.name == name) return &a;
  return nullptr;
}

const ValueType* at(const std::vector<const ValueType*>& v, size_t i) {
  return i < v.size() ? v[i] : nullptr;
}

}  // namespace

KernelDesc describe(const Node& n) {
  KernelDesc d{n.domain, n.op_type, &n.attributes, {}, {}};
  for (const Value* v : n.inputs()) {
    const bool constant = v && (v->initializer || (v->producer() && v->producer()->domain.empty() &&
                                                   v->producer()->op_type == "Constant"));
    if (constant && d.inputs.size() < 64) d.constant_inputs |= uint64_t{1} << d.inputs.size();
    d.inputs.push_back(v ? &v->type : nullptr);
  }
  for (const Value* v : n.outputs()) d.outputs.push_back(v ? &v->type : nullptr);
  return d;
}

KernelDesc describe(const Node& n, const std::unordered_set<const Value*>& constants) {
  KernelDesc d = describe(n);
  for (size_t i = 0; i < n.inputs().size() && i < 64; ++i)
    if (n.inputs()[i] && constants.count(n.inputs()[i])) d.constant_inputs |= uint64_t{1} << i;
  return d;
}

KernelWork work_of(const Node& n, const CostOptions& o) { return work_of(describe(n), o); }

bool is_view_transpose(const KernelDesc& n) {
  if (!n.domain.empty() || n.op_type != "Transpose") return false;
  const ValueType* in = at(n.inputs, 0);
  const Attribute* perm = find_attr(n, "perm");
  if (!in || !in->shape || !in->shape->is_static() || !perm || perm->ints.size() != in->shape->rank())
    return false;
  int64_t last = -1;  // the non-unit axes must keep their order
  for (int64_t axis : perm->ints) {
    if (axis < 0 || axis >= static_cast<int64_t>(in->shape->rank())) return false;
    if ((*in->shape)[static_cast<size_t>(axis)].value() == 1) continue;
    if (axis < last) return false;
    last = axis;
  }
  return true;
}

bool is_view_split(const KernelDesc& n) {
  if (!n.domain.empty() || n.op_type != "Split") return false;
  const ValueType* in = at(n.inputs, 0);
  if (!in || !in->shape || !in->shape->is_static() || in->shape->rank() == 0) return false;
  const Attribute* axis_attr = find_attr(n, "axis");
  const int64_t rank = static_cast<int64_t>(in->shape->rank());
  const int64_t axis = axis_attr ? (axis_attr->i < 0 ? axis_attr->i + rank : axis_attr->i) : 0;
  if (axis < 0 || axis >= rank) return false;
  for (int64_t d = 0; d < axis; ++d)
    if ((*in->shape)[static_cast<size_t>(d)].value() != 1) return false;
  for (const ValueType* out : n.outputs)
    if (!out || !out->shape || !out->shape->is_static()) return false;
  // Each piece but the last a whole number of the pool's aligned blocks, so every piece
  // keeps its alignment; otherwise the pieces are copied.
  for (size_t o = 0; o + 1 < n.outputs.size(); ++o) {
    const ValueType& t = *n.outputs[o];
    const size_t bytes = static_cast<size_t>(*t.shape->element_count()) *
                         dtype_size(t.dtype == DType::Undefined ? DType::F32 : t.dtype);
    if (bytes % kMemoryAlignment) return false;
  }
  return true;
}

KernelWork work_of(const KernelDesc& n, const CostOptions& o) {
  KernelWork w;
  w.op = n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type;
  Extent out = extent(at(n.outputs, 0), o);
  w.dtype = o.precision.planned(n.op_type, out.known ? out.dtype : DType::F32);
  // The int8 Cube ops read 8-bit operands: the Cube runs at its int8 rate.
  if (n.domain == kGeoptDomain && (n.op_type == "QuantMatMul" || n.op_type == "QuantConv")) {
    const Extent x = extent(at(n.inputs, 0), o);
    if (x.known) w.dtype = x.dtype;
  }
  if ((n.domain.empty() && kViews.count(n.op_type)) || is_view_transpose(n) || is_view_split(n)) {
    w.is_kernel = false;
    return w;
  }
  const double bytes = static_cast<double>(std::max<size_t>(dtype_size(w.dtype), 1));
  const std::string& op = n.op_type;
  auto move = [&w](double b, bool constant, bool read) {
    if (!(b > 0)) return;
    w.traffic.push_back({b, constant, read});
    (read ? w.hbm_read_bytes : w.hbm_write_bytes) += b;
  };
  auto is_constant = [&n](size_t i) { return i < 64 && (n.constant_inputs >> i & 1); };
  // Memory traffic: every input is read once and every output written once. Constant
  // inputs are weights: read too (they live in device memory). A gather or a slice reads
  // only what it copies out (an embedding lookup reads its rows, not the table).
  const bool reads_what_it_writes =
      n.domain.empty() && (op == "Gather" || op == "GatherND" || op == "GatherElements" || op == "Slice");
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (const ValueType* in = n.inputs[i]) {
      const Extent e = extent(in, o);
      double b = e.elements * compute_bytes(e.dtype, n.op_type, o);
      if (i == 0 && reads_what_it_writes && out.known)
        b = std::min(b, out.elements * compute_bytes(e.dtype, n.op_type, o));
      move(b, is_constant(i), true);
    }
  for (const ValueType* v : n.outputs)
    if (v) {
      const Extent e = extent(v, o);
      move(e.elements * compute_bytes(e.dtype, n.op_type, o), false, false);
    }

  auto weight = [&](const std::string& name) {
    auto it = kVectorWeight.find(name);
    return it == kVectorWeight.end() ? 1.0 : it->second;
  };
  if (op == "SwiGLU") {
    Extent a = extent(at(n.inputs, 0), o);
    if (a.known && !a.empty() && out.known && !out.empty()) {
      w.cube_macs = 2 * out.elements * static_cast<double>(a.back());  // two products
      w.products.push_back(
          {2, static_cast<int64_t>(out.elements / static_cast<double>(out.back())), out.back(), a.back()});
    }
    w.vector_ops = out.elements * (weight("Sigmoid") + 2);
    w.min_l1_bytes = static_cast<int64_t>(3 * 16 * 16 * bytes);
  } else if (n.domain.empty() && (op == "RNN" || op == "GRU" || op == "LSTM")) {
    // Per step and direction: the input and recurrent products of every gate on the Cube
    // ([batch, input + hidden] x [input + hidden, gates * hidden]), the gate activations
    // and state updates on the Vector unit.
    Extent x = extent(at(n.inputs, 0), o), wt = extent(at(n.inputs, 1), o), r = extent(at(n.inputs, 2), o);
    if (x.known && wt.known && r.known && x.rank() == 3 && wt.rank() == 3 && r.rank() == 3) {
      const Attribute* layout = find_attr(n, "layout");
      const double steps = static_cast<double>(layout && layout->i ? x.dim(1) : x.dim(0));
      const double batch = static_cast<double>(layout && layout->i ? x.dim(0) : x.dim(1));
      const double dirs = static_cast<double>(wt.dim(0)), gate_rows = static_cast<double>(wt.dim(1));
      const double input = static_cast<double>(wt.dim(2)), hidden = static_cast<double>(r.dim(2));
      w.cube_macs = steps * dirs * batch * gate_rows * (input + hidden);
      w.products.push_back({steps * dirs, static_cast<int64_t>(batch), static_cast<int64_t>(gate_rows),
                            static_cast<int64_t>(input + hidden)});
      const double per_gate = weight(op == "RNN" ? "Tanh" : "Sigmoid") + 3;
      w.vector_ops = steps * dirs * batch * gate_rows * per_gate;
    }
    w.min_l1_bytes = static_cast<int64_t>(2 * 16 * 16 * bytes);
  } else if (op == "MatMul" || op == "FusedMatMul" || op == "Gemm" || op == "FusedGemm" ||
             op == "QuantMatMul") {
    Extent a = extent(at(n.inputs, 0), o), b = extent(at(n.inputs, 1), o);
    if (a.known && b.known && !a.empty() && !b.empty()) {
      const Attribute* trans_a = find_attr(n, "transA");
      double k = (op == "Gemm" || op == "FusedGemm") && trans_a && trans_a->i ? static_cast<double>(a.front())
                                                                              : static_cast<double>(a.back());
      w.cube_macs = out.elements * k;
      if (out.known && !out.empty()) {
        const int64_t cols = out.back(), rows = out.rank() >= 2 ? out.dim(out.rank() - 2) : 1;
        w.products.push_back({out.elements / (static_cast<double>(rows) * static_cast<double>(cols)), rows,
                              cols, static_cast<int64_t>(k)});
      }
    }
    // Bias and activation on the Vector unit, as the tile leaves the Cube.
    const Attribute* activation = find_attr(n, "activation");
    const bool has_bias = n.inputs.size() > 2 && n.inputs[2];
    if (op == "Gemm" || op == "FusedGemm") w.vector_ops = out.elements * (op == "Gemm" ? 2 : 3);
    if (op == "FusedMatMul")
      w.vector_ops = out.elements * ((has_bias ? 1 : 0) + (activation && activation->s != "none" ? 1 : 0));
    if (op == "QuantMatMul")
      w.vector_ops = out.elements * (2 + (n.inputs.size() > 6 && n.inputs[6] ? 1 : 0) +
                                     (activation && activation->s != "none" ? 1 : 0));
    // The Cube reads a matrix operand in FRACTAL_NZ: a 2-D one in ND is converted on
    // every call (a TransData kernel: read it, write it) unless it was laid out at compile time.
    const Attribute* b_format = find_attr(n, "b_format");
    // So is a stack of matrices against a 2-D operand (merged projections' weights).
    // (An int8 QuantMatMul's weight is a constant too, laid out when the plan is built.)
    if (b.known && (b.rank() == 2 || (b.rank() == 3 && a.known && a.rank() == 2)) &&
        !(b_format && b_format->s == "FRACTAL_NZ") && op != "QuantMatMul") {
      const double b_bytes = b.elements * compute_bytes(b.dtype, n.op_type, o);
      move(b_bytes, is_constant(1), true);
      move(b_bytes, false, false);
      ++w.extra_launches;
    }
    // Smallest tile: one 16x16 fractal of each operand and of the fp32 accumulator.
    w.min_l1_bytes = static_cast<int64_t>(2 * 16 * 16 * bytes);
  } else if (op == "Conv" || op == "FusedConv" || op == "ConvTranspose" || op == "QuantConv") {
    Extent x = extent(at(n.inputs, 0), o), wt = extent(at(n.inputs, 1), o);
    if (x.known && wt.known && wt.rank() >= 3) {
      double per_output = 1;  // (C / group) * kernel spatial
      for (size_t i = 1; i < wt.rank(); ++i) per_output *= static_cast<double>(wt.dim(i));
      const Attribute* weight_format = find_attr(n, "weight_format");
      const bool fractal = weight_format && weight_format->s == "FRACTAL_Z";
      const Attribute* group = find_attr(n, "group");
      const bool on_cube = (!group || group->i == 1) && op != "ConvTranspose";
      // The Cube reduces over whole blocks of C0 channels (16, or 32 for int8): a conv of C
      // input channels pays ceil(C/C0) x C0 of them per tap. ATC's --enable_small_channel
      // reads an image's 3 or 4 channels in blocks of 4 instead.
      const int64_t c0 = dtype_size(w.dtype) == 1 ? 32 : 16;
      const bool small = o.small_channel && x.rank() == 4 && x.dim(1) <= 4;
      if (fractal) {
        per_output = static_cast<double>(wt.dim(0) * wt.dim(3));       // ceil(C/C0) * kH * kW * C0
        if (small) per_output = 4.0 * static_cast<double>(wt.dim(0));  // C1 is 1: dim 0 is the window
      } else if (on_cube && wt.dim(1) > 0) {
        const int64_t c = wt.dim(1), block = small ? 4 : c0;
        per_output *= static_cast<double>((c + block - 1) / block * block) / static_cast<double>(c);
      }
      // Group-1 convs run on the Cube, which reads FRACTAL_Z weights: NCHW weights are
      // converted on every call unless laid out at compile time.
      const Attribute* data_format = find_attr(n, "data_format");
      if (op == "FusedConv" && !fractal && (!group || group->i == 1) && data_format &&
          data_format->s == "NC1HWC0") {
        const double w_bytes = wt.elements * compute_bytes(wt.dtype, n.op_type, o);
        move(w_bytes, is_constant(1), true);
        move(w_bytes, false, false);
        ++w.extra_launches;
      }
      // Conv: every output takes (C/group)*k MACs. ConvTranspose (weights [C, M/group, k]):
      // every input scatters (M/group)*k MACs.
      w.cube_macs = (op == "ConvTranspose" ? x.elements : out.elements) * per_output;
      // As an implicit GEMM per group: output positions x output channels x the reduction
      // (its channels and kernel window flattened, padded to whole fractals by the tiling).
      const double groups = static_cast<double>(group && group->i > 1 ? group->i : 1);
      double spatial = 1;  // kernel window
      for (size_t i = 2; i < wt.rank(); ++i) spatial *= static_cast<double>(wt.dim(i));
      if (fractal) spatial = 1;  // FRACTAL_Z: [C1 x kH x kW, N1, 16, C0]; per_output is already the reduction
      if (op == "ConvTranspose") {
        const double in_channels = static_cast<double>(wt.dim(0)),
                     out_per_group = static_cast<double>(wt.dim(1));
        w.products.push_back({groups, static_cast<int64_t>(x.elements / std::max(in_channels, 1.0)),
                              static_cast<int64_t>(out_per_group * spatial),
                              static_cast<int64_t>(in_channels / groups)});
      } else if (out.known && !out.empty()) {
        const double out_channels =
            fractal ? static_cast<double>(wt.dim(1) * wt.dim(2)) : static_cast<double>(wt.dim(0));
        w.products.push_back({groups, static_cast<int64_t>(out.elements / std::max(out_channels, 1.0)),
                              static_cast<int64_t>(out_channels / groups), static_cast<int64_t>(per_output)});
      }
    }
    if (op == "FusedConv" || op == "QuantConv") w.vector_ops = out.elements * 2;
    w.min_l1_bytes = static_cast<int64_t>(2 * 16 * 16 * bytes);
    // The Cube reads NC1HWC0 only: a conv in NCHW converts its input and its output
    // (each conversion reads one layout and writes the other) in two extra kernels.
    const Attribute* format = find_attr(n, "data_format");
    // ONNX Runtime's NCHWc convs hold blocked activations, as NC1HWC0 does.
    if (x.known && wt.known && !(format && format->s == "NC1HWC0") && n.domain != "com.microsoft.nchwc") {
      // (An int8 conv converts its 8-bit input and its float output.)
      const double out_bytes =
          out.elements * (op == "QuantConv" ? compute_bytes(out.dtype, n.op_type, o) : bytes);
      const double in_bytes = x.elements * bytes;
      for (double b : {in_bytes, out_bytes}) {
        move(b, false, true);
        move(b, false, false);
      }
      w.extra_launches = 2;
    }
  } else if (op == "FlashAttention" || op == "FlashAttentionLayerNorm") {
    w.fused_attention = true;
    Extent q = extent(at(n.inputs, 0), o), k = extent(at(n.inputs, 1), o), v = extent(at(n.inputs, 2), o);
    const Attribute* layout = find_attr(n, "input_layout");
    const size_t seq_from_end = layout && layout->s == "BSND" ? 3 : 2;  // [..., S, N, D] or [..., N, S, D]
    if (q.known && k.known && v.known && q.rank() >= seq_from_end && k.rank() >= seq_from_end) {
      double s = static_cast<double>(q.dim(q.rank() - seq_from_end)), d = static_cast<double>(q.back());
      double t = static_cast<double>(k.dim(k.rank() - seq_from_end)), dv = static_cast<double>(v.back());
      double heads = q.elements / (s * d);
      w.cube_macs = heads * s * t * (d + dv);
      // Its softmax runs on the Vector units inside the blocked loop, pipelined with the
      // Cube: attention_time prices both.
      w.attention = {heads, static_cast<int64_t>(s), static_cast<int64_t>(t), static_cast<int64_t>(d),
                     static_cast<int64_t>(dv)};
      // Smallest tile: 16 query rows against 16 keys. Scores and the output
      // accumulator stay in fp32 in UB; Q/K/V tiles pass through L1.
      w.min_ub_bytes = static_cast<int64_t>(16 * 16 * 4 + 16 * dv * 4 + 2 * 16 * 4);
      w.min_l1_bytes = static_cast<int64_t>((16 * d + 16 * d + 16 * dv) * bytes);
      if (op == "FlashAttentionLayerNorm") {
        // The finished rows are normalized and the residual added before they leave
        // UB: the residual tile, scale and bias join the working set.
        w.vector_ops += out.elements * (weight("LayerNorm") + 1);
        w.min_ub_bytes += static_cast<int64_t>((16 * dv + 2 * dv) * bytes);
      }
    }
  } else if (kRowOps.count(op)) {
    w.vector_ops = out.elements * weight(op);
    double row = out.known && !out.empty() ? static_cast<double>(out.back()) : 0;
    // A LayerNorm over channels normalizes across C (NCHW) or C1 x C0 (NC1HWC0) at each position.
    if (const Attribute* f = find_attr(n, "data_format"); f && out.known) {
      if (f->s == "NCHW" && out.rank() >= 2) row = static_cast<double>(out.dim(1));
      if (f->s == "NC1HWC0" && out.rank() == 5) row = static_cast<double>(out.dim(1) * out.dim(4));
    }
    // One row of input and output in the compute type, plus an fp32 working copy, double-buffered.
    const double inputs = op == "AddLayerNorm" || op.rfind("Skip", 0) == 0 ? 2 : 1;
    const int64_t row_bytes = static_cast<int64_t>(2 * row * ((inputs + 1) * bytes + 4));
    if (n.domain.empty()) {
      // CANN's standard kernels fall back to two passes over HBM when a row does not
      // fit: always feasible, at the price of reading the input again.
      w.spills_row = row_bytes;
      // Its LayerNorm writes each row's mean and variance (fp32) whether or not they are
      // read; geopt's LayerNorm writes the normalized rows only.
      if (op == "LayerNormalization" && row > 0) {
        double cols = 1;  // the normalized axes, axis .. rank-1
        const Attribute* axis = find_attr(n, "axis");
        const int64_t rank = static_cast<int64_t>(out.rank());
        const int64_t from = axis ? (axis->i < 0 ? axis->i + rank : axis->i) : rank - 1;
        for (int64_t d = std::max<int64_t>(from, 0); d < rank; ++d)
          cols *= static_cast<double>(out.dim(static_cast<size_t>(d)));
        for (size_t k = 1; k <= 2;
             ++k)  // Mean and InvStdDev, where the node does not already count them as outputs
          if (k >= n.outputs.size() || !n.outputs[k]) move(4 * out.elements / cols, false, false);
      }
    } else {
      w.min_ub_bytes = row_bytes;  // fused kernels are single-pass by design
    }
  } else if ((n.domain.empty() && kDataMovement.count(op)) || op == "TransData" || op == "ReorderInput" ||
             op == "ReorderOutput" || op == "ShuffleChannel" || op == "ChannelSlice" ||
             op == "ChannelConcat" || op == "Roll") {
    w.vector_ops = 0;  // moved by the memory transfer engines
    // ...except a Transpose, which the Vector unit permutes element by element through UB
    // (cost_of prices it with the profile's vector.transpose_ops).
    if (op == "Transpose" && n.domain.empty()) w.permuted_elements = out.elements;
  } else if (op == "MaxPool" || op == "AveragePool") {
    // Every output element reduces its window.
    double window = 1;
    if (const Attribute* k = find_attr(n, "kernel_shape"))
      for (int64_t d : k->ints) window *= static_cast<double>(d);
    w.vector_ops = out.elements * window;
  } else if (op.rfind("Reduce", 0) == 0 || op == "ArgMax" || op == "ArgMin" || op == "GlobalAveragePool" ||
             op == "GlobalMaxPool") {
    double in = 0;
    for (const ValueType* v : n.inputs)
      if (v) in = std::max(in, extent(v, o).elements);
    w.vector_ops = in;
  } else {
    w.vector_ops = out.elements * weight(op);
  }
  return w;
}

KernelCost cost_of(const KernelWork& w, const HardwareProfile& p) {
  KernelCost c;
  if (!w.is_kernel) {
    c.bound = "none";
    return c;
  }
  const double hz = p.frequency_mhz * 1e6;
  double rate = 1.0;  // relative to fp16 on the Cube
  if (dtype_size(w.dtype) == 1)
    rate = 2.0;
  else if (dtype_size(w.dtype) >= 4)
    rate = 0.25;
  const double operand_bytes = static_cast<double>(std::max<size_t>(dtype_size(w.dtype), 1));
  if (w.attention.heads > 0) {
    c.cube_us = attention_time(w.attention, p, rate).us;
  } else if (!w.products.empty()) {
    for (const CubeProduct& prod : w.products) c.cube_us += cube_time(prod, p, rate, operand_bytes).us;
  } else if (w.cube_macs > 0) {  // no shape to tile: at the sustained rate on every core
    c.cube_us = w.cube_macs / (p.fp16_macs_per_cycle * rate * p.cube_efficiency * p.ai_cores * hz) * 1e6;
  }
  const double lane_bytes =
      static_cast<double>(std::max<size_t>(dtype_size(w.dtype) >= 4 ? 4 : dtype_size(w.dtype), 1));
  const double vector_ops = w.vector_ops + w.permuted_elements * p.vector_transpose_ops;
  c.vector_us =
      vector_ops * lane_bytes / (p.vector_bytes_per_cycle * p.vector_efficiency * p.vector_cores * hz) * 1e6;
  // Up to its share of L2, a tensor is still there when its consumer reads it (a larger
  // one, that much of it); weights come from device memory (the previous run evicted
  // them), as does the rest, at the bandwidth streaming kernels reach.
  const double resident = p.l2_resident_share * static_cast<double>(p.l2_bytes);
  const bool two_passes = w.spills_row > p.ub;  // statistics, then normalize: the input is read twice
  for (const KernelWork::Traffic& t : w.traffic) {
    const double b = t.bytes * (two_passes && t.read ? 2 : 1);
    const double in_l2 = t.constant ? 0 : std::min(b, resident);
    c.l2_bytes += in_l2;
    c.dram_bytes += b - in_l2;
  }
  c.memory_us =
      (c.dram_bytes / (p.hbm_gbps * p.memory_efficiency * 1e9) + c.l2_bytes / (p.l2_gbps * 1e9)) * 1e6;
  c.launch_us = p.launch_overhead_us * (1 + w.extra_launches);
  double busiest = std::max({c.cube_us, c.vector_us, c.memory_us});
  c.bound = busiest == 0             ? "none"
            : busiest == c.cube_us   ? "cube"
            : busiest == c.vector_us ? "vector"
                                     : "memory";
  c.total_us = busiest + c.launch_us;
  auto kib = [](int64_t b) { return std::to_string((b + 1023) / 1024) + " KiB"; };
  if (w.fused_attention && !p.flash_attention) {
    c.feasible = false;
    c.reason = w.op + ": " + p.soc_version +
               " has no fused attention kernel (CANN's FlashAttentionScore is an Atlas A2/A3 kernel)";
  } else if (w.min_ub_bytes > p.ub) {
    c.feasible = false;
    c.reason =
        w.op + ": working set " + kib(w.min_ub_bytes) + " exceeds UB " + kib(p.ub) + " on " + p.soc_version;
  } else if (w.min_l1_bytes > p.l1) {
    c.feasible = false;
    c.reason =
        w.op + ": working set " + kib(w.min_l1_bytes) + " exceeds L1 " + kib(p.l1) + " on " + p.soc_version;
  }
  return c;
}

GraphCost cost_of_graph(const Graph& g, const HardwareProfile& p, const CostOptions& o) {
  GraphCost gc;
  // Values known when the model is compiled: initializers (not graph inputs), and what
  // ops of them compute. Such an op runs at compile time (ATC folds it), not as a kernel.
  std::unordered_set<const Value*> constant(g.initializers().begin(), g.initializers().end());
  for (const Value* in : g.inputs()) constant.erase(in);
  for (const auto& n : g.nodes()) {
    bool of_constants = !n->inputs().empty();
    for (const Value* in : n->inputs()) of_constants = of_constants && (!in || constant.count(in));
    if (n->domain.empty() && n->op_type == "Constant") of_constants = true;
    if (of_constants && !n->is_nondeterministic()) {
      for (const Value* out : n->outputs()) constant.insert(out);
      continue;
    }
    KernelWork w = work_of(describe(*n, constant), o);
    if (!w.is_kernel) continue;
    KernelCost c = cost_of(w, p);
    gc.latency_us += c.total_us;
    gc.hbm_bytes += w.hbm_read_bytes + w.hbm_write_bytes;
    ++gc.kernels;
    gc.infeasible += c.feasible ? 0 : 1;
    auto& [us, count] = gc.by_op[w.op];
    us += c.total_us;
    ++count;
    gc.per_kernel.push_back({n.get(), std::move(w), std::move(c)});
  }
  return gc;
}

GraphCost cost_of_model(const Model& m, const HardwareProfile& p, const CostOptions& o) {
  GraphCost gc = cost_of_graph(*m.graph, p, o);
  for (const ScopedBody& b : control_flow_bodies(m, BodyShapes::AsGiven))
    gc.body_kernels += cost_of_graph(*b.model.graph, p, o).kernels;
  gc.kernels += gc.body_kernels;
  return gc;
}

}  // namespace geopt::ascend
