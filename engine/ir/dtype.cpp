#include "ir/dtype.h"

#include <array>

namespace geopt {
namespace {

struct DTypeInfo {
  DType type;
  size_t size;
  const char* name;
  const char* onnx_name;
};

constexpr std::array<DTypeInfo, 17> kTypes{{
    {DType::Undefined, 0, "undefined", "undefined"},
    {DType::F32, 4, "f32", "float"},
    {DType::U8, 1, "u8", "uint8"},
    {DType::I8, 1, "i8", "int8"},
    {DType::U16, 2, "u16", "uint16"},
    {DType::I16, 2, "i16", "int16"},
    {DType::I32, 4, "i32", "int32"},
    {DType::I64, 8, "i64", "int64"},
    {DType::String, 0, "string", "string"},
    {DType::Bool, 1, "bool", "bool"},
    {DType::F16, 2, "f16", "float16"},
    {DType::F64, 8, "f64", "double"},
    {DType::U32, 4, "u32", "uint32"},
    {DType::U64, 8, "u64", "uint64"},
    {DType::C64, 8, "c64", "complex64"},
    {DType::C128, 16, "c128", "complex128"},
    {DType::BF16, 2, "bf16", "bfloat16"},
}};

const DTypeInfo* find(DType t) {
  auto i = static_cast<size_t>(t);
  return i < kTypes.size() ? &kTypes[i] : nullptr;
}

}  // namespace

size_t dtype_size(DType t) {
  const DTypeInfo* info = find(t);
  return info ? info->size : 0;
}

std::string dtype_name(DType t) {
  const DTypeInfo* info = find(t);
  return info ? info->name : "dtype" + std::to_string(static_cast<int32_t>(t));
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (const auto& info : kTypes)
    if (name == info.name || name == info.onnx_name) return info.type;
  return std::nullopt;
}

bool is_float(DType t) { return t == DType::F32 || t == DType::F16 || t == DType::BF16 || t == DType::F64; }

bool is_integer(DType t) {
  switch (t) {
    case DType::U8:
    case DType::I8:
    case DType::U16:
    case DType::I16:
    case DType::I32:
    case DType::I64:
    case DType::U32:
    case DType::U64:
      return true;
    default:
      return false;
  }
}

}  // namespace geopt
