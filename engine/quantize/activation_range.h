#pragma once
// How an activation's range is chosen from what calibration saw: min-max, a percentile
// of the values, or the threshold whose quantized distribution stays closest to the
// observed one (KL divergence, TensorRT's entropy calibration).
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace geopt::quantize {

enum class CalibrationMethod { MinMax, Percentile, Entropy };

// "minmax", "percentile", "entropy" (also "kl"); throws geopt::Error listing them.
CalibrationMethod parse_calibration_method(std::string_view name);
const char* calibration_method_name(CalibrationMethod m);

struct ValueRange {
  float lo = 0, hi = 0;
};

// The values one tensor took over the calibration set: its extremes (first pass), then
// a histogram of its non-zero values over [-A, A], A = max(|lo|, |hi|), in bins symmetric
// about 0 (second pass; zeros are exact at any range).
class ValueStats {
 public:
  static constexpr int kBins = 4096;  // over [-A, A]: 2048 on each side of 0

  void add_extremes(const float* v, int64_t n);
  bool has_values() const { return seen_; }
  ValueRange extremes() const { return {lo_, hi_}; }
  // Call after every add_extremes; fixes the histogram's span.
  void add_to_histogram(const float* v, int64_t n);

  // The range the method picks (percentile in (0, 100], e.g. 99.999). `symmetric`: the
  // range is [-t, t]; otherwise lower and upper bounds are chosen apart (and clipped to
  // what was seen). `levels`: how many quantization steps one side of 0 gets.
  ValueRange range(CalibrationMethod method, double percentile, bool symmetric, int levels) const;

 private:
  double span() const;                              // A
  std::vector<double> magnitude_histogram() const;  // |x| over [0, A], kBins / 2 bins
  ValueRange percentile_range(double percentile, bool symmetric) const;
  ValueRange entropy_range(bool symmetric, int levels) const;

  bool seen_ = false;
  float lo_ = 0, hi_ = 0;
  std::vector<double> histogram_;  // kBins counts over [-A, A]
};

// The threshold over a histogram of magnitudes (bins of equal width from 0) whose
// quantization to `levels` steps loses least information: the bin count at which
// KL(P || Q) is smallest, P the clipped distribution, Q its quantized expansion.
size_t entropy_threshold_bins(const std::vector<double>& magnitudes, int levels);

}  // namespace geopt::quantize
