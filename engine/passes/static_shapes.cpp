#include "passes/static_shapes.h"
#include "ops/op_traits.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <set>
#include <unordered_set>

#include "eval/kernel.h"
#include "eval/kernel_call.h"
#include "onnx/node_inference.h"
#include "passes/control_flow_types.h"
#include "passes/inline_if.h"
#include "passes/symbolic_shapes.h"
#include "passes/window_attributes.h"
#include "util/error.h"

namespace geopt {
namespace {

std::vector<int64_t> static_dims(const Shape& s) {
  std::vector<int64_t> dims;
  for (const Dim& d : s.dims()) dims.push_back(d.value());
  return dims;
}

// Shape and Size read only their input's type, so they fold once it is static.
std::optional<HostTensor> evaluate_from_type(const Node& n) {
  if (!n.domain.empty() || (n.op_type != "Shape" && n.op_type != "Size")) return std::nullopt;
  const Value* in = n.input(0);
  if (!in || !in->type.shape || !in->type.shape->is_static()) return std::nullopt;
  std::vector<int64_t> dims = static_dims(*in->type.shape);
  if (n.op_type == "Size") return HostTensor::scalar<int64_t>(DType::I64, *in->type.shape->element_count());
  auto rank = static_cast<int64_t>(dims.size());
  auto attr = [&](const char* name, int64_t fallback) {
    const Attribute* a = n.attr(name);
    return a ? a->i : fallback;
  };
  int64_t start = attr("start", 0), end = attr("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, start, rank);
  std::vector<int64_t> out(dims.begin() + start, dims.begin() + end);
  return HostTensor::from_vector(DType::I64, {static_cast<int64_t>(out.size())}, out);
}

// Takes from `got` what `have` does not know yet; a static dim that disagrees is an error.
bool refine(const Node& n, Value& v, const ValueType& got) {
  ValueType& have = v.type;
  bool changed = false;
  if (have.dtype == DType::Undefined && got.dtype != DType::Undefined) {
    have.dtype = got.dtype;
    changed = true;
  }
  if (!got.shape) return changed;
  if (!have.shape) {
    have.shape = got.shape;
    return true;
  }
  if (have.shape->rank() != got.shape->rank())
    throw Error(n.describe() + ": output '" + v.name() + "' is declared " + have.to_string() +
                " but infers as " + got.to_string());
  std::vector<Dim> dims = have.shape->dims();
  for (size_t d = 0; d < dims.size(); ++d) {
    const Dim& g = (*got.shape)[d];
    if (!g.is_static()) {
      // A symbol says more than no name or ONNX's placeholder for one (unk__N).
      if (g.is_symbolic() && !is_placeholder_dim(g) &&
          (dims[d].is_unknown() || is_placeholder_dim(dims[d]))) {
        dims[d] = g;
        changed = true;
      }
      continue;
    }
    if (dims[d].is_static()) {
      if (dims[d].value() != g.value())
        throw Error(n.describe() + ": output '" + v.name() + "' is declared " + have.to_string() +
                    " but infers as " + got.to_string() + " with the fixed input shapes");
      continue;
    }
    dims[d] = g;
    changed = true;
  }
  if (changed) have.shape = Shape(std::move(dims));
  return changed;
}

}  // namespace

namespace {

// Output 0's type where ONNX's inference lost track of a dim: the dims `made` (the shape
// tensor the node reads) carries.
void take_symbolic_dims(const Node& n, const Shape& made, std::vector<std::optional<ValueType>>& inferred) {
  if (inferred.empty()) inferred.resize(n.outputs().size());
  std::optional<ValueType>& t = inferred[0];
  if (!t) t = n.output(0)->type;
  if (!t->shape || t->shape->rank() != made.rank()) {
    if (!t->shape) t->shape = made;
    return;
  }
  std::vector<Dim> dims = t->shape->dims();
  for (size_t d = 0; d < dims.size(); ++d)
    if ((dims[d].is_unknown() || is_placeholder_dim(dims[d])) && !made[d].is_unknown() &&
        !is_placeholder_dim(made[d]))
      dims[d] = made[d];
  t->shape = Shape(std::move(dims));
}

// The node's outputs computed by its kernel over its constant inputs (null for an omitted
// one); nullopt where it has no kernel or the kernel refuses them.
std::optional<std::vector<HostTensor>> run_on_constants(const OpRegistry& kernels, const Node& n,
                                                        int64_t opset,
                                                        const std::vector<const Tensor*>& constants) {
  const KernelInfo* k = kernels.find(n.domain, n.op_type);
  if (!k) return std::nullopt;
  std::vector<HostTensor> views;
  views.reserve(constants.size());
  std::vector<const HostTensor*> ptrs;
  for (const Tensor* t : constants) {
    if (!t) {
      ptrs.push_back(nullptr);
      continue;
    }
    views.push_back(HostTensor::view(*t));
    ptrs.push_back(&views.back());
  }
  try {
    return call_kernel(kernels, *k, n, opset, std::move(ptrs));
  } catch (const Error& e) {
    spdlog::debug("static shapes: not folding {}: {}", n.describe(), e.what());
    return std::nullopt;
  }
}

StaticShapeReport propagate_once(Model& model, const OpRegistry& kernels, const StaticShapeOptions& options) {
  Graph& g = *model.graph;
  std::unordered_set<const Value*> graph_inputs(g.inputs().begin(), g.inputs().end());
  std::unordered_set<const Value*> graph_outputs(g.outputs().begin(), g.outputs().end());
  auto constant = [&](const Value* v) -> const Tensor* {
    return v && v->initializer && !graph_inputs.count(v) ? v->initializer.get() : nullptr;
  };
  auto opset = [&](const Node& n) { return std::max<int64_t>(1, model.opset_version(n.domain)); };

  StaticShapeReport report;
  std::vector<Node*> nodes;
  for (const auto& n : g.nodes()) nodes.push_back(n.get());
  // Values this pass folded or refined: only their consumers (and outputs not static
  // yet) need ONNX's inference again, so a graph that is static already costs nothing.
  std::unordered_set<const Value*> changed;
  SymbolicShapeValues symbolic(&g.dim_ranges);  // tensors of dims, for the shapes made from them
  auto is_static = [](const Value* v) { return !v || (v->type.shape && v->type.shape->is_static()); };
  for (Node* n : nodes) {
    std::vector<const ValueType*> in_types;
    std::vector<const Tensor*> in_constants;
    bool all_constant = true, inputs_changed = false, outputs_static = true;
    for (const Value* in : n->inputs()) {
      in_types.push_back(in ? &in->type : nullptr);
      in_constants.push_back(constant(in));
      all_constant = all_constant && (!in || constant(in));
      inputs_changed = inputs_changed || changed.count(in);
    }
    for (const Value* out : n->outputs()) outputs_static = outputs_static && is_static(out);
    std::vector<std::optional<ValueType>> inferred;
    if (inputs_changed || !outputs_static) {
      // The model passed import's checks: where inference still cannot tell, types stay as they are.
      if (is_control_flow(*n)) {
        try {
          inferred = infer_control_flow_types(*n, model, in_constants, kernels);
        } catch (const Error& e) {
          spdlog::debug("static shapes: {}: the bodies' types are not known: {}", n->describe(), e.what());
          inferred.assign(n->outputs().size(), std::nullopt);
        }
      } else {
        inferred = onnx_io::infer_output_types(n->domain, n->op_type, n->attributes, in_types, in_constants,
                                               n->outputs().size(), opset(*n))
                       .types;
      }
    } else {
      for (const Value* out : n->outputs())
        inferred.push_back(out ? std::optional<ValueType>(out->type) : std::nullopt);
    }
    if (auto made = symbolic.output_shape(*n); made && !n->outputs().empty() && n->output(0))
      take_symbolic_dims(*n, *made, inferred);

    // A Loop or Scan of constants would be run here for as many trips as it says: left to run time.
    const ControlFlow flow = control_flow_of(*n);
    bool foldable = !n->outputs().empty() && !n->is_nondeterministic() && flow != ControlFlow::Loop &&
                    flow != ControlFlow::Scan;
    for (const Value* out : n->outputs()) foldable = foldable && out && !graph_outputs.count(out);
    // A quantized weight stays quantized: int8 kernels read the 8-bit tensor behind its
    // DequantizeLinear (the e-graph still folds it for the float alternative).
    if (n->domain.empty() && n->op_type == "DequantizeLinear" && n->input(0) &&
        (n->input(0)->type.dtype == DType::I8 || n->input(0)->type.dtype == DType::U8))
      foldable = false;
    // Constant nodes are already materialized: folding them costs no memory. Nor does a
    // fold no larger than its constant inputs (a Slice or Transpose of a weight), and the
    // caller may name ops that always fold (a weight's layout for the device).
    int64_t input_elements = 0;
    for (const Tensor* t : in_constants)
      if (t) input_elements += t->element_count();
    const bool unbounded =
        is_constant_node(*n) || (all_constant && options.always_fold && options.always_fold(*n));
    for (const auto& t : inferred) {
      std::optional<int64_t> count = t && t->shape ? t->shape->element_count() : std::nullopt;
      if (count && *count > options.max_elements && *count > input_elements && !unbounded) foldable = false;
    }
    std::optional<std::vector<HostTensor>> folded;
    if (foldable) {
      if (auto from_type = evaluate_from_type(*n)) {
        folded.emplace();
        folded->push_back(std::move(*from_type));
      } else if (all_constant) {
        folded = run_on_constants(kernels, *n, opset(*n), in_constants);
      }
    }
    if (folded) {
      bool fits = true;
      for (const HostTensor& h : *folded)
        fits = fits && h.defined() && h.dtype() != DType::String &&
               (unbounded || h.size() <= options.max_elements || h.size() <= input_elements);
      if (fits) {
        std::vector<std::shared_ptr<const Tensor>> data;
        for (size_t k = 0; k < folded->size(); ++k) {
          Value* out = n->output(k);
          const HostTensor& h = (*folded)[k];
          if (!out->type.shape || !out->type.shape->is_static()) ++report.refined;
          out->type.dtype = h.dtype();
          out->type.shape = Shape(std::vector<Dim>(h.dims().begin(), h.dims().end()));
          data.push_back(h.to_constant(out->name()));
        }
        spdlog::debug("static shapes: folded {}", n->describe());
        for (const Value* out : n->outputs()) changed.insert(out);
        g.fold_node(n, std::move(data));
        ++report.folded;
        continue;
      }
    }
    for (size_t k = 0; k < n->outputs().size() && k < inferred.size(); ++k)
      if (Value* out = n->output(k); out && inferred[k] && refine(*n, *out, *inferred[k])) {
        ++report.refined;
        changed.insert(out);
      }
    symbolic.record(*n);
    // The same dims computed again (each layer's Reshape target from its own Shape): its
    // readers read the first, and the copy's computation goes as dead code.
    if (Value* out = n->outputs().empty() ? nullptr : n->output(0); out && !graph_outputs.count(out))
      if (const Value* same = symbolic.earlier_equal(out)) {
        g.replace_all_uses(out, g.find_value(same->name()));
        changed.insert(g.find_value(same->name()));
      }
  }
  if (options.remove_dead_code) g.remove_dead_code();

  auto note_dynamic = [&](const Value* v) {
    if (v && v->type.is_tensor() && (!v->type.shape || !v->type.shape->is_static()))
      report.dynamic.push_back(v->name());
  };
  for (const Value* v : g.inputs()) note_dynamic(v);
  for (const auto& n : g.nodes())
    for (const Value* out : n->outputs()) note_dynamic(out);
  return report;
}

}  // namespace

StaticShapeReport propagate_static_shapes(Model& model, const OpRegistry& ops,
                                          const StaticShapeOptions& options) {
  // Folding can make an If's condition constant, and its branch, inlined, may fold further.
  StaticShapeReport report = propagate_once(model, ops, options);
  for (int round = 0; round < 64 && inline_constant_ifs(model, options.remove_dead_code) > 0; ++round) {
    StaticShapeReport again = propagate_once(model, ops, options);
    again.folded += report.folded;
    again.refined += report.refined;
    report = std::move(again);
  }
  // With the shapes known, every window op in one form (what rules read).
  const size_t windows = make_window_attributes_explicit(*model.graph);
  spdlog::info(
      "static shapes: {} node(s) folded, {} type(s) refined, {} value(s) still dynamic, {} window op(s) made "
      "explicit",
      report.folded, report.refined, report.dynamic.size(), windows);
  return report;
}

}  // namespace geopt
