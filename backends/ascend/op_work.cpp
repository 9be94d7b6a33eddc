#include "op_work.h"

#include <algorithm>
#include <map>
#include <set>
#include <string_view>

#include "device_ops/device_ops.h"
#include "ops/op_traits.h"

namespace geopt::ascend {

int64_t dim_value(const Dim& d, const CostOptions& o) {
  return d.is_static() ? d.value() : o.symbolic_dim_value;
}

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

void OpWork::move(double b, bool constant, bool read) const {
  if (!(b > 0)) return;
  w.traffic.push_back({b, constant, read});
  (read ? w.hbm_read_bytes : w.hbm_write_bytes) += b;
}

namespace {

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
    {"QuickGelu", 6},
    // Their 8-bit forms: each value dequantized on the way in and quantized on the way out.
    {"QuantSoftmax", 8},
    {"QuantLayerNorm", 10}};
// Ops that need a whole row (the last axis) in UB in one pass.
const std::set<std::string> kRowOps = {"LayerNorm",
                                       "LayerNormalization",
                                       "RMSNorm",
                                       "AddLayerNorm",
                                       "Softmax",
                                       "LogSoftmax",
                                       "SkipLayerNormalization",
                                       "SimplifiedLayerNormalization",
                                       "SkipSimplifiedLayerNormalization",
                                       "QuantSoftmax",
                                       "QuantLayerNorm"};

// Vector operations per element of an op (1 unless kVectorWeight says more).
double vector_weight(const std::string& op) {
  auto it = kVectorWeight.find(op);
  return it == kVectorWeight.end() ? 1.0 : it->second;
}

// What tells apart the ops one class function prices (their entries in work_function's
// table): the class function reads these instead of the op's name.
struct Form {
  // Matrix products and convolutions.
  bool gemm = false;  // Gemm's transA: k is A's first dim when A is transposed
  // B's (the weight's) input: QLinearMatMul and QLinearConv take it after A's scale and zero point.
  int operand_b = 1;
  double epilogue_ops = 0;         // Vector operations per output element after the product
  int bias_input = -1;             // a bias input, when given: one more per output element
  bool activation = false;         // an `activation` other than none: one more
  bool weights_prepacked = false;  // an int8 weight, laid out for the Cube when the plan is built
  bool transposed = false;         // ConvTranspose: every input element scatters its window
  bool converts_weights = false;   // in NC1HWC0, NCHW weights are converted on every call
  bool blocked = false;            // always in NC1HWC0 (FusedQuantConv): no conversions around it
  // FlashAttentionLayerNorm: the finished rows normalized and the residual added in UB.
  bool then_layer_norm = false;
  // Row ops: inputs read per row (AddLayerNorm and the Skip norms read two); ONNX's
  // LayerNormalization writes each row's mean and variance too.
  double row_inputs = 1;
  bool writes_statistics = false;
  bool permutes = false;         // ONNX's Transpose: permuted element by element on the Vector unit
  const char* gate = "Sigmoid";  // a recurrent cell's gate activation (RNN: Tanh)
};

// SwiGLU: its two products on the Cube, the gate on the Vector unit.
void swiglu_work(const OpWork& c, const Form&) {
  const KernelDesc& n = c.n;
  const CostOptions& o = c.o;
  const Extent& out = c.out;
  KernelWork& w = c.w;
  const double bytes = c.bytes;
  Extent a = extent(at(n.inputs, 0), o);
  if (a.known && !a.empty() && out.known && !out.empty()) {
    w.cube_macs = 2 * out.elements * static_cast<double>(a.back());  // two products
    w.products.push_back(
        {2, static_cast<int64_t>(out.elements / static_cast<double>(out.back())), out.back(), a.back()});
  }
  w.vector_ops = out.elements * (vector_weight("Sigmoid") + 2);
  w.min_l1_bytes = static_cast<int64_t>(3 * 16 * 16 * bytes);
}

// RNN, GRU and LSTM (ONNX's): per step and direction, every gate's input and recurrent
// products on the Cube ([batch, input + hidden] x [input + hidden, gates * hidden]), the
// gate activations and state updates on the Vector unit.
void recurrent_work(const OpWork& c, const Form& f) {
  const KernelDesc& n = c.n;
  const CostOptions& o = c.o;
  KernelWork& w = c.w;
  const double bytes = c.bytes;
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
    const double per_gate = vector_weight(f.gate) + 3;
    w.vector_ops = steps * dirs * batch * gate_rows * per_gate;
  }
  w.min_l1_bytes = static_cast<int64_t>(2 * 16 * 16 * bytes);
}

