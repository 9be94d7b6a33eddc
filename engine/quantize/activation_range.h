#pragma once
// How an activation's range is chosen from what calibration saw: min-max, a percentile
// of the values, the threshold whose quantized distribution stays closest to the
// observed one (KL divergence, TensorRT's entropy calibration), or, per tensor, whichever
// of the three quantizes the observed values with the least squared error.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace geopt::quantize {

enum class CalibrationMethod { MinMax, Percentile, Entropy, Auto };

// "minmax", "percentile", "entropy" (also "kl"), "auto"; throws geopt::Error listing them.
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
  // range is [-t, t] (symmetric int8); otherwise lower and upper bounds are chosen apart
  // (and clipped to what was seen) for asymmetric uint8. `levels`: how many quantization
  // steps one side of 0 gets. Auto picks the method by quantization_error.
  ValueRange range(CalibrationMethod method, double percentile, bool symmetric, int levels) const;
  // The method Auto picks for this tensor (the method itself for any other).
  CalibrationMethod chosen_method(CalibrationMethod method, double percentile, bool symmetric,
                                  int levels) const;

  // The mean squared error of quantizing the histogram's values to `r` as geopt quantize
  // does (symmetric int8: step max|r| / 127; otherwise uint8: step (hi - lo) / 255 over
  // the range widened to hold 0): a value inside loses step^2 / 12 to rounding, one
  // outside its distance to the nearer bound, squared. Zeros are exact and not counted.
  double quantization_error(ValueRange r, bool symmetric) const;

 private:
  double span() const;                              // A
  std::vector<double> magnitude_histogram() const;  // |x| over [0, A], kBins / 2 bins
  ValueRange percentile_range(double percentile, bool symmetric) const;
  ValueRange entropy_range(bool symmetric, int levels) const;
  ValueRange method_range(CalibrationMethod method, double percentile, bool symmetric, int levels) const;

  bool seen_ = false;
  float lo_ = 0, hi_ = 0;
  std::vector<double> histogram_;  // kBins counts over [-A, A]
};

// The threshold over a histogram of magnitudes (bins of equal width from 0) whose
// quantization to `levels` steps loses least information: the bin count at which
// KL(P || Q) is smallest, P the clipped distribution, Q its quantized expansion.
size_t entropy_threshold_bins(const std::vector<double>& magnitudes, int levels);

}  // namespace geopt::quantize
