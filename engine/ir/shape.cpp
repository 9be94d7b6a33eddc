#include "ir/shape.h"

#include "util/error.h"

namespace geopt {

std::string Dim::to_string() const {
  if (is_static()) return std::to_string(value());
  if (is_symbolic()) return symbol_name();
  return "?";
}

bool Shape::is_static() const {
  for (const auto& d : dims_)
    if (!d.is_static()) return false;
  return true;
}

std::optional<int64_t> Shape::element_count() const {
  int64_t n = 1;
  for (const auto& d : dims_) {
    if (!d.is_static()) return std::nullopt;
    if (d.value() < 0 || __builtin_mul_overflow(n, d.value(), &n)) throw Error("shape " + to_string() + " has a negative dimension or more elements than 2^63");
  }
  return n;
}

std::string Shape::to_string() const {
  std::string s = "[";
  for (size_t i = 0; i < dims_.size(); ++i) {
    if (i) s += ",";
    s += dims_[i].to_string();
  }
  return s + "]";
}

}  // namespace geopt
