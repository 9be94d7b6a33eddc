#include "kernels/cast.h"

#include "kernels/dispatch.h"

namespace geopt {

HostTensor cast_tensor(const HostTensor& x, DType to) {
  if (x.dtype() == to) return x;
  HostTensor y(to, x.dims());
  const int64_t n = x.size();
  dispatch_all(x.dtype(), [&]<class S>() {
    dispatch_all(to, [&]<class D>() {
      const S* in = x.data<S>();
      D* out = y.mutable_data<D>();
      for (int64_t i = 0; i < n; ++i) out[i] = convert_value<D>(in[i]);
    }, "Cast");
  }, "Cast");
  return y;
}

}  // namespace geopt