// The Vector work after a product, as the tile leaves the Cube: the form's fixed
// operations, a bias where given, an activation where named.
void add_epilogue(const OpWork& c, const Form& f) {
  if (!f.epilogue_ops && f.bias_input < 0 && !f.activation) return;
  const Attribute* activation = f.activation ? find_attr(c.n, "activation") : nullptr;
  const bool has_bias =
      f.bias_input >= 0 && c.n.inputs.size() > static_cast<size_t>(f.bias_input) && c.n.inputs[f.bias_input];
  c.w.vector_ops = c.out.elements *
                   (f.epilogue_ops + (has_bias ? 1 : 0) + (activation && activation->s != "none" ? 1 : 0));
}

// MatMul, Gemm and their fused forms: products on the Cube; bias and activation on the
// Vector unit as the tile leaves it; an ND operand converted to FRACTAL_NZ on every call.
void matmul_work(const OpWork& c, const Form& f) {
  const KernelDesc& n = c.n;
  const CostOptions& o = c.o;
  const Extent& out = c.out;
  KernelWork& w = c.w;
  const double bytes = c.bytes;
  Extent a = extent(at(n.inputs, 0), o), b = extent(at(n.inputs, static_cast<size_t>(f.operand_b)), o);
  if (a.known && b.known && !a.empty() && !b.empty()) {
    const Attribute* trans_a = find_attr(n, "transA");
    double k =
        f.gemm && trans_a && trans_a->i ? static_cast<double>(a.front()) : static_cast<double>(a.back());
    w.cube_macs = out.elements * k;
    if (out.known && !out.empty()) {
      // Against a 2-D B (a weight) every leading dim of A is rows of one product: a
      // sequence-first [L, N, E] activation (nn.MultiheadAttention's) is one GEMM of L x N
      // rows, not L products of N rows. A stack of B's multiplies matrix by matrix.
      const int64_t cols = out.back();
      const int64_t rows = b.rank() == 2 && cols > 0 ? static_cast<int64_t>(out.elements) / cols
                                                     : (out.rank() >= 2 ? out.dim(out.rank() - 2) : 1);
      w.products.push_back({out.elements / (static_cast<double>(rows) * static_cast<double>(cols)), rows,
                            cols, static_cast<int64_t>(k)});
    }
  }
  // Bias and activation on the Vector unit, as the tile leaves the Cube.
  add_epilogue(c, f);
  // The Cube reads a matrix operand in FRACTAL_NZ: a 2-D one in ND is converted on
  // every call (a TransData kernel: read it, write it) unless it was laid out at compile time.
  const Attribute* b_format = find_attr(n, "b_format");
  // So is a stack of matrices against a 2-D operand (merged projections' weights).
  // (An int8 QuantMatMul's weight is a constant too, laid out when the plan is built.)
  if (b.known && (b.rank() == 2 || (b.rank() == 3 && a.known && a.rank() == 2)) &&
      !(b_format && parse_format(b_format->s) == Format::FRACTAL_NZ) && !f.weights_prepacked) {
    const double b_bytes = b.elements * compute_bytes(b.dtype, n.op_type, o);
    c.move(b_bytes, c.is_constant(static_cast<size_t>(f.operand_b)), true);
    c.move(b_bytes, false, false);
    ++w.extra_launches;
  }
  // Smallest tile: one 16x16 fractal of each operand and of the fp32 accumulator.
  w.min_l1_bytes = static_cast<int64_t>(2 * 16 * 16 * bytes);
}

