#pragma once
// Numerical agreement between two tensors: the figures `geopt run --compare`
// and the optimizer's --check report.
#include <string>
#include <utility>
#include <vector>

#include "eval/host_tensor.h"

namespace geopt {

// numpy.allclose's rule: |got - ref| <= atol + rtol * |ref|, element by element. The
// defaults pass correct fp32 rewrites of full-size models (GPT-2's logits, in the tens,
// move by about 1e-4 when a fusion reorders a sum) and catch a wrong one.
struct Tolerance {
  double atol = 1e-4;
  double rtol = 1e-4;
  // Above 0, an output also passes whole when its cosine with the reference reaches this
  // (a quantized model, where a rounding tie moves single elements a long way).
  double min_cosine = 0;
  // Why it is this wide, where it is not the default ("fp16 model: ..."); reports print it.
  std::string basis = {};
};

struct TensorDiff {
  bool comparable = true;  // same dtype class and shape
  std::string mismatch;    // why not, when not comparable
  double max_abs = 0;
  double max_rel = 0;        // max |a-b| / |b| over elements where |b| > 1e-6
  double max_reference = 0;  // max |b|: max_abs against it is the error relative to the output's scale
  // Of the flattened tensors over the elements neither has NaN at; 1 when both are zero
  // there; 0 when one has NaN where the other has not (they disagree, whatever the rest).
  double cosine = 1;
  int64_t nan_mismatches = 0;  // NaN in one, not the other
  int64_t both_nan = 0;        // NaN in both: equal, as numpy.allclose(equal_nan=True) says
  // Against the tolerance: the largest |a-b| / (atol + rtol |b|) (at most 1 within it),
  // and the element where it is ("[0, 3, 17]: 12.3456 against 12.3441").
  double worst_ratio = 0;
  std::string worst;
  double min_cosine = 0;  // the tolerance's
  bool within() const {
    return comparable && nan_mismatches == 0 &&
           (worst_ratio <= 1 || (min_cosine > 0 && cosine >= min_cosine));
  }
};

TensorDiff diff(const HostTensor& got, const HostTensor& reference, const Tolerance& tolerance = {});

// One output's figures, for the reports of a check in reduced precision.
struct OutputError {
  std::string name;
  double max_abs = 0, max_rel = 0, cosine = 1;
  double max_reference = 0;  // the largest |reference|
  // max_abs relative to the output's scale (element-wise max_rel grows without bound near zeros).
  double relative() const { return max_reference > 0 ? max_abs / max_reference : max_abs; }
};

// Two runs' outputs, output by output in the same order (the --check of optimize and
// compile, the tests).
struct OutputsDiff {
  std::vector<OutputError> per_output;  // in the reference's order
  double max_abs = 0;                   // over every output
  bool nan_mismatch = false;            // a NaN on one side only
  std::string mismatch;        // "output 'y': shape ... vs reference ...", when one is not comparable
  double worst_ratio = 0;      // as TensorDiff's, over every output
  bool outputs_within = true;  // every output within the tolerance (TensorDiff::within)
  std::string worst;           // "output 'logits' [0, 3, 17]: 12.3456 against 12.3441"
  // The figure a tolerance is checked against: infinite on a mismatch or a one-sided NaN.
  double error() const;
  bool within() const { return mismatch.empty() && !nan_mismatch && outputs_within; }
};

OutputsDiff diff_outputs(const std::vector<std::pair<std::string, HostTensor>>& got,
                         const std::vector<std::pair<std::string, HostTensor>>& reference,
                         const Tolerance& tolerance = {});

}  // namespace geopt
