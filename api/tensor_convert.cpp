#include "tensor_convert.h"

#include <array>
#include <cstring>
#include <utility>

#include "guard.h"
#include "util/error.h"

namespace geopt::api {
namespace {

constexpr std::array<std::pair<DType, const char*>, 15> kNames{{
    {DType::F32, "float32"},
    {DType::U8, "uint8"},
    {DType::I8, "int8"},
    {DType::U16, "uint16"},
    {DType::I16, "int16"},
    {DType::I32, "int32"},
    {DType::I64, "int64"},
    {DType::Bool, "bool"},
    {DType::F16, "float16"},
    {DType::F64, "float64"},
    {DType::U32, "uint32"},
    {DType::U64, "uint64"},
    {DType::C64, "complex64"},
    {DType::C128, "complex128"},
    {DType::BF16, "bfloat16"},
}};

}  // namespace

std::string dtype_to_api(DType dtype) {
  for (const auto& [d, name] : kNames)
    if (d == dtype) return name;
  return dtype_name(dtype);
}

DType dtype_from_api(const std::string& name, const std::string& what) {
  for (const auto& [d, n] : kNames)
    if (name == n) return d;
  std::string known;
  for (const auto& [d, n] : kNames) known += (known.empty() ? "" : ", ") + std::string(n);
  throw geopt::Error(what + ": dtype '" + name + "' is not one geopt runs (" + known + ")");
}

// The bytes a tensor of `shape` holds; throws geopt::Error naming `what` for a negative
// dim or a count past any memory.
size_t byte_count(const std::string& what, DType dtype, const std::vector<int64_t>& shape) {
  int64_t count = 1;
  for (int64_t d : shape) {
    if (d < 0) throw geopt::Error(what + ": negative dim " + std::to_string(d));
    if (d && count > (int64_t{1} << 48) / d)
      throw geopt::Error(what + ": its shape holds more elements than memory could");
    count *= d;
  }
  return static_cast<size_t>(count) * dtype_size(dtype);
}

HostTensor host_view(const std::string& name, const Tensor& t) {
  const std::string what = "input '" + name + "'";
  const DType dtype = dtype_from_api(t.dtype, what);
  const size_t nbytes = byte_count(what, dtype, t.shape);
  if (nbytes != t.nbytes)
    throw geopt::Error(what + ": " + std::to_string(t.nbytes) + " bytes given, its dtype and shape need " +
                       std::to_string(nbytes));
  if (nbytes && !t.data) throw geopt::Error(what + ": no data");
  return HostTensor::borrowed(dtype, t.shape, static_cast<const std::byte*>(t.data), t.owner, false);
}

Tensor api_tensor(HostTensor t) {
  Tensor out;
  out.dtype = dtype_to_api(t.dtype());
  out.shape = t.dims();
  out.nbytes = t.nbytes();
  // The tensor itself becomes the owner: its storage lives while the returned one does.
  auto held = std::make_shared<HostTensor>(std::move(t));
  out.data = held->raw();
  out.owner = held;
  return out;
}

Tensor Tensor::copy_of(const std::string& dtype, std::vector<int64_t> shape, const void* data) {
  return guarded([&] {
    const DType d = dtype_from_api(dtype, "tensor");
    const size_t nbytes = byte_count("tensor", d, shape);
    if (nbytes && !data) throw geopt::Error("tensor: no data");
    HostTensor copy = HostTensor::uninitialized(d, std::move(shape));
    if (nbytes) std::memcpy(copy.mutable_raw(), data, nbytes);
    return api_tensor(std::move(copy));
  });
}

Tensor Tensor::zeros(const std::string& dtype, std::vector<int64_t> shape) {
  return guarded([&] {
    const DType d = dtype_from_api(dtype, "tensor");
    byte_count("tensor", d, shape);  // checks the dims
    return api_tensor(HostTensor(d, std::move(shape)));
  });
}

}  // namespace geopt::api
