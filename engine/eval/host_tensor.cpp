#include "eval/host_tensor.h"

#include <unistd.h>

#include <cstdlib>

#include <cstdint>
#include <cstring>
#include <new>

#include "eval/half.h"
#include "util/checked_size.h"
#include "util/error.h"
#include "util/memory.h"

namespace geopt {
namespace {

constexpr size_t kAlignment = 64;

// The machine's memory: no tensor larger than it can be held, whatever the allocator
// (or a sanitizer's) would say to the request.
std::shared_ptr<std::byte> allocate(size_t nbytes, bool zero) {
  size_t n = nbytes == 0 ? kAlignment : (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  if (n > physical_memory_bytes())
    throw Error("a tensor of " + std::to_string(n) + " bytes is larger than this machine's memory (" +
                std::to_string(physical_memory_bytes()) +
                " bytes): the model's or the inputs' shapes ask for more than it can hold");
  std::byte* p = allocate_aligned(n, kAlignment);
  if (!p)  // a shape from the input asks for more than the machine has
    throw Error(
        "cannot allocate " + std::to_string(n) +
        " bytes for a tensor (the model's or the inputs' shapes ask for more memory than this machine has)");
  if (zero) std::memset(p, 0, n);
  return std::shared_ptr<std::byte>(p, [](std::byte* q) { free_aligned(q); });
}

int64_t count(const std::vector<int64_t>& dims) { return checked_element_count(dims, "a tensor"); }

size_t bytes_of(const std::vector<int64_t>& dims, DType dtype) {
  return checked_byte_count(count(dims), dtype_size(dtype), "a tensor of shape " + dims_text(dims));
}

}  // namespace

HostTensor::HostTensor(DType dtype, std::vector<int64_t> dims) : dtype_(dtype), dims_(std::move(dims)) {
  int64_t n = count(dims_);
  if (dtype_ == DType::String) {
    strings.resize(static_cast<size_t>(n));
    return;
  }
  nbytes_ = bytes_of(dims_, dtype_);
  auto storage = allocate(nbytes_, true);
  data_ = storage.get();
  keep_ = std::move(storage);
  writable_ = true;
}

HostTensor HostTensor::uninitialized(DType dtype, std::vector<int64_t> dims) {
  if (dtype == DType::String) return HostTensor(dtype, std::move(dims));
  HostTensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.nbytes_ = bytes_of(t.dims_, dtype);
  auto storage = allocate(t.nbytes_, false);
  t.data_ = storage.get();
  t.keep_ = std::move(storage);
  t.writable_ = true;
  return t;
}

HostTensor HostTensor::view(const Tensor& constant) {
  HostTensor t;
  t.dtype_ = constant.dtype;
  t.dims_ = constant.dims;
  if (constant.dtype == DType::String) {
    t.strings = constant.strings;
    return t;
  }
  auto bytes = constant.bytes();
  size_t align = std::max<size_t>(dtype_size(constant.dtype), 1);
  if (reinterpret_cast<uintptr_t>(bytes.data()) % align != 0 || bytes.empty()) {
    HostTensor copy(constant.dtype, constant.dims);
    if (!bytes.empty()) std::memcpy(copy.data_, bytes.data(), bytes.size());
    return copy;
  }
  t.nbytes_ = bytes.size();
  t.data_ = const_cast<std::byte*>(bytes.data());
  t.keep_ = constant.data.owner();
  t.writable_ = false;
  t.constant_ = true;
  return t;
}

HostTensor HostTensor::borrowed(DType dtype, std::vector<int64_t> dims, const std::byte* data,
                                std::shared_ptr<const void> keep, bool constant) {
  HostTensor t;
  t.dtype_ = dtype;
  t.dims_ = std::move(dims);
  t.nbytes_ = static_cast<size_t>(count(t.dims_)) * dtype_size(dtype);
  t.data_ = const_cast<std::byte*>(data);
  t.keep_ = std::move(keep);
  t.writable_ = false;
  t.constant_ = constant;
  return t;
}

HostTensor HostTensor::placed(DType dtype, std::vector<int64_t> dims, std::byte* data,
                              std::shared_ptr<const void> keep) {
  HostTensor t = borrowed(dtype, std::move(dims), data, std::move(keep), false);
  t.writable_ = true;
  return t;
}

int64_t HostTensor::size() const { return count(dims_); }

HostTensor HostTensor::frozen() const {
  HostTensor t = *this;
  t.writable_ = false;
  t.constant_ = true;
  return t;
}

std::byte* HostTensor::mutable_raw() {
  if (!writable_ && data_) throw InternalError("writing to a read-only constant tensor");
  return data_;
}

int64_t HostTensor::int_at(int64_t i) const {
  switch (dtype_) {
    case DType::I64:
      return data<int64_t>()[i];
    case DType::I32:
      return data<int32_t>()[i];
    case DType::I16:
      return data<int16_t>()[i];
    case DType::I8:
      return data<int8_t>()[i];
    case DType::U8:
      return data<uint8_t>()[i];
    case DType::U16:
      return data<uint16_t>()[i];
    case DType::U32:
      return data<uint32_t>()[i];
    case DType::U64:
      return static_cast<int64_t>(data<uint64_t>()[i]);
    case DType::Bool:
      return data<uint8_t>()[i];
    default:
      throw Error("expected an integer tensor, got " + dtype_name(dtype_));
  }
}

std::vector<int64_t> HostTensor::ints() const {
  std::vector<int64_t> v(static_cast<size_t>(size()));
  for (int64_t i = 0; i < size(); ++i) v[static_cast<size_t>(i)] = int_at(i);
  return v;
}

double HostTensor::real_at(int64_t i) const {
  switch (dtype_) {
    case DType::F32:
      return data<float>()[i];
    case DType::F64:
      return data<double>()[i];
    case DType::F16:
      return half_to_float(data<uint16_t>()[i]);
    case DType::BF16:
      return bf16_to_float(data<uint16_t>()[i]);
    default:
      return static_cast<double>(int_at(i));
  }
}

HostTensor HostTensor::reshaped(std::vector<int64_t> dims) const {
  if (count(dims) != size()) throw InternalError("reshape changes the element count");
  HostTensor t = *this;
  t.dims_ = std::move(dims);
  return t;
}

HostTensor HostTensor::clone() const {
  HostTensor t(dtype_, dims_);
  if (nbytes_) std::memcpy(t.data_, data_, nbytes_);
  t.strings = strings;
  return t;
}

std::string HostTensor::shape_string() const {
  std::string s = dtype_name(dtype_) + "[";
  for (size_t i = 0; i < dims_.size(); ++i) s += (i ? "," : "") + std::to_string(dims_[i]);
  return s + "]";
}

std::shared_ptr<Tensor> HostTensor::into_constant(std::string name) && {
  if (dtype_ == DType::String || !keep_ || !data_) return to_constant(std::move(name));
  auto t = std::make_shared<Tensor>();
  t->name = std::move(name);
  t->dtype = dtype_;
  t->dims = dims_;
  t->data = BufferSlice(std::make_shared<SharedBytes>(std::move(keep_), data_, nbytes_), 0, nbytes_);
  data_ = nullptr;
  nbytes_ = 0;
  writable_ = false;
  return t;
}

std::shared_ptr<Tensor> HostTensor::to_constant(std::string name) const {
  auto t = std::make_shared<Tensor>();
  t->name = std::move(name);
  t->dtype = dtype_;
  t->dims = dims_;
  t->data = BufferSlice(std::string(reinterpret_cast<const char*>(data_), nbytes_));
  return t;
}

}  // namespace geopt
