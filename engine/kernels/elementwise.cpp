// Elementwise kernels: arithmetic, comparison and logic with ONNX broadcasting,
// unary math and activations, Where, Cast.
#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "kernels/cast.h"
#include "kernels/dispatch.h"
#include "kernels/elementwise_util.h"
#include "kernels/row_math.h"
#include "util/team_region.h"

namespace geopt {
namespace {

void require_same_dtype(const KernelContext& ctx, const HostTensor& a, const HostTensor& b) {
  if (a.dtype() != b.dtype())
    ctx.fail("inputs have different dtypes (" + dtype_name(a.dtype()) + " and " + dtype_name(b.dtype()) +
             ")");
}

// out = op(a, b) with broadcasting; Out is the output element type (T or bool).
// Rows where one side is a run and the other a run or one repeated value (a scalar, a
// per-channel constant) get loops the compiler vectorizes. `is_output`: the result is
// the node's output (not a partial result), so it may go where the caller places it.
template <class T, class Out, class Op>
HostTensor binary(const KernelContext& ctx, const HostTensor& a, const HostTensor& b, DType out_dtype, Op op,
                  bool is_output = true) {
  auto plan = plan_broadcast<2>(ctx, {&a, &b});
  // Each element is read before it is written at the same position: the output may lie
  // over an input of its own shape and type.
  std::optional<size_t> over;
  if (sizeof(T) == sizeof(Out) && a.dims() == plan.dims)
    over = 0;
  else if (sizeof(T) == sizeof(Out) && b.dims() == plan.dims)
    over = 1;
  HostTensor y = is_output ? ctx.new_output(0, out_dtype, plan.dims, over)
                           : HostTensor::uninitialized(out_dtype, plan.dims);
  const T* pa = a.data<T>();
  const T* pb = b.data<T>();
  Out* py = y.mutable_data<Out>();
  apply_broadcast_tiles(plan, [&](int64_t i, const int64_t* o, const int64_t* steps, int64_t count,
                                  int64_t rows, const int64_t* row_steps) {
    auto each_row = [&](auto&& row) {
      for (int64_t r = 0; r < rows; ++r)
        row(pa + o[0] + r * row_steps[0], pb + o[1] + r * row_steps[1], py + i + r * count);
    };
    // Runs of one channel block (16 lanes, or 32 for 8-bit types) against a per-channel
    // operand (a squeeze-and-excitation gate [N, C1, 1, 1, 16] over [N, C1, H, W, 16]): a
    // width known when compiling makes each row one vector operation; a run-time count of 16 cost a loop's
    // set-up per row (EfficientNet-B0's 16 gates: 0.39 -> 0.25 ms a run on 2 threads).
    auto runs = [&](auto width) {
      each_row([&](const T* x, const T* z, Out* out) {
        for (int64_t j = 0; j < width; ++j) out[j] = op(x[j], z[j]);
      });
    };
    if (steps[0] == 1 && steps[1] == 1) {
      if (count == 16)
        runs(std::integral_constant<int64_t, 16>{});
      else if (count == 32)
        runs(std::integral_constant<int64_t, 32>{});
      else
        runs(count);
    } else if (steps[0] == 1 && steps[1] == 0) {
      each_row([&](const T* x, const T* z, Out* out) {
        const T v = *z;
        for (int64_t j = 0; j < count; ++j) out[j] = op(x[j], v);
      });
    } else if (steps[0] == 0 && steps[1] == 1) {
      each_row([&](const T* x, const T* z, Out* out) {
        const T v = *x;
        for (int64_t j = 0; j < count; ++j) out[j] = op(v, z[j]);
      });
    } else {
      each_row([&](const T* x, const T* z, Out* out) {
        for (int64_t j = 0; j < count; ++j) out[j] = op(x[j * steps[0]], z[j * steps[1]]);
      });
    }
  });
  return y;
}

template <class T>
T safe_div(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
      if (a == std::numeric_limits<T>::min() && b == T(-1)) return a;
    return static_cast<T>(a / b);
  } else {
    return a / b;
  }
}

template <class T>
T python_mod(T a, T b) {
  if constexpr (std::is_integral_v<T>) {
    if (b == 0) return 0;
    if constexpr (std::is_signed_v<T>)
      if (b == T(-1)) return 0;  // every integer is a multiple of -1; INT_MIN % -1 traps
    T r = static_cast<T>(a % b);
    if constexpr (std::is_signed_v<T>)
      if (r != 0 && ((r < 0) != (b < 0))) r = static_cast<T>(r + b);
    return r;
  } else {
    T r = std::fmod(a, b);
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
  }
}

template <class T>
T max_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return a < b ? b : a;
}

