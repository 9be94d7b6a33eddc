#include "quantize/activation_range.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "util/error.h"

namespace geopt::quantize {

CalibrationMethod parse_calibration_method(std::string_view name) {
  if (name == "minmax") return CalibrationMethod::MinMax;
  if (name == "percentile") return CalibrationMethod::Percentile;
  if (name == "entropy" || name == "kl") return CalibrationMethod::Entropy;
  if (name == "auto") return CalibrationMethod::Auto;
  throw UsageError("unknown calibration method '" + std::string(name) +
                   "': expected auto, minmax, percentile or entropy");
}

const char* calibration_method_name(CalibrationMethod m) {
  switch (m) {
    case CalibrationMethod::MinMax:
      return "minmax";
    case CalibrationMethod::Percentile:
      return "percentile";
    case CalibrationMethod::Entropy:
      return "entropy";
    case CalibrationMethod::Auto:
      return "auto";
  }
  return "?";
}

void ValueStats::add_extremes(const float* v, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float x = v[i];
    if (!std::isfinite(x)) continue;  // an infinity or NaN says nothing about the range to keep
    if (!seen_) {
      lo_ = hi_ = x;
      seen_ = true;
    }
    lo_ = std::min(lo_, x);
    hi_ = std::max(hi_, x);
  }
}

double ValueStats::span() const {
  return std::max(std::fabs(static_cast<double>(lo_)), std::fabs(static_cast<double>(hi_)));
}

void ValueStats::add_to_histogram(const float* v, int64_t n) {
  const double a = span();
  if (!seen_ || a == 0) return;
  if (histogram_.empty()) histogram_.assign(kBins, 0.0);
  const double per_unit = kBins / (2 * a);
  for (int64_t i = 0; i < n; ++i) {
    // Zeros are exact at any range, and a ReLU makes them by the million: counted, they
    // would make every clipping look cheap (the entropy threshold fell to a quarter of
    // the values after a ReLU and a MaxPool).
    if (!std::isfinite(v[i]) || v[i] == 0.0f) continue;
    // Clamped as a double first: a subnormal span makes per_unit infinite, and 0 x inf is NaN.
    const double at = (static_cast<double>(v[i]) + a) * per_unit;
    const double bin = at >= 0 ? std::min(std::floor(at), static_cast<double>(kBins - 1)) : 0.0;
    histogram_[static_cast<size_t>(bin)] += 1;
  }
}

std::vector<double> ValueStats::magnitude_histogram() const {
  const size_t half = kBins / 2;
  std::vector<double> m(half, 0.0);
  if (histogram_.empty()) return m;
  for (size_t k = 0; k < half; ++k) m[k] = histogram_[half + k] + histogram_[half - 1 - k];
  return m;
}

ValueRange ValueStats::range(CalibrationMethod method, double percentile, bool symmetric, int levels) const {
  if (!seen_) return {0, 0};
  return method_range(chosen_method(method, percentile, symmetric, levels), percentile, symmetric, levels);
}

ValueRange ValueStats::method_range(CalibrationMethod method, double percentile, bool symmetric,
                                    int levels) const {
  const float a = static_cast<float>(span());
  if (method == CalibrationMethod::MinMax || histogram_.empty())
    return symmetric ? ValueRange{-a, a} : ValueRange{lo_, hi_};
  ValueRange r = method == CalibrationMethod::Percentile ? percentile_range(percentile, symmetric)
                                                         : entropy_range(symmetric, levels);
  if (!symmetric) r = {std::max(r.lo, lo_), std::min(r.hi, hi_)};
  return r;
}

CalibrationMethod ValueStats::chosen_method(CalibrationMethod method, double percentile, bool symmetric,
                                            int levels) const {
  if (method != CalibrationMethod::Auto) return method;
  if (!seen_ || histogram_.empty()) return CalibrationMethod::MinMax;
  // In this order, so that a tie keeps the range that clips least.
  CalibrationMethod best = CalibrationMethod::MinMax;
  double best_error = std::numeric_limits<double>::infinity();
  for (CalibrationMethod m :
       {CalibrationMethod::MinMax, CalibrationMethod::Percentile, CalibrationMethod::Entropy}) {
    const double e = quantization_error(method_range(m, percentile, symmetric, levels), symmetric);
    if (e < best_error) {
      best_error = e;
      best = m;
    }
  }
  return best;
}

