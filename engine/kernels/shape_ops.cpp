// Shape and data-movement kernels. They move bytes and never do arithmetic, so
// they serve every dtype (half types included) as they are.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "eval/kernel.h"
#include "kernels/arguments.h"
#include "kernels/broadcast.h"
#include "kernels/dispatch.h"
#include "kernels/layout.h"
#include "util/team_region.h"

namespace geopt {
namespace {

int64_t product(const std::vector<int64_t>& dims, size_t from = 0, size_t to = SIZE_MAX) {
  to = std::min(to, dims.size());
  from = std::min(from, to);
  return std::accumulate(dims.begin() + static_cast<std::ptrdiff_t>(from),
                         dims.begin() + static_cast<std::ptrdiff_t>(to), int64_t{1}, std::multiplies<>());
}

// Axes from an attribute (before `input_since`) or from input `index` (from it on).
std::vector<int64_t> axes_arg(const KernelContext& ctx, const char* attr, size_t index, int64_t input_since) {
  if (ctx.opset() < input_since) return ctx.attr_ints(attr);
  return ctx.has_input(index) ? ctx.input(index).ints() : std::vector<int64_t>{};
}

// Copies element `src` of x to element `dst` of y (same dtype), strings included.
struct ElementCopier {
  const HostTensor& x;
  HostTensor& y;
  size_t esz;
  ElementCopier(const HostTensor& in, HostTensor& out) : x(in), y(out), esz(dtype_size(in.dtype())) {}
  void operator()(int64_t dst, int64_t src) {
    if (x.dtype() == DType::String)
      y.strings[static_cast<size_t>(dst)] = x.strings[static_cast<size_t>(src)];
    else
      std::memcpy(y.mutable_raw() + dst * static_cast<int64_t>(esz),
                  x.raw() + src * static_cast<int64_t>(esz), esz);
  }
};

// Visits every coordinate of dims in row-major order: f(linear index, coordinate).
template <class F>
void for_each_index(const std::vector<int64_t>& dims, F&& f) {
  int64_t total = product(dims);
  std::vector<int64_t> c(dims.size(), 0);
  for (int64_t i = 0; i < total; ++i) {
    f(i, c);
    for (size_t d = dims.size(); d-- > 0;) {
      if (++c[d] < dims[d]) break;
      c[d] = 0;
    }
  }
}

HostTensor broadcast_to(const KernelContext& ctx, const HostTensor& x, const std::vector<int64_t>& target) {
  std::vector<int64_t> dims;
  if (!broadcast_shape({x.dims(), target}, dims))
    ctx.fail("cannot expand " + x.shape_string() + " to the requested shape");
  ctx.check_planned_dims(0, dims);
  HostTensor y(x.dtype(), dims);
  std::vector<int64_t> strides[1] = {broadcast_strides(x.dims(), dims)};
  ElementCopier copy(x, y);
  for_each_broadcast(dims, strides, [&](int64_t i, const int64_t* o) { copy(i, o[0]); });
  return y;
}

void identity(KernelContext& ctx) { ctx.outputs[0] = ctx.input(0); }

void dropout(KernelContext& ctx) {
  bool training = ctx.has_input(2) && ctx.input(2).int_at(0) != 0;
  float ratio =
      ctx.has_input(1) ? static_cast<float>(ctx.input(1).real_at(0)) : ctx.attr_float("ratio", 0.5f);
  if (training && ratio != 0.0f)
    ctx.fail("training-mode Dropout is random; the reference evaluator runs inference only");
  ctx.outputs[0] = ctx.input(0);
  if (ctx.wants_output(1)) {
    HostTensor mask(DType::Bool, ctx.input(0).dims());
    std::fill_n(mask.mutable_data<bool>(), mask.size(), true);
    ctx.set_output(1, std::move(mask));
  }
}

void reshape(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  std::vector<int64_t> shape = ctx.opset() < 5 ? ctx.attr_ints("shape") : ctx.input(1).ints();
  bool allow_zero = ctx.attr_int("allowzero", 0) != 0;
  int64_t infer = -1, known = 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allow_zero) {
      if (i >= x.rank())
        ctx.fail("shape entry 0 at position " + std::to_string(i) + " has no input dim to copy");
      shape[i] = x.dims()[i];
    }
    if (shape[i] == -1) {
      if (infer >= 0) ctx.fail("more than one -1 in the target shape");
      infer = static_cast<int64_t>(i);
    } else {
      known *= shape[i];
    }
  }
  if (infer >= 0) {
    if (known == 0 || x.size() % known != 0) ctx.fail("cannot infer -1 when reshaping " + x.shape_string());
    shape[static_cast<size_t>(infer)] = x.size() / known;
  }
  if (product(shape) != x.size())
    ctx.fail("cannot reshape " + x.shape_string() + " to " + std::to_string(product(shape)) + " elements");
  ctx.outputs[0] = x.reshaped(shape);
}

