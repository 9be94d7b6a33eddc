#include "passes/symbolic_shapes.h"

#include <algorithm>

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

}  // namespace

bool is_placeholder_dim(const Dim& d) { return d.is_symbolic() && d.symbol_name().rfind("unk__", 0) == 0; }

std::optional<std::vector<Dim>> SymbolicShapeValues::elements(const Value* v) const {
  if (!v) return std::nullopt;
  if (auto it = dims_.find(v); it != dims_.end()) return it->second;
  if (auto ints = integers(v)) return std::vector<Dim>(ints->begin(), ints->end());
  return std::nullopt;
}

void SymbolicShapeValues::record(const Node& n) {
  if (!n.domain.empty() || n.outputs().empty() || !n.output(0)) return;
  const std::string& op = n.op_type;
  std::optional<std::vector<Dim>> out;
  if (op == "Shape") {
    const Value* x = n.input(0);
    if (!x || !x->type.shape) return;
    const auto& dims = x->type.shape->dims();
    const auto rank = static_cast<int64_t>(dims.size());
    const int64_t start = clamp_index(int_attr(n, "start").value_or(0), rank);
    const int64_t end = std::max(start, clamp_index(int_attr(n, "end").value_or(rank), rank));
    out = std::vector<Dim>(dims.begin() + start, dims.begin() + end);
  } else if (op == "Gather" && int_attr(n, "axis").value_or(0) == 0) {
    auto data = elements(n.input(0));
    auto index = integers(n.input(1));
    if (!data || !index) return;
    std::vector<Dim> picked;
    for (int64_t i : *index) {
      const auto size = static_cast<int64_t>(data->size());
      if (i < -size || i >= size) return;
      picked.push_back((*data)[static_cast<size_t>(i < 0 ? i + size : i)]);
    }
    out = std::move(picked);
  } else if (op == "Unsqueeze" || op == "Squeeze" || op == "Identity" || op == "Cast" || op == "Reshape") {
    // The same elements, shaped as a scalar or a vector (a Cast only between integer types).
    if (op == "Cast" && int_attr(n, "to").value_or(0) != static_cast<int64_t>(DType::I64) && int_attr(n, "to").value_or(0) != static_cast<int64_t>(DType::I32)) return;
    const Value* x = n.input(0);
    if (!x || dims_.find(x) == dims_.end()) return;
    out = dims_.at(x);
  } else if (op == "Concat") {
    std::vector<Dim> all;
    for (const Value* in : n.inputs()) {
      auto e = elements(in);
      if (!e) return;
      all.insert(all.end(), e->begin(), e->end());
    }
    out = std::move(all);
  } else if (op == "Slice") {
    auto data = elements(n.input(0));
    auto starts = integers(n.input(1)), ends = integers(n.input(2));
    auto axes = n.inputs().size() > 3 ? integers(n.input(3)) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{0});
    auto steps = n.inputs().size() > 4 ? integers(n.input(4)) : std::optional<std::vector<int64_t>>(std::vector<int64_t>{1});
    if (!data || !starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1 || (*axes)[0] != 0 || (*steps)[0] != 1) return;
    const auto size = static_cast<int64_t>(data->size());
    const int64_t a = clamp_index(std::clamp<int64_t>((*starts)[0], -size, size), size);
    const int64_t b = std::max(a, clamp_index(std::clamp<int64_t>((*ends)[0], -size, size), size));
    out = std::vector<Dim>(data->begin() + a, data->begin() + b);
  }
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

std::optional<Shape> SymbolicShapeValues::output_shape(const Node& n) const {
  if (!n.domain.empty() || n.outputs().empty() || !n.output(0)) return std::nullopt;
  const std::string& op = n.op_type;
  if (op == "ConstantOfShape") {
    auto e = elements(n.input(0));
    if (e) return Shape(*e);
  } else if (op == "Range") {
    // Range(0, n, 1): n elements, whatever n is.
    auto start = integers(n.input(0)), delta = integers(n.input(2));
    auto limit = elements(n.input(1));
    if (start && delta && limit && start->size() == 1 && delta->size() == 1 && (*start)[0] == 0 && (*delta)[0] == 1 && limit->size() == 1)
      return Shape(std::vector<Dim>{(*limit)[0]});
  } else if (op == "Reshape") {
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
        if (d.is_static()) num *= d.value();
        else if (d.is_symbolic()) symbols.push_back(d);
        else return Shape(dims);
      }
      for (size_t i = 0; i < dims.size(); ++i) {
        if (static_cast<int>(i) == inferred) continue;
        const Dim& d = dims[i];
        if (d.is_static()) {
          den *= d.value();
        } else if (auto it = std::find(symbols.begin(), symbols.end(), d); d.is_symbolic() && it != symbols.end()) {
          symbols.erase(it);
        } else {
          return Shape(dims);
        }
      }
      if (symbols.size() == 1 && den == num) dims[static_cast<size_t>(inferred)] = symbols.front();
      else if (symbols.empty() && den > 0 && num % den == 0) dims[static_cast<size_t>(inferred)] = num / den;
    }
    return Shape(dims);
  } else if (op == "Expand") {
    auto target = elements(n.input(1));
    const Value* x = n.input(0);
    if (!target || !x || !x->type.shape) return std::nullopt;
    const auto& in = x->type.shape->dims();
    const size_t rank = std::max(in.size(), target->size());
    std::vector<Dim> dims(rank);
    for (size_t i = 0; i < rank; ++i) {
      const Dim a = i + in.size() >= rank ? in[i + in.size() - rank] : Dim(1);
      const Dim b = i + target->size() >= rank ? (*target)[i + target->size() - rank] : Dim(1);
      if (a.is_static() && a.value() == 1) dims[i] = b;
      else if ((b.is_static() && b.value() == 1) || a == b || a.is_static()) dims[i] = a;
      else if (b.is_static()) dims[i] = b;
      // else: unknown (a broadcast of two different symbols)
    }
    return Shape(dims);
  }
  return std::nullopt;
}

}  // namespace geopt