// Convolutions (Conv, FusedConv, ConvTranspose, QuantConv, ConvInteger): an implicit GEMM per group on
// the Cube, whole C0 blocks of input channels; NCHW activations and weights converted.
void conv_work(const OpWork& c, const Form& f) {
  const KernelDesc& n = c.n;
  const CostOptions& o = c.o;
  const Extent& out = c.out;
  KernelWork& w = c.w;
  const double bytes = c.bytes;
  const std::string& op = c.n.op_type;
  Extent x = extent(at(n.inputs, 0), o), wt = extent(at(n.inputs, static_cast<size_t>(f.operand_b)), o);
  if (x.known && wt.known && wt.rank() >= 3) {
    double per_output = 1;  // (C / group) * kernel spatial
    for (size_t i = 1; i < wt.rank(); ++i) per_output *= static_cast<double>(wt.dim(i));
    const Attribute* weight_format = find_attr(n, "weight_format");
    const bool fractal = weight_format && parse_format(weight_format->s) == Format::FRACTAL_Z;
    const Attribute* group = find_attr(n, "group");
    const bool on_cube = (!group || group->i == 1) && !f.transposed;
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
    if (f.converts_weights && !fractal && (!group || group->i == 1) && data_format &&
        parse_format(data_format->s) == Format::NC1HWC0) {
      const double w_bytes = wt.elements * compute_bytes(wt.dtype, n.op_type, o);
      c.move(w_bytes, c.is_constant(static_cast<size_t>(f.operand_b)), true);
      c.move(w_bytes, false, false);
      ++w.extra_launches;
    }
    // Output values: an NC1HWC0 output holds C1 x C0 lanes a position, of which the
    // conv computes its M channels (int8's 32 lanes would count a 2-channel conv 16 times).
    const double out_channels =
        fractal ? static_cast<double>(wt.dim(1) * wt.dim(2)) : static_cast<double>(wt.dim(0));
    const double outputs =
        out.known && out.rank() == 5 && wt.rank() == 4  // (a 3-D conv's NCDHW is rank 5 too)
            ? static_cast<double>(out.dim(0) * out.dim(2) * out.dim(3)) * out_channels
            : out.elements;
    // Conv: every output takes (C/group)*k MACs. ConvTranspose (weights [C, M/group, k]):
    // every input scatters (M/group)*k MACs.
    w.cube_macs = (f.transposed ? x.elements : outputs) * per_output;
    // As an implicit GEMM per group: output positions x output channels x the reduction
    // (its channels and kernel window flattened, padded to whole fractals by the tiling).
    const double groups = static_cast<double>(group && group->i > 1 ? group->i : 1);
    double spatial = 1;  // kernel window
    for (size_t i = 2; i < wt.rank(); ++i) spatial *= static_cast<double>(wt.dim(i));
    if (fractal) spatial = 1;  // FRACTAL_Z: [C1 x kH x kW, N1, 16, C0]; per_output is already the reduction
    if (f.transposed) {
      const double in_channels = static_cast<double>(wt.dim(0)),
                   out_per_group = static_cast<double>(wt.dim(1));
      w.products.push_back({groups, static_cast<int64_t>(x.elements / std::max(in_channels, 1.0)),
                            static_cast<int64_t>(out_per_group * spatial),
                            static_cast<int64_t>(in_channels / groups)});
    } else if (out.known && !out.empty()) {
      w.products.push_back({groups, static_cast<int64_t>(outputs / std::max(out_channels, 1.0)),
                            static_cast<int64_t>(out_channels / groups), static_cast<int64_t>(per_output)});
    }
  }
  add_epilogue(c, f);
  // A FusedConv that also writes its channel means (output 1) adds each output value into
  // its channel's sum as the tile leaves the Unified Buffer: one more Vector operation per
  // output element, and no second read of the output from HBM.
  if (at(n.outputs, 1) && out.known) w.vector_ops += out.elements;
  // A FusedConv that reads its input times one scale per channel (input 4, a squeeze-
  // and-excitation gate) multiplies the smaller of its weights and its input by it on the
  // Vector unit as it moves them (the weights only where one scale serves every sample),
  // in place of an elementwise kernel that reads and writes the whole input in HBM.
  if (const ValueType* scale = at(n.inputs, 4); scale && op == "FusedConv" && x.known && wt.known) {
    const Extent s = extent(scale, o);
    w.vector_ops += s.known && !s.empty() && s.front() == 1 ? std::min(wt.elements, x.elements) : x.elements;
  }
  // A FusedQuantConv that quantizes its float input as it reads it: one more Vector
  // operation per input element.
  if (const Attribute* quantize = find_attr(n, "quantize_input"); quantize && quantize->i && x.known)
    w.vector_ops += x.elements;
  w.min_l1_bytes = static_cast<int64_t>(2 * 16 * 16 * bytes);
  // The Cube reads NC1HWC0 only: a conv in NCHW converts its input and its output
  // (each conversion reads one layout and writes the other) in two extra kernels.
  const Attribute* format = find_attr(n, "data_format");
  // ONNX Runtime's NCHWc convs hold blocked activations, as NC1HWC0 does.
  if (x.known && wt.known && !f.blocked && !(format && parse_format(format->s) == Format::NC1HWC0) &&
      n.domain != "com.microsoft.nchwc") {
    // (An int8 conv converts its 8-bit input and its float output.)
    const double out_bytes = out.elements * (op_registry().traits(n.domain, op).integer_products
                                                 ? compute_bytes(out.dtype, n.op_type, o)
                                                 : bytes);
    const double in_bytes = x.elements * bytes;
    for (double b : {in_bytes, out_bytes}) {
      c.move(b, false, true);
      c.move(b, false, false);
    }
    w.extra_launches = 2;
  }
}