void flatten(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = ctx.attr_int("axis", 1);
  if (axis < 0) axis += rank;
  if (axis < 0 || axis > rank) ctx.fail("axis out of range");
  ctx.outputs[0] = x.reshaped(
      {product(x.dims(), 0, static_cast<size_t>(axis)), product(x.dims(), static_cast<size_t>(axis))});
}

void squeeze(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  std::vector<int64_t> axes = axes_arg(ctx, "axes", 1, 13);
  std::vector<bool> drop(x.rank(), false);
  if (axes.empty()) {
    for (size_t i = 0; i < x.rank(); ++i) drop[i] = x.dims()[i] == 1;
  } else {
    for (int64_t a : axes) {
      int64_t n = normalize_axis(a, static_cast<int64_t>(x.rank()));
      if (x.dims()[static_cast<size_t>(n)] != 1)
        ctx.fail("cannot squeeze axis " + std::to_string(a) + " of " + x.shape_string());
      drop[static_cast<size_t>(n)] = true;
    }
  }
  std::vector<int64_t> dims;
  for (size_t i = 0; i < x.rank(); ++i)
    if (!drop[i]) dims.push_back(x.dims()[i]);
  ctx.outputs[0] = x.reshaped(dims);
}

void unsqueeze(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  std::vector<int64_t> axes = axes_arg(ctx, "axes", 1, 13);
  int64_t out_rank = static_cast<int64_t>(x.rank() + axes.size());
  std::vector<bool> inserted(static_cast<size_t>(out_rank), false);
  for (int64_t a : axes) {
    int64_t n = normalize_axis(a, out_rank);
    if (inserted[static_cast<size_t>(n)]) ctx.fail("axis " + std::to_string(a) + " given twice");
    inserted[static_cast<size_t>(n)] = true;
  }
  std::vector<int64_t> dims;
  size_t k = 0;
  for (int64_t i = 0; i < out_rank; ++i) dims.push_back(inserted[static_cast<size_t>(i)] ? 1 : x.dims()[k++]);
  ctx.outputs[0] = x.reshaped(dims);
}

void transpose_kernel(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  std::vector<int64_t> perm = ctx.attr_ints("perm");
  if (perm.empty()) {
    perm.resize(x.rank());
    std::iota(perm.rbegin(), perm.rend(), 0);
  }
  if (perm.size() != x.rank())
    ctx.fail("perm has " + std::to_string(perm.size()) + " entries for rank " + std::to_string(x.rank()));
  std::vector<bool> seen(x.rank(), false);
  for (int64_t& p : perm) {
    p = normalize_axis(p, static_cast<int64_t>(x.rank()));
    if (seen[static_cast<size_t>(p)]) ctx.fail("perm is not a permutation");
    seen[static_cast<size_t>(p)] = true;
  }
  ctx.outputs[0] = transpose(x, perm);
}

