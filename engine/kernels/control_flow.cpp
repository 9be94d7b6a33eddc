// Control flow: If, Loop and Scan. A body runs as a sub-plan where the plan executor
// runs the node (Scope::run_body), else through the reference evaluator (run_body) with
// the node's captured inputs; body graphs are parsed once per distinct serialized body.
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "eval/evaluator.h"
#include "eval/kernel.h"
#include "eval/run_limits.h"
#include "ir/value.h"
#include "kernels/layout.h"
#include "onnx/captures.h"
#include "onnx/import.h"

namespace geopt {
namespace {

const Graph& body_of(const KernelContext& ctx, const char* attr) {
  const Attribute* a = ctx.node().attr(attr);
  if (!a || a->kind != AttrKind::Graph || a->opaque.size() != 1)
    ctx.fail(std::string("needs the graph attribute '") + attr + "'");
  static std::mutex mutex;
  static std::unordered_map<std::string, std::unique_ptr<Graph>> bodies;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = bodies[a->opaque[0]];
  if (!slot) slot = import_subgraph(a->opaque[0], ctx.node().describe() + " " + attr);
  return *slot;
}

// What a body sees of the graphs around it: the node's captured inputs, by the names the
// body uses (onnx/captures.h). The opsets and kernels are the enclosing run's; run alone
// (constant folding, the plan executor) the node's own opset serves.
class CaptureScope final : public Scope {
 public:
  explicit CaptureScope(const KernelContext& ctx) : outer_(ctx.scope()), ops_(ctx.ops()) {
    if (!outer_) own_model_.opsets.push_back({"", ctx.opset()});
    const size_t k = capture_count(ctx.node());
    const size_t first = ctx.input_count() - std::min(k, ctx.input_count());
    if (const Attribute* names = ctx.node().attr(kCapturesAttr))
      for (size_t i = 0; i < k && first + i < ctx.input_count(); ++i)
        if (ctx.has_input(first + i)) captured_[names->strings[i]] = &ctx.input(first + i);
  }
  const Model& model() const override { return outer_ ? outer_->model() : own_model_; }
  const OpRegistry& kernels() const override { return outer_ ? outer_->kernels() : ops_; }
  const HostTensor* find(std::string_view name) const override {
    auto it = captured_.find(std::string(name));
    if (it != captured_.end()) return it->second;
    return outer_ ? outer_->find(name) : nullptr;
  }

