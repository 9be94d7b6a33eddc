#pragma once
// Which layers of a model can be quantized, and the model with some of them quantized
// in ONNX's QDQ form: each quantized layer reads its activation through a
// QuantizeLinear/DequantizeLinear pair and its weight as int8 through a DequantizeLinear,
// so ONNX Runtime and other tools run it and geopt's rules can fuse it into int8 kernels.
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "quantize/activation_range.h"

namespace geopt::quantize {

// A Conv, MatMul or Gemm of the main graph whose weight (input 1) is a float constant
// and whose input 0 is a computed float tensor.
struct QuantizableLayer {
  size_t node_index = 0;  // in the graph's node order (Model::clone keeps it)
  std::string name;       // the node's name, or its output's where it has none
  std::string op_type;
  std::string activation;   // input 0's value
  std::string weight;       // input 1's value
  int64_t weight_axis = 0;  // the weight's output-channel axis (Conv 0, MatMul 1, Gemm 0 or 1)
};

std::vector<QuantizableLayer> find_quantizable_layers(const Model& model);

enum class ActivationType { U8, I8 };  // asymmetric uint8, or symmetric int8 (zero point 0)

// "uint8" or "int8"; throws geopt::Error otherwise.
ActivationType parse_activation_type(const std::string& name);

// The smallest scale written (float's smallest normal number): a range narrower than
// that many steps gets scale 1 instead of a scale of 0 or a subnormal one.
inline constexpr float kScaleFloor = std::numeric_limits<float>::min();

struct LinearQuant {
  float scale = 1;
  int32_t zero_point = 0;
};

// The scale and zero point that cover `r` (widened to hold 0, so 0 is exact). A range of
// nothing but 0 gets scale 1.
LinearQuant activation_quant(ValueRange r, ActivationType type);

// A copy of `model` with `layers` quantized: one Q/DQ pair per activation value (shared
// by the layers reading it), one int8 weight per weight value (symmetric, range -127..127),
// per output channel from opset 13 on and per tensor before. Biases stay float.
// `ranges` holds every listed layer's activation range.
Model write_qdq(const Model& model, const std::vector<QuantizableLayer>& layers,
                const std::map<std::string, ValueRange>& ranges, ActivationType type);

}  // namespace geopt::quantize