void concat(KernelContext& ctx) {
  const HostTensor& first = ctx.input(0);
  int64_t rank = static_cast<int64_t>(first.rank());
  int64_t axis = normalize_axis(ctx.attr_int("axis", 0), rank);
  std::vector<int64_t> dims = first.dims();
  dims[static_cast<size_t>(axis)] = 0;
  for (size_t k = 0; k < ctx.input_count(); ++k) {
    const HostTensor& t = ctx.input(k);
    if (t.rank() != first.rank() || t.dtype() != first.dtype()) ctx.fail("inputs differ in rank or dtype");
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t.dims()[static_cast<size_t>(d)] != first.dims()[static_cast<size_t>(d)])
        ctx.fail("input " + std::to_string(k) + " " + t.shape_string() + " does not match " +
                 first.shape_string());
    dims[static_cast<size_t>(axis)] += t.dims()[static_cast<size_t>(axis)];
  }
  const bool strings = first.dtype() == DType::String;
  // Every byte is copied in: planned storage as it is (a string tensor starts empty).
  HostTensor y = strings ? HostTensor(first.dtype(), dims) : ctx.new_output(0, first.dtype(), dims);
  const int64_t outer = product(dims, 0, static_cast<size_t>(axis));
  const int64_t row = product(dims, static_cast<size_t>(axis));
  if (strings) {
    int64_t offset = 0;  // elements into each output row
    for (size_t k = 0; k < ctx.input_count(); ++k) {
      const HostTensor& t = ctx.input(k);
      const int64_t chunk = product(t.dims(), static_cast<size_t>(axis));
      ElementCopier copy(t, y);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t j = 0; j < chunk; ++j) copy(o * row + offset + j, o * chunk + j);
      offset += chunk;
    }
    ctx.outputs[0] = std::move(y);
    return;
  }
  // The copies in pieces of at most 1 MiB, spread over the threads: a concat of two
  // high-resolution feature maps (one row each at batch 1) is two copies of 100 MB.
  struct Piece {
    std::byte* to;
    const std::byte* from;
    size_t bytes;
  };
  constexpr size_t kPiece = size_t{1} << 20;
  const size_t esz = dtype_size(first.dtype());
  std::vector<Piece> pieces;
  int64_t offset = 0;
  for (size_t k = 0; k < ctx.input_count(); ++k) {
    const HostTensor& t = ctx.input(k);
    const int64_t chunk = product(t.dims(), static_cast<size_t>(axis));
    for (int64_t o = 0; o < outer; ++o) {
      std::byte* to = y.mutable_raw() + static_cast<size_t>(o * row + offset) * esz;
      const std::byte* from = t.raw() + static_cast<size_t>(o * chunk) * esz;
      for (size_t done = 0, bytes = static_cast<size_t>(chunk) * esz; done < bytes; done += kPiece)
        pieces.push_back({to + done, from + done, std::min(kPiece, bytes - done)});
    }
    offset += chunk;
  }
  team_region(pieces.size() > 4, [&] {
#pragma omp for
    for (size_t i = 0; i < pieces.size(); ++i) std::memcpy(pieces[i].to, pieces[i].from, pieces[i].bytes);
  });
  ctx.outputs[0] = std::move(y);
}

