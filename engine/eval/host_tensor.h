#pragma once
// A tensor with concrete dims and host memory, as kernels see it. Constants are
// viewed without copying; kernel outputs own 64-byte-aligned storage.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "ir/tensor.h"

namespace geopt {

class HostTensor {
 public:
  HostTensor() = default;
  // Zero-filled storage for dims.
  HostTensor(DType dtype, std::vector<int64_t> dims);
  // Storage left unfilled, for kernels that write every element.
  static HostTensor uninitialized(DType dtype, std::vector<int64_t> dims);
  // A read-only view of a constant (copied only when its bytes are misaligned).
  static HostTensor view(const Tensor& constant);
  // A read-only view of bytes another owner keeps (the plan executor's pool or
  // weight region). `constant`: they never change while the owner lives, so
  // kernels may cache what they derive from them.
  static HostTensor borrowed(DType dtype, std::vector<int64_t> dims, const std::byte* data,
                             std::shared_ptr<const void> keep, bool constant);
  // Writable bytes another owner keeps, for a kernel to write its output in place (the
  // plan executor's pool at the output's planned offset). Never constant.
  static HostTensor placed(DType dtype, std::vector<int64_t> dims, std::byte* data,
                           std::shared_ptr<const void> keep);
  template <class T>
  static HostTensor scalar(DType dtype, T value) {
    HostTensor t(dtype, {});
    *t.mutable_data<T>() = value;
    return t;
  }
  template <class T>
  static HostTensor from_vector(DType dtype, std::vector<int64_t> dims, const std::vector<T>& values);

  DType dtype() const { return dtype_; }
  const std::vector<int64_t>& dims() const { return dims_; }
  size_t rank() const { return dims_.size(); }
  int64_t dim(int64_t i) const {
    return dims_[static_cast<size_t>(i < 0 ? i + static_cast<int64_t>(rank()) : i)];
  }
  int64_t size() const;  // element count
  size_t nbytes() const { return nbytes_; }
  bool defined() const { return dtype_ != DType::Undefined; }

  const std::byte* raw() const { return data_; }
  // Constants (views of initializers) are never written, so caches may key on their storage.
  bool is_constant() const { return constant_ && data_ != nullptr; }
  const std::shared_ptr<const void>& storage() const { return keep_; }
  std::byte* mutable_raw();
  template <class T>
  const T* data() const {
    return reinterpret_cast<const T*>(data_);
  }
  template <class T>
  T* mutable_data() {
    return reinterpret_cast<T*>(mutable_raw());
  }
  template <class T>
  std::vector<T> to_vector() const {
    return std::vector<T>(data<T>(), data<T>() + size());
  }
  // Reads element i of an integer tensor as int64 (for shape-like inputs).
  int64_t int_at(int64_t i) const;
  std::vector<int64_t> ints() const;  // all elements of an integer tensor
  // Element i of any real-valued tensor as double (for attribute-like float inputs).
  double real_at(int64_t i) const;

  // Same bytes, other dims (element counts must match); shares storage.
  HostTensor reshaped(std::vector<int64_t> dims) const;
  HostTensor clone() const;
  // A read-only handle on the same bytes, marked constant: the caller promises they
  // never change while it lives (the evaluator's precomputed constants).
  HostTensor frozen() const;
  // A copy of the bytes as a constant tensor (folding makes initializers this way).
  std::shared_ptr<Tensor> to_constant(std::string name) const;
  // The same, handing the bytes over instead of copying them (a folded weight is as
  // large as the weight): the tensor is consumed, so nothing can write them later.
  std::shared_ptr<Tensor> into_constant(std::string name) &&;
  std::string shape_string() const;  // "f32[1,3,224,224]"

  std::vector<std::string> strings;  // DType::String storage

 private:
  DType dtype_ = DType::Undefined;
  std::vector<int64_t> dims_;
  std::shared_ptr<const void> keep_;  // owns or pins the bytes
  std::byte* data_ = nullptr;
  size_t nbytes_ = 0;
  bool writable_ = false;
  bool constant_ = false;
};

template <class T>
HostTensor HostTensor::from_vector(DType dtype, std::vector<int64_t> dims, const std::vector<T>& values) {
  HostTensor t(dtype, std::move(dims));
  for (size_t i = 0; i < values.size() && i < static_cast<size_t>(t.size()); ++i)
    t.mutable_data<T>()[i] = values[i];
  return t;
}

}  // namespace geopt
