#pragma once
// Element types. The numeric values equal ONNX's TensorProto.DataType so that
// import and export are a cast, and unknown future types survive as a number.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace geopt {

enum class DType : int32_t {
  Undefined = 0,
  F32 = 1,
  U8 = 2,
  I8 = 3,
  U16 = 4,
  I16 = 5,
  I32 = 6,
  I64 = 7,
  String = 8,
  Bool = 9,
  F16 = 10,
  F64 = 11,
  U32 = 12,
  U64 = 13,
  C64 = 14,
  C128 = 15,
  BF16 = 16,
};

// Bytes per element; 0 for String and Undefined (no fixed size).
size_t dtype_size(DType t);
// Short name used in reports: "f32", "i64", "bf16", ...
std::string dtype_name(DType t);
// Inverse of dtype_name; also accepts ONNX spellings ("float", "int64", "float16").
std::optional<DType> parse_dtype(std::string_view name);
bool is_float(DType t);
bool is_integer(DType t);

}  // namespace geopt