void split(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  int64_t axis = normalize_axis(ctx.attr_int("axis", 0), static_cast<int64_t>(x.rank()));
  const int64_t dim = x.dims()[static_cast<size_t>(axis)];
  std::vector<int64_t> sizes = ctx.opset() < 13
                                   ? ctx.attr_ints("split")
                                   : (ctx.has_input(1) ? ctx.input(1).ints() : std::vector<int64_t>{});
  const int64_t parts = static_cast<int64_t>(ctx.outputs.size());
  if (sizes.empty()) {
    int64_t each = (dim + parts - 1) / parts;  // the last part may be smaller
    if (ctx.opset() >= 18 && ctx.has_attr("num_outputs")) {
      if (ctx.attr_int("num_outputs", 0) != parts)
        ctx.fail("num_outputs is " + std::to_string(ctx.attr_int("num_outputs", 0)) + " but the node has " +
                 std::to_string(parts) + " outputs");
      if (parts > 1 && (parts - 1) * each >= dim)
        ctx.fail("dim " + std::to_string(dim) + " does not split into " + std::to_string(parts) +
                 " parts of ceil(dim / parts) (the last would be empty)");
    }
    for (int64_t k = 0; k < parts; ++k) sizes.push_back(std::max<int64_t>(0, std::min(each, dim - k * each)));
  }
  if (static_cast<int64_t>(sizes.size()) != parts ||
      std::accumulate(sizes.begin(), sizes.end(), int64_t{0}) != dim)
    ctx.fail("split sizes do not add up to dim " + std::to_string(dim));
  const int64_t outer = product(x.dims(), 0, static_cast<size_t>(axis));
  const int64_t inner = product(x.dims(), static_cast<size_t>(axis) + 1);
  const size_t esz = dtype_size(x.dtype());
  int64_t start = 0;
  for (int64_t k = 0; k < parts; ++k) {
    std::vector<int64_t> dims = x.dims();
    dims[static_cast<size_t>(axis)] = sizes[static_cast<size_t>(k)];
    HostTensor y(x.dtype(), dims);
    const int64_t chunk = sizes[static_cast<size_t>(k)] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y.mutable_raw() + o * chunk * static_cast<int64_t>(esz),
                  x.raw() + (o * dim * inner + start * inner) * static_cast<int64_t>(esz),
                  static_cast<size_t>(chunk) * esz);
    start += sizes[static_cast<size_t>(k)];
    ctx.outputs[static_cast<size_t>(k)] = std::move(y);
  }
}

void slice(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    starts = ctx.attr_ints("starts");
    ends = ctx.attr_ints("ends");
    axes = ctx.attr_ints("axes");
  } else {
    starts = ctx.input(1).ints();
    ends = ctx.input(2).ints();
    if (ctx.has_input(3)) axes = ctx.input(3).ints();
    if (ctx.has_input(4)) steps = ctx.input(4).ints();
  }
  if (axes.empty()) {
    axes.resize(starts.size());
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    ctx.fail("starts, ends, axes and steps differ in length");
  std::vector<int64_t> begin(static_cast<size_t>(rank), 0), step(static_cast<size_t>(rank), 1),
      dims = x.dims();
  for (size_t i = 0; i < starts.size(); ++i) {
    size_t a = static_cast<size_t>(normalize_axis(axes[i], rank));
    const int64_t dim = x.dims()[a];
    int64_t s = starts[i], e = ends[i], st = steps[i];
    if (st == 0) ctx.fail("slice step is 0");
    if (s < 0) s += dim;
    if (e < 0) e += dim;
    // Counted in unsigned steps: a step of INT64_MAX or INT64_MIN overflowed (e - s + st - 1).
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, dim);
      e = std::clamp<int64_t>(e, 0, dim);
      dims[a] = e > s
                    ? static_cast<int64_t>((static_cast<uint64_t>(e - s) - 1) / static_cast<uint64_t>(st) + 1)
                    : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, dim - 1);
      e = std::clamp<int64_t>(e, -1, dim - 1);
      dims[a] = s > e
                    ? static_cast<int64_t>(
                          (static_cast<uint64_t>(s - e) - 1) / (uint64_t{0} - static_cast<uint64_t>(st)) + 1)
                    : 0;
    }
    begin[a] = s;
    step[a] = st;
  }
  HostTensor y(x.dtype(), dims);
  auto xs = strides_of(x.dims());
  ElementCopier copy(x, y);
  for_each_index(dims, [&](int64_t i, const std::vector<int64_t>& c) {
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d) src += (begin[d] + c[d] * step[d]) * xs[d];
    copy(i, src);
  });
  ctx.outputs[0] = std::move(y);
}

