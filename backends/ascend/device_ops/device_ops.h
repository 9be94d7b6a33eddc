#pragma once
// Ascend's own ops: the layout conversion TransData and the ops that read or write
// Ascend's device layouts (NC1HWC0, FRACTAL_Z, FRACTAL_NZ): FusedConv, FusedMatMul,
// LayerNorm, ShuffleChannel, ChannelSlice, ChannelConcat. Each op's file holds its
// schema, its host kernel and its traits; this backend registers them, engine/ knows
// none of them (docs/ARCHITECTURE.md, "The op registry").
#include <optional>
#include <string_view>

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

}  // namespace geopt::ascend
