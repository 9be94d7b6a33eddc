#pragma once
// Numerical agreement between two tensors: the figures `geopt run --compare`
// and the optimizer's --check report.
#include <string>
#include <utility>
#include <vector>

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

// Two runs' outputs, output by output in the same order (the --check of optimize and
// compile, the tests).
struct OutputsDiff {
  double max_abs = 0;         // over every output
  bool nan_mismatch = false;  // a NaN on one side only
  std::string mismatch;       // "output 'y': shape ... vs reference ...", when one is not comparable
  // The figure a tolerance is checked against: infinite on a mismatch or a one-sided NaN.
  double error() const;
};

OutputsDiff diff_outputs(const std::vector<std::pair<std::string, HostTensor>>& got,
                         const std::vector<std::pair<std::string, HostTensor>>& reference);

}  // namespace geopt
