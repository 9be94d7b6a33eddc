#pragma once
#include "eval/host_tensor.h"

namespace geopt {

// Converts every element to `to` with ONNX Cast semantics (strings excluded).
HostTensor cast_tensor(const HostTensor& x, DType to);

}  // namespace geopt
