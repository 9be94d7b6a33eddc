#pragma once
// Ascend's own ops: the layout conversion TransData and the ops that read or write
// Ascend's device layouts (NC1HWC0, FRACTAL_Z, FRACTAL_NZ): FusedConv, FusedMatMul,
// LayerNorm, ChannelMove, and the int8 ones,
// FusedQuantConv and AscendQuant. Each op's file holds its
// schema, its host kernel and its traits; this backend registers them, engine/ knows
// none of them (docs/ARCHITECTURE.md, "The op registry").
#include <onnx/defs/shape_inference.h>

#include <optional>
#include <string_view>

#include "eval/kernel.h"
#include "ir/node.h"
#include "layout.h"
#include "ops/op_registry.h"

namespace geopt::ascend {

// Registers engine's schemas and Ascend's ops' with ONNX's schema registry, once. Every
// entry point that imports a model, loads rules or reads a plan calls it first
// (op_registry() does).
void register_op_schemas();

// The ops the Ascend backend runs, folds and prices: engine's standard ops and
// Ascend's own, with their kernels and traits. Built once; passed to whatever runs or
// folds ops (the evaluator, saturation, static shapes, the plan executor).
const OpRegistry& op_registry();

// The device format an Ascend op writes its output in (TransData's dst_format, a
// FusedConv's or LayerNorm's data_format, NC1HWC0 for the channel ops); nullopt for any
// other op, whose output is in the plain layout of its rank.
std::optional<Format> written_format(const Node& n);

// Adds an Ascend op (domain ai.geopt) with its kernel and traits: every one works per
// sample, so a batch may run slice by slice (ATC's L2 slicing, op_work.cpp).
void add_device_op(OpRegistry& r, std::string_view op, KernelFn fn, bool half_via_f32, OpTraits traits = {});

// The NC1HWC0 output shape of a 2-D conv, [N, ceil(M/c0), OH, OW, c0], from its X (5-D
// NC1HWC0, or 4-D NCHW with `plain_input`), W and Conv attributes; M is `channels` where
// positive, else W's dim 0 (fused_conv.cpp).
void infer_blocked_conv_shape(onnx::InferenceContext& ctx, bool plain_input, int64_t channels, int64_t c0);

// AscendQuant's conversion (ascend_quant.cpp): x, float NC1HWC0 (C0 16) holding `channels`
// channels, quantized as QuantizeLinear rounds into y, 8-bit NC1HWC0 (C0 32) allocated by the
// caller, its padding lanes the zero point. check_quantization fails the kernel, naming
// what is wrong, on an x, scale or zero point it cannot take.
void check_quantization(const KernelContext& ctx, const HostTensor& x, int64_t channels, float scale,
                        int64_t zero, DType out);
void quantize_to_nc1hwc0(const HostTensor& x, int64_t channels, float scale, int64_t zero, HostTensor& y);

// Each op's file: its schema, and its kernel and traits.
void register_trans_data_schema();
void add_trans_data(OpRegistry& r);
void register_fused_conv_schema();
void add_fused_conv(OpRegistry& r);
void register_fused_matmul_schema();
void add_fused_matmul(OpRegistry& r);
void register_layer_norm_schema();
void add_layer_norm(OpRegistry& r);
void register_channel_ops_schemas();
void add_channel_ops(OpRegistry& r);
void register_fused_quant_conv_schema();
void add_fused_quant_conv(OpRegistry& r);
void register_ascend_quant_schema();
void add_ascend_quant(OpRegistry& r);

}  // namespace geopt::ascend