// DeformConv: a conv of its weights on the Cube, after the Vector unit samples its columns
// at the moved taps (four samples blended, and the mask, per element of every column).
void deform_conv_work(const OpWork& c, const Form& f) {
  conv_work(c, f);
  const Extent wt = extent(at(c.n.inputs, 1), c.o);
  if (!c.out.known || !wt.known || wt.rank() != 4 || c.out.rank() != 4 || wt.dim(0) <= 0) return;
  const Attribute* group = find_attr(c.n, "group");
  const double in_channels = static_cast<double>(wt.dim(1) * (group && group->i > 1 ? group->i : 1));
  const double columns = c.out.elements / static_cast<double>(wt.dim(0)) * in_channels *
                         static_cast<double>(wt.dim(2) * wt.dim(3));
  c.w.vector_ops += columns * 9;
}

// FlashAttention and FlashAttentionLayerNorm: the blocked loop, softmax on the Vector units.
void attention_work(const OpWork& c, const Form& f) {
  const KernelDesc& n = c.n;
  const CostOptions& o = c.o;
  const Extent& out = c.out;
  KernelWork& w = c.w;
  const double bytes = c.bytes;
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
    if (f.then_layer_norm) {
      // The finished rows are normalized and the residual added before they leave
      // UB: the residual tile, scale and bias join the working set.
      w.vector_ops += out.elements * (vector_weight("LayerNorm") + 1);
      w.min_ub_bytes += static_cast<int64_t>((16 * dv + 2 * dv) * bytes);
    }
  }
}

