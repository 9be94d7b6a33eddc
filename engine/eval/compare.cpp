#include "eval/compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace geopt {

namespace {

std::string element_at(const std::vector<int64_t>& dims, int64_t flat) {
  std::vector<int64_t> index(dims.size());
  for (size_t k = dims.size(); k-- > 0;) {
    index[k] = dims[k] ? flat % dims[k] : 0;
    flat = dims[k] ? flat / dims[k] : 0;
  }
  std::string s = "[";
  for (size_t k = 0; k < index.size(); ++k) s += (k ? ", " : "") + std::to_string(index[k]);
  return s + "]";
}

}  // namespace

TensorDiff diff(const HostTensor& got, const HostTensor& ref, const Tolerance& tolerance) {
  TensorDiff d;
  d.min_cosine = tolerance.min_cosine;
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
  int64_t worst_at = -1;
  for (int64_t i = 0; i < got.size(); ++i) {
    double a = got.real_at(i), b = ref.real_at(i);
    if (std::isnan(a) || std::isnan(b)) {
      ++(std::isnan(a) == std::isnan(b) ? d.both_nan : d.nan_mismatches);
      continue;
    }
    double e = std::fabs(a - b);
    d.max_abs = std::max(d.max_abs, e);
    const double allowed = tolerance.atol + tolerance.rtol * std::fabs(b);
    const double ratio = allowed > 0 ? e / allowed : (e > 0 ? INFINITY : 0);
    if (ratio > d.worst_ratio) {
      d.worst_ratio = ratio;
      worst_at = i;
    }
    d.max_reference = std::max(d.max_reference, std::fabs(b));
    if (std::fabs(b) > 1e-6) d.max_rel = std::max(d.max_rel, e / std::fabs(b));
    dot += a * b;
    na += a * a;
    nb += b * b;
  }
  d.cosine = d.nan_mismatches       ? 0.0
             : (na == 0 && nb == 0) ? 1.0
             : (na == 0 || nb == 0) ? 0.0
                                    : dot / std::sqrt(na * nb);
  if (worst_at >= 0) {
    char values[96];
    std::snprintf(values, sizeof values, ": %.9g against %.9g", got.real_at(worst_at), ref.real_at(worst_at));
    d.worst = element_at(got.dims(), worst_at) + values;
  }
  return d;
}

double OutputsDiff::error() const { return mismatch.empty() && !nan_mismatch ? max_abs : INFINITY; }

OutputsDiff diff_outputs(const std::vector<std::pair<std::string, HostTensor>>& got,
                         const std::vector<std::pair<std::string, HostTensor>>& reference,
                         const Tolerance& tolerance) {
  OutputsDiff out;
  if (got.size() != reference.size()) {
    out.mismatch =
        std::to_string(got.size()) + " outputs vs " + std::to_string(reference.size()) + " in the reference";
    return out;
  }
  for (size_t i = 0; i < reference.size(); ++i) {
    TensorDiff d = diff(got[i].second, reference[i].second, tolerance);
    if (!d.comparable) {
      out.mismatch = "output '" + reference[i].first + "': " + d.mismatch;
      return out;
    }
    out.per_output.push_back({reference[i].first, d.max_abs, d.max_rel, d.cosine, d.max_reference});
    out.max_abs = std::max(out.max_abs, d.max_abs);
    out.nan_mismatch = out.nan_mismatch || d.nan_mismatches > 0;
    out.outputs_within = out.outputs_within && d.within();
    if (d.worst_ratio > out.worst_ratio || (out.worst.empty() && !d.worst.empty())) {
      out.worst_ratio = std::max(out.worst_ratio, d.worst_ratio);
      out.worst = "output '" + reference[i].first + "' " + d.worst;
    }
  }
  return out;
}

}  // namespace geopt
