// Roll: a rotation of a tensor along some axes (torch.roll, GE's Roll), which exporters
// write as two Slices and a Concat per axis. Output element j along axis a is input
// element (j + starts[a]) mod n: the output starts at input element `starts`. One pass
// over the bytes, whatever the element type.
#include <cstring>

#include "eval/kernel.h"
#include "ir/node.h"

namespace geopt {
namespace {

void roll(KernelContext& ctx) {
  const HostTensor& x = ctx.input(0);
  const std::vector<int64_t> starts = ctx.attr_ints("starts", {});
  const std::vector<int64_t> axes = ctx.attr_ints("axes", {});
  if (starts.size() != axes.size()) ctx.fail("starts and axes must have one entry each per axis");
  const int64_t rank = static_cast<int64_t>(x.rank());
  std::vector<int64_t> start(static_cast<size_t>(rank), 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    const int64_t a = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (a < 0 || a >= rank)
      ctx.fail("axis " + std::to_string(axes[i]) + " is out of range for " + x.shape_string());
    const int64_t n = x.dims()[static_cast<size_t>(a)];
    if (n <= 0) continue;
    int64_t shift = starts[i] % n;  // in (-n, n): no overflow, whatever the attribute holds
    if (shift < 0) shift += n;
    start[static_cast<size_t>(a)] = (start[static_cast<size_t>(a)] + shift) % n;
  }
  HostTensor y = HostTensor::uninitialized(x.dtype(), x.dims());
  if (x.size() == 0) {
    ctx.outputs[0] = std::move(y);
    return;
  }
  // The innermost axis moves as two contiguous runs; the outer ones by index.
  const size_t elem = dtype_size(x.dtype());
  const int64_t inner = rank ? x.dims().back() : 1;
  const int64_t s_inner = rank ? start.back() : 0;
  const int64_t rows = x.size() / inner;
  std::vector<int64_t> stride(static_cast<size_t>(rank), 1);
  for (int64_t d = rank - 2; d >= 0; --d)
    stride[static_cast<size_t>(d)] =
        stride[static_cast<size_t>(d) + 1] * x.dims()[static_cast<size_t>(d) + 1];
  const std::byte* src = x.raw();
  std::byte* dst = y.mutable_raw();
  for (int64_t row = 0; row < rows; ++row) {
    // Output row -> input row: each outer index shifted by its start.
    int64_t rest = row * inner, from = 0;
    for (int64_t d = 0; d + 1 < rank; ++d) {
      const int64_t n = x.dims()[static_cast<size_t>(d)];
      const int64_t j = rest / stride[static_cast<size_t>(d)];
      rest %= stride[static_cast<size_t>(d)];
      from += ((j + start[static_cast<size_t>(d)]) % n) * stride[static_cast<size_t>(d)];
    }
    std::byte* out = dst + static_cast<size_t>(row * inner) * elem;
    const std::byte* in = src + static_cast<size_t>(from) * elem;
    std::memcpy(out, in + static_cast<size_t>(s_inner) * elem, static_cast<size_t>(inner - s_inner) * elem);
    std::memcpy(out + static_cast<size_t>(inner - s_inner) * elem, in, static_cast<size_t>(s_inner) * elem);
  }
  ctx.outputs[0] = std::move(y);
}

}  // namespace

void register_roll_kernel(OpRegistry& r) { r.add(kGeoptDomain, "Roll", roll, /*half_via_f32=*/false); }

}  // namespace geopt