 private:
  const Scope* outer_;
  const OpRegistry& ops_;
  Model own_model_;
  std::map<std::string, const HostTensor*> captured_;
};

// Runs body `attr`: as a sub-plan where the enclosing run has them (the plan executor),
// else its graph with the reference evaluator.
std::vector<HostTensor> run_named_body(const KernelContext& ctx, const CaptureScope& scope, const char* attr,
                                       const std::vector<HostTensor>& in) {
  if (ctx.scope())
    if (auto outs = ctx.scope()->run_body(ctx.node(), attr, in)) return std::move(*outs);
  return run_body(body_of(ctx, attr), in, scope);
}

// The node's own inputs, captures left out.
size_t own_inputs(const KernelContext& ctx) {
  return ctx.input_count() - std::min(capture_count(ctx.node()), ctx.input_count());
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
    std::memcpy(y.mutable_raw() + static_cast<size_t>(o * inner) * esz,
                x.raw() + static_cast<size_t>((o * len + i) * inner) * esz, static_cast<size_t>(inner) * esz);
  return y;
}

// The parts (one shape) stacked along a new axis `axis`.
HostTensor stack(const KernelContext& ctx, const std::vector<HostTensor>& parts, int64_t axis) {
  std::vector<int64_t> dims = parts[0].dims();
  for (const auto& p : parts)
    if (p.dims() != parts[0].dims() || p.dtype() != parts[0].dtype())
      ctx.fail("scan outputs differ between iterations: " + parts[0].shape_string() + " and " +
               p.shape_string());
  int64_t outer = 1, inner = 1;
  for (int64_t a = 0; a < axis; ++a) outer *= dims[static_cast<size_t>(a)];
  for (size_t a = static_cast<size_t>(axis); a < dims.size(); ++a) inner *= dims[a];
  const int64_t n = static_cast<int64_t>(parts.size());
  dims.insert(dims.begin() + axis, n);
  HostTensor y(parts[0].dtype(), dims);
  const size_t esz = dtype_size(y.dtype());
  for (int64_t k = 0; k < n; ++k)
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.mutable_raw() + static_cast<size_t>((o * n + k) * inner) * esz,
                  parts[static_cast<size_t>(k)].raw() + static_cast<size_t>(o * inner) * esz,
                  static_cast<size_t>(inner) * esz);
  return y;
}

// An empty scan output: no iteration ran, so it has length 0 along its scan axis
// (`axis`, counted in the output's rank when negative). Its other dims come from the
// node output's type, else from the body's declaration of the slice. (The node's type
// may give another length: a plan's says the trips it was compiled with.)
HostTensor empty_scan_output(const KernelContext& ctx, size_t output, const char* attr, size_t body_output,
                             int64_t axis) {
  const Value* v = ctx.node().output(output);
  std::vector<int64_t> dims;
  DType dtype;
  int64_t length_at = -1;  // where dims has the length, which moves to `axis`
  if (v && v->type.shape && v->type.shape->is_static() && v->type.shape->rank() > 0 &&
      v->type.dtype != DType::Undefined) {
    for (const Dim& d : v->type.shape->dims()) dims.push_back(d.value());
    dtype = v->type.dtype;
  } else {
    const Graph& body = body_of(ctx, attr);
    if (body_output >= body.outputs().size()) ctx.fail("the body has too few outputs");
    const Value& declared = *body.outputs()[body_output];
    dims.push_back(0);
    length_at = 0;
    if (declared.type.shape)
      for (const Dim& d : declared.type.shape->dims()) dims.push_back(d.is_static() ? d.value() : 0);
    dtype = declared.type.dtype == DType::Undefined ? DType::F32 : declared.type.dtype;
  }
  const int64_t rank = static_cast<int64_t>(dims.size());
  const int64_t at = axis < 0 ? axis + rank : axis;
  if (at < 0 || at >= rank)
    ctx.fail("scan output axis " + std::to_string(axis) + " is out of range for rank " +
             std::to_string(rank));
  if (length_at == 0) std::rotate(dims.begin(), dims.begin() + 1, dims.begin() + at + 1);
  dims[static_cast<size_t>(at)] = 0;
  return HostTensor(dtype, dims);
}

void if_kernel(KernelContext& ctx) {
  const bool cond = truth(ctx, ctx.input(0), "the condition");
  std::vector<HostTensor> outs =
      run_named_body(ctx, CaptureScope(ctx), cond ? "then_branch" : "else_branch", {});
  if (outs.size() != ctx.outputs.size())
    ctx.fail(std::string(cond ? "then" : "else") + "_branch has " + std::to_string(outs.size()) +
             " outputs for the node's " + std::to_string(ctx.outputs.size()));
  for (size_t i = 0; i < outs.size(); ++i) ctx.outputs[i] = std::move(outs[i]);
}

// Loop: runs the body while the trip count (M) and the condition allow, carrying N
// values and stacking K scan outputs along a new first axis.
void loop_kernel(KernelContext& ctx) {
  const CaptureScope scope(ctx);
  const bool has_max = ctx.has_input(0) && ctx.input(0).size() > 0;
  const int64_t max_trips = has_max ? ctx.input(0).int_at(0) : 0;
  const bool has_cond = ctx.has_input(1);
  bool cond = has_cond ? truth(ctx, ctx.input(1), "the condition") : true;
  if (!has_max && !has_cond) ctx.fail("a Loop with neither a trip count nor a condition never ends");
  if (own_inputs(ctx) < 2) ctx.fail("needs the trip count and condition inputs (either may be empty)");
  const size_t carried = own_inputs(ctx) - 2;
  if (ctx.outputs.size() < carried) ctx.fail("has fewer outputs than carried values");
  const size_t scans = ctx.outputs.size() - carried;
  std::vector<HostTensor> state;
  for (size_t i = 0; i < carried; ++i) state.push_back(ctx.input(2 + i));
  std::vector<std::vector<HostTensor>> scan_parts(scans);
  uint64_t grown = 0;  // bytes of scan outputs so far
  for (int64_t trip = 0; (!has_max || trip < max_trips) && cond; ++trip) {
    check_run_limits(ctx.node().describe(), static_cast<uint64_t>(trip) + 1, grown);
    std::vector<HostTensor> in{HostTensor::scalar<int64_t>(DType::I64, trip),
                               HostTensor::scalar<bool>(DType::Bool, cond)};
    in.insert(in.end(), state.begin(), state.end());
    std::vector<HostTensor> out = run_named_body(ctx, scope, "body", in);
    if (out.size() != 1 + carried + scans)
      ctx.fail("the body gives " + std::to_string(out.size()) + " outputs, not " +
               std::to_string(1 + carried + scans));
    cond = truth(ctx, out[0], "the body's condition output");
    for (size_t i = 0; i < carried; ++i) state[i] = std::move(out[1 + i]);
    for (size_t k = 0; k < scans; ++k) {
      grown += out[1 + carried + k].nbytes();
      scan_parts[k].push_back(std::move(out[1 + carried + k]));
    }
  }
  for (size_t i = 0; i < carried && i < ctx.outputs.size(); ++i) ctx.outputs[i] = std::move(state[i]);
  for (size_t k = 0; k < scans && carried + k < ctx.outputs.size(); ++k)
    ctx.outputs[carried + k] = scan_parts[k].empty()
                                   ? empty_scan_output(ctx, carried + k, "body", 1 + carried + k, 0)
                                   : stack(ctx, scan_parts[k], 0);
}

// One scan over `length` steps: states carried, scan inputs sliced along their axes
// (reversed where their direction says), scan outputs stacked along theirs.
struct ScanLayout {
  std::vector<int64_t> in_axes, in_reverse, out_axes, out_reverse;
};

std::vector<HostTensor> run_scan(const KernelContext& ctx, const CaptureScope& scope,
                                 std::vector<HostTensor> state, const std::vector<HostTensor>& scan_in,
                                 const ScanLayout& layout, int64_t length) {
  const size_t n_state = state.size();
  const size_t n_out = layout.out_axes.size();
  std::vector<std::vector<HostTensor>> parts(n_out);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<HostTensor> in = state;
    for (size_t m = 0; m < scan_in.size(); ++m) {
      const int64_t at = layout.in_reverse[m] ? length - 1 - t : t;
      in.push_back(slice_along(scan_in[m], layout.in_axes[m], at));
    }
    check_run_limits(ctx.node().describe(), 0, 0);  // a Scan's length is its inputs', but its time is not
    std::vector<HostTensor> out = run_named_body(ctx, scope, "body", in);
    if (out.size() != n_state + n_out)
      ctx.fail("the body gives " + std::to_string(out.size()) + " outputs, not " +
               std::to_string(n_state + n_out));
    for (size_t i = 0; i < n_state; ++i) state[i] = std::move(out[i]);
    for (size_t k = 0; k < n_out; ++k) parts[k].push_back(std::move(out[n_state + k]));
  }
  std::vector<HostTensor> results = std::move(state);
  for (size_t k = 0; k < n_out; ++k) {
    if (parts[k].empty()) {
      results.push_back(empty_scan_output(ctx, n_state + k, "body", n_state + k, layout.out_axes[k]));
      continue;
    }
    if (layout.out_reverse[k]) std::reverse(parts[k].begin(), parts[k].end());
    const int64_t slice_rank = static_cast<int64_t>(parts[k][0].rank());
    const int64_t axis = layout.out_axes[k] < 0 ? layout.out_axes[k] + slice_rank + 1 : layout.out_axes[k];
    if (axis < 0 || axis > slice_rank)
      ctx.fail("scan_output_axes entry " + std::to_string(layout.out_axes[k]) + " is out of range");
    results.push_back(stack(ctx, parts[k], axis));
  }
  return results;
}