// Ops that need a whole row in UB in one pass (LayerNorm, Softmax, ...).
void row_work(const OpWork& c, const Form& f) {
  const KernelDesc& n = c.n;
  const Extent& out = c.out;
  KernelWork& w = c.w;
  const double bytes = c.bytes;
  const std::string& op = c.n.op_type;
  w.vector_ops = out.elements * vector_weight(op);
  double row = out.known && !out.empty() ? static_cast<double>(out.back()) : 0;
  // A LayerNorm over channels normalizes across C (NCHW) or C1 x C0 (NC1HWC0) at each position.
  if (const Attribute* format = find_attr(n, "data_format"); format && out.known) {
    const std::optional<Format> layout = parse_format(format->s);
    if (layout == Format::NCHW && out.rank() >= 2) row = static_cast<double>(out.dim(1));
    if (layout == Format::NC1HWC0 && out.rank() == 5) row = static_cast<double>(out.dim(1) * out.dim(4));
  }
  // One row of input and output in the compute type, plus an fp32 working copy, double-buffered.
  const int64_t row_bytes = static_cast<int64_t>(2 * row * ((f.row_inputs + 1) * bytes + 4));
  if (n.domain.empty()) {
    // CANN's standard kernels fall back to two passes over HBM when a row does not
    // fit: always feasible, at the price of reading the input again.
    w.spills_row = row_bytes;
    // Its LayerNorm writes each row's mean and variance (fp32) whether or not they are
    // read; geopt's LayerNorm writes the normalized rows only.
    if (f.writes_statistics && row > 0) {
      double cols = 1;  // the normalized axes, axis .. rank-1
      const Attribute* axis = find_attr(n, "axis");
      const int64_t rank = static_cast<int64_t>(out.rank());
      const int64_t from = axis ? (axis->i < 0 ? axis->i + rank : axis->i) : rank - 1;
      for (int64_t d = std::max<int64_t>(from, 0); d < rank; ++d)
        cols *= static_cast<double>(out.dim(static_cast<size_t>(d)));
      for (size_t k = 1; k <= 2;
           ++k)  // Mean and InvStdDev, where the node does not already count them as outputs
        if (k >= n.outputs.size() || !n.outputs[k]) c.move(4 * out.elements / cols, false, false);
    }
  } else {
    w.min_ub_bytes = row_bytes;  // fused kernels are single-pass by design
  }
}

// Data movement (Transpose, Concat, TransData, ...): the memory transfer engines, but a
// Transpose, which the Vector unit permutes element by element through UB.
void data_movement_work(const OpWork& c, const Form& f) {
  const Extent& out = c.out;
  KernelWork& w = c.w;
  w.vector_ops = 0;  // moved by the memory transfer engines
  // ...except a Transpose, which the Vector unit permutes element by element through UB
  // (cost_of prices it with the profile's vector.transpose_ops).
  if (f.permutes) w.permuted_elements = out.elements;
}

// MaxPool and AveragePool: every output element reduces its window.
void pool_work(const OpWork& c, const Form&) {
  const KernelDesc& n = c.n;
  const Extent& out = c.out;
  KernelWork& w = c.w;
  // Every output element reduces its window.
  double window = 1;
  if (const Attribute* k = find_attr(n, "kernel_shape"))
    for (int64_t d : k->ints) window *= static_cast<double>(d);
  w.vector_ops = out.elements * window;
}

// Reductions (Reduce*, ArgMax, ArgMin, global pools): every input element once.
void reduction_work(const OpWork& c, const Form&) {
  const KernelDesc& n = c.n;
  const CostOptions& o = c.o;
  KernelWork& w = c.w;
  double in = 0;
  for (const ValueType* v : n.inputs)
    if (v) in = std::max(in, extent(v, o).elements);
  w.vector_ops = in;
}

// Everything else: its Vector operations per output element.
void elementwise_work(const OpWork& c, const Form&) {
  const Extent& out = c.out;
  KernelWork& w = c.w;
  const std::string& op = c.n.op_type;
  w.vector_ops = out.elements * vector_weight(op);
}

