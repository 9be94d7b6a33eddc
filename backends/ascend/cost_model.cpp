#include "cost_model.h"

#include "device_ops/device_ops.h"
#include "memory_plan.h"
#include "op_work.h"
#include "ops/op_traits.h"
#include "passes/control_flow_bodies.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <unordered_set>

namespace geopt::ascend {

KernelDesc describe(const Node& n) {
  KernelDesc d{n.domain, n.op_type, &n.attributes, {}, {}};
  for (const Value* v : n.inputs()) {
    const bool constant = v && (v->initializer || (v->producer() && is_constant_node(*v->producer())));
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

namespace {

// Axis 0 of the output, when the kernel computes each index of it from the same index of
// its activation inputs alone: an op that does so per sample (op_traits), each activation
// input of the output's rank with its axis 0 (or 1, broadcast), and no axis attribute
// (axis, axes, perm) naming it. 1 otherwise.
int64_t independent_samples(const KernelDesc& n, const CostOptions& o) {
  const OpTraits& traits = op_registry().traits(n.domain, n.op_type);
  if (!traits.elementwise && !traits.per_sample) return 1;
  const Extent out = extent(at(n.outputs, 0), o);
  if (!out.known || out.rank() < 2 || out.front() < 2) return 1;
  bool any = false;
  for (size_t i = 0; i < n.inputs.size(); ++i) {
    if (!n.inputs[i] || (i < 64 && (n.constant_inputs >> i & 1))) continue;
    const Extent in = extent(n.inputs[i], o);
    if (!in.known || in.rank() != out.rank() || (in.front() != out.front() && in.front() != 1)) return 1;
    any = any || in.front() == out.front();
  }
  if (!any) return 1;
  const int64_t rank = static_cast<int64_t>(out.rank());
  if (n.attributes)
    for (const Attribute& a : *n.attributes) {
      if (a.name == "perm" && !a.ints.empty() && a.ints[0] != 0) return 1;
      if (a.name == "axis" && (a.i == 0 || a.i == -rank)) return 1;
      if (a.name == "axes")
        for (int64_t axis : a.ints)
          if (axis == 0 || axis == -rank) return 1;
    }
  return out.front();
}

}  // namespace

KernelWork work_of(const KernelDesc& n, const CostOptions& o) {
  KernelWork w;
  w.op = n.domain.empty() ? n.op_type : n.domain + "::" + n.op_type;
  Extent out = extent(at(n.outputs, 0), o);
  w.dtype = o.precision.planned(n.op_type, out.known ? out.dtype : DType::F32);
  const OpTraits& traits = op_registry().traits(n.domain, n.op_type);
  // The int8 Cube ops read 8-bit operands: the Cube runs at its int8 rate. One that
  // quantizes its float input as it reads it (quantize_input: AscendQuant taken into the
  // conv) multiplies the 8-bit values it made, of its zero point's type (input 3).
  if (traits.integer_products) {
    const Extent x = extent(at(n.inputs, 0), o);
    const Attribute* quantizes = find_attr(n, "quantize_input");
    const Extent zero = quantizes && quantizes->i ? extent(at(n.inputs, 3), o) : Extent{};
    if (zero.known && dtype_size(zero.dtype) == 1)
      w.dtype = zero.dtype;
    else if (x.known)
      w.dtype = x.dtype;
    w.vector_dtype = o.precision.planned(n.op_type, DType::F32);
  }
  if (traits.view || traits.shape_only || is_view_transpose(n) || is_view_split(n)) {
    w.is_kernel = false;
    return w;
  }
  const OpWork c{n, o, out, static_cast<double>(std::max<size_t>(dtype_size(w.dtype), 1)), w};
  // Memory traffic: every input is read once and every output written once. Constant
  // inputs are weights: read too (they live in device memory). A gather or a slice reads
  // only what it copies out (an embedding lookup reads its rows, not the table).
  const bool reads_what_it_writes = op_registry().traits(n.domain, n.op_type).reads_what_it_writes;
  for (size_t i = 0; i < n.inputs.size(); ++i)
    if (const ValueType* in = n.inputs[i]) {
      const Extent e = extent(in, o);
      double b = e.elements * compute_bytes(e.dtype, n.op_type, o);
      if (i == 0 && reads_what_it_writes && out.known)
        b = std::min(b, out.elements * compute_bytes(e.dtype, n.op_type, o));
      c.move(b, c.is_constant(i), true);
    }
  for (const ValueType* v : n.outputs)
    if (v) {
      const Extent e = extent(v, o);
      c.move(e.elements * compute_bytes(e.dtype, n.op_type, o), false, false);
    }
  add_op_work(c);
  if (o.l2_buffer_optimize) w.independent_samples = independent_samples(n, o);
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
  const DType lanes = w.vector_dtype == DType::Undefined ? w.dtype : w.vector_dtype;
  const double lane_bytes =
      static_cast<double>(std::max<size_t>(dtype_size(lanes) >= 4 ? 4 : dtype_size(lanes), 1));
  const double vector_ops = w.vector_ops + w.permuted_elements * p.vector_transpose_ops;
  c.vector_us =
      vector_ops * lane_bytes / (p.vector_bytes_per_cycle * p.vector_efficiency * p.vector_cores * hz) * 1e6;
  // Up to its share of L2, a tensor is still there when its consumer reads it (a larger
  // one, that much of it); weights come from device memory (the previous run evicted
  // them), as does the rest, at the bandwidth streaming kernels reach.
  const double resident = p.l2_resident_share * static_cast<double>(p.l2_bytes);
  const bool two_passes = w.spills_row > p.ub;  // statistics, then normalize: the input is read twice
  // ATC's L2 buffer optimization (--buffer_optimize=l2_optimize, its default): a kernel
  // whose activations exceed L2 but whose samples are independent runs slice by slice
  // along the batch, whole samples a slice, each small enough to stay in L2 between
  // producer and consumer; its weights are read once per slice. Taken only where it
  // costs less memory time.
  double activations = 0;
  for (const KernelWork::Traffic& t : w.traffic)
    if (!t.constant) activations += t.bytes * (two_passes && t.read ? 2 : 1);
  const auto samples = static_cast<double>(w.independent_samples);
  const double per_sample = activations / samples;
  const double slices =
      w.independent_samples > 1 && activations > resident && per_sample > 0 && per_sample <= resident
          ? std::ceil(samples / std::floor(resident / per_sample))
          : 1;
  auto split = [&](double with_slices, double& l2, double& dram) {
    l2 = dram = 0;
    for (const KernelWork::Traffic& t : w.traffic) {
      const double b = t.bytes * (two_passes && t.read ? 2 : 1) * (t.constant ? with_slices : 1);
      const double in_l2 = t.constant ? 0 : with_slices > 1 ? b : std::min(b, resident);
      l2 += in_l2;
      dram += b - in_l2;
    }
    return (dram / (p.hbm_gbps * p.memory_efficiency * 1e9) + l2 / (p.l2_gbps * 1e9)) * 1e6;
  };
  c.memory_us = split(1, c.l2_bytes, c.dram_bytes);
  if (slices > 1) {
    double l2 = 0, dram = 0;
    const double sliced_us = split(slices, l2, dram);
    if (sliced_us < c.memory_us) c.memory_us = sliced_us, c.l2_bytes = l2, c.dram_bytes = dram;
  }
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

std::unordered_set<const Value*> compile_time_values(const Graph& g) {
  std::unordered_set<const Value*> constant(g.initializers().begin(), g.initializers().end());
  for (const Value* in : g.inputs()) constant.erase(in);
  for (const auto& n : g.nodes())
    if (runs_at_compile_time(*n, constant))
      for (const Value* out : n->outputs()) constant.insert(out);
  return constant;
}

bool runs_at_compile_time(const Node& n, const std::unordered_set<const Value*>& constants) {
  bool of_constants = !n.inputs().empty();
  for (const Value* in : n.inputs()) of_constants = of_constants && (!in || constants.count(in));
  return (of_constants || is_constant_node(n)) && !n.is_nondeterministic();
}

GraphCost cost_of_graph(const Graph& g, const HardwareProfile& p, const CostOptions& o) {
  GraphCost gc;
  const std::unordered_set<const Value*> constant = compile_time_values(g);
  for (const auto& n : g.nodes()) {
    if (runs_at_compile_time(*n, constant)) continue;
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
