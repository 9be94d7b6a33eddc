#pragma once
// Tensor shapes whose dimensions may be static (224), symbolic ("batch") or
// unknown. Dynamic shapes are first-class: nothing assumes a static dim.
#include <cstdint>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace geopt {

class Dim {
 public:
  Dim() = default;                   // unknown
  Dim(int64_t value) : v_(value) {}  // NOLINT: a static dim reads naturally as a number
  static Dim symbol(std::string name) {
    Dim d;
    d.v_ = std::move(name);
    return d;
  }

  bool is_static() const { return std::holds_alternative<int64_t>(v_); }
  bool is_symbolic() const { return std::holds_alternative<std::string>(v_); }
  bool is_unknown() const { return std::holds_alternative<std::monostate>(v_); }
  int64_t value() const { return std::get<int64_t>(v_); }
  const std::string& symbol_name() const { return std::get<std::string>(v_); }

  std::string to_string() const;  // "224", "batch" or "?"
  bool operator==(const Dim&) const = default;

 private:
  std::variant<std::monostate, int64_t, std::string> v_;
};

class Shape {
 public:
  Shape() = default;                                        // rank 0 (a scalar)
  Shape(std::vector<Dim> dims) : dims_(std::move(dims)) {}  // NOLINT
  Shape(std::initializer_list<Dim> dims) : dims_(dims) {}

  size_t rank() const { return dims_.size(); }
  const Dim& operator[](size_t i) const { return dims_[i]; }
  const std::vector<Dim>& dims() const { return dims_; }
  bool is_static() const;
  // Product of the dims when all are static.
  std::optional<int64_t> element_count() const;
  std::string to_string() const;  // "[batch,3,224,224]"
  bool operator==(const Shape&) const = default;

 private:
  std::vector<Dim> dims_;
};

// A window op's output along one spatial axis (Conv, pooling: kernel k, stride s,
// dilation, the pads at both ends summed): floor((in + pads - dilation (k - 1) - 1) / s) + 1,
// ceil with ceil_mode. A symbolic `in` gives a symbol named by the formula
// ("floor((height-1)/2)+1"; at stride 1, "height" or "height-2"), so two branches that
// stride one dim alike agree. Unknown for an unknown `in` or a placeholder (unk__N).
Dim window_output(const Dim& in, int64_t kernel, int64_t stride, int64_t dilation, int64_t pads,
                  bool ceil_mode = false);

}  // namespace geopt
