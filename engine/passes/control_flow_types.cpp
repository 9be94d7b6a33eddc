#include "passes/control_flow_types.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "ir/value.h"
#include "onnx/captures.h"
#include "onnx/import.h"
#include "ops/op_traits.h"
#include "passes/static_shapes.h"
#include "util/error.h"

namespace geopt {
namespace {

ValueType typed(DType t, std::optional<Shape> shape) {
  ValueType v;
  v.dtype = t;
  v.shape = std::move(shape);
  return v;
}

ValueType scalar_type(DType t) { return typed(t, Shape(std::vector<Dim>{})); }

// A dim of that size, or unknown.
Dim dim_or_unknown(const std::optional<int64_t>& size) {
  Dim d;
  if (size) d = Dim(*size);
  return d;
}

std::vector<ValueType> body_output_types(const Node& n, const Model& model, const char* attr,
                                         const std::vector<ValueType>& inputs, const OpRegistry& ops) {
  Model body = body_as_model(n, model, attr, inputs);
  propagate_static_shapes(body, ops);
  std::vector<ValueType> out;
  for (const Value* v : body.graph->outputs()) out.push_back(v->type);
  return out;
}

// One type for two: what they agree on (a dim they differ in becomes unknown).
std::optional<ValueType> merge(const ValueType& a, const ValueType& b) {
  if (a.dtype != b.dtype) return std::nullopt;
  if (!a.shape || !b.shape || a.shape->rank() != b.shape->rank()) return typed(a.dtype, std::nullopt);
  std::vector<Dim> dims;
  for (size_t d = 0; d < a.shape->rank(); ++d)
    dims.push_back((*a.shape)[d] == (*b.shape)[d] ? (*a.shape)[d] : dim_or_unknown(std::nullopt));
  return typed(a.dtype, Shape(std::move(dims)));
}

// A Loop body's condition output that is true on every trip: the condition input passed
// on (directly or through Identity) or a constant true.
bool condition_stays_true(const Node& n) {
  const Attribute* a = n.attr("body");
  if (!a || a->opaque.size() != 1) return false;
  auto g = import_subgraph(a->opaque[0], n.describe() + " body");
  if (g->outputs().empty() || g->inputs().size() < 2) return false;
  const Value* v = g->outputs()[0];
  while (v->producer() && v->producer()->op_type == "Identity" && v->producer()->domain.empty())
    v = v->producer()->input(0);
  if (v == g->inputs()[1]) return true;
  const Tensor* t = g->constant_value(v);
  return t && t->element_count() == 1 && t->dtype == DType::Bool && t->bytes()[0] != std::byte{0};
}

Shape with_dim(const Shape& s, size_t axis, Dim d) {
  std::vector<Dim> dims = s.dims();
  dims.insert(dims.begin() + static_cast<std::ptrdiff_t>(std::min(axis, dims.size())), d);
  return Shape(std::move(dims));
}

}  // namespace

std::pair<std::vector<ValueType>, std::vector<ValueType>> branch_output_types(const Node& n,
                                                                              const Model& model,
                                                                              const OpRegistry& ops) {
  return {body_output_types(n, model, "then_branch", {}, ops),
          body_output_types(n, model, "else_branch", {}, ops)};
}

bool is_control_flow(const Node& n) { return control_flow_of(n) != ControlFlow::None; }

Model body_as_model(const Node& n, const Model& model, const char* attr,
                    const std::vector<ValueType>& input_types) {
  const Attribute* a = n.attr(attr);
  if (!a || a->kind != AttrKind::Graph || a->opaque.size() != 1)
    throw Error(n.describe() + ": needs the graph attribute '" + attr + "'");
  Model body = model.header_copy();
  body.graph = import_subgraph(a->opaque[0], n.describe() + " " + attr);
  Graph& g = *body.graph;
  for (size_t i = 0; i < input_types.size() && i < g.inputs().size(); ++i)
    if (input_types[i].dtype != DType::Undefined) g.inputs()[i]->type = input_types[i];
  const size_t k = capture_count(n), first = n.inputs().size() - k;
  if (const Attribute* names = n.attr(kCapturesAttr))
    for (size_t i = 0; i < k; ++i) {
      Value* v = g.find_value(names->strings[i]);
      const Value* outer = n.input(first + i);
      if (!v || v->producer() || v->initializer || !outer) continue;
      v->type = outer->type;
      if (const Tensor* t = model.graph->constant_value(outer))
        g.add_initializer(v, std::make_shared<Tensor>(*t));
      else
        g.add_input(v);
    }
  return body;
}

std::vector<ValueType> body_input_types(const Node& n) {
  const size_t own = n.inputs().size() - capture_count(n);
  auto input_type = [&](size_t i) { return i < own && n.input(i) ? n.input(i)->type : ValueType{}; };
  std::vector<ValueType> in;
  const ControlFlow kind = control_flow_of(n);
  if (kind == ControlFlow::Loop) {
    in = {scalar_type(DType::I64), scalar_type(DType::Bool)};
    for (size_t i = 2; i < own; ++i) in.push_back(input_type(i));
  } else if (kind == ControlFlow::Scan) {
    const Attribute* ns = n.attr("num_scan_inputs");
    const Attribute* in_axes = n.attr("scan_input_axes");
    if (!ns || ns->i < 1 || static_cast<size_t>(ns->i) > own) return in;
    const size_t scans = static_cast<size_t>(ns->i), states = own - scans;
    for (size_t i = 0; i < states; ++i) in.push_back(input_type(i));
    for (size_t m = 0; m < scans; ++m) {
      ValueType t = input_type(states + m);
      if (!t.shape) {
        in.push_back(typed(t.dtype, std::nullopt));
        continue;
      }
      const int64_t rank = static_cast<int64_t>(t.shape->rank());
      int64_t axis = in_axes && m < in_axes->ints.size() ? in_axes->ints[m] : 0;
      if (axis < 0) axis += rank;
      std::vector<Dim> dims = t.shape->dims();
      if (axis >= 0 && axis < rank) dims.erase(dims.begin() + axis);
      in.push_back(typed(t.dtype, Shape(std::move(dims))));
    }
  }
  return in;
}

std::vector<std::optional<ValueType>> infer_control_flow_types(
    const Node& n, const Model& model, const std::vector<const Tensor*>& input_constants,
    const OpRegistry& ops) {
  std::vector<std::optional<ValueType>> out(n.outputs().size());
  const size_t own = n.inputs().size() - capture_count(n);
  const std::vector<ValueType> in = body_input_types(n);
  const ControlFlow kind = control_flow_of(n);
  if (kind == ControlFlow::If) {
    // A branch that cannot run at these shapes (an exporter's branch for other input
    // sizes) fails if it is ever taken: the outputs are typed by the other one.
    std::vector<ValueType> then_types, else_types;
    std::optional<Error> then_failed;
    try {
      then_types = body_output_types(n, model, "then_branch", {}, ops);
    } catch (const Error& e) {
      then_failed = e;
    }
    try {
      else_types = body_output_types(n, model, "else_branch", {}, ops);
    } catch (const Error&) {
      if (then_failed) throw;
      else_types = then_types;
    }
    if (then_failed) then_types = else_types;
    for (size_t i = 0; i < out.size() && i < then_types.size() && i < else_types.size(); ++i)
      out[i] = merge(then_types[i], else_types[i]);
    return out;
  }
  if (kind == ControlFlow::Loop) {
    auto body = body_output_types(n, model, "body", in, ops);
    const size_t carried = own - 2;
    // A carried value keeps its type when the body gives back what it took.
    for (size_t i = 0; i < carried && i < out.size() && 1 + i < body.size(); ++i)
      out[i] = merge(in[2 + i], body[1 + i]);
    // The trip count is known when M is a constant and the condition never turns false.
    std::optional<int64_t> trips;
    const Tensor* m = input_constants.size() > 0 ? input_constants[0] : nullptr;
    const Tensor* c = input_constants.size() > 1 ? input_constants[1] : nullptr;
    const bool cond_true = !n.input(1) || (c && c->element_count() == 1 && c->bytes()[0] != std::byte{0});
    if (m && m->element_count() == 1 && m->dtype == DType::I64 && cond_true && condition_stays_true(n)) {
      int64_t v;
      std::memcpy(&v, m->bytes().data(), sizeof v);
      trips = std::max<int64_t>(v, 0);
    }
    for (size_t k = carried; k < out.size() && 1 + k < body.size(); ++k) {
      const ValueType& t = body[1 + k];
      out[k] = t.shape ? typed(t.dtype, with_dim(*t.shape, 0, dim_or_unknown(trips)))
                       : typed(t.dtype, std::nullopt);
    }
    return out;
  }
  // Scan (opset 9 on: no batch axis).
  if (model.opset_version("") < 9) return out;
  const Attribute* ns = n.attr("num_scan_inputs");
  if (!ns || ns->i < 1 || static_cast<size_t>(ns->i) > own) return out;
  const size_t scans = static_cast<size_t>(ns->i), states = own - scans;
  const Attribute* in_axes = n.attr("scan_input_axes");
  const Attribute* out_axes = n.attr("scan_output_axes");
  std::optional<int64_t> length;
  for (size_t m = 0; m < scans; ++m) {
    const Value* v = n.input(states + m);
    if (!v || !v->type.shape) return out;
    const int64_t rank = static_cast<int64_t>(v->type.shape->rank());
    int64_t axis = in_axes && m < in_axes->ints.size() ? in_axes->ints[m] : 0;
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return out;
    const Dim& d = (*v->type.shape)[static_cast<size_t>(axis)];
    if (d.is_static()) length = d.value();
  }
  auto body = body_output_types(n, model, "body", in, ops);
  for (size_t i = 0; i < states && i < out.size() && i < body.size(); ++i) out[i] = merge(in[i], body[i]);
  for (size_t k = states; k < out.size() && k < body.size(); ++k) {
    const ValueType& t = body[k];
    if (!t.shape) continue;
    int64_t axis = out_axes && k - states < out_axes->ints.size() ? out_axes->ints[k - states] : 0;
    if (axis < 0) axis += static_cast<int64_t>(t.shape->rank()) + 1;
    out[k] = typed(
        t.dtype, with_dim(*t.shape, static_cast<size_t>(std::max<int64_t>(axis, 0)), dim_or_unknown(length)));
  }
  return out;
}

}  // namespace geopt
