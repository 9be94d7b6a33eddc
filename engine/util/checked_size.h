#pragma once
// Element and byte counts computed from dims that came from a file: a negative dim or
// a product past int64 is an error in that input (geopt::Error naming `what`), never a
// wrapped number that later reads or writes the wrong bytes.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "util/error.h"

namespace geopt {

inline std::string dims_text(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? "," : "") + std::to_string(dims[i]);
  return s + "]";
}

// The product of dims; `what` names the tensor in the message.
inline int64_t checked_element_count(const std::vector<int64_t>& dims, const std::string& what) {
  int64_t n = 1;
  for (int64_t d : dims) {
    if (d < 0)
      throw Error(what + ": negative dimension " + std::to_string(d) + " in shape " + dims_text(dims));
    if (__builtin_mul_overflow(n, d, &n))
      throw Error(what + ": shape " + dims_text(dims) + " has more elements than 2^63");
  }
  return n;
}

// elements * element_size, in bytes.
inline size_t checked_byte_count(int64_t elements, size_t element_size, const std::string& what) {
  size_t bytes = 0;
  if (elements < 0 || __builtin_mul_overflow(static_cast<size_t>(elements), element_size, &bytes) ||
      bytes > (size_t{1} << 62))
    throw Error(what + ": " + std::to_string(elements) + " elements of " + std::to_string(element_size) +
                " bytes exceed 2^62 bytes");
  return bytes;
}

}  // namespace geopt