void gather(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& idx = ctx.input(1);
  int64_t axis = normalize_axis(ctx.attr_int("axis", 0), static_cast<int64_t>(x.rank()));
  const int64_t dim = x.dims()[static_cast<size_t>(axis)];
  std::vector<int64_t> dims(x.dims().begin(), x.dims().begin() + axis);
  dims.insert(dims.end(), idx.dims().begin(), idx.dims().end());
  dims.insert(dims.end(), x.dims().begin() + axis + 1, x.dims().end());
  HostTensor y(x.dtype(), dims);
  const int64_t outer = product(x.dims(), 0, static_cast<size_t>(axis));
  const int64_t inner = product(x.dims(), static_cast<size_t>(axis) + 1);
  const int64_t n = idx.size();
  ElementCopier copy(x, y);
  for (int64_t k = 0; k < n; ++k) {
    int64_t j = idx.int_at(k);
    if (j < -dim || j >= dim)
      ctx.fail("index " + std::to_string(j) + " is out of range for dim " + std::to_string(dim));
    if (j < 0) j += dim;
    for (int64_t o = 0; o < outer; ++o) {
      int64_t dst = (o * n + k) * inner, src = (o * dim + j) * inner;
      if (x.dtype() == DType::String) {
        for (int64_t e = 0; e < inner; ++e) copy(dst + e, src + e);
      } else {
        std::memcpy(y.mutable_raw() + dst * static_cast<int64_t>(copy.esz),
                    x.raw() + src * static_cast<int64_t>(copy.esz), static_cast<size_t>(inner) * copy.esz);
      }
    }
  }
  ctx.outputs[0] = std::move(y);
}

void gather_elements(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& idx = ctx.input(1);
  const int64_t rank = static_cast<int64_t>(x.rank());
  int64_t axis = normalize_axis(ctx.attr_int("axis", 0), rank);
  if (idx.rank() != x.rank()) ctx.fail("indices must have the data's rank");
  HostTensor y(x.dtype(), idx.dims());
  auto xs = strides_of(x.dims());
  const int64_t dim = x.dims()[static_cast<size_t>(axis)];
  ElementCopier copy(x, y);
  for_each_index(idx.dims(), [&](int64_t i, const std::vector<int64_t>& c) {
    int64_t j = idx.int_at(i);
    if (j < -dim || j >= dim) ctx.fail("index " + std::to_string(j) + " is out of range");
    if (j < 0) j += dim;
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d) src += (static_cast<int64_t>(d) == axis ? j : c[d]) * xs[d];
    copy(i, src);
  });
  ctx.outputs[0] = std::move(y);
}

void expand(KernelContext& ctx) { ctx.outputs[0] = broadcast_to(ctx, ctx.input(0), ctx.input(1).ints()); }

void shape(KernelContext& ctx) {
  const auto& dims = ctx.input(0).dims();
  int64_t rank = static_cast<int64_t>(dims.size());
  int64_t start = ctx.attr_int("start", 0), end = ctx.attr_int("end", rank);
  if (start < 0) start += rank;
  if (end < 0) end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  std::vector<int64_t> out(dims.begin() + start, dims.begin() + std::max(start, end));
  ctx.outputs[0] = HostTensor::from_vector(DType::I64, {static_cast<int64_t>(out.size())}, out);
}

void size(KernelContext& ctx) {
  ctx.outputs[0] = HostTensor::scalar<int64_t>(DType::I64, ctx.input(0).size());
}

