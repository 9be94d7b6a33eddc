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

enum class LayerKind { Conv, MatMul, Gemm };

// A Conv, MatMul or Gemm of the main graph whose weight (input 1) is a float constant
// and whose input 0 is a computed float tensor.
struct QuantizableLayer {
  LayerKind kind = LayerKind::Conv;
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

// A float weight as geopt quantize stores it: int8 in -127..127 around a zero point of 0,
// with one scale per slice of `axis` (or one for all, axis < 0), each max|w| / 127.
struct Int8Weight {
  std::vector<int8_t> values;  // in the weight's order
  std::vector<float> scales;   // one per slice of the axis
  int64_t inner = 1;           // elements per slice step: value i has scale (i / inner) % scales.size()
  float dequantized(size_t i) const {
    return static_cast<float>(values[i]) * scales[(i / static_cast<size_t>(inner)) % scales.size()];
  }
};
Int8Weight quantize_weight_values(const Tensor& weight, int64_t axis);

// The axis write_qdq stores `layer`'s weight scales along: its output channels from
// opset 13 on (DequantizeLinear's axis), none (-1, one scale) before.
int64_t stored_weight_axis(const Model& model, const QuantizableLayer& layer);

// A new initializer of `model`'s graph named after `prefix`, holding `bytes`.
Value* add_constant(Graph& g, const std::string& prefix, DType dtype, std::vector<int64_t> dims,
                    std::string bytes);

// A copy of `model` with `layers` quantized: one Q/DQ pair per activation value (shared
// by the layers reading it), one int8 weight per weight value (symmetric, range -127..127),
// per output channel from opset 13 on and per tensor before. Biases stay float.
// `ranges` holds every listed layer's activation range.
Model write_qdq(const Model& model, const std::vector<QuantizableLayer>& layers,
                const std::map<std::string, ValueRange>& ranges, ActivationType type);

}  // namespace geopt::quantize
