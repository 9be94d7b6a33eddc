#pragma once
// Calls a templated functor with the C++ type of a DType, so one kernel body
// serves every type it supports.
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "eval/half.h"
#include "ir/dtype.h"
#include "util/error.h"

namespace geopt {

// Storage types for the 16-bit floats; they convert through float.
struct Half {
  uint16_t bits = 0;
  Half() = default;
  explicit Half(float f) : bits(float_to_half(f)) {}
  explicit operator float() const { return half_to_float(bits); }
};
struct BFloat16 {
  uint16_t bits = 0;
  BFloat16() = default;
  explicit BFloat16(float f) : bits(float_to_bf16(f)) {}
  explicit operator float() const { return bf16_to_float(bits); }
};

template <class T>
inline constexpr bool is_half_v = std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>;

[[noreturn]] inline void unsupported_dtype(DType t, const char* what) {
  throw Error(std::string(what) + ": unsupported dtype " + dtype_name(t));
}

// Floats and integers (no bool, no 16-bit floats).
template <class F>
decltype(auto) dispatch_real(DType t, F&& f, const char* what = "kernel") {
  switch (t) {
    case DType::F32:
      return f.template operator()<float>();
    case DType::F64:
      return f.template operator()<double>();
    case DType::I64:
      return f.template operator()<int64_t>();
    case DType::I32:
      return f.template operator()<int32_t>();
    case DType::I16:
      return f.template operator()<int16_t>();
    case DType::I8:
      return f.template operator()<int8_t>();
    case DType::U8:
      return f.template operator()<uint8_t>();
    case DType::U16:
      return f.template operator()<uint16_t>();
    case DType::U32:
      return f.template operator()<uint32_t>();
    case DType::U64:
      return f.template operator()<uint64_t>();
    default:
      unsupported_dtype(t, what);
  }
}

// Real types plus bool and the 16-bit floats (for data movement and Cast).
template <class F>
decltype(auto) dispatch_all(DType t, F&& f, const char* what = "kernel") {
  switch (t) {
    case DType::Bool:
      return f.template operator()<bool>();
    case DType::F16:
      return f.template operator()<Half>();
    case DType::BF16:
      return f.template operator()<BFloat16>();
    default:
      return dispatch_real(t, std::forward<F>(f), what);
  }
}

template <class F>
decltype(auto) dispatch_float(DType t, F&& f, const char* what = "kernel") {
  switch (t) {
    case DType::F32:
      return f.template operator()<float>();
    case DType::F64:
      return f.template operator()<double>();
    default:
      unsupported_dtype(t, what);
  }
}

// ONNX Cast semantics between any two element types; float->int truncates
// toward zero and saturates (C++ leaves out-of-range conversion undefined).
template <class D, class S>
D convert_value(S s) {
  if constexpr (std::is_same_v<D, S>) {
    return s;
  } else if constexpr (is_half_v<D>) {
    return D(static_cast<float>(s));
  } else if constexpr (is_half_v<S>) {
    return convert_value<D>(static_cast<float>(s));
  } else if constexpr (std::is_same_v<D, bool>) {
    return s != S(0);
  } else if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    if (std::isnan(s)) return D(0);
    if (s <= static_cast<S>(std::numeric_limits<D>::lowest())) return std::numeric_limits<D>::lowest();
    if (s >= static_cast<S>(std::numeric_limits<D>::max())) return std::numeric_limits<D>::max();
    return static_cast<D>(s);
  } else {
    return static_cast<D>(s);
  }
}

}  // namespace geopt
