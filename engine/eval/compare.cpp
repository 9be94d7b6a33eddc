#include "eval/compare.h"

#include <algorithm>
#include <cmath>

namespace geopt {

TensorDiff diff(const HostTensor& got, const HostTensor& ref) {
  TensorDiff d;
  if (got.dims() != ref.dims()) {
    d.comparable = false;
    d.mismatch = "shape " + got.shape_string() + " vs reference " + ref.shape_string();
    return d;
  }
  if (got.dtype() == DType::String || ref.dtype() == DType::String) {
    d.comparable = got.strings == ref.strings;
    if (!d.comparable) d.mismatch = "strings differ";
    return d;
  }
  double dot = 0, na = 0, nb = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    double a = got.real_at(i), b = ref.real_at(i);
    if (std::isnan(a) || std::isnan(b)) {
      if (std::isnan(a) != std::isnan(b)) ++d.nan_mismatches;
      continue;
    }
    double e = std::fabs(a - b);
    d.max_abs = std::max(d.max_abs, e);
    if (std::fabs(b) > 1e-6) d.max_rel = std::max(d.max_rel, e / std::fabs(b));
    dot += a * b;
    na += a * a;
    nb += b * b;
  }
  d.cosine = (na == 0 && nb == 0) ? 1.0 : (na == 0 || nb == 0) ? 0.0 : dot / std::sqrt(na * nb);
  return d;
}

double OutputsDiff::error() const { return mismatch.empty() && !nan_mismatch ? max_abs : INFINITY; }

OutputsDiff diff_outputs(const std::vector<std::pair<std::string, HostTensor>>& got,
                         const std::vector<std::pair<std::string, HostTensor>>& reference) {
  OutputsDiff out;
  if (got.size() != reference.size()) {
    out.mismatch = std::to_string(got.size()) + " outputs vs " + std::to_string(reference.size()) + " in the reference";
    return out;
  }
  for (size_t i = 0; i < reference.size(); ++i) {
    TensorDiff d = diff(got[i].second, reference[i].second);
    if (!d.comparable) {
      out.mismatch = "output '" + reference[i].first + "': " + d.mismatch;
      return out;
    }
    out.max_abs = std::max(out.max_abs, d.max_abs);
    out.nan_mismatch = out.nan_mismatch || d.nan_mismatches > 0;
  }
  return out;
}

}  // namespace geopt
