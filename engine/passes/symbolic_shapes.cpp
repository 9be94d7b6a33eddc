#include "passes/symbolic_shapes.h"

#include <algorithm>
#include <climits>
#include <cmath>
#include <map>
#include <optional>
#include <string_view>

#include "ops/op_traits.h"

namespace geopt {
namespace {

std::optional<int64_t> int_attr(const Node& n, const char* name) {
  const Attribute* a = n.attr(name);
  return a ? std::optional<int64_t>(a->i) : std::nullopt;
}

// A constant integer tensor's values.
std::optional<std::vector<int64_t>> integers(const Value* v) {
  if (!v || !v->initializer || v->producer()) return std::nullopt;
  const Tensor& t = *v->initializer;
  if (t.dtype == DType::I64) return t.to_vector<int64_t>();
  if (t.dtype == DType::I32) {
    std::vector<int64_t> out;
    for (int32_t x : t.to_vector<int32_t>()) out.push_back(x);
    return out;
  }
  return std::nullopt;
}

int64_t clamp_index(int64_t i, int64_t size) { return std::clamp<int64_t>(i < 0 ? i + size : i, 0, size); }

std::vector<int64_t> ints_attr(const Node& n, const char* name) {
  const Attribute* a = n.attr(name);
  return a ? a->ints : std::vector<int64_t>{};
}

// An arithmetic op on dims: its value on numbers (none where undefined), its identity
// element e (x op e = x; e op x = x too where it commutes), and whether x op x = 0.
struct DimArithmetic {
  std::optional<int64_t> (*value)(int64_t, int64_t);
  int64_t identity;
  bool commutes;
  bool self_is_zero;
};

const DimArithmetic* dim_arithmetic_of(std::string_view op) {
  using V = std::optional<int64_t>;
  static const std::map<std::string, DimArithmetic, std::less<>> kOps = {
      {"Add", {[](int64_t a, int64_t b) -> V { return a + b; }, 0, true, false}},
      {"Sub", {[](int64_t a, int64_t b) -> V { return a - b; }, 0, false, true}},
      {"Mul", {[](int64_t a, int64_t b) -> V { return a * b; }, 1, true, false}},
      // Truncating, as the Div kernel divides integers.
      {"Div", {[](int64_t a, int64_t b) -> V { return b == 0 ? std::nullopt : V(a / b); }, 1, false, false}},
  };
  auto it = kOps.find(op);
  return it == kOps.end() ? nullptr : &it->second;
}

// Elementwise arithmetic on dims: numbers computed, and the symbolic cases that stay exact.
Dim dim_arithmetic(const std::string& op, const Dim& a, const Dim& b) {
  const DimArithmetic* f = dim_arithmetic_of(op);
  if (!f) return Dim();
  auto is = [](const Dim& d, int64_t v) { return d.is_static() && d.value() == v; };
  if (a.is_static() && b.is_static()) {
    const std::optional<int64_t> v = f->value(a.value(), b.value());
    return v ? Dim(*v) : Dim();
  }
  if (f->self_is_zero && a.is_symbolic() && a == b) return 0;
  if (is(b, f->identity)) return a;
  if (f->commutes && is(a, f->identity)) return b;
  return Dim();
}

}  // namespace

bool is_placeholder_dim(const Dim& d) { return d.is_symbolic() && d.symbol_name().rfind("unk__", 0) == 0; }

std::optional<std::vector<Dim>> SymbolicShapeValues::elements(const Value* v) const {
  if (!v) return std::nullopt;
  if (auto it = dims_.find(v); it != dims_.end()) return it->second;
  if (auto ints = integers(v)) return std::vector<Dim>(ints->begin(), ints->end());
  return std::nullopt;
}

// Shape (with start and end): the input's dims.
std::optional<std::vector<Dim>> SymbolicShapeValues::shape_dims(const Node& n) const {
  const Value* x = n.input(0);
  if (!x || !x->type.shape) return std::nullopt;
  const auto& dims = x->type.shape->dims();
  const auto rank = static_cast<int64_t>(dims.size());
  const int64_t start = clamp_index(int_attr(n, "start").value_or(0), rank);
  const int64_t end = std::max(start, clamp_index(int_attr(n, "end").value_or(rank), rank));
  return std::vector<Dim>(dims.begin() + start, dims.begin() + end);
}

// Gather along axis 0 of a tensor of dims: the picked ones.
std::optional<std::vector<Dim>> SymbolicShapeValues::gather_dims(const Node& n) const {
  if (int_attr(n, "axis").value_or(0) != 0) return std::nullopt;
  auto data = elements(n.input(0));
  auto index = integers(n.input(1));
  if (!data || !index) return std::nullopt;
  std::vector<Dim> picked;
  for (int64_t i : *index) {
    const auto size = static_cast<int64_t>(data->size());
    if (i < -size || i >= size) return std::nullopt;
    picked.push_back((*data)[static_cast<size_t>(i < 0 ? i + size : i)]);
  }
  return picked;
}

// Unsqueeze, Squeeze, Identity, Reshape, Cast between integer types: the same elements.
std::optional<std::vector<Dim>> SymbolicShapeValues::same_dims(const Node& n) const {
  const std::string& op = n.op_type;
  if (op == "Cast" && int_attr(n, "to").value_or(0) != static_cast<int64_t>(DType::I64) &&
      int_attr(n, "to").value_or(0) != static_cast<int64_t>(DType::I32))
    return std::nullopt;
  const Value* x = n.input(0);
  if (!x || dims_.find(x) == dims_.end()) return std::nullopt;
  return dims_.at(x);
}

// Concat: the inputs' elements one after another.
std::optional<std::vector<Dim>> SymbolicShapeValues::concat_dims(const Node& n) const {
  std::vector<Dim> all;
  for (const Value* in : n.inputs()) {
    auto e = elements(in);
    if (!e) return std::nullopt;
    all.insert(all.end(), e->begin(), e->end());
  }
  return all;
}

// Add, Sub, Mul, Div of dims: numbers computed, symbols where the result stays exact.
std::optional<std::vector<Dim>> SymbolicShapeValues::arithmetic_dims(const Node& n) const {
  const std::string& op = n.op_type;
  auto a = elements(n.input(0)), b = elements(n.input(1));
  if (!a || !b || a->empty() || b->empty() || (a->size() != b->size() && a->size() != 1 && b->size() != 1))
    return std::nullopt;
  std::vector<Dim> r;
  for (size_t i = 0; i < std::max(a->size(), b->size()); ++i)
    r.push_back(dim_arithmetic(op, (*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]));
  return r;
}

// Slice along axis 0 of a tensor of dims, step 1: the elements it keeps.
std::optional<std::vector<Dim>> SymbolicShapeValues::slice_elements_dims(const Node& n) const {
  auto data = elements(n.input(0));
  auto starts = integers(n.input(1)), ends = integers(n.input(2));
  auto axes = n.inputs().size() > 3 ? integers(n.input(3))
                                    : std::optional<std::vector<int64_t>>(std::vector<int64_t>{0});
  auto steps = n.inputs().size() > 4 ? integers(n.input(4))
                                     : std::optional<std::vector<int64_t>>(std::vector<int64_t>{1});
  if (!data || !starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 ||
      axes->size() != 1 || steps->size() != 1 || (*axes)[0] != 0 || (*steps)[0] != 1)
    return std::nullopt;
  const auto size = static_cast<int64_t>(data->size());
  const int64_t a = clamp_index(std::clamp<int64_t>((*starts)[0], -size, size), size);
  const int64_t b = std::max(a, clamp_index(std::clamp<int64_t>((*ends)[0], -size, size), size));
  return std::vector<Dim>(data->begin() + a, data->begin() + b);
}

void SymbolicShapeValues::record(const Node& n) {
  if (!n.domain.empty() || n.outputs().empty() || !n.output(0)) return;
  using DimsOf = std::optional<std::vector<Dim>> (SymbolicShapeValues::*)(const Node&) const;
  static const std::map<std::string, DimsOf, std::less<>> kByOp = {
      {"Shape", &SymbolicShapeValues::shape_dims},          {"Gather", &SymbolicShapeValues::gather_dims},
      {"Unsqueeze", &SymbolicShapeValues::same_dims},       {"Squeeze", &SymbolicShapeValues::same_dims},
      {"Identity", &SymbolicShapeValues::same_dims},        {"Cast", &SymbolicShapeValues::same_dims},
      {"Reshape", &SymbolicShapeValues::same_dims},         {"Concat", &SymbolicShapeValues::concat_dims},
      {"Add", &SymbolicShapeValues::arithmetic_dims},       {"Sub", &SymbolicShapeValues::arithmetic_dims},
      {"Mul", &SymbolicShapeValues::arithmetic_dims},       {"Div", &SymbolicShapeValues::arithmetic_dims},
      {"Slice", &SymbolicShapeValues::slice_elements_dims},
  };
  auto found = kByOp.find(n.op_type);
  if (found == kByOp.end()) return;
  std::optional<std::vector<Dim>> out = (this->*found->second)(n);
  if (!out) return;
  const Value* v = n.output(0);
  if (std::none_of(out->begin(), out->end(), [](const Dim& d) { return d.is_unknown(); })) {
    std::string key = v->type.to_string() + ":";
    for (const Dim& d : *out) key += d.to_string() + ",";
    if (auto [it, first] = first_by_content_.emplace(key, v); !first) same_as_[v] = it->second;
  }
  dims_[v] = std::move(*out);
}

const Value* SymbolicShapeValues::earlier_equal(const Value* v) const {
  auto it = same_as_.find(v);
  return it == same_as_.end() ? nullptr : it->second;
}

// ConstantOfShape: the dims its shape input holds.
std::optional<Shape> SymbolicShapeValues::constant_of_shape_shape(const Node& n) const {
  auto e = elements(n.input(0));
  if (e) return Shape(*e);
  return std::nullopt;
}

// Range(0, n, 1): n elements, whatever n is.
std::optional<Shape> SymbolicShapeValues::range_shape(const Node& n) const {
  auto start = integers(n.input(0)), delta = integers(n.input(2));
  auto limit = elements(n.input(1));
  if (start && delta && limit && start->size() == 1 && delta->size() == 1 && (*start)[0] == 0 &&
      (*delta)[0] == 1 && limit->size() == 1)
    return Shape(std::vector<Dim>{(*limit)[0]});
  return std::nullopt;
}

// Reshape: its target's dims, a 0 copying the input's and a -1 solved where the symbols cancel.
std::optional<Shape> SymbolicShapeValues::reshape_shape(const Node& n) const {
  auto target = elements(n.input(1));
  const Value* x = n.input(0);
  if (!target) return std::nullopt;
  const bool allowzero = int_attr(n, "allowzero").value_or(0) != 0;
  std::vector<Dim> dims;
  int inferred = -1;
  for (size_t i = 0; i < target->size(); ++i) {
    const Dim& d = (*target)[i];
    if (d.is_static() && d.value() == 0 && !allowzero) {
      if (!x || !x->type.shape || i >= x->type.shape->rank()) return std::nullopt;
      dims.push_back((*x->type.shape)[i]);
    } else if (d.is_static() && d.value() == -1) {
      inferred = static_cast<int>(i);
      dims.emplace_back();
    } else {
      dims.push_back(d);
    }
  }
  if (inferred >= 0) {
    // The -1 is the input's element count over the others': solvable when the symbols
    // on both sides cancel (a [1,seq,64] reshaped to [1,seq,4,-1] gives 16).
    if (!x || !x->type.shape) return Shape(dims);
    int64_t num = 1, den = 1;
    std::vector<Dim> symbols;
    for (const Dim& d : x->type.shape->dims()) {
      if (d.is_static())
        num *= d.value();
      else if (d.is_symbolic())
        symbols.push_back(d);
      else
        return Shape(dims);
    }
    for (size_t i = 0; i < dims.size(); ++i) {
      if (static_cast<int>(i) == inferred) continue;
      const Dim& d = dims[i];
      if (d.is_static()) {
        den *= d.value();
      } else if (auto it = std::find(symbols.begin(), symbols.end(), d);
                 d.is_symbolic() && it != symbols.end()) {
        symbols.erase(it);
      } else {
        return Shape(dims);
      }
    }
    if (symbols.size() == 1 && den == num)
      dims[static_cast<size_t>(inferred)] = symbols.front();
    else if (symbols.empty() && den > 0 && num % den == 0)
      dims[static_cast<size_t>(inferred)] = num / den;
  }
  return Shape(dims);
}

// Slice whose bounds are dims: along an axis sliced from 0 to a symbol no larger than the
// axis (by its range), that symbol; the rank is kept whatever is sliced.
std::optional<Shape> SymbolicShapeValues::slice_shape(const Node& n) const {
  const Value* x = n.input(0);
  if (!x || !x->type.shape) return std::nullopt;
  std::vector<Dim> dims = x->type.shape->dims();
  const auto rank = static_cast<int64_t>(dims.size());
  auto starts = elements(n.input(1)), ends = elements(n.input(2));
  std::optional<std::vector<int64_t>> axes =
      n.inputs().size() > 3 && n.input(3) ? integers(n.input(3)) : std::nullopt;
  std::optional<std::vector<int64_t>> steps =
      n.inputs().size() > 4 && n.input(4) ? integers(n.input(4)) : std::nullopt;
  if (!starts || !ends || starts->size() != ends->size() || (n.inputs().size() > 3 && n.input(3) && !axes) ||
      (n.inputs().size() > 4 && n.input(4) && !steps))
    return Shape(std::vector<Dim>(dims.size()));
  for (size_t i = 0; i < starts->size(); ++i) {
    int64_t axis = axes ? (i < axes->size() ? (*axes)[i] : -rank - 1) : static_cast<int64_t>(i);
    if (axis < 0) axis += rank;
    if (axis < 0 || axis >= rank) return std::nullopt;
    const int64_t step = steps && i < steps->size() ? (*steps)[i] : 1;
    const Dim& a = (*starts)[i];
    const Dim& b = (*ends)[i];
    Dim& d = dims[static_cast<size_t>(axis)];
    const bool from_zero = a.is_static() && a.value() == 0;
    const bool to_end = b.is_static() && b.value() >= (d.is_static() ? d.value() : INT64_MAX / 2);
    if (step == 1 && from_zero && to_end) continue;  // the whole axis
    if (step == 1 && from_zero && b.is_symbolic() && !is_placeholder_dim(b) &&
        (b == d ||
         (d.is_static() && ranges_ && ranges_->count(b.symbol_name()) &&
          ranges_->at(b.symbol_name()).second <= d.value() && ranges_->at(b.symbol_name()).first >= 0))) {
      d = b;
      continue;
    }
    if (step == 1 && a.is_static() && b.is_static() && d.is_static()) {
      const int64_t lo = clamp_index(a.value(), d.value()), hi = clamp_index(b.value(), d.value());
      d = std::max<int64_t>(hi - lo, 0);
      continue;
    }
    d = Dim();
  }
  return Shape(dims);
}

// Conv and pooling: each spatial dim by its window's formula (a symbol's named by it).
std::optional<Shape> SymbolicShapeValues::window_shape(const Node& n) const {
  // A conv's window and output channels come from its weights; a pool has ceil_mode.
  const std::optional<size_t> weights = standard_op_traits(n.domain, n.op_type).window_weights;
  const Value* x = n.input(0);
  if (!x || !x->type.shape || x->type.shape->rank() < 3) return std::nullopt;
  const Attribute* auto_pad = n.attr("auto_pad");
  if (auto_pad && auto_pad->s != "NOTSET" && !auto_pad->s.empty()) return std::nullopt;
  const auto& in = x->type.shape->dims();
  const size_t spatial = in.size() - 2;
  std::vector<int64_t> kernel = ints_attr(n, "kernel_shape");
  const Value* w = weights ? n.input(*weights) : nullptr;
  if (kernel.empty() && w && w->type.shape && w->type.shape->is_static())
    for (size_t i = 2; i < w->type.shape->rank(); ++i) kernel.push_back((*w->type.shape)[i].value());
  if (kernel.size() != spatial) return std::nullopt;
  std::vector<int64_t> strides = ints_attr(n, "strides"), dilations = ints_attr(n, "dilations"),
                       pads = ints_attr(n, "pads");
  strides.resize(spatial, 1);
  dilations.resize(spatial, 1);
  pads.resize(2 * spatial, 0);
  const bool ceil_mode = !weights && int_attr(n, "ceil_mode").value_or(0) != 0;
  std::vector<Dim> dims{in[0], in[1]};
  if (weights) dims[1] = w && w->type.shape && w->type.shape->rank() > 0 ? (*w->type.shape)[0] : Dim();
  for (size_t i = 0; i < spatial; ++i)
    dims.push_back(window_output(in[2 + i], kernel[i], strides[i], dilations[i], pads[i] + pads[spatial + i],
                                 ceil_mode));
  return Shape(dims);
}

// Resize: its sizes, or the input's dims by constant scales (a symbol times a whole factor).
std::optional<Shape> SymbolicShapeValues::resize_shape(const Node& n) const {
  // Opset 18's axes and aspect-ratio policies: sizes are not the output's dims (ONNX's
  // inference, or the kernel, says what they are).
  const Attribute* policy = n.attr("keep_aspect_ratio_policy");
  if (n.attr("axes") || (policy && policy->s != "stretch")) return std::nullopt;
  const Value* x = n.input(0);
  if (!x || !x->type.shape) return std::nullopt;
  if (n.inputs().size() > 3 && n.input(3))
    if (auto sizes = elements(n.input(3)); sizes && sizes->size() == x->type.shape->rank())
      return Shape(*sizes);
  const Value* scales = n.inputs().size() > 2 ? n.input(2) : nullptr;
  if (!scales || !scales->initializer || scales->producer() || scales->initializer->dtype != DType::F32)
    return std::nullopt;
  const std::vector<float> factors = scales->initializer->to_vector<float>();
  if (factors.size() != x->type.shape->rank()) return std::nullopt;
  std::vector<Dim> dims;
  for (size_t i = 0; i < factors.size(); ++i) {
    const Dim& d = (*x->type.shape)[i];
    const float f = factors[i];
    if (d.is_static())
      dims.emplace_back(static_cast<int64_t>(std::floor(static_cast<double>(d.value()) * f)));
    else if (f == 1.0f)
      dims.push_back(d);
    else if (f == std::floor(f) && f > 1 && d.is_symbolic() && !is_placeholder_dim(d))
      dims.push_back(Dim::symbol(d.symbol_name() + "*" + std::to_string(static_cast<int64_t>(f))));
    else
      dims.emplace_back();
  }
  return Shape(dims);
}

// Expand: the broadcast of the input's dims and the target's.
std::optional<Shape> SymbolicShapeValues::expand_shape(const Node& n) const {
  auto target = elements(n.input(1));
  const Value* x = n.input(0);
  if (!target || !x || !x->type.shape) return std::nullopt;
  const auto& in = x->type.shape->dims();
  const size_t rank = std::max(in.size(), target->size());
  std::vector<Dim> dims(rank);
  for (size_t i = 0; i < rank; ++i) {
    const Dim a = i + in.size() >= rank ? in[i + in.size() - rank] : Dim(1);
    const Dim b = i + target->size() >= rank ? (*target)[i + target->size() - rank] : Dim(1);
    if (a.is_static() && a.value() == 1)
      dims[i] = b;
    else if ((b.is_static() && b.value() == 1) || a == b || a.is_static())
      dims[i] = a;
    else if (b.is_static())
      dims[i] = b;
    // else: unknown (a broadcast of two different symbols)
  }
  return Shape(dims);
}

std::optional<Shape> SymbolicShapeValues::output_shape(const Node& n) const {
  if (!n.domain.empty() || n.outputs().empty() || !n.output(0)) return std::nullopt;
  using ShapeOf = std::optional<Shape> (SymbolicShapeValues::*)(const Node&) const;
  static const std::map<std::string, ShapeOf, std::less<>> kByOp = {
      {"ConstantOfShape", &SymbolicShapeValues::constant_of_shape_shape},
      {"Range", &SymbolicShapeValues::range_shape},
      {"Reshape", &SymbolicShapeValues::reshape_shape},
      {"Slice", &SymbolicShapeValues::slice_shape},
      {"Conv", &SymbolicShapeValues::window_shape},
      {"MaxPool", &SymbolicShapeValues::window_shape},
      {"AveragePool", &SymbolicShapeValues::window_shape},
      {"Resize", &SymbolicShapeValues::resize_shape},
      {"Expand", &SymbolicShapeValues::expand_shape},
  };
  auto it = kByOp.find(n.op_type);
  return it == kByOp.end() ? std::nullopt : (this->*it->second)(n);
}

}  // namespace geopt
