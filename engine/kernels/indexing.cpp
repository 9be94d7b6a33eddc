// Indexing kernels: gathers and scatters by index tensors, selections by a mask or
// by value (TopK, NonZero, Compress, Unique), running sums and one-hot encodings.
// Data movement is by element bytes, so every dtype passes; comparisons dispatch
// on the element type.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>

#include "eval/kernel.h"
#include "kernels/arguments.h"
#include "kernels/dispatch.h"
#include "kernels/layout.h"

namespace geopt {
namespace {

int64_t product(const std::vector<int64_t>& dims, size_t from = 0, size_t to = SIZE_MAX) {
  int64_t p = 1;
  for (size_t i = from; i < std::min(to, dims.size()); ++i) p *= dims[i];
  return p;
}

// Copies `count` elements between tensors of the same dtype, by element offsets.
void copy_elements(HostTensor& dst, int64_t dst_at, const HostTensor& src, int64_t src_at, int64_t count) {
  if (count <= 0) return;
  if (src.dtype() == DType::String) {
    for (int64_t e = 0; e < count; ++e)
      dst.strings[static_cast<size_t>(dst_at + e)] = src.strings[static_cast<size_t>(src_at + e)];
    return;
  }
  const int64_t esz = static_cast<int64_t>(dtype_size(src.dtype()));
  std::memcpy(dst.mutable_raw() + dst_at * esz, src.raw() + src_at * esz, static_cast<size_t>(count * esz));
}

HostTensor like(const HostTensor& x, std::vector<int64_t> dims) {
  HostTensor y(x.dtype(), std::move(dims));
  if (x.dtype() == DType::String) y.strings.resize(static_cast<size_t>(y.size()));
  return y;
}

int64_t checked_index(const KernelContext& ctx, int64_t j, int64_t d, const char* what) {
  if (j < -d || j >= d)
    ctx.fail(std::string(what) + " " + std::to_string(j) + " is out of range [" + std::to_string(-d) + ", " +
             std::to_string(d) + ")");
  return j < 0 ? j + d : j;
}

// GatherND: slices data[b..., indices[b..., i, :]] with `batch_dims` leading dims shared.
void gather_nd(KernelContext& ctx) {
  const HostTensor& data = ctx.input(0);
  const HostTensor& indices = ctx.input(1);
  const int64_t b = ctx.attr_int("batch_dims", 0);
  const int64_t r = static_cast<int64_t>(data.rank()), q = static_cast<int64_t>(indices.rank());
  if (q < 1 || b < 0 || b >= q || b >= r) ctx.fail("batch_dims must be below the ranks of data and indices");
  const int64_t k = indices.dim(-1);
  if (k < 1 || b + k > r)
    ctx.fail("the last dim of indices (" + std::to_string(k) + ") must be in 1.." + std::to_string(r - b));
  for (int64_t a = 0; a < b; ++a)
    if (data.dims()[static_cast<size_t>(a)] != indices.dims()[static_cast<size_t>(a)])
      ctx.fail("the batch dims of data and indices differ");
  std::vector<int64_t> out(indices.dims().begin(), indices.dims().end() - 1);
  out.insert(out.end(), data.dims().begin() + b + k, data.dims().end());
  HostTensor y = like(data, out);
  const auto strides = strides_of(data.dims());
  const int64_t inner = product(data.dims(), static_cast<size_t>(b + k));
  const int64_t batch = product(data.dims(), 0, static_cast<size_t>(b));
  const int64_t per_batch = product(indices.dims(), static_cast<size_t>(b), indices.rank() - 1);
  const int64_t batch_stride = b ? strides[static_cast<size_t>(b - 1)] : 0;
  for (int64_t bi = 0; bi < batch; ++bi)
    for (int64_t i = 0; i < per_batch; ++i) {
      const int64_t row = bi * per_batch + i;
      int64_t off = bi * batch_stride;
      for (int64_t a = 0; a < k; ++a) {
        const size_t axis = static_cast<size_t>(b + a);
        off += checked_index(ctx, indices.int_at(row * k + a), data.dims()[axis], "index") * strides[axis];
      }
      copy_elements(y, row * inner, data, off, inner);
    }
  ctx.outputs[0] = std::move(y);
}

// ScatterND: a copy of data with the slices data[indices[i]] replaced by updates[i] (or
// combined with them: reduction add, mul, max, min). The slices apply in order, so a
// repeated index keeps the last update (reduction none), as ONNX specifies.
template <class T>
void scatter_slices(T* out, const T* updates, const std::vector<int64_t>& offsets, int64_t inner,
                    const std::string& reduction) {
  for (size_t i = 0; i < offsets.size(); ++i) {
    T* dst = out + offsets[i];
    const T* src = updates + static_cast<int64_t>(i) * inner;
    for (int64_t e = 0; e < inner; ++e) {
      if (reduction == "add")
        dst[e] = static_cast<T>(dst[e] + src[e]);
      else if (reduction == "mul")
        dst[e] = static_cast<T>(dst[e] * src[e]);
      else if (reduction == "max")
        dst[e] = std::max(dst[e], src[e]);
      else if (reduction == "min")
        dst[e] = std::min(dst[e], src[e]);
      else
        dst[e] = src[e];
    }
  }
}

// The `reduction` attribute of ScatterND and ScatterElements, checked.
std::string scatter_reduction(const KernelContext& ctx) {
  std::string reduction = ctx.attr_string("reduction", "none");
  if (reduction != "none" && reduction != "add" && reduction != "mul" && reduction != "max" &&
      reduction != "min")
    ctx.fail("reduction must be none, add, mul, max or min, not '" + reduction + "'");
  return reduction;
}

void scatter_nd(KernelContext& ctx) {
  const HostTensor& data = ctx.input(0);
  const HostTensor& indices = ctx.input(1);
  const HostTensor& updates = ctx.input(2);
  const std::string reduction = scatter_reduction(ctx);
  if (indices.rank() < 1) ctx.fail("indices need rank >= 1");
  const int64_t k = indices.dim(-1);
  const int64_t rank = static_cast<int64_t>(data.rank());
  if (k < 1 || k > rank)
    ctx.fail("the last dim of indices (" + std::to_string(k) + ") must be in 1.." + std::to_string(rank));
  std::vector<int64_t> want(indices.dims().begin(), indices.dims().end() - 1);
  want.insert(want.end(), data.dims().begin() + k, data.dims().end());
  if (updates.dims() != want || updates.dtype() != data.dtype())
    ctx.fail("updates " + updates.shape_string() + " must be " +
             HostTensor(data.dtype(), want).shape_string());
  if (data.dtype() == DType::String) ctx.fail("string tensors are not supported");
  const int64_t inner = product(data.dims(), static_cast<size_t>(k));
  const auto strides = strides_of(data.dims());
  std::vector<int64_t> offsets(static_cast<size_t>(indices.size() / k));
  for (size_t i = 0; i < offsets.size(); ++i) {
    int64_t off = 0;
    for (int64_t a = 0; a < k; ++a) {
      const int64_t d = data.dims()[static_cast<size_t>(a)];
      int64_t j = indices.int_at(static_cast<int64_t>(i) * k + a);
      if (j < -d || j >= d)
        ctx.fail("index " + std::to_string(j) + " is out of range for dim " + std::to_string(a) + " (" +
                 std::to_string(d) + ")");
      off += (j < 0 ? j + d : j) * strides[static_cast<size_t>(a)];
    }
    offsets[i] = off;
  }
  HostTensor y = data.clone();  // data may be a read-only view of a constant
  switch (data.dtype()) {
    case DType::F32:
      scatter_slices(y.mutable_data<float>(), updates.data<float>(), offsets, inner, reduction);
      break;
    case DType::F64:
      scatter_slices(y.mutable_data<double>(), updates.data<double>(), offsets, inner, reduction);
      break;
    case DType::I32:
      scatter_slices(y.mutable_data<int32_t>(), updates.data<int32_t>(), offsets, inner, reduction);
      break;
    case DType::I64:
      scatter_slices(y.mutable_data<int64_t>(), updates.data<int64_t>(), offsets, inner, reduction);
      break;
    default: {
      if (reduction != "none")
        ctx.fail("reduction " + reduction + " needs a float or int32/int64 tensor, not " +
                 HostTensor(data.dtype(), {}).shape_string());
      const size_t esz = dtype_size(data.dtype());
      for (size_t i = 0; i < offsets.size(); ++i)
        std::memcpy(y.mutable_raw() + offsets[i] * static_cast<int64_t>(esz),
                    updates.raw() + static_cast<int64_t>(i) * inner * static_cast<int64_t>(esz),
                    static_cast<size_t>(inner) * esz);
    }
  }
  ctx.outputs[0] = std::move(y);
}

// ScatterElements (and the deprecated Scatter): y = data, then y[index along axis] = updates
// (or combined with them), element by element: ScatterND's slices of one element.
void scatter_elements(KernelContext& ctx) {
  const HostTensor& data = ctx.input(0);
  const HostTensor& indices = ctx.input(1);
  const HostTensor& updates = ctx.input(2);
  const std::string reduction = scatter_reduction(ctx);
  const int64_t rank = static_cast<int64_t>(data.rank());
  const int64_t axis = tensor_axis(ctx, ctx.attr_int("axis", 0), data);
  if (indices.dims() != updates.dims() || indices.rank() != data.rank() || updates.dtype() != data.dtype())
    ctx.fail("indices and updates must have one shape, of data's rank and (updates) dtype");
  const auto ds = strides_of(data.dims());
  const auto is = strides_of(indices.dims());
  std::vector<int64_t> offsets(static_cast<size_t>(indices.size()));
  for (int64_t i = 0; i < indices.size(); ++i) {
    int64_t off = 0, rest = i;
    for (int64_t a = 0; a < rank; ++a) {
      const size_t ax = static_cast<size_t>(a);
      int64_t c = rest / is[ax];
      rest %= is[ax];
      if (a == axis)
        c = checked_index(ctx, indices.int_at(i), data.dims()[ax], "index");
      else if (c >= data.dims()[ax])
        ctx.fail("indices are larger than data on axis " + std::to_string(a));
      off += c * ds[ax];
    }
    offsets[static_cast<size_t>(i)] = off;
  }
  HostTensor y = data.clone();
  if (reduction == "none") {
    for (size_t i = 0; i < offsets.size(); ++i)
      copy_elements(y, offsets[i], updates, static_cast<int64_t>(i), 1);
  } else {
    dispatch_real(
        data.dtype(),
        [&]<class T>() { scatter_slices(y.mutable_data<T>(), updates.data<T>(), offsets, 1, reduction); },
        "ScatterElements");
  }
  ctx.outputs[0] = std::move(y);
}

// Visits (outer, inner) pairs of the slices along `axis` of dims: f(base offset, stride, length).
template <class F>
void for_each_lane(const std::vector<int64_t>& dims, int64_t axis, F&& f) {
  const int64_t len = dims[static_cast<size_t>(axis)];
  const int64_t inner = product(dims, static_cast<size_t>(axis) + 1);
  const int64_t outer = product(dims, 0, static_cast<size_t>(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) f(o * len * inner + in, inner, len);
}

// TopK: the k largest (or smallest) along axis, with their indices; ties keep the lower index first.
void top_k(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t axis = tensor_axis(ctx, ctx.attr_int("axis", -1), x);
  const int64_t k = ctx.opset() >= 10 ? scalar_int_input(ctx, 1, "K") : ctx.attr_int("k", 0);
  const bool largest = ctx.attr_int("largest", 1) != 0;
  const int64_t len = x.dims()[static_cast<size_t>(axis)];
  if (k < 0 || k > len) ctx.fail("k = " + std::to_string(k) + " must be in 0.." + std::to_string(len));
  std::vector<int64_t> out = x.dims();
  out[static_cast<size_t>(axis)] = k;
  HostTensor values(x.dtype(), out), idx(DType::I64, out);
  const int64_t inner = product(x.dims(), static_cast<size_t>(axis) + 1);
  if (k > 0)
    dispatch_real(
        x.dtype(),
        [&]<class T>() {
          const T* px = x.data<T>();
          T* pv = values.mutable_data<T>();
          int64_t* pi = idx.mutable_data<int64_t>();
          std::vector<int64_t> order(static_cast<size_t>(len));
          for_each_lane(x.dims(), axis, [&](int64_t base, int64_t stride, int64_t n) {
            std::iota(order.begin(), order.end(), 0);
            auto before = [&](int64_t a, int64_t b) {
              const T va = px[base + a * stride], vb = px[base + b * stride];
              if (va == vb) return a < b;
              return largest ? va > vb : va < vb;
            };
            std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
            const int64_t out_base = base / (n * stride) * k * stride + base % stride;
            for (int64_t j = 0; j < k; ++j) {
              pv[out_base + j * inner] = px[base + order[static_cast<size_t>(j)] * stride];
              pi[out_base + j * inner] = order[static_cast<size_t>(j)];
            }
          });
        },
        "TopK");
  ctx.outputs[0] = std::move(values);
  ctx.set_output(1, std::move(idx));
}

bool nonzero_at(const HostTensor& x, int64_t i) {
  if (x.dtype() == DType::Bool) return x.data<bool>()[i];
  if (is_float(x.dtype())) return x.real_at(i) != 0.0;
  return x.int_at(i) != 0;
}

// NonZero: the coordinates of the non-zero elements, [rank, count], in row-major order.
void non_zero(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < x.size(); ++i)
    if (nonzero_at(x, i)) hits.push_back(i);
  const int64_t rank = static_cast<int64_t>(x.rank());
  HostTensor y(DType::I64, {rank, static_cast<int64_t>(hits.size())});
  const auto strides = strides_of(x.dims());
  int64_t* py = y.mutable_data<int64_t>();
  for (size_t h = 0; h < hits.size(); ++h)
    for (int64_t a = 0; a < rank; ++a)
      py[a * static_cast<int64_t>(hits.size()) + static_cast<int64_t>(h)] =
          hits[h] / strides[static_cast<size_t>(a)] % x.dims()[static_cast<size_t>(a)];
  ctx.outputs[0] = std::move(y);
}

// Compress: the slices along axis (or of the flattened input) where condition is true.
void compress(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& cond = ctx.input(1);
  const bool flat = !ctx.has_attr("axis");
  const HostTensor src = flat ? x.reshaped({x.size()}) : x;
  const int64_t axis = flat ? 0 : tensor_axis(ctx, ctx.attr_int("axis", 0), x);
  const int64_t len = src.dims()[static_cast<size_t>(axis)];
  if (cond.size() > len)
    ctx.fail("condition has " + std::to_string(cond.size()) + " entries for an axis of " +
             std::to_string(len));
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < cond.size(); ++i)
    if (nonzero_at(cond, i)) keep.push_back(i);
  std::vector<int64_t> out = src.dims();
  out[static_cast<size_t>(axis)] = static_cast<int64_t>(keep.size());
  HostTensor y = like(x, out);
  const int64_t inner = product(src.dims(), static_cast<size_t>(axis) + 1);
  const int64_t outer = product(src.dims(), 0, static_cast<size_t>(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (size_t j = 0; j < keep.size(); ++j)
      copy_elements(y, (o * static_cast<int64_t>(keep.size()) + static_cast<int64_t>(j)) * inner, src,
                    (o * len + keep[j]) * inner, inner);
  ctx.outputs[0] = std::move(y);
}

// CumSum along the axis given as input 1; `exclusive` leaves each element out of its own
// sum, `reverse` sums from the end.
void cum_sum(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const int64_t axis = tensor_axis(ctx, scalar_int_input(ctx, 1, "axis"), x);
  const bool exclusive = ctx.attr_int("exclusive", 0) != 0, reverse = ctx.attr_int("reverse", 0) != 0;
  HostTensor y(x.dtype(), x.dims());
  dispatch_real(
      x.dtype(),
      [&]<class T>() {
        const T* px = x.data<T>();
        T* py = y.mutable_data<T>();
        for_each_lane(x.dims(), axis, [&](int64_t base, int64_t stride, int64_t n) {
          T sum{};
          for (int64_t j = 0; j < n; ++j) {
            const int64_t at = base + (reverse ? n - 1 - j : j) * stride;
            if (exclusive) {
              py[at] = sum;
              sum = static_cast<T>(sum + px[at]);
            } else {
              sum = static_cast<T>(sum + px[at]);
              py[at] = sum;
            }
          }
        });
      },
      "CumSum");
  ctx.outputs[0] = std::move(y);
}

// OneHot: values[1] where the index (negative counts from depth) is the position, values[0] elsewhere.
void one_hot(KernelContext& ctx) {
  const HostTensor& indices = ctx.input(0);
  const int64_t depth = scalar_int_input(ctx, 1, "depth");
  const HostTensor& values = ctx.input(2);
  if (values.size() != 2) ctx.fail("values must hold [off, on]");
  if (depth < 1 || depth > (int64_t{1} << 24))
    ctx.fail("depth must be in 1..2^24, not " + std::to_string(depth));
  const int64_t out_rank = static_cast<int64_t>(indices.rank()) + 1;
  const int64_t axis = normalize_axis(ctx.attr_int("axis", -1), out_rank);
  std::vector<int64_t> out = indices.dims();
  out.insert(out.begin() + axis, depth);
  ctx.check_planned_dims(0, out);
  HostTensor y = like(values, out);
  const int64_t outer = product(indices.dims(), 0, static_cast<size_t>(axis));
  const int64_t after = product(indices.dims(), static_cast<size_t>(axis));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t d = 0; d < depth; ++d)
      for (int64_t i = 0; i < after; ++i) {
        const int64_t src = o * after + i;
        const double real = is_float(indices.dtype()) ? indices.real_at(src) : 0.0;
        int64_t at =
            is_float(indices.dtype())
                ? (std::isfinite(real) && std::fabs(real) < 9e15 ? static_cast<int64_t>(real) : depth)
                : indices.int_at(src);
        if (at < 0) at += depth;
        copy_elements(y, (o * depth + d) * after + i, values, at == d ? 1 : 0, 1);
      }
  ctx.outputs[0] = std::move(y);
}

// EyeLike: ones on the k-th diagonal of a 2-D tensor shaped like the input.
void eye_like(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  if (x.rank() != 2) ctx.fail("the input must be 2-D");
  const DType dtype = ctx.has_attr("dtype") ? static_cast<DType>(ctx.attr_int("dtype", 1)) : x.dtype();
  const int64_t k = ctx.attr_int("k", 0);
  HostTensor ones(DType::F64, x.dims());
  for (int64_t r = 0; r < x.dims()[0]; ++r) {
    const int64_t c = r + k;
    if (c >= 0 && c < x.dims()[1]) ones.mutable_data<double>()[r * x.dims()[1] + c] = 1.0;
  }
  ctx.outputs[0] = dispatch_all(
      dtype,
      [&]<class T>() {
        HostTensor y(dtype, x.dims());
        for (int64_t i = 0; i < y.size(); ++i)
          y.mutable_data<T>()[i] = convert_value<T>(ones.data<double>()[i]);
        return y;
      },
      "EyeLike");
}

// ReverseSequence: the first sequence_lens[b] steps of each batch entry reversed along time_axis.
void reverse_sequence(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const HostTensor& lens = ctx.input(1);
  const int64_t rank = static_cast<int64_t>(x.rank());
  const int64_t batch_axis = normalize_axis(ctx.attr_int("batch_axis", 1), rank);
  const int64_t time_axis = normalize_axis(ctx.attr_int("time_axis", 0), rank);
  if (batch_axis == time_axis || rank < 2)
    ctx.fail("batch_axis and time_axis must differ, on a tensor of rank >= 2");
  const int64_t batch = x.dims()[static_cast<size_t>(batch_axis)],
                time = x.dims()[static_cast<size_t>(time_axis)];
  if (lens.size() != batch) ctx.fail("sequence_lens needs one entry per batch entry");
  HostTensor y = x.clone();
  const auto strides = strides_of(x.dims());
  for (int64_t i = 0; i < x.size(); ++i) {
    const int64_t b = i / strides[static_cast<size_t>(batch_axis)] % batch;
    const int64_t t = i / strides[static_cast<size_t>(time_axis)] % time;
    const int64_t len = lens.int_at(b);
    if (len < 0 || len > time) ctx.fail("sequence length " + std::to_string(len) + " is out of range");
    if (t < len) copy_elements(y, i + (len - 1 - 2 * t) * strides[static_cast<size_t>(time_axis)], x, i, 1);
  }
  ctx.outputs[0] = std::move(y);
}

// Unique: the distinct elements (or slices along axis), sorted or in first-seen order,
// with the first index of each, the inverse map and the counts.
void unique(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const bool sorted = ctx.attr_int("sorted", 1) != 0;
  const bool flat = !ctx.has_attr("axis");
  const HostTensor src = flat ? x.reshaped({x.size()}) : x;
  const int64_t axis = flat ? 0 : tensor_axis(ctx, ctx.attr_int("axis", 0), x);
  const int64_t len = src.dims()[static_cast<size_t>(axis)];
  const int64_t inner = product(src.dims(), static_cast<size_t>(axis) + 1);
  const int64_t outer = product(src.dims(), 0, static_cast<size_t>(axis));
  // Slice j's elements in order: outer-major, then inner.
  auto element = [&](int64_t j, int64_t e) { return (e / inner * len + j) * inner + e % inner; };
  const int64_t slice = outer * inner;
  std::vector<int64_t> order;  // first index of each distinct slice, in first-seen order
  std::vector<int64_t> inverse(static_cast<size_t>(len));
  std::vector<int64_t> counts;
  dispatch_real(
      x.dtype(),
      [&]<class T>() {
        const T* p = src.data<T>();
        auto less = [&](int64_t a, int64_t b) {
          for (int64_t e = 0; e < slice; ++e) {
            const T va = p[element(a, e)], vb = p[element(b, e)];
            if (va < vb) return true;
            if (vb < va) return false;
          }
          return false;
        };
        auto equal = [&](int64_t a, int64_t b) { return !less(a, b) && !less(b, a); };
        for (int64_t j = 0; j < len; ++j) {
          size_t u = 0;
          while (u < order.size() && !equal(order[u], j)) ++u;
          if (u == order.size()) {
            order.push_back(j);
            counts.push_back(0);
          }
          inverse[static_cast<size_t>(j)] = static_cast<int64_t>(u);
          ++counts[u];
        }
        if (sorted) {
          std::vector<size_t> rank(order.size());
          std::iota(rank.begin(), rank.end(), size_t{0});
          std::stable_sort(rank.begin(), rank.end(),
                           [&](size_t a, size_t b) { return less(order[a], order[b]); });
          std::vector<int64_t> new_pos(order.size()), new_order(order.size()), new_counts(order.size());
          for (size_t r = 0; r < rank.size(); ++r) {
            new_pos[rank[r]] = static_cast<int64_t>(r);
            new_order[r] = order[rank[r]];
            new_counts[r] = counts[rank[r]];
          }
          for (auto& v : inverse) v = new_pos[static_cast<size_t>(v)];
          order = std::move(new_order);
          counts = std::move(new_counts);
        }
      },
      "Unique");
  std::vector<int64_t> out = src.dims();
  out[static_cast<size_t>(axis)] = static_cast<int64_t>(order.size());
  HostTensor y = like(x, out);
  for (size_t u = 0; u < order.size(); ++u)
    for (int64_t o = 0; o < outer; ++o)
      copy_elements(y, (o * static_cast<int64_t>(order.size()) + static_cast<int64_t>(u)) * inner, src,
                    (o * len + order[u]) * inner, inner);
  const int64_t n = static_cast<int64_t>(order.size());
  ctx.outputs[0] = std::move(y);
  ctx.set_output(1, HostTensor::from_vector(DType::I64, {n}, order));
  ctx.set_output(2, HostTensor::from_vector(DType::I64, {len}, inverse));
  ctx.set_output(3, HostTensor::from_vector(DType::I64, {n}, counts));
}

}  // namespace

void register_indexing_kernels(OpRegistry& r) {
  const std::pair<const char*, void (*)(KernelContext&)> kernels[] = {
      {"GatherND", gather_nd},       {"ScatterND", scatter_nd}, {"ScatterElements", scatter_elements},
      {"Scatter", scatter_elements}, {"NonZero", non_zero},     {"Compress", compress},
      {"OneHot", one_hot},           {"EyeLike", eye_like},     {"ReverseSequence", reverse_sequence},
  };
  for (const auto& [name, fn] : kernels) r.add("", name, fn, /*half_via_f32=*/false);
  // These compare or add values: half types are computed in f32.
  r.add("", "TopK", top_k);
  r.add("", "CumSum", cum_sum);
  r.add("", "Unique", unique);
}

}  // namespace geopt
