#pragma once
// Writes a precision mode into a graph, as ATC does after fusion: each float op gets
// the dtype it computes in on the device (precision_mode.h), half-precision values
// and constants where it is fp16/bf16, and a Cast wherever a value crosses from one
// precision to another. The model's inputs and outputs keep their dtypes (a Cast at
// each side), so the interface does not change. Ops whose ONNX schema does not allow
// the low dtype, control flow (its bodies get a pass of their own) and ops geopt has
// no schema for keep the model's dtype.
#include <map>
#include <string>

#include "ascend/precision_mode.h"
#include "ir/graph.h"

namespace geopt::ascend {

struct PrecisionReport {
  size_t casts = 0;      // Cast nodes inserted
  size_t constants = 0;  // constants stored again in another dtype
  size_t saturated = 0;  // constant elements beyond fp16's range, stored as +-65504
  // Float kernels by the dtype they compute in ("f16", "f32"), and by op type the ones
  // left in fp32 where the mode lowers others (the mix list's black ops).
  std::map<std::string, size_t> by_dtype;
  std::map<std::string, size_t> kept_f32;
};

// Rewrites `model`'s graph in place (not its control-flow bodies). A no-op for
// must_keep_origin_dtype.
PrecisionReport apply_precision(Model& model, const Precision& precision);

}  // namespace geopt::ascend
