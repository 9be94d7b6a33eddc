// Reductions (ReduceSum/Mean/Max/Min/Prod/L1/L2/SumSquare/LogSum/LogSumExp) and
// ArgMax/ArgMin, over any set of axes, with keepdims and the opset-dependent
// way axes are given (attribute, or input from opset 13 for ReduceSum and 18 for the rest).
#include <cmath>
#include <limits>

#include "eval/kernel.h"
#include "kernels/dispatch.h"
#include "kernels/layout.h"
#include "kernels/row_math.h"

namespace geopt {
namespace {

enum class Reduce { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSum, LogSumExp };

struct ReducePlan {
  std::vector<bool> reduced;
  std::vector<int64_t> out_dims;   // with keepdims applied
  std::vector<int64_t> kept_dims;  // rank-preserving shape (reduced axes = 1)
  int64_t group = 1;               // elements reduced into each output
};

ReducePlan plan_reduce(const KernelContext& ctx, const HostTensor& x, std::vector<int64_t> axes,
                       bool keepdims, bool noop_empty) {
  const int64_t rank = static_cast<int64_t>(x.rank());
  ReducePlan p;
  p.reduced.assign(x.rank(), axes.empty() && !noop_empty);
  for (int64_t a : axes) {
    try {
      p.reduced[static_cast<size_t>(normalize_axis(a, rank))] = true;
    } catch (const Error& e) {
      ctx.fail(e.what());
    }
  }
  for (size_t d = 0; d < x.rank(); ++d) {
    int64_t n = x.dims()[d];
    p.kept_dims.push_back(p.reduced[d] ? 1 : n);
    if (p.reduced[d]) p.group *= n;
    if (!p.reduced[d] || keepdims) p.out_dims.push_back(p.reduced[d] ? 1 : n);
  }
  return p;
}

// Whether the reduced axes are the trailing ones (LayerNorm's ReduceMean over -1, a
// global pool's over H and W): each output reduces one contiguous row.
bool reduces_rows(const HostTensor& x, const ReducePlan& p) {
  size_t first = x.rank();
  while (first > 0 && p.reduced[first - 1]) --first;
  bool suffix = first < x.rank();
  for (size_t d = 0; d < first; ++d) suffix = suffix && !p.reduced[d];
  return suffix && p.group > 0;
}

// For each input element, the index of the output it reduces into.
template <class F>
void for_each_reduction(const HostTensor& x, const ReducePlan& p, F&& f) {
  if (reduces_rows(x, p)) {
    const int64_t rows = x.size() / p.group;
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t j = 0; j < p.group; ++j) f(r * p.group + j, r);
    return;
  }
  auto out_strides = strides_of(p.kept_dims);
  for (size_t d = 0; d < out_strides.size(); ++d)
    if (p.reduced[d]) out_strides[d] = 0;
  const size_t rank = x.rank();
  std::vector<int64_t> c(rank, 0);
  int64_t o = 0;
  const int64_t total = x.size();
  for (int64_t i = 0; i < total; ++i) {
    f(i, o);
    for (size_t d = rank; d-- > 0;) {
      o += out_strides[d];
      if (++c[d] < x.dims()[d]) break;
      o -= out_strides[d] * x.dims()[d];
      c[d] = 0;
    }
  }
}

template <class T>
void reduce_typed(KernelContext& ctx, Reduce kind, const HostTensor& x, const ReducePlan& p) {
  HostTensor y(x.dtype(), p.out_dims);
  const int64_t n_out = y.size();
  if constexpr (std::is_same_v<T, float>) {
    // A float mean of contiguous rows (ShuffleNet v2's global pool: 1024 rows of 49, 6x
    // ONNX Runtime's time on the double loop below): the rows' vector loop, rows shared
    // among the threads.
    if (kind == Reduce::Mean && reduces_rows(x, p)) {
      mean_planes(x.data<float>(), y.mutable_data<float>(), n_out, p.group, 1);
      ctx.outputs[0] = std::move(y);
      return;
    }
  }
  const bool extremum = kind == Reduce::Max || kind == Reduce::Min;
  std::vector<double> acc(static_cast<size_t>(n_out), kind == Reduce::Prod ? 1.0 : 0.0);
  if (extremum)
    std::fill(acc.begin(), acc.end(),
              kind == Reduce::Max ? -std::numeric_limits<double>::infinity()
                                  : std::numeric_limits<double>::infinity());
  if (kind == Reduce::LogSumExp) {  // subtract the max for stability
    std::vector<double> mx(static_cast<size_t>(n_out), -std::numeric_limits<double>::infinity());
    const T* px = x.data<T>();
    for_each_reduction(x, p, [&](int64_t i, int64_t o) {
      mx[static_cast<size_t>(o)] = std::max(mx[static_cast<size_t>(o)], static_cast<double>(px[i]));
    });
    for_each_reduction(x, p, [&](int64_t i, int64_t o) {
      acc[static_cast<size_t>(o)] += std::exp(static_cast<double>(px[i]) - mx[static_cast<size_t>(o)]);
    });
    T* py = y.mutable_data<T>();
    for (int64_t o = 0; o < n_out; ++o)
      py[o] = static_cast<T>(std::log(acc[static_cast<size_t>(o)]) + mx[static_cast<size_t>(o)]);
    ctx.outputs[0] = std::move(y);
    return;
  }
  const T* px = x.data<T>();
  for_each_reduction(x, p, [&](int64_t i, int64_t o) {
    double v = static_cast<double>(px[i]);
    double& a = acc[static_cast<size_t>(o)];
    switch (kind) {
      case Reduce::Sum:
      case Reduce::Mean:
      case Reduce::LogSum:
        a += v;
        break;
      case Reduce::Max:
        a = std::isnan(v) || v > a ? v : a;
        break;
      case Reduce::Min:
        a = std::isnan(v) || v < a ? v : a;
        break;
      case Reduce::Prod:
        a *= v;
        break;
      case Reduce::L1:
        a += std::fabs(v);
        break;
      case Reduce::L2:
      case Reduce::SumSquare:
        a += v * v;
        break;
      case Reduce::LogSumExp:
        break;
    }
  });
  T* py = y.mutable_data<T>();
  for (int64_t o = 0; o < n_out; ++o) {
    double a = acc[static_cast<size_t>(o)];
    switch (kind) {
      case Reduce::Mean:
        a = p.group ? a / static_cast<double>(p.group) : std::numeric_limits<double>::quiet_NaN();
        break;
      case Reduce::L2:
        a = std::sqrt(a);
        break;
      case Reduce::LogSum:
        a = std::log(a);
        break;
      default:
        break;
    }
    if constexpr (std::is_integral_v<T>) {
      if (extremum && p.group == 0)
        a = kind == Reduce::Max ? static_cast<double>(std::numeric_limits<T>::lowest())
                                : static_cast<double>(std::numeric_limits<T>::max());
      py[o] = convert_value<T>(a);
    } else {
      py[o] = static_cast<T>(a);
    }
  }
  ctx.outputs[0] = std::move(y);
}

void add_reduce(OpRegistry& r, const char* name, Reduce kind) {
  r.add("", name, [kind, name](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    const int64_t axes_input_since = std::string(name) == "ReduceSum" ? 13 : 18;
    std::vector<int64_t> axes = ctx.opset() < axes_input_since
                                    ? ctx.attr_ints("axes")
                                    : (ctx.has_input(1) ? ctx.input(1).ints() : std::vector<int64_t>{});
    // noop_with_empty_axes with no axes reduces nothing: each output is its one element
    // through the reduction's arithmetic (ReduceL2 gives |x|, ReduceSumSquare x^2), as ONNX has it.
    const bool noop = ctx.attr_int("noop_with_empty_axes", 0) != 0;
    ReducePlan p = plan_reduce(ctx, x, axes, ctx.attr_int("keepdims", 1) != 0, noop);
    if (x.dtype() == DType::Bool && (kind == Reduce::Max || kind == Reduce::Min) && ctx.opset() >= 20) {
      reduce_typed<bool>(ctx, kind, x, p);  // any / all
      return;
    }
    dispatch_real(
        x.dtype(), [&]<class T>() { reduce_typed<T>(ctx, kind, x, p); }, name);
  });
}

void add_arg(OpRegistry& r, const char* name, bool is_max) {
  r.add("", name, [is_max, name](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    int64_t axis = normalize_axis(ctx.attr_int("axis", 0), static_cast<int64_t>(x.rank()));
    bool last = ctx.attr_int("select_last_index", 0) != 0;
    ReducePlan p = plan_reduce(ctx, x, {axis}, ctx.attr_int("keepdims", 1) != 0, false);
    HostTensor y(DType::I64, p.out_dims);
    std::vector<double> best(static_cast<size_t>(y.size()), 0);
    std::vector<bool> seen(static_cast<size_t>(y.size()), false);
    auto xs = strides_of(x.dims());
    int64_t* py = y.mutable_data<int64_t>();
    dispatch_real(
        x.dtype(),
        [&]<class T>() {
          const T* px = x.data<T>();
          for_each_reduction(x, p, [&](int64_t i, int64_t o) {
            double v = static_cast<double>(px[i]);
            size_t so = static_cast<size_t>(o);
            bool better = !seen[so] || (is_max ? (v > best[so] || (last && v == best[so]))
                                               : (v < best[so] || (last && v == best[so])));
            if (better) {
              best[so] = v;
              seen[so] = true;
              py[o] = (i / xs[static_cast<size_t>(axis)]) % x.dims()[static_cast<size_t>(axis)];
            }
          });
        },
        name);
    ctx.outputs[0] = std::move(y);
  });
}

}  // namespace

void register_reduce_kernels(OpRegistry& r) {
  add_reduce(r, "ReduceSum", Reduce::Sum);
  add_reduce(r, "ReduceMean", Reduce::Mean);
  add_reduce(r, "ReduceMax", Reduce::Max);
  add_reduce(r, "ReduceMin", Reduce::Min);
  add_reduce(r, "ReduceProd", Reduce::Prod);
  add_reduce(r, "ReduceL1", Reduce::L1);
  add_reduce(r, "ReduceL2", Reduce::L2);
  add_reduce(r, "ReduceSumSquare", Reduce::SumSquare);
  add_reduce(r, "ReduceLogSum", Reduce::LogSum);
  add_reduce(r, "ReduceLogSumExp", Reduce::LogSumExp);
  add_arg(r, "ArgMax", true);
  add_arg(r, "ArgMin", false);
}

}  // namespace geopt
