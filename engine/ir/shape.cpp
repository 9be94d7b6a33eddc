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
    if (d.value() < 0 || __builtin_mul_overflow(n, d.value(), &n))
      throw Error("shape " + to_string() + " has a negative dimension or more elements than 2^63");
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

namespace {

std::string signed_term(int64_t c) {
  return c == 0 ? "" : (c > 0 ? "+" : "-") + std::to_string(c > 0 ? c : -c);
}

}  // namespace

Dim window_output(const Dim& in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pads,
                  bool ceil_mode) {
  if (stride < 1 || kernel < 1) return Dim();
  const int64_t a = pads - dilation * (kernel - 1) - 1;
  if (in.is_static()) {
    const int64_t x = in.value() + a;  // floor or ceil of x / stride, x of either sign
    const int64_t q = x >= 0 ? (ceil_mode ? (x + stride - 1) / stride : x / stride)
                             : (ceil_mode ? -((-x) / stride) : -((-x + stride - 1) / stride));
    return q + 1;
  }
  if (!in.is_symbolic() || in.symbol_name().rfind("unk__", 0) == 0) return Dim();
  if (stride == 1) return a + 1 == 0 ? in : Dim::symbol(in.symbol_name() + signed_term(a + 1));
  return Dim::symbol(std::string(ceil_mode ? "ceil" : "floor") + "((" + in.symbol_name() + signed_term(a) +
                     ")/" + std::to_string(stride) + ")+1");
}

}  // namespace geopt
