#pragma once
// Numerical agreement between two tensors: the figures `geopt run --compare`
// and the optimizer's --check report.
#include <string>

#include "eval/host_tensor.h"

namespace geopt {

struct TensorDiff {
  bool comparable = true;  // same dtype class and shape
  std::string mismatch;    // why not, when not comparable
  double max_abs = 0;
  double max_rel = 0;      // max |a-b| / |b| over elements where |b| > 1e-6
  double cosine = 1;       // of the flattened tensors; 1 when both are zero
  int64_t nan_mismatches = 0;
};

TensorDiff diff(const HostTensor& got, const HostTensor& reference);

}  // namespace geopt