double ValueStats::quantization_error(ValueRange r, bool symmetric) const {
  if (histogram_.empty()) return 0;
  double lo = std::min(static_cast<double>(r.lo), 0.0), hi = std::max(static_cast<double>(r.hi), 0.0);
  double step;
  if (symmetric) {
    step = std::max(-lo, hi) / 127;
    lo = -127 * step;
    hi = 127 * step;
  } else {
    step = (hi - lo) / 255;
  }
  const double a = span(), width = 2 * a / kBins;
  double error = 0, count = 0;
  for (size_t k = 0; k < histogram_.size(); ++k) {
    if (histogram_[k] == 0) continue;
    const double x = -a + width * (static_cast<double>(k) + 0.5);
    const double outside = x < lo ? lo - x : x > hi ? x - hi : 0;
    error += histogram_[k] * (outside > 0 ? outside * outside : step * step / 12);
    count += histogram_[k];
  }
  return count > 0 ? error / count : 0;
}

ValueRange ValueStats::percentile_range(double percentile, bool symmetric) const {
  const double a = span();
  const double keep = std::clamp(percentile, 0.0, 100.0) / 100.0;
  if (symmetric) {
    const std::vector<double> m = magnitude_histogram();
    double total = 0;
    for (double c : m) total += c;
    double cum = 0;
    size_t k = 0;
    while (k < m.size() && (cum += m[k]) < keep * total) ++k;
    const float t = static_cast<float>(a * static_cast<double>(std::min(k + 1, m.size())) /
                                       static_cast<double>(m.size()));
    return {-t, t};
  }
  // Each tail gets half of what is cut.
  double total = 0;
  for (double c : histogram_) total += c;
  const double tail = (1 - keep) / 2 * total;
  const double width = 2 * a / kBins;
  size_t lo_bin = 0;
  for (double cum = 0; lo_bin + 1 < histogram_.size() && (cum += histogram_[lo_bin]) <= tail;) ++lo_bin;
  size_t hi_bin = histogram_.size() - 1;
  for (double cum = 0; hi_bin > lo_bin && (cum += histogram_[hi_bin]) <= tail;) --hi_bin;
  return {static_cast<float>(-a + width * static_cast<double>(lo_bin)),
          static_cast<float>(-a + width * static_cast<double>(hi_bin + 1))};
}

ValueRange ValueStats::entropy_range(bool /*symmetric*/, int levels) const {
  const std::vector<double> m = magnitude_histogram();
  const size_t bins = entropy_threshold_bins(m, levels);
  const float t = static_cast<float>(span() * static_cast<double>(bins) / static_cast<double>(m.size()));
  return {-t, t};  // range() clips an asymmetric one to what was seen
}

size_t entropy_threshold_bins(const std::vector<double>& hist, int levels) {
  const size_t n = hist.size();
  const size_t q_levels = static_cast<size_t>(std::max(levels, 1));
  if (n <= q_levels) return n;
  std::vector<double> suffix(n + 1, 0.0);  // suffix[i]: the counts from bin i on
  for (size_t i = n; i-- > 0;) suffix[i] = suffix[i + 1] + hist[i];
  if (suffix[0] == 0) return n;
  double best_kl = std::numeric_limits<double>::infinity();
  size_t best = n;
  std::vector<double> p, q;
  for (size_t i = q_levels; i <= n; ++i) {
    // P: the first i bins, what lies beyond folded into the last (clipping keeps it).
    p.assign(hist.begin(), hist.begin() + static_cast<std::ptrdiff_t>(i));
    p[i - 1] += suffix[i];
    // Q: the first i bins merged into q_levels groups, each group's count spread evenly
    // over its bins that hold something.
    q.assign(i, 0.0);
    const size_t merged = i / q_levels;
    for (size_t g = 0; g < q_levels; ++g) {
      const size_t start = g * merged, stop = g + 1 == q_levels ? i : start + merged;
      double sum = 0;
      size_t nonzero = 0;
      for (size_t k = start; k < stop; ++k) {
        sum += hist[k];
        nonzero += hist[k] != 0;
      }
      if (nonzero == 0) continue;
      for (size_t k = start; k < stop; ++k)
        if (hist[k] != 0) q[k] = sum / static_cast<double>(nonzero);
    }
    double p_total = 0, q_total = 0;
    for (size_t k = 0; k < i; ++k) {
      p_total += p[k];
      q_total += q[k];
    }
    if (q_total == 0) continue;
    constexpr double kFloor = 1e-12;  // a bin P has and Q lost costs much, not infinitely
    double kl = 0;
    for (size_t k = 0; k < i; ++k) {
      if (p[k] == 0) continue;
      const double pk = p[k] / p_total, qk = std::max(q[k] / q_total, kFloor);
      kl += pk * std::log(pk / qk);
    }
    if (kl < best_kl) {
      best_kl = kl;
      best = i;
    }
  }
  return best;
}

}  // namespace geopt::quantize
