// Control flow: If, Loop and Scan. Each body runs through the evaluator (run_body)
// with the node's scope, so it reads the enclosing graphs' values by name. Bodies are
// parsed once per distinct serialized body and kept for the process.
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "eval/evaluator.h"
#include "eval/kernel.h"
#include "ir/value.h"
#include "kernels/layout.h"
#include "onnx/import.h"

namespace geopt {
namespace {

const Graph& body_of(const KernelContext& ctx, const char* attr) {
  const Attribute* a = ctx.node().attr(attr);
  if (!a || a->kind != AttrKind::Graph || a->opaque.size() != 1) ctx.fail(std::string("needs the graph attribute '") + attr + "'");
  static std::mutex mutex;
  static std::unordered_map<std::string, std::unique_ptr<Graph>> bodies;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = bodies[a->opaque[0]];
  if (!slot) slot = import_subgraph(a->opaque[0], ctx.node().describe() + " " + attr);
  return *slot;
}

const Scope& scope_of(const KernelContext& ctx) {
  if (!ctx.scope()) ctx.fail("a control-flow node runs only inside a graph (no enclosing scope here)");
  return *ctx.scope();
}

bool truth(const KernelContext& ctx, const HostTensor& t, const char* what) {
  if (t.size() != 1) ctx.fail(std::string(what) + " must hold one element, not " + t.shape_string());
  if (t.dtype() == DType::Bool) return t.data<bool>()[0];
  return t.int_at(0) != 0;
}

// Element i of axis `axis` of x, with that axis removed.
HostTensor slice_along(const HostTensor& x, int64_t axis, int64_t i) {
  std::vector<int64_t> dims = x.dims();
  const int64_t len = dims[static_cast<size_t>(axis)];
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= dims[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(axis) + 1; a < dims.size(); ++a) inner *= dims[a];
  dims.erase(dims.begin() + axis);
  HostTensor y(x.dtype(), dims);
  const size_t esz = dtype_size(x.dtype());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(y.mutable_raw() + static_cast<size_t>(o * inner) * esz, x.raw() + static_cast<size_t>((o * len + i) * inner) * esz,
                static_cast<size_t>(inner) * esz);
  return y;
}

// The parts (one shape) stacked along a new axis `axis`.
HostTensor stack(const KernelContext& ctx, const std::vector<HostTensor>& parts, int64_t axis) {
  std::vector<int64_t> dims = parts[0].dims();
  for (const auto& p : parts)
    if (p.dims() != parts[0].dims() || p.dtype() != parts[0].dtype())
      ctx.fail("scan outputs differ between iterations: " + parts[0].shape_string() + " and " + p.shape_string());
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= dims[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(axis); a < dims.size(); ++a) inner *= dims[a];
  const int64_t n = static_cast<int64_t>(parts.size());
  dims.insert(dims.begin() + axis, n);
  HostTensor y(parts[0].dtype(), dims);
  const size_t esz = dtype_size(y.dtype());
  for (int64_t k = 0; k < n; ++k)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.mutable_raw() + static_cast<size_t>((o * n + k) * inner) * esz, parts[static_cast<size_t>(k)].raw() + static_cast<size_t>(o * inner) * esz,
                  static_cast<size_t>(inner) * esz);
  return y;
}

// An empty scan output: no iteration ran, so its shape comes from the body's declaration.
HostTensor empty_scan_output(const Value& declared) {
  std::vector<int64_t> dims{0};
  if (declared.type.shape)
    for (const Dim& d : declared.type.shape->dims()) dims.push_back(d.is_static() ? d.value() : 0);
  return HostTensor(declared.type.dtype == DType::Undefined ? DType::F32 : declared.type.dtype, dims);
}

void if_kernel(KernelContext& ctx) {
  const bool cond = truth(ctx, ctx.input(0), "the condition");
  const Graph& body = body_of(ctx, cond ? "then_branch" : "else_branch");
  std::vector<HostTensor> outs = run_body(body, {}, scope_of(ctx));
  if (outs.size() != ctx.outputs.size())
    ctx.fail(std::string(cond ? "then" : "else") + "_branch has " + std::to_string(outs.size()) + " outputs for the node's " + std::to_string(ctx.outputs.size()));
  for (size_t i = 0; i < outs.size(); ++i) ctx.outputs[i] = std::move(outs[i]);
}

// Loop: runs the body while the trip count (M) and the condition allow, carrying N
// values and stacking K scan outputs along a new first axis.
void loop_kernel(KernelContext& ctx) {
  const Graph& body = body_of(ctx, "body");
  const Scope& scope = scope_of(ctx);
  const bool has_max = ctx.has_input(0) && ctx.input(0).size() > 0;
  const int64_t max_trips = has_max ? ctx.input(0).int_at(0) : 0;
  const bool has_cond = ctx.has_input(1);
  bool cond = has_cond ? truth(ctx, ctx.input(1), "the condition") : true;
  if (!has_max && !has_cond) ctx.fail("a Loop with neither a trip count nor a condition never ends");
  const size_t carried = ctx.input_count() - 2;
  if (body.inputs().size() != carried + 2) ctx.fail("the body takes " + std::to_string(body.inputs().size()) + " inputs for " + std::to_string(carried) + " carried values");
  if (body.outputs().size() < carried + 1) ctx.fail("the body has too few outputs");
  const size_t scans = body.outputs().size() - 1 - carried;
  std::vector<HostTensor> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(ctx.input(2 + i));
  std::vector<std::vector<HostTensor>> scan_parts(scans);
  for (int64_t trip = 0; (!has_max || trip < max_trips) && cond; ++trip) {
    std::vector<HostTensor> in{HostTensor::scalar<int64_t>(DType::I64, trip), HostTensor::scalar<bool>(DType::Bool, cond)};
    in.insert(in.end(), state.begin(), state.end());
    std::vector<HostTensor> out = run_body(body, in, scope);
    cond = truth(ctx, out[0], "the body's condition output");
    for (size_t i = 0; i < carried; ++i) state[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < scans; ++k) scan_parts[k].push_back(std::move(out[1 + carried + k]));
  }
  for (size_t i = 0; i < carried && i < ctx.outputs.size(); ++i) ctx.outputs[i] = std::move(state[i]);
  for (size_t k = 0; k < scans && carried + k < ctx.outputs.size(); ++k)
    ctx.outputs[carried + k] = scan_parts[k].empty() ? empty_scan_output(*body.outputs()[1 + carried + k]) : stack(ctx, scan_parts[k], 0);
}

// One scan over `length` steps: states carried, scan inputs sliced along their axes
// (reversed where their direction says), scan outputs stacked along theirs.
struct ScanLayout {
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
};

std::vector<HostTensor> run_scan(const KernelContext& ctx, const Graph& body, std::vector<HostTensor> state,
                                 const std::vector<HostTensor>& scan_in, const ScanLayout& layout, int64_t length) {
  const size_t n_state = state.size();
  const size_t n_out = body.outputs().size() - n_state;
  std::vector<std::vector<HostTensor>> parts(n_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<HostTensor> in = state;
    for (size_t m = 0; m < scan_in.size(); ++m) {
      const int64_t at = layout.in_reverse[m] ? length - 1 - t : t;
      in.push_back(slice_along(scan_in[m], layout.in_axes[m], at));
    }
    std::vector<HostTensor> out = run_body(body, in, scope_of(ctx));
    for (size_t i = 0; i < n_state; ++i) state[i] = std::move(out[i]);
    for (size_t k = 0; k < n_out; ++k) parts[k].push_back(std::move(out[n_state + k]));
  }
  std::vector<HostTensor> results = std::move(state);
  for (size_t k = 0; k < n_out; ++k) {
    if (parts[k].empty()) {
      results.push_back(empty_scan_output(*body.outputs()[n_state + k]));
      continue;
    }
    if (layout.out_reverse[k]) std::reverse(parts[k].begin(), parts[k].end());
    results.push_back(stack(ctx, parts[k], layout.out_axes[k]));
  }
  return results;
}

std::vector<int64_t> per_entry(const KernelContext& ctx, const char* attr, size_t count, const std::vector<int64_t>& ranks) {
  std::vector<int64_t> v = ctx.attr_ints(attr, std::vector<int64_t>(count, 0));
  if (v.size() != count) ctx.fail(std::string(attr) + " needs " + std::to_string(count) + " entries");
  for (size_t i = 0; i < count && i < ranks.size(); ++i) v[i] = normalize_axis(v[i], ranks[i]);
  return v;
}

void scan_kernel(KernelContext& ctx) {
  const Graph& body = body_of(ctx, "body");
  const int64_t n_scan = ctx.attr_int("num_scan_inputs", 0);
  const bool v8 = ctx.opset() < 9;  // opset 8: a leading sequence_lens input and batch axis 0
  const size_t first = v8 ? 1 : 0;
  if (n_scan < 1 || static_cast<size_t>(n_scan) + first > ctx.input_count()) ctx.fail("num_scan_inputs is out of range");
  const size_t n_state = ctx.input_count() - first - static_cast<size_t>(n_scan);
  if (body.outputs().size() < n_state) ctx.fail("the body has fewer outputs than states");
  const size_t n_out = body.outputs().size() - n_state;
  std::vector<HostTensor> state, scan_in;
  for (size_t i = 0; i < n_state; ++i) state.push_back(ctx.input(first + i));
  for (size_t m = 0; m < static_cast<size_t>(n_scan); ++m) scan_in.push_back(ctx.input(first + n_state + m));
  ScanLayout layout;
  if (!v8) {
    std::vector<int64_t> in_ranks, out_ranks;
    for (const auto& t : scan_in) in_ranks.push_back(static_cast<int64_t>(t.rank()));
    layout.in_axes = per_entry(ctx, "scan_input_axes", scan_in.size(), in_ranks);
    layout.in_reverse = per_entry(ctx, "scan_input_directions", scan_in.size(), {});
    // Output axes are normalized once the slices' rank is known (rank + 1 after stacking).
    layout.out_axes = ctx.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0));
    layout.out_reverse = per_entry(ctx, "scan_output_directions", n_out, {});
    if (layout.out_axes.size() != n_out) ctx.fail("scan_output_axes needs one entry per scan output");
    for (size_t k = 0; k < n_out; ++k) {
      const Value* declared = body.outputs()[n_state + k];
      if (layout.out_axes[k] < 0) {
        if (!declared->type.shape) ctx.fail("a negative scan_output_axes entry needs the body output's rank");
        layout.out_axes[k] += static_cast<int64_t>(declared->type.shape->rank()) + 1;
      }
    }
    int64_t length = -1;
    for (size_t m = 0; m < scan_in.size(); ++m) {
      const int64_t len = scan_in[m].dims()[static_cast<size_t>(layout.in_axes[m])];
      if (length >= 0 && len != length) ctx.fail("scan inputs differ in length along their scan axes");
      length = len;
    }
    auto results = run_scan(ctx, body, std::move(state), scan_in, layout, length);
    for (size_t i = 0; i < results.size() && i < ctx.outputs.size(); ++i) ctx.outputs[i] = std::move(results[i]);
    return;
  }
  // Opset 8: every input has the batch as axis 0 and scans along axis 1; each batch entry
  // runs on its own, for sequence_lens[b] steps (outputs past that stay zero).
  layout.in_axes.assign(scan_in.size(), 0);
  layout.in_reverse = per_entry(ctx, "directions", scan_in.size(), {});
  layout.out_axes.assign(n_out, 0);
  layout.out_reverse.assign(n_out, 0);
  const int64_t batch = scan_in[0].dims()[0], steps = scan_in[0].rank() > 1 ? scan_in[0].dims()[1] : 0;
  std::vector<std::vector<HostTensor>> per_output(n_state + n_out);
  for (int64_t b = 0; b < batch; ++b) {
    const int64_t len = ctx.has_input(0) && ctx.input(0).size() ? ctx.input(0).int_at(b) : steps;
    if (len < 0 || len > steps) ctx.fail("a sequence length is out of range");
    std::vector<HostTensor> st, in;
    for (const auto& s : state) st.push_back(slice_along(s, 0, b));
    for (const auto& s : scan_in) {
      HostTensor entry = slice_along(s, 0, b);
      if (len < steps) {  // only the first len steps take part
        std::vector<HostTensor> kept;
        for (int64_t t = 0; t < len; ++t) kept.push_back(slice_along(entry, 0, t));
        entry = kept.empty() ? HostTensor(entry.dtype(), [&] { auto d = entry.dims(); d[0] = 0; return d; }()) : stack(ctx, kept, 0);
      }
      in.push_back(std::move(entry));
    }
    auto results = run_scan(ctx, body, std::move(st), in, layout, len);
    for (size_t k = n_state; k < results.size(); ++k)
      if (results[k].dims()[0] < steps) {  // pad to the full length with zeros
        auto dims = results[k].dims();
        dims[0] = steps;
        HostTensor padded(results[k].dtype(), dims);
        std::memcpy(padded.mutable_raw(), results[k].raw(), results[k].nbytes());
        results[k] = std::move(padded);
      }
    for (size_t k = 0; k < results.size(); ++k) per_output[k].push_back(std::move(results[k]));
  }
  for (size_t k = 0; k < per_output.size() && k < ctx.outputs.size(); ++k) ctx.outputs[k] = stack(ctx, per_output[k], 0);
}

}  // namespace

void register_control_flow_kernels(KernelRegistry& r) {
  r.add("", "If", if_kernel, /*half_via_f32=*/false);
  r.add("", "Loop", loop_kernel, /*half_via_f32=*/false);
  r.add("", "Scan", scan_kernel, /*half_via_f32=*/false);
}

}  // namespace geopt