void constant(KernelContext& ctx) {
  if (const Tensor* t = ctx.attr_tensor("value")) {
    ctx.outputs[0] = HostTensor::view(*t);
  } else if (ctx.has_attr("value_float")) {
    ctx.outputs[0] = HostTensor::scalar<float>(DType::F32, ctx.attr_float("value_float", 0));
  } else if (ctx.has_attr("value_floats")) {
    auto v = ctx.attr_floats("value_floats");
    ctx.outputs[0] = HostTensor::from_vector(DType::F32, {static_cast<int64_t>(v.size())}, v);
  } else if (ctx.has_attr("value_int")) {
    ctx.outputs[0] = HostTensor::scalar<int64_t>(DType::I64, ctx.attr_int("value_int", 0));
  } else if (ctx.has_attr("value_ints")) {
    auto v = ctx.attr_ints("value_ints");
    ctx.outputs[0] = HostTensor::from_vector(DType::I64, {static_cast<int64_t>(v.size())}, v);
  } else if (ctx.has_attr("value_string")) {
    HostTensor t(DType::String, {});
    t.strings[0] = ctx.attr_string("value_string", "");
    ctx.outputs[0] = std::move(t);
  } else if (ctx.has_attr("value_strings")) {
    const auto& v = ctx.node().attr("value_strings")->strings;
    HostTensor t(DType::String, {static_cast<int64_t>(v.size())});
    t.strings = v;
    ctx.outputs[0] = std::move(t);
  } else {
    ctx.fail("Constant has no value attribute (sparse values are not supported)");
  }
}

void constant_of_shape(KernelContext& ctx) {
  std::vector<int64_t> dims = ctx.input(0).ints();
  const Tensor* v = ctx.attr_tensor("value");
  ctx.check_planned_dims(0, dims);
  HostTensor y(v ? v->dtype : DType::F32, dims);
  if (v) {
    HostTensor value = HostTensor::view(*v);
    const size_t esz = dtype_size(y.dtype());
    for (int64_t i = 0; i < y.size(); ++i)
      std::memcpy(y.mutable_raw() + i * static_cast<int64_t>(esz), value.raw(), esz);
  }
  ctx.outputs[0] = std::move(y);
}

void range(KernelContext& ctx) {
  const HostTensor& s = ctx.input(0);
  dispatch_real(
      s.dtype(),
      [&]<class T>() {
        T start = s.data<T>()[0], limit = ctx.input(1).data<T>()[0], delta = ctx.input(2).data<T>()[0];
        if (delta == T(0)) ctx.fail("delta is 0");
        double n =
            std::ceil((static_cast<double>(limit) - static_cast<double>(start)) / static_cast<double>(delta));
        if (std::isnan(n)) ctx.fail("start, limit and delta give no number of elements (NaN)");
        // Checked as a double: a cast of 1e19 to int64 is undefined (it read as 0 elements).
        if (n > 9.0e18)
          ctx.fail("start, limit and delta ask for " + std::to_string(n) +
                   " elements, more than a tensor can hold");
        int64_t count = std::max<int64_t>(0, static_cast<int64_t>(n));
        ctx.check_planned_dims(0, {count});
        HostTensor y(s.dtype(), {count});
        T* p = y.mutable_data<T>();
        for (int64_t i = 0; i < count; ++i) p[i] = static_cast<T>(start + static_cast<T>(i) * delta);
        ctx.outputs[0] = std::move(y);
      },
      "Range");
}

void tile(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  std::vector<int64_t> reps = ctx.input(1).ints();
  if (reps.size() != x.rank())
    ctx.fail("repeats has " + std::to_string(reps.size()) + " entries for rank " + std::to_string(x.rank()));
  std::vector<int64_t> dims = x.dims();
  for (size_t i = 0; i < dims.size(); ++i) {
    if (reps[i] < 0)
      ctx.fail("repeats[" + std::to_string(i) + "] is " + std::to_string(reps[i]) +
               "; a repeat count is at least 0");
    if (__builtin_mul_overflow(dims[i], reps[i], &dims[i]))
      ctx.fail("axis " + std::to_string(i) + " of " + std::to_string(x.dims()[i]) + " repeated " +
               std::to_string(reps[i]) + " times is past 2^63");
  }
  ctx.check_planned_dims(0, dims);
  HostTensor y(x.dtype(), dims);
  auto xs = strides_of(x.dims());
  ElementCopier copy(x, y);
  for_each_index(dims, [&](int64_t i, const std::vector<int64_t>& c) {
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d) src += (c[d] % x.dims()[d]) * xs[d];
    copy(i, src);
  });
  ctx.outputs[0] = std::move(y);
}