using WorkFn = void (*)(const OpWork&, const Form&);

struct Class {
  WorkFn fn;
  bool onnx_only = false;  // the op of ONNX's default domain only
  Form form;
};

// The class of an op by its name, with what sets it apart in its class.
const Class& work_class(const KernelDesc& n) {
  static const std::map<std::string, Class, std::less<>> kClasses = [] {
    std::map<std::string, Class, std::less<>> m;
    for (const char* op : {"MatMul", "MatMulInteger"}) m[op] = {matmul_work, false, {}};
    m["Gemm"] = {matmul_work, false, {.gemm = true, .epilogue_ops = 2}};
    m["FusedGemm"] = {matmul_work, false, {.gemm = true, .epilogue_ops = 3}};
    m["FusedMatMul"] = {matmul_work, false, {.bias_input = 2, .activation = true}};
    m["QuantMatMul"] = {matmul_work,
                        false,
                        {.epilogue_ops = 2, .bias_input = 6, .activation = true, .weights_prepacked = true}};
    // ONNX's QLinearMatMul and QLinearConv: the int8 product, requantized as it leaves.
    m["QLinearMatMul"] = {matmul_work, true, {.operand_b = 3, .epilogue_ops = 2}};
    for (const char* op : {"Conv", "ConvInteger"}) m[op] = {conv_work, false, {}};
    m["QLinearConv"] = {conv_work, true, {.operand_b = 3, .epilogue_ops = 2, .bias_input = 8}};
    m["FusedConv"] = {conv_work, false, {.epilogue_ops = 2, .converts_weights = true}};
    m["QuantConv"] = {conv_work, false, {.epilogue_ops = 2}};
    m["FusedQuantConv"] = {conv_work, false, {.epilogue_ops = 2, .blocked = true}};
    m["ConvTranspose"] = {conv_work, false, {.transposed = true}};
    m["DeformConv"] = {deform_conv_work, true, {}};
    m["FlashAttention"] = {attention_work, false, {}};
    m["FlashAttentionLayerNorm"] = {attention_work, false, {.then_layer_norm = true}};
    for (const char* op : {"MaxPool", "AveragePool"}) m[op] = {pool_work, false, {}};
    for (const char* op : {"ArgMax", "ArgMin", "GlobalAveragePool", "GlobalMaxPool"})
      m[op] = {reduction_work, false, {}};
    for (const std::string& op : kRowOps) m[op] = {row_work, false, {}};
    for (const char* op : {"AddLayerNorm", "SkipLayerNormalization", "SkipSimplifiedLayerNormalization"})
      m[op].form.row_inputs = 2;
    m["LayerNormalization"].form.writes_statistics = true;
    for (const std::string& op : kDataMovement) m[op] = {data_movement_work, true, {}};
    m["Transpose"].form.permutes = true;
    for (const char* op : {"TransData", "ReorderInput", "ReorderOutput", "ChannelMove", "Roll"})
      m[op] = {data_movement_work, false, {}};
    for (const char* op : {"GRU", "LSTM"}) m[op] = {recurrent_work, true, {}};
    m["RNN"] = {recurrent_work, true, {.gate = "Tanh"}};
    m["SwiGLU"] = {swiglu_work, false, {}};
    return m;
  }();
  static const Class reduction{reduction_work, false, {}}, elementwise{elementwise_work, false, {}};
  auto it = kClasses.find(n.op_type);
  if (it != kClasses.end() && (!it->second.onnx_only || n.domain.empty())) return it->second;
  if (std::string_view(n.op_type).starts_with("Reduce")) return reduction;
  return elementwise;
}

}  // namespace

void add_op_work(const OpWork& c) {
  const Class& k = work_class(c.n);
  k.fn(c, k.form);
}

}  // namespace geopt::ascend