template <class T>
T min_nan(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<T>::quiet_NaN();
  return b < a ? b : a;
}

// Registers an arithmetic op over all real types; the result has the inputs' dtype.
template <class OpFactory>
void add_arith(OpRegistry& r, const char* name, OpFactory make) {
  r.add("", name, [make, name](KernelContext& ctx) {
    const HostTensor& a = ctx.input(0);
    const HostTensor& b = ctx.input(1);
    require_same_dtype(ctx, a, b);
    dispatch_real(
        a.dtype(),
        [&]<class T>() {
          ctx.outputs[0] = binary<T, T>(ctx, a, b, a.dtype(), make.template operator()<T>(ctx));
        },
        name);
  });
}

template <class Cmp>
void add_compare(OpRegistry& r, const char* name, Cmp cmp) {
  r.add("", name, [cmp, name](KernelContext& ctx) {
    const HostTensor& a = ctx.input(0);
    const HostTensor& b = ctx.input(1);
    require_same_dtype(ctx, a, b);
    dispatch_all(
        a.dtype(),
        [&]<class T>() {
          if constexpr (is_half_v<T>) {
            ctx.fail("half inputs reach comparisons widened");  // half_via_f32 widens them first
          } else {
            ctx.outputs[0] = binary<T, bool>(ctx, a, b, DType::Bool, [&](T x, T y) { return cmp(x, y); });
          }
        },
        name);
  });
}

// Variadic Max/Min/Sum/Mean: folds pairwise with broadcasting.
template <class OpFactory>
void add_variadic(OpRegistry& r, const char* name, OpFactory make, bool mean) {
  r.add("", name, [make, mean, name](KernelContext& ctx) {
    HostTensor acc = ctx.input(0);
    for (size_t k = 1; k < ctx.input_count(); ++k) {
      const HostTensor& b = ctx.input(k);
      require_same_dtype(ctx, acc, b);
      dispatch_real(
          acc.dtype(),
          [&]<class T>() {
            acc = binary<T, T>(ctx, acc, b, acc.dtype(), make.template operator()<T>(), false);
          },
          name);
    }
    if (mean) {
      const double n = static_cast<double>(ctx.input_count());
      dispatch_float(
          acc.dtype(),
          [&]<class T>() {
            acc = map_unary<T>(acc, acc.dtype(), [n](T v) { return static_cast<T>(v / n); });
          },
          name);
    }
    ctx.outputs[0] = std::move(acc);
  });
}

// Registers a float-only unary op y = f(x, ctx-derived params).
template <class Factory>
void add_unary_float(OpRegistry& r, const char* name, Factory make) {
  r.add("", name, [make, name](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    dispatch_float(
        x.dtype(),
        [&]<class T>() { ctx.outputs[0] = map_unary<T>(x, x.dtype(), make.template operator()<T>(ctx)); },
        name);
  });
}

// Unary ops defined for signed integers too (Abs, Neg, Sign, Relu).
template <class Factory>
void add_unary_real(OpRegistry& r, const char* name, Factory make) {
  r.add("", name, [make, name](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    dispatch_real(
        x.dtype(),
        [&]<class T>() { ctx.outputs[0] = map_unary<T>(x, x.dtype(), make.template operator()<T>(ctx)); },
        name);
  });
}

template <class T>
T sigmoid(T x) {
  return x >= 0 ? T(1) / (T(1) + std::exp(-x)) : std::exp(x) / (T(1) + std::exp(x));
}