// CenterCropPad (opset 18): each of `axes` center-cropped, or zero-padded around its
// center, to the size `shape` gives; the extra element of an odd difference goes last.
void center_crop_pad(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const std::vector<int64_t> shape = ctx.input(1).ints();
  std::vector<int64_t> axes = ctx.attr_ints("axes");
  if (axes.empty()) {
    axes.resize(static_cast<size_t>(rank));
    std::iota(axes.begin(), axes.end(), 0);
  }
  if (shape.size() != axes.size())
    ctx.fail("shape has " + std::to_string(shape.size()) + " sizes for " + std::to_string(axes.size()) +
             " axes");
  std::vector<int64_t> dims = x.dims(),
                       offset(static_cast<size_t>(rank), 0);  // output index - offset = input index
  const std::vector<size_t> listed = distinct_axes(ctx, axes, rank);
  for (size_t k = 0; k < listed.size(); ++k) {
    const size_t a = listed[k];
    if (shape[k] < 0) ctx.fail("shape must not be negative");
    offset[a] = shape[k] >= dims[a] ? (shape[k] - dims[a]) / 2 : -((dims[a] - shape[k]) / 2);
    dims[a] = shape[k];
  }
  ctx.check_planned_dims(0, dims);
  HostTensor y(x.dtype(), dims);  // zeros where padded
  auto xs = strides_of(x.dims());
  ElementCopier copy(x, y);
  for_each_index(dims, [&](int64_t i, const std::vector<int64_t>& c) {
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      const int64_t at = c[d] - offset[d];
      if (at < 0 || at >= x.dims()[d]) return;
      src += at * xs[d];
    }
    copy(i, src);
  });
  ctx.outputs[0] = std::move(y);
}

