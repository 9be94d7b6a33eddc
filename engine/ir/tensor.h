#pragma once
// A constant tensor (an initializer or a tensor attribute). Holds little-endian
// element bytes by reference, exactly as ONNX's raw_data lays them out, so a
// round trip is bit-identical.
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "ir/buffer.h"
#include "ir/dtype.h"

namespace geopt {

struct Tensor {
  std::string name;
  DType dtype = DType::Undefined;
  std::vector<int64_t> dims;
  BufferSlice data;                  // every dtype except String
  std::vector<std::string> strings;  // DType::String only
  std::string doc_string;

  int64_t element_count() const;
  // Same dtype, dims and elements, byte for byte (names aside).
  bool same_contents(const Tensor& other) const;
  size_t byte_size() const { return data.size(); }
  std::span<const std::byte> bytes() const { return data.bytes(); }

  // Copies the elements out (the bytes may be unaligned when memory-mapped).
  template <class T>
  std::vector<T> to_vector() const {
    static_assert(std::is_trivially_copyable_v<T>);
    std::vector<T> out(bytes().size() / sizeof(T));
    if (!out.empty()) std::memcpy(out.data(), bytes().data(), out.size() * sizeof(T));
    return out;
  }
};

}  // namespace geopt
