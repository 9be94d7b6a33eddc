#pragma once
// Bias correction (Nagel et al., "Data-Free Quantization", empirical form): quantizing a
// layer's weight and its activation shifts the mean of each output channel, because the
// rounding of a few weights (a depthwise conv has nine) and the clipping of an
// activation's tail do not average out. Over the calibration set, the shift of output
// channel o is
//   sum over input channels i and kernel taps k of  W[o,i,k] E[x_i] - Wq[o,i,k] E[Q(x)_i]
// with W the float weight, Wq the int8 weight dequantized, x the float activation and Q(x)
// the activation quantized and dequantized; the layer's float bias takes it back. Each
// layer is corrected for its own quantization, its input as the float model computes it.
// For MatMul and Gemm that is exact; a conv's shift is one per channel from the means over
// all positions, so a window that reads padding or a border pixel gets the full shift.
#include <map>
#include <string>
#include <vector>

#include "eval/host_tensor.h"
#include "ir/graph.h"
#include "quantize/qdq_model.h"

namespace geopt::quantize {

// The axis of `layer`'s activation that its weight's input channels run along: Conv's 1,
// MatMul's last, Gemm's 1 (0 with transA).
int64_t activation_channel_axis(const Model& model, const QuantizableLayer& layer);

// Per-channel means of one activation over the calibration set, as it is in float and as
// its Q/DQ pair gives it.
class ChannelMeans {
 public:
  ChannelMeans() = default;
  ChannelMeans(int64_t axis, LinearQuant q, ActivationType type) : axis_(axis), q_(q), type_(type) {}
  // Adds one sample's activation (F32).
  void add(const HostTensor& activation);
  // Empty when nothing was added or the channel count changed between samples.
  std::vector<double> float_means() const { return means(float_sums_); }
  std::vector<double> quantized_means() const { return means(quantized_sums_); }

 private:
  std::vector<double> means(const std::vector<double>& sums) const;

  int64_t axis_ = 1;
  LinearQuant q_;
  ActivationType type_ = ActivationType::U8;
  std::vector<double> float_sums_, quantized_sums_;
  double per_channel_ = 0;  // values added per channel
  bool consistent_ = true;
};

// The key ChannelMeans are kept under: the activation and the axis.
std::string channel_means_key(const std::string& activation, int64_t axis);

struct BiasCorrection {
  size_t node_index = 0;     // the layer's (QuantizableLayer::node_index)
  double largest_shift = 0;  // max over output channels of |shift|
  bool applied = false;
  std::string not_applied_because;  // when not applied
};

// A copy of `model` in which each of `layers` has its bias moved by its mean shift (its
// weight quantized as write_qdq stores it). A Conv without a bias gets one; a Gemm's C and
// the constant [N] of an Add that alone reads a MatMul's output take it. A layer whose
// bias is elsewhere is left as it is, and its entry says why.
Model correct_biases(const Model& model, const std::vector<QuantizableLayer>& layers,
                     const std::map<std::string, ChannelMeans>& means, std::vector<BiasCorrection>* report);

}  // namespace geopt::quantize
