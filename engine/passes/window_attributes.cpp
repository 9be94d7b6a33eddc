#include "window_attributes.h"

#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "ir/auto_pad.h"
#include "ops/op_traits.h"

namespace geopt {
namespace {

// Static dims 2.. of a value, or nothing.
std::optional<std::vector<int64_t>> spatial_dims(const Value* v) {
  if (!v || !v->type.shape || v->type.shape->rank() < 3) return std::nullopt;
  std::vector<int64_t> dims;
  for (size_t i = 2; i < v->type.shape->rank(); ++i) {
    const Dim& d = (*v->type.shape)[i];
    if (!d.is_static()) return std::nullopt;
    dims.push_back(d.value());
  }
  return dims;
}

std::vector<int64_t> ints_or(const Node& n, const char* name, size_t size, int64_t fill) {
  const Attribute* a = n.attr(name);
  if (a && a->ints.size() == size) return a->ints;
  return std::vector<int64_t>(size, fill);
}

void set_ints(Node& n, const char* name, std::vector<int64_t> values) {
  for (Attribute& a : n.attributes)
    if (a.name == name) {
      a = Attribute::make_ints(name, std::move(values));
      return;
    }
  n.attributes.push_back(Attribute::make_ints(name, std::move(values)));
}

void remove_attribute(Node& n, const char* name) {
  std::erase_if(n.attributes, [&](const Attribute& a) { return a.name == name; });
}

// The spatial rank: from the input's shape, else from kernel_shape or the weights.
std::optional<size_t> spatial_rank(const Node& n) {
  if (!n.inputs().empty() && n.inputs()[0] && n.inputs()[0]->type.shape &&
      n.inputs()[0]->type.shape->rank() >= 3)
    return n.inputs()[0]->type.shape->rank() - 2;
  if (const Attribute* k = n.attr("kernel_shape"); k && !k->ints.empty()) return k->ints.size();
  return std::nullopt;
}

// The kernel's spatial size: kernel_shape, else the weights' dims 2...
std::optional<std::vector<int64_t>> kernel(const Node& n, size_t rank) {
  if (const Attribute* k = n.attr("kernel_shape"); k && k->ints.size() == rank) return k->ints;
  const std::optional<size_t> w = standard_op_traits(n.domain, n.op_type).window_weights;
  if (!w || *w >= n.inputs().size()) return std::nullopt;
  std::optional<std::vector<int64_t>> dims = spatial_dims(n.inputs()[*w]);
  if (!dims || dims->size() != rank) return std::nullopt;
  return dims;
}

bool make_explicit(Node& n) {
  const std::optional<size_t> rank = spatial_rank(n);
  if (!rank || *rank == 0) return false;
  bool changed = false;
  // The convs also get their dilations and kernel_shape (from the weights); a pool's
  // kernel_shape is required, and MaxPool's dilations are left as written.
  if (standard_op_traits(n.domain, n.op_type).window_weights) {
    if (!n.attr("dilations")) {
      set_ints(n, "dilations", std::vector<int64_t>(*rank, 1));
      changed = true;
    }
    if (!n.attr("kernel_shape"))
      if (std::optional<std::vector<int64_t>> k = kernel(n, *rank)) {
        set_ints(n, "kernel_shape", std::move(*k));
        changed = true;
      }
  }
  if (!n.attr("strides")) {
    set_ints(n, "strides", std::vector<int64_t>(*rank, 1));
    changed = true;
  }
  const Attribute* auto_pad_attr = n.attr("auto_pad");
  const std::optional<AutoPad> auto_pad = parse_auto_pad(auto_pad_attr ? auto_pad_attr->s : "NOTSET");
  if (!auto_pad) return changed;  // the kernel names the unknown value
  if (*auto_pad == AutoPad::NotSet) {
    if (!n.attr("pads")) {
      set_ints(n, "pads", std::vector<int64_t>(2 * *rank, 0));
      changed = true;
    }
    return changed;
  }
  if (*auto_pad == AutoPad::Valid) {
    set_ints(n, "pads", std::vector<int64_t>(2 * *rank, 0));
    remove_attribute(n, "auto_pad");
    return true;
  }
  // SAME: output = ceil(input / stride), the padding split evenly with the odd one at the
  // end (UPPER) or the start (LOWER). A pool with ceil_mode keeps auto_pad: ONNX Runtime
  // ignores ceil_mode under SAME, and the explicit form would honour it.
  if (const Attribute* ceil = n.attr("ceil_mode"); ceil && ceil->i != 0) return changed;
  const std::optional<std::vector<int64_t>> k = kernel(n, *rank);
  if (!k) return changed;
  // At stride 1 the padding is the window's extent less one, whatever the input's size;
  // at a larger stride it depends on the size, which must be static.
  const std::optional<std::vector<int64_t>> in = spatial_dims(n.inputs().empty() ? nullptr : n.inputs()[0]);
  const std::vector<int64_t> strides = ints_or(n, "strides", *rank, 1);
  const std::vector<int64_t> dilations = ints_or(n, "dilations", *rank, 1);
  std::vector<int64_t> pads(2 * *rank, 0);
  for (size_t i = 0; i < *rank; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || (*k)[i] <= 0) return changed;
    const int64_t extent = ((*k)[i] - 1) * dilations[i] + 1;
    int64_t total = extent - 1;
    if (strides[i] != 1) {
      if (!in || in->size() != *rank) return changed;
      const int64_t out = ((*in)[i] + strides[i] - 1) / strides[i];
      total = std::max<int64_t>(0, (out - 1) * strides[i] + extent - (*in)[i]);
    }
    const int64_t small = total / 2, large = total - small;
    const bool upper = *auto_pad == AutoPad::SameUpper;
    pads[i] = upper ? small : large;
    pads[i + *rank] = upper ? large : small;
  }
  set_ints(n, "pads", std::move(pads));
  remove_attribute(n, "auto_pad");
  return true;
}

}  // namespace

size_t make_window_attributes_explicit(Graph& graph) {
  size_t changed = 0;
  for (const auto& n : graph.nodes())
    if (standard_op_traits(n->domain, n->op_type).sliding_window && make_explicit(*n)) ++changed;
  return changed;
}

}  // namespace geopt
