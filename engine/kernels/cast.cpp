#include "kernels/cast.h"

#include "kernels/dispatch.h"

namespace geopt {

namespace {

// The conversions between f32 and the half types every reduced-precision run makes
// at each kernel (call_kernel widens and narrows), as loops that vectorize: F16C's
// vcvtph2ps/vcvtps2ph on x86-64-v3, libgcc's conversions elsewhere; both round to
// nearest even, as half.h does.
#define GEOPT_CAST_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))

#if defined(__clang__) && __clang_major__ < 15
// clang 14 (the fuzz build's) has no _Float16 on x86-64: half.h's scalar conversions,
// which round the same way.
void widen_f16(const uint16_t* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = half_to_float(in[i]);
}

void narrow_f16(const float* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = float_to_half(in[i]);
}
using F16Bits = uint16_t;
#else
GEOPT_CAST_CLONES
void widen_f16(const _Float16* in, float* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(in[i]);
}

GEOPT_CAST_CLONES
void narrow_f16(const float* in, _Float16* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<_Float16>(in[i]);
}
using F16Bits = _Float16;
#endif

GEOPT_CAST_CLONES
void widen_bf16(const uint16_t* in, uint32_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<uint32_t>(in[i]) << 16;
}

GEOPT_CAST_CLONES
void narrow_bf16(const uint32_t* in, uint16_t* out, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const uint32_t x = in[i];
    const uint16_t rounded = static_cast<uint16_t>((x + 0x7FFFu + ((x >> 16) & 1u)) >> 16);
    const uint16_t quiet = static_cast<uint16_t>((x >> 16) | 0x40u);
    out[i] = (x & 0x7FFFFFFFu) > 0x7F800000u ? quiet : rounded;
  }
}

// f32 <-> f16/bf16 only.
void convert_half(const HostTensor& x, HostTensor& y) {
  const int64_t n = x.size();
  const DType from = x.dtype(), to = y.dtype();
  if (from == DType::F16 && to == DType::F32)
    widen_f16(x.data<F16Bits>(), y.mutable_data<float>(), n);
  else if (from == DType::F32 && to == DType::F16)
    narrow_f16(x.data<float>(), y.mutable_data<F16Bits>(), n);
  else if (from == DType::BF16 && to == DType::F32)
    widen_bf16(x.data<uint16_t>(), y.mutable_data<uint32_t>(), n);
  else if (from == DType::F32 && to == DType::BF16)
    narrow_bf16(x.data<uint32_t>(), y.mutable_data<uint16_t>(), n);
}

}  // namespace

HostTensor cast_tensor(const HostTensor& x, DType to) {
  if (x.dtype() == to) return x;
  const bool half_pair = (x.dtype() == DType::F32 && (to == DType::F16 || to == DType::BF16)) ||
                         (to == DType::F32 && (x.dtype() == DType::F16 || x.dtype() == DType::BF16));
  if (half_pair) {
    HostTensor fast = HostTensor::uninitialized(to, x.dims());
    convert_half(x, fast);
    return fast;
  }
  HostTensor y(to, x.dims());
  const int64_t n = x.size();
  dispatch_all(
      x.dtype(),
      [&]<class S>() {
        dispatch_all(
            to,
            [&]<class D>() {
              const S* in = x.data<S>();
              D* out = y.mutable_data<D>();
              for (int64_t i = 0; i < n; ++i) out[i] = convert_value<D>(in[i]);
            },
            "Cast");
      },
      "Cast");
  return y;
}

}  // namespace geopt