std::vector<int64_t> per_entry(const KernelContext& ctx, const char* attr, size_t count,
                               const std::vector<int64_t>& ranks) {
  std::vector<int64_t> v = ctx.attr_ints(attr, std::vector<int64_t>(count, 0));
  if (v.size() != count) ctx.fail(std::string(attr) + " needs " + std::to_string(count) + " entries");
  for (size_t i = 0; i < count && i < ranks.size(); ++i) {
    if (ranks[i] < 1) ctx.fail("a scan input must have rank >= 1");
    if (v[i] < -ranks[i] || v[i] >= ranks[i])
      ctx.fail(std::string(attr) + " entry " + std::to_string(v[i]) + " is out of range");
    v[i] = v[i] < 0 ? v[i] + ranks[i] : v[i];
  }
  return v;
}

void scan_kernel(KernelContext& ctx) {
  const CaptureScope scope(ctx);
  const int64_t n_scan = ctx.attr_int("num_scan_inputs", 0);
  const bool v8 = ctx.opset() < 9;  // opset 8: a leading sequence_lens input and batch axis 0
  const size_t first = v8 ? 1 : 0;
  if (n_scan < 1 || static_cast<size_t>(n_scan) + first > own_inputs(ctx))
    ctx.fail("num_scan_inputs is out of range");
  const size_t n_state = own_inputs(ctx) - first - static_cast<size_t>(n_scan);
  if (ctx.outputs.size() < n_state) ctx.fail("has fewer outputs than states");
  const size_t n_out = ctx.outputs.size() - n_state;
  std::vector<HostTensor> state, scan_in;
  for (size_t i = 0; i < n_state; ++i) state.push_back(ctx.input(first + i));
  for (size_t m = 0; m < static_cast<size_t>(n_scan); ++m) scan_in.push_back(ctx.input(first + n_state + m));
  ScanLayout layout;
  if (!v8) {
    std::vector<int64_t> in_ranks, out_ranks;
    for (const auto& t : scan_in) in_ranks.push_back(static_cast<int64_t>(t.rank()));
    layout.in_axes = per_entry(ctx, "scan_input_axes", scan_in.size(), in_ranks);
    layout.in_reverse = per_entry(ctx, "scan_input_directions", scan_in.size(), {});
    // Output axes are normalized once the slices' rank is known (run_scan).
    layout.out_axes = ctx.attr_ints("scan_output_axes", std::vector<int64_t>(n_out, 0));
    layout.out_reverse = per_entry(ctx, "scan_output_directions", n_out, {});
    if (layout.out_axes.size() != n_out) ctx.fail("scan_output_axes needs one entry per scan output");
    int64_t length = -1;
    for (size_t m = 0; m < scan_in.size(); ++m) {
      const int64_t len = scan_in[m].dims()[static_cast<size_t>(layout.in_axes[m])];
      if (length >= 0 && len != length) ctx.fail("scan inputs differ in length along their scan axes");
      length = len;
    }
    auto results = run_scan(ctx, scope, std::move(state), scan_in, layout, length);
    for (size_t i = 0; i < results.size() && i < ctx.outputs.size(); ++i)
      ctx.outputs[i] = std::move(results[i]);
    return;
  }
  // Opset 8: every input has the batch as axis 0 and scans along axis 1; each batch entry
  // runs on its own, for sequence_lens[b] steps (outputs past that stay zero).
  layout.in_axes.assign(scan_in.size(), 0);
  layout.in_reverse = per_entry(ctx, "directions", scan_in.size(), {});
  layout.out_axes.assign(n_out, 0);
  layout.out_reverse.assign(n_out, 0);
  for (const auto& t : scan_in)
    if (t.rank() < 2) ctx.fail("an opset-8 scan input must be [batch, sequence, ...]");
  const int64_t batch = scan_in[0].dims()[0], steps = scan_in[0].dims()[1];
  if (batch < 1) ctx.fail("an opset-8 Scan needs a batch of at least one");
  for (const auto& t : scan_in)
    if (t.dims()[0] != batch || t.dims()[1] != steps)
      ctx.fail("the scan inputs differ in batch or sequence length");
  for (const auto& t : state)
    if (t.rank() < 1 || t.dims()[0] != batch) ctx.fail("a state must have the batch as its first axis");
  if (ctx.has_input(0) && ctx.input(0).size() && ctx.input(0).size() != batch)
    ctx.fail("sequence_lens needs one entry per batch entry");
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
        entry = kept.empty() ? HostTensor(entry.dtype(),
                                          [&] {
                                            auto d = entry.dims();
                                            d[0] = 0;
                                            return d;
                                          }())
                             : stack(ctx, kept, 0);
      }
      in.push_back(std::move(entry));
    }
    auto results = run_scan(ctx, scope, std::move(st), in, layout, len);
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
  for (size_t k = 0; k < per_output.size() && k < ctx.outputs.size(); ++k)
    ctx.outputs[k] = stack(ctx, per_output[k], 0);
}

}  // namespace

void register_control_flow_kernels(OpRegistry& r) {
  r.add("", "If", if_kernel, /*half_via_f32=*/false);
  r.add("", "Loop", loop_kernel, /*half_via_f32=*/false);
  r.add("", "Scan", scan_kernel, /*half_via_f32=*/false);
}

}  // namespace geopt