#define SIMPLE_FLOAT(NAME, EXPR) \
  add_unary_float(               \
      r, NAME, []<class T>(const KernelContext&) { return [](T x) -> T { return static_cast<T>(EXPR); }; })

void register_unary(OpRegistry& r) {
  SIMPLE_FLOAT("Sqrt", std::sqrt(x));
  SIMPLE_FLOAT("Reciprocal", T(1) / x);
  SIMPLE_FLOAT("Exp", std::exp(x));
  SIMPLE_FLOAT("Log", std::log(x));
  SIMPLE_FLOAT("Erf", std::erf(x));
  SIMPLE_FLOAT("Tanh", std::tanh(x));
  // f32 on the vectorized row (a SiLU or gate left unfused: 1.2M values took 5.2 ms one
  // std::exp at a time); other float types as written.
  r.add("", "Sigmoid", [](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    if (x.dtype() == DType::F32) {
      HostTensor y = HostTensor::uninitialized(DType::F32, x.dims());
      const float* px = x.data<float>();
      float* py = y.mutable_data<float>();
      const int64_t n = x.size(), chunk = 1 << 14;
      team_region(n > (1 << 16), [&] {
#pragma omp for
        for (int64_t first = 0; first < n; first += chunk)
          sigmoid_row(px + first, py + first, std::min(chunk, n - first));
      });
      ctx.outputs[0] = std::move(y);
      return;
    }
    dispatch_float(
        x.dtype(),
        [&]<class T>() { ctx.outputs[0] = map_unary<T>(x, x.dtype(), [](T v) { return sigmoid(v); }); },
        "Sigmoid");
  });
  SIMPLE_FLOAT("Softplus", x > T(20) ? x : std::log1p(std::exp(x)));
  SIMPLE_FLOAT("Softsign", x / (T(1) + std::fabs(x)));
  SIMPLE_FLOAT(
      "Mish",
      x * std::tanh(x > T(20) ? x : std::log1p(std::exp(x))));  // opset 18; softplus as Softplus has it
  // Gelu (opset 20): x Phi(x), or with approximate="tanh" x/2 (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  add_unary_float(r, "Gelu", []<class T>(const KernelContext& c) {
    const std::string approximate = c.attr_string("approximate", "none");
    if (approximate != "none" && approximate != "tanh")
      c.fail("approximate must be none or tanh, not '" + approximate + "'");
    const bool tanh = approximate == "tanh";
    return [tanh](T x) -> T {
      const double v = static_cast<double>(x);
      if (tanh)
        return static_cast<T>(0.5 * v * (1.0 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
      return static_cast<T>(0.5 * v * (1.0 + std::erf(v * 0.7071067811865476)));
    };
  });
  SIMPLE_FLOAT("HardSwish", x * std::max(T(0), std::min(T(1), x / T(6) + T(0.5))));
  SIMPLE_FLOAT("Floor", std::floor(x));
  SIMPLE_FLOAT("Ceil", std::ceil(x));
  SIMPLE_FLOAT("Round", std::nearbyint(x));  // default rounding mode: half to even
  SIMPLE_FLOAT("Sin", std::sin(x));
  SIMPLE_FLOAT("Cos", std::cos(x));
  SIMPLE_FLOAT("Tan", std::tan(x));
  SIMPLE_FLOAT("Asin", std::asin(x));
  SIMPLE_FLOAT("Acos", std::acos(x));
  SIMPLE_FLOAT("Atan", std::atan(x));
  SIMPLE_FLOAT("Sinh", std::sinh(x));
  SIMPLE_FLOAT("Cosh", std::cosh(x));
  SIMPLE_FLOAT("Asinh", std::asinh(x));
  SIMPLE_FLOAT("Acosh", std::acosh(x));
  SIMPLE_FLOAT("Atanh", std::atanh(x));
  add_unary_float(r, "LeakyRelu", []<class T>(const KernelContext& c) {
    T a = c.attr_float("alpha", 0.01f);
    return [a](T x) { return x >= 0 ? x : a * x; };
  });
  add_unary_float(r, "Elu", []<class T>(const KernelContext& c) {
    T a = c.attr_float("alpha", 1.0f);
    return [a](T x) { return x >= 0 ? x : a * (std::exp(x) - T(1)); };
  });
  add_unary_float(r, "Celu", []<class T>(const KernelContext& c) {
    T a = c.attr_float("alpha", 1.0f);
    return [a](T x) {
      return std::isnan(x) ? x : std::max(T(0), x) + std::min(T(0), a * (std::exp(x / a) - T(1)));
    };
  });
  add_unary_float(r, "Selu", []<class T>(const KernelContext& c) {
    T a = c.attr_float("alpha", 1.67326319217681884765625f);
    T g = c.attr_float("gamma", 1.05070102214813232421875f);
    return [a, g](T x) { return x > 0 ? g * x : g * (a * std::exp(x) - a); };
  });
  add_unary_float(r, "HardSigmoid", []<class T>(const KernelContext& c) {
    T a = c.attr_float("alpha", 0.2f);
    T b = c.attr_float("beta", 0.5f);
    return [a, b](T x) { return std::isnan(x) ? x : std::max(T(0), std::min(T(1), a * x + b)); };
  });
  add_unary_float(r, "ThresholdedRelu", []<class T>(const KernelContext& c) {
    T a = c.attr_float("alpha", 1.0f);
    return [a](T x) { return x > a ? x : T(0); };
  });
  add_unary_real(r, "Abs", []<class T>(const KernelContext&) {
    return [](T x) -> T {
      if constexpr (std::is_unsigned_v<T>)
        return x;
      else
        return x < 0 ? static_cast<T>(-x) : x;
    };
  });
  add_unary_real(r, "Neg",
                 []<class T>(const KernelContext&) { return [](T x) { return static_cast<T>(-x); }; });
  add_unary_real(r, "Sign", []<class T>(const KernelContext&) {
    return [](T x) { return static_cast<T>(x > T(0) ? 1 : (x < T(0) ? -1 : 0)); };
  });
  // Written so a NaN falls through to x: ONNX defines Relu as max(x, 0), which is NaN for NaN.
  add_unary_real(r, "Relu",
                 []<class T>(const KernelContext&) { return [](T x) { return x < T(0) ? T(0) : x; }; });

  r.add("", "Clip", [](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    dispatch_real(
        x.dtype(),
        [&]<class T>() {
          T lo = std::numeric_limits<T>::lowest();
          T hi = std::numeric_limits<T>::max();
          if (ctx.opset() < 11) {
            lo = static_cast<T>(ctx.attr_float("min", -std::numeric_limits<float>::max()));
            hi = static_cast<T>(ctx.attr_float("max", std::numeric_limits<float>::max()));
          } else {
            if (ctx.has_input(1)) lo = ctx.input(1).data<T>()[0];
            if (ctx.has_input(2)) hi = ctx.input(2).data<T>()[0];
          }
          ctx.outputs[0] =
              map_unary<T>(x, x.dtype(), [lo, hi](T v) { return v < lo ? lo : (v > hi ? hi : v); });
        },
        "Clip");
  });
  r.add("", "IsNaN", [](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    dispatch_float(
        x.dtype(),
        [&]<class T>() {
          ctx.outputs[0] = map_unary<T, bool>(x, DType::Bool, [](T v) { return std::isnan(v); });
        },
        "IsNaN");
  });
  r.add("", "IsInf", [](KernelContext& ctx) {
    const HostTensor& x = ctx.input(0);
    const bool neg = ctx.attr_int("detect_negative", 1) != 0, pos = ctx.attr_int("detect_positive", 1) != 0;
    dispatch_float(
        x.dtype(),
        [&]<class T>() {
          ctx.outputs[0] = map_unary<T, bool>(
              x, DType::Bool, [neg, pos](T v) { return std::isinf(v) && (v > 0 ? pos : neg); });
        },
        "IsInf");
  });
  // Shrink: x + bias below -lambd, x - bias above lambd, 0 between.
  add_unary_real(r, "Shrink", []<class T>(const KernelContext& c) {
    const double lambd = c.attr_float("lambd", 0.5f), bias = c.attr_float("bias", 0.0f);
    return [lambd, bias](T x) {
      const double v = static_cast<double>(x);
      return static_cast<T>(v < -lambd ? v + bias : (v > lambd ? v - bias : 0.0));
    };
  });
  r.add(
      "", "BitwiseNot",
      [](KernelContext& ctx) {  // opset 18
        const HostTensor& x = ctx.input(0);
        dispatch_real(
            x.dtype(),
            [&]<class T>() {
              if constexpr (std::is_integral_v<T>)
                ctx.outputs[0] = map_unary<T>(x, x.dtype(), [](T v) { return static_cast<T>(~v); });
              else
                ctx.fail("BitwiseNot needs integers, not " + dtype_name(x.dtype()));
            },
            "BitwiseNot");
      },
      false);
  r.add(
      "", "Not",
      [](KernelContext& ctx) {
        ctx.outputs[0] = map_unary<bool>(ctx.input(0), DType::Bool, [](bool v) { return !v; });
      },
      false);
}