void pad(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> pads = ctx.opset() < 11 ? ctx.attr_ints("pads") : ctx.input(1).ints();
  std::string mode = ctx.attr_string("mode", "constant");
  if (ctx.opset() >= 18 && ctx.has_input(3)) {  // pads for the listed axes only; the others get none
    const std::vector<int64_t> axes = ctx.input(3).ints();
    if (pads.size() != 2 * axes.size())
      ctx.fail("pads must have 2 entries per axis in axes (" + std::to_string(axes.size()) + ")");
    std::vector<int64_t> full(static_cast<size_t>(2 * rank), 0);
    const std::vector<size_t> listed = distinct_axes(ctx, axes, rank);
    for (size_t k = 0; k < listed.size(); ++k) {
      const size_t a = listed[k];
      full[a] = pads[k];
      full[a + static_cast<size_t>(rank)] = pads[k + axes.size()];
    }
    pads = std::move(full);
  }
  if (static_cast<int64_t>(pads.size()) != 2 * rank) ctx.fail("pads must have 2 * rank entries");
  std::vector<int64_t> dims(static_cast<size_t>(rank));
  for (int64_t d = 0; d < rank; ++d) {
    const int64_t before = pads[static_cast<size_t>(d)], after = pads[static_cast<size_t>(d + rank)];
    int64_t& out = dims[static_cast<size_t>(d)];
    if (__builtin_add_overflow(x.dims()[static_cast<size_t>(d)], before, &out) ||
        __builtin_add_overflow(out, after, &out))
      ctx.fail("axis " + std::to_string(d) + " of " + std::to_string(x.dims()[static_cast<size_t>(d)]) +
               " padded by " + std::to_string(before) + " and " + std::to_string(after) + " is past 2^63");
    if (out < 0)
      ctx.fail("axis " + std::to_string(d) + " of " + std::to_string(x.dims()[static_cast<size_t>(d)]) +
               " padded by " + std::to_string(before) + " and " + std::to_string(after) +
               ": negative padding removes more than the whole axis");
    if (mode != "constant" && x.dims()[static_cast<size_t>(d)] == 0 && dims[static_cast<size_t>(d)] > 0)
      ctx.fail(mode + " padding of an empty axis");
  }
  ctx.check_planned_dims(0, dims);
  HostTensor y(x.dtype(), dims);
  HostTensor fill(x.dtype(), {});
  if (mode == "constant") {
    if (ctx.opset() < 11) {
      dispatch_real(
          x.dtype(), [&]<class T>() { *fill.mutable_data<T>() = static_cast<T>(ctx.attr_float("value", 0)); },
          "Pad");
    } else if (ctx.has_input(2) && ctx.input(2).size() > 0) {
      std::memcpy(fill.mutable_raw(), ctx.input(2).raw(), dtype_size(x.dtype()));
    }
  } else if (mode != "reflect" && mode != "edge" && !(mode == "wrap" && ctx.opset() >= 19)) {
    ctx.fail("unknown pad mode '" + mode + "'");
  }
  auto xs = strides_of(x.dims());
  const size_t esz = dtype_size(x.dtype());
  ElementCopier copy(x, y);
  for_each_index(dims, [&](int64_t i, const std::vector<int64_t>& c) {
    int64_t src = 0;
    for (size_t d = 0; d < c.size(); ++d) {
      int64_t n = x.dims()[d];
      int64_t s = c[d] - pads[d];
      if (s < 0 || s >= n) {
        if (mode == "constant") {
          std::memcpy(y.mutable_raw() + i * static_cast<int64_t>(esz), fill.raw(), esz);
          return;
        }
        if (mode == "edge") {
          s = std::clamp<int64_t>(s, 0, n - 1);
        } else if (mode == "wrap") {  // the axis repeated end to end
          s = ((s % n) + n) % n;
        } else if (n == 1) {
          s = 0;
        } else {  // reflect without repeating the edge
          int64_t period = 2 * (n - 1);
          s = ((s % period) + period) % period;
          if (s >= n) s = period - s;
        }
      }
      src += s * xs[d];
    }
    copy(i, src);
  });
  ctx.outputs[0] = std::move(y);
}

void trilu(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() < 2) ctx.fail("Trilu needs rank >= 2");
  bool upper = ctx.attr_int("upper", 1) != 0;
  int64_t k = ctx.has_input(1) ? ctx.input(1).int_at(0) : 0;
  const int64_t rows = x.dim(-2), cols = x.dim(-1);
  HostTensor y(x.dtype(), x.dims());
  ElementCopier copy(x, y);
  for (int64_t i = 0; i < x.size(); ++i) {
    int64_t c = i % cols, r = (i / cols) % rows;
    bool keep = upper ? (c - r >= k) : (c - r <= k);
    if (keep) copy(i, i);
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_resize_kernel(OpRegistry& r);

void register_shape_kernels(OpRegistry& r) {
  const std::pair<const char*, void (*)(KernelContext&)> kernels[] = {
      {"Identity", identity},
      {"Dropout", dropout},
      {"Reshape", reshape},
      {"Flatten", flatten},
      {"Squeeze", squeeze},
      {"Unsqueeze", unsqueeze},
      {"Transpose", transpose_kernel},
      {"Concat", concat},
      {"Split", split},
      {"Slice", slice},
      {"Gather", gather},
      {"GatherElements", gather_elements},
      {"Expand", expand},
      {"Shape", shape},
      {"Size", size},
      {"Constant", constant},
      {"ConstantOfShape", constant_of_shape},
      {"Range", range},
      {"Tile", tile},
      {"Pad", pad},
      {"CenterCropPad", center_crop_pad},
      {"Trilu", trilu},
  };
  for (const auto& [name, fn] : kernels) r.add("", name, fn, /*half_via_f32=*/false);
  register_resize_kernel(r);
}

}  // namespace geopt
