#pragma once
// The pieces every ai.geopt schema is built from, for engine's own fused ops
// (geopt_schemas.cpp) and for the ops a backend registers (backends/ascend/device_ops):
// one way to declare a float op, Conv's attributes, an activation, a normalization.
#include <onnx/defs/schema.h>
#include <onnx/defs/shape_inference.h>

#include <cstdint>
#include <string>
#include <vector>

#include "ir/domain.h"

namespace geopt::onnx_io {

// The version of every ai.geopt op.
inline constexpr int kGeoptOpsetVersion = 1;

// f32, f16, bf16, f64.
extern const std::vector<std::string> kFloatTypes;

// Every numeric type a layout or data-movement op carries: the floats, 8-bit, int32, int64.
extern const std::vector<std::string> kNumericTypes;

// An ai.geopt op named `name`, at kGeoptOpsetVersion, documented by `doc`.
onnx::OpSchema geopt_op(const char* name, const char* doc);
// geopt_op whose type constraint "T" is the float types.
onnx::OpSchema base(const char* name, const char* doc);
void same_as_first_input(onnx::InferenceContext& ctx);
// Runs a standard ONNX op's inference (Conv, MatMul) for a fused op that wraps it.
void infer_like(const char* op, int opset, onnx::InferenceContext& ctx);
// Output spatial size of a sliding window (ONNX Conv rules; auto_pad SAME/VALID/NOTSET).
int64_t window_out(int64_t in, int64_t k, int64_t stride, int64_t dilation, int64_t pad_total,
                   const std::string& auto_pad);
// ONNX Conv-11's attributes, for the fused convolutions.
void add_conv_attrs(onnx::OpSchema& s);
// `activation` and `activation_params` (kernels/activation.h reads them).
void add_activation_attrs(onnx::OpSchema& s);
// An int8 Cube op (QuantMatMul, QuantConv, a backend's blocked forms): 8-bit X and W, their
// scales and zero points, a float bias, requantization attributes; shapes inferred as the
// standard op `wrapped` (at `opset`) infers them, the output type from output_dtype.
onnx::OpSchema quantized_cube_op(const char* name, const char* doc, const char* wrapped, int opset);
// `post_scale` and `post_shift`: y * post_scale + post_shift after a fused kernel's
// activation (QuantConv and its blocked form; FusedConv's are its own).
void add_post_affine_attrs(onnx::OpSchema& s);
// A normalization over axes axis..rank-1 with a scale (and a bias).
onnx::OpSchema norm(const char* name, const char* doc, float eps, bool has_bias);

}  // namespace geopt::onnx_io