void register_binary(OpRegistry& r) {
  add_arith(r, "Add",
            []<class T>(const KernelContext&) { return [](T a, T b) { return static_cast<T>(a + b); }; });
  add_arith(r, "Sub",
            []<class T>(const KernelContext&) { return [](T a, T b) { return static_cast<T>(a - b); }; });
  add_arith(r, "Mul",
            []<class T>(const KernelContext&) { return [](T a, T b) { return static_cast<T>(a * b); }; });
  add_arith(r, "Div", []<class T>(const KernelContext&) { return [](T a, T b) { return safe_div(a, b); }; });
  add_arith(r, "Mod", []<class T>(const KernelContext& c) {
    bool fmod = c.attr_int("fmod", 0) != 0;
    return [fmod](T a, T b) -> T {
      if constexpr (std::is_floating_point_v<T>) {
        return fmod ? std::fmod(a, b) : python_mod(a, b);
      } else {
        if (!fmod) return python_mod(a, b);
        if (b == 0) return 0;
        if constexpr (std::is_signed_v<T>)
          if (b == T(-1)) return 0;
        return static_cast<T>(a % b);
      }
    };
  });
  // BitShift on unsigned integers; a shift by the type's width or more gives 0.
  r.add(
      "", "BitShift",
      [](KernelContext& ctx) {
        const HostTensor& a = ctx.input(0);
        const HostTensor& b = ctx.input(1);
        require_same_dtype(ctx, a, b);
        const std::string direction = ctx.attr_string("direction", "");
        if (direction != "LEFT" && direction != "RIGHT")
          ctx.fail("direction must be LEFT or RIGHT, not '" + direction + "'");
        const bool left = direction == "LEFT";
        dispatch_real(
            a.dtype(),
            [&]<class T>() {
              if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
                ctx.outputs[0] = binary<T, T>(ctx, a, b, a.dtype(), [left](T x, T s) -> T {
                  if (s >= sizeof(T) * 8) return 0;
                  return static_cast<T>(left ? x << s : x >> s);
                });
              } else {
                ctx.fail("BitShift needs unsigned integers, not " + dtype_name(a.dtype()));
              }
            },
            "BitShift");
      },
      false);
  // BitwiseAnd/Or/Xor (opset 18): integers only, broadcasting.
  auto bitwise = [&r](const char* name, auto op) {
    add_arith(r, name, [op, name]<class T>(const KernelContext& c) {
      if constexpr (!std::is_integral_v<T>) c.fail(std::string(name) + " needs integers");
      return [op](T x, T y) -> T {
        if constexpr (std::is_integral_v<T>) {
          return static_cast<T>(op(x, y));
        } else {
          (void)op;  // captured for the integer instances
          return x;  // not reached: refused above
        }
      };
    });
  };
  bitwise("BitwiseAnd", [](auto x, auto y) { return x & y; });
  bitwise("BitwiseOr", [](auto x, auto y) { return x | y; });
  bitwise("BitwiseXor", [](auto x, auto y) { return x ^ y; });
  add_arith(r, "PRelu", []<class T>(const KernelContext&) {
    return [](T x, T s) { return x < T(0) ? static_cast<T>(s * x) : x; };
  });

  // Pow(X, Y) allows a different exponent dtype: convert it to X's type first.
  r.add("", "Pow", [](KernelContext& ctx) {
    const HostTensor& a = ctx.input(0);
    HostTensor b = cast_tensor(ctx.input(1), a.dtype());
    dispatch_real(
        a.dtype(),
        [&]<class T>() {
          ctx.outputs[0] = binary<T, T>(ctx, a, b, a.dtype(), [](T x, T y) {
            if constexpr (std::is_same_v<T, float>) {
              if (y == 2.0f) return x * x;
              return std::pow(x, y);
            } else {
              return static_cast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
            }
          });
        },
        "Pow");
  });

  add_compare(r, "Equal", [](auto a, auto b) { return a == b; });
  add_compare(r, "Less", [](auto a, auto b) { return a < b; });
  add_compare(r, "Greater", [](auto a, auto b) { return a > b; });
  add_compare(r, "LessOrEqual", [](auto a, auto b) { return a <= b; });
  add_compare(r, "GreaterOrEqual", [](auto a, auto b) { return a >= b; });
  for (const char* name : {"And", "Or", "Xor"}) {
    std::string op = name;
    r.add(
        "", name,
        [op](KernelContext& ctx) {
          auto f = [&](bool a, bool b) { return op == "And" ? (a && b) : op == "Or" ? (a || b) : (a != b); };
          ctx.outputs[0] = binary<bool, bool>(ctx, ctx.input(0), ctx.input(1), DType::Bool, f);
        },
        false);
  }

  add_variadic(
      r, "Max", []<class T>() { return [](T a, T b) { return max_nan(a, b); }; }, false);
  add_variadic(
      r, "Min", []<class T>() { return [](T a, T b) { return min_nan(a, b); }; }, false);
  add_variadic(
      r, "Sum", []<class T>() { return [](T a, T b) { return static_cast<T>(a + b); }; }, false);
  add_variadic(
      r, "Mean", []<class T>() { return [](T a, T b) { return static_cast<T>(a + b); }; }, true);

  r.add(
      "", "Where",
      [](KernelContext& ctx) {
        const HostTensor& c = ctx.input(0);
        const HostTensor& x = ctx.input(1);
        const HostTensor& y = ctx.input(2);
        require_same_dtype(ctx, x, y);
        auto plan = plan_broadcast<3>(ctx, {&c, &x, &y});
        dispatch_all(
            x.dtype(),
            [&]<class T>() {
              HostTensor out(x.dtype(), plan.dims);
              const bool* pc = c.data<bool>();
              const T* px = x.data<T>();
              const T* py = y.data<T>();
              T* po = out.mutable_data<T>();
              apply_broadcast(plan,
                              [&](int64_t i, const int64_t* o) { po[i] = pc[o[0]] ? px[o[1]] : py[o[2]]; });
              ctx.outputs[0] = std::move(out);
            },
            "Where");
      },
      false);
}

void register_cast(OpRegistry& r) {
  r.add(
      "", "Cast",
      [](KernelContext& ctx) {
        auto to = static_cast<DType>(ctx.attr_int("to", 0));
        if (to == DType::String || ctx.input(0).dtype() == DType::String)
          ctx.fail("casts to or from strings are not supported");
        ctx.outputs[0] = cast_tensor(ctx.input(0), to);
      },
      false);
  r.add(
      "", "CastLike",
      [](KernelContext& ctx) { ctx.outputs[0] = cast_tensor(ctx.input(0), ctx.input(1).dtype()); }, false);
}

}  // namespace

void register_elementwise_kernels(OpRegistry& r) {
  register_unary(r);
  register_binary(r);
  register_cast(r);
}

}  // namespace geopt
