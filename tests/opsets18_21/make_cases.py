#!/usr/bin/python3
"""Writes the single-op models of ops new or changed in ONNX opsets 18-21 that
tests/test_opsets18_21.cpp runs, with their inputs: CASE/model.onnx and
CASE/inputs/<input>.npy. Their expected outputs (CASE/expected/<output>.npy) come
from ONNX Runtime: tests/opsets18_21/reference.sh. Deterministic: rerunning writes
the same bytes.
    /usr/bin/python3 tests/opsets18_21/make_cases.py [OUT_DIR]
"""
import os
import shutil
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.abspath(__file__))
IR = {18: 8, 19: 9, 20: 9, 21: 10}  # the IR version each opset shipped with
TYPES = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16, np.int64: TensorProto.INT64,
         np.int32: TensorProto.INT32, np.int8: TensorProto.INT8, np.uint8: TensorProto.UINT8, np.bool_: TensorProto.BOOL}
CASES = []


def case(name, opset, op, inputs, outputs, consts=None, **attrs):
    """inputs: [(name, array)] fed at run time ('' for an omitted optional input);
    consts: {name: array} initializers, placed in the node's input list by name;
    outputs: [(name, TensorProto type)]."""
    CASES.append((name, opset, op, inputs, outputs, consts or {}, attrs))


def rng(seed):
    return np.random.RandomState(seed)


def f32(seed, *shape, lo=-2.0, hi=2.0):
    return rng(seed).uniform(lo, hi, shape).astype(np.float32)


def i64(*values):
    return np.array(values, dtype=np.int64)


F, I64, BOOL = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL

# --- opset 18 ---
case("split_num_outputs_even", 18, "Split", [("x", f32(1, 2, 6))], [("a", F), ("b", F), ("c", F)], axis=1, num_outputs=3)
case("split_num_outputs_uneven", 18, "Split", [("x", f32(2, 7, 3))], [("a", F), ("b", F), ("c", F)], axis=0, num_outputs=3)
case("split_sizes_input", 18, "Split", [("x", f32(3, 2, 5))], [("a", F), ("b", F)], {"split": i64(2, 3)}, axis=-1)
for op, seed in [("ReduceMean", 4), ("ReduceMax", 5), ("ReduceMin", 6), ("ReduceProd", 7), ("ReduceL1", 8), ("ReduceL2", 9),
                 ("ReduceLogSum", 10), ("ReduceLogSumExp", 11), ("ReduceSumSquare", 12)]:
    lo = 0.5 if op == "ReduceLogSum" else -2.0
    case(f"{op.lower()}_axes_input", 18, op, [("x", f32(seed, 2, 3, 4, lo=lo))], [("y", F)], {"axes": i64(1, -1)}, keepdims=1)
case("reducemean_axes_input_keepdims0", 18, "ReduceMean", [("x", f32(13, 3, 4, 5))], [("y", F)], {"axes": i64(0)}, keepdims=0)
case("reducemax_no_axes", 18, "ReduceMax", [("x", f32(14, 3, 4))], [("y", F)], keepdims=0)
case("reducel2_noop_empty_axes", 18, "ReduceL2", [("x", f32(15, 3, 4))], [("y", F)], noop_with_empty_axes=1)
case("pad_axes_constant", 18, "Pad", [("x", f32(16, 2, 3, 4))], [("y", F)],
     {"pads": i64(1, 2, 0, 1), "value": np.array(1.5, np.float32), "axes": i64(1, 2)}, mode="constant")
case("pad_axes_reflect_negative", 18, "Pad", [("x", f32(17, 2, 4, 5))], [("y", F)], {"pads": i64(2, 1, 1, 3), "": None, "axes": i64(-1, -2)},
     mode="reflect")
case("pad_axes_edge", 18, "Pad", [("x", f32(18, 3, 4))], [("y", F)], {"pads": i64(2, 1), "": None, "axes": i64(0)}, mode="edge")
case("resize_antialias_linear_down", 18, "Resize", [("x", f32(19, 1, 2, 9, 11))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([1, 1, 0.4, 0.6], np.float32)}, mode="linear", antialias=1)
case("resize_antialias_cubic_down", 18, "Resize", [("x", f32(20, 1, 1, 12, 10))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([], np.float32), "sizes": i64(1, 1, 5, 4)}, mode="cubic", antialias=1)
case("resize_axes_sizes_nearest", 18, "Resize", [("x", f32(21, 1, 2, 4, 5))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([], np.float32), "sizes": i64(7, 3)}, mode="nearest", axes=[3, 2])
case("resize_axes_scales_linear", 18, "Resize", [("x", f32(22, 1, 2, 4, 5))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([2.0, 1.5], np.float32)}, mode="linear", axes=[2, 3])
case("resize_keep_aspect_not_larger", 18, "Resize", [("x", f32(23, 1, 1, 6, 8))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([], np.float32), "sizes": i64(9, 9)}, mode="linear", axes=[2, 3],
     keep_aspect_ratio_policy="not_larger")
case("resize_keep_aspect_not_smaller", 18, "Resize", [("x", f32(24, 1, 1, 6, 8))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([], np.float32), "sizes": i64(1, 1, 9, 9)}, mode="nearest",
     keep_aspect_ratio_policy="not_smaller")
case("lppool_ceil_mode", 18, "LpPool", [("x", f32(25, 1, 2, 7, 7))], [("y", F)], kernel_shape=[3, 3], strides=[2, 2], p=2, ceil_mode=1)
case("lppool_dilations", 18, "LpPool", [("x", f32(26, 1, 2, 8, 8))], [("y", F)], kernel_shape=[2, 2], dilations=[2, 2], p=3)
case("group_normalization_18", 18, "GroupNormalization", [("x", f32(27, 2, 4, 3, 3)), ("scale", f32(28, 2)), ("bias", f32(29, 2))],
     [("y", F)], num_groups=2, epsilon=1e-5)
case("col2im", 18, "Col2Im", [("x", f32(30, 1, 5, 5))], [("y", F)], {"image_shape": i64(5, 5), "block_shape": i64(1, 5)})
case("col2im_strides_pads_dilations", 18, "Col2Im", [("x", f32(31, 2, 8, 9))], [("y", F)],
     {"image_shape": i64(5, 4), "block_shape": i64(2, 2)}, strides=[2, 1], pads=[1, 0, 1, 1], dilations=[1, 2])
case("center_crop_pad_crop", 18, "CenterCropPad", [("x", f32(32, 10, 7, 3))], [("y", F)], {"shape": i64(5, 4, 3)})
case("center_crop_pad_pad_axes", 18, "CenterCropPad", [("x", f32(33, 3, 4, 5))], [("y", F)], {"shape": i64(7, 2)}, axes=[1, -1])
case("mish", 18, "Mish", [("x", f32(34, 3, 40, lo=-10, hi=10))], [("y", F)])
a32 = rng(35).randint(-1000, 1000, (3, 4)).astype(np.int32)
b32 = rng(36).randint(-1000, 1000, (4,)).astype(np.int32)
u8 = rng(37).randint(0, 256, (2, 5)).astype(np.uint8)
case("bitwise_and_broadcast", 18, "BitwiseAnd", [("a", a32), ("b", b32)], [("y", TensorProto.INT32)])
case("bitwise_or", 18, "BitwiseOr", [("a", u8), ("b", u8[::-1].copy())], [("y", TensorProto.UINT8)])
case("bitwise_xor_int64", 18, "BitwiseXor", [("a", a32.astype(np.int64)), ("b", b32.astype(np.int64))], [("y", I64)])
case("bitwise_not_int8", 18, "BitwiseNot", [("x", rng(38).randint(-128, 128, (2, 6)).astype(np.int8))], [("y", TensorProto.INT8)])
case("scatter_elements_max", 18, "ScatterElements", [("x", f32(39, 3, 4))], [("y", F)],
     {"idx": i64(1, 0, 2, 1, 1, 1, 0, 2).reshape(2, 4), "u": f32(40, 2, 4)}, axis=0, reduction="max")
case("scatter_nd_min", 18, "ScatterND", [("x", f32(41, 4, 3))], [("y", F)],
     {"idx": i64(1, 3, 1).reshape(3, 1), "u": f32(42, 3, 3)}, reduction="min")
case("resize_antialias_linear_up", 18, "Resize", [("x", f32(93, 1, 1, 4, 5))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([1, 1, 1.5, 2.2], np.float32)}, mode="linear", antialias=1)
case("resize_antialias_cubic_exclude_outside", 18, "Resize", [("x", f32(94, 2, 1, 11, 7))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([1, 1, 0.35, 0.5], np.float32)}, mode="cubic", antialias=1, exclude_outside=1,
     cubic_coeff_a=-0.5)
case("resize_antialias_align_corners_axes", 18, "Resize", [("x", f32(95, 1, 9, 8, 2))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([], np.float32), "sizes": i64(4, 3)}, mode="linear", antialias=1, axes=[1, 2],
     coordinate_transformation_mode="align_corners")
case("lppool_p1_pads", 18, "LpPool", [("x", f32(96, 1, 3, 6, 5))], [("y", F)], kernel_shape=[3, 2], pads=[1, 0, 1, 1], strides=[2, 1], p=1)
case("reducesumsquare_noop_empty_axes", 18, "ReduceSumSquare", [("x", f32(97, 2, 3))], [("y", F)], noop_with_empty_axes=1)
case("reducelogsum_noop_empty_axes", 18, "ReduceLogSum", [("x", f32(98, 2, 3, lo=0.1))], [("y", F)], noop_with_empty_axes=1)
case("center_crop_pad_odd", 18, "CenterCropPad", [("x", f32(99, 7, 3))], [("y", F)], {"shape": i64(4, 6)})
# --- opset 19 ---
case("average_pool_dilations", 19, "AveragePool", [("x", f32(43, 1, 2, 8, 8))], [("y", F)], kernel_shape=[2, 2], dilations=[2, 2])
case("average_pool_dilations_pads_ceil", 19, "AveragePool", [("x", f32(44, 1, 1, 9, 9))], [("y", F)], kernel_shape=[3, 3],
     dilations=[2, 1], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=0)
case("pad_wrap", 19, "Pad", [("x", f32(45, 3, 4))], [("y", F)], {"pads": i64(1, 2, 2, 3)}, mode="wrap")
case("deform_conv", 19, "DeformConv", [("x", f32(46, 1, 2, 5, 5)), ("w", f32(47, 3, 2, 3, 3)), ("offset", f32(48, 1, 18, 3, 3))],
     [("y", F)], kernel_shape=[3, 3])
case("deform_conv_mask_bias_groups", 19, "DeformConv",
     [("x", f32(49, 2, 4, 6, 5)), ("w", f32(50, 4, 2, 2, 2)), ("offset", f32(51, 2, 16, 6, 5, lo=-1.5, hi=1.5)),
      ("b", f32(52, 4)), ("mask", f32(53, 2, 8, 6, 5, lo=0, hi=1))],
     [("y", F)], kernel_shape=[2, 2], group=2, offset_group=2, pads=[1, 0, 0, 1], strides=[1, 1], dilations=[1, 1])
case("resize_half_pixel_symmetric", 19, "Resize", [("x", f32(110, 1, 2, 5, 7))], [("y", F)],
     {"roi": np.array([], np.float32), "scales": np.array([1, 1, 1.7, 0.6], np.float32)}, mode="linear",
     coordinate_transformation_mode="half_pixel_symmetric")
case("deform_conv_strides_dilations", 19, "DeformConv",
     [("x", f32(100, 1, 3, 7, 8)), ("w", f32(101, 2, 3, 2, 3)), ("offset", f32(102, 1, 12, 3, 4, lo=-2.5, hi=2.5))],
     [("y", F)], kernel_shape=[2, 3], strides=[2, 2], dilations=[2, 1], pads=[1, 1, 0, 0])
case("average_pool_dilations_include_pad", 19, "AveragePool", [("x", f32(103, 1, 2, 7, 6))], [("y", F)], kernel_shape=[3, 2],
     dilations=[2, 2], pads=[2, 1, 2, 1], count_include_pad=1)
case("pad_wrap_axes", 19, "Pad", [("x", f32(104, 2, 3, 4))], [("y", F)], {"pads": i64(1, 3, 2, 1), "": None, "axes": i64(2, 1)}, mode="wrap")
case("cast_saturate_attribute", 19, "Cast", [("x", f32(54, 3, 4, lo=-1e5, hi=1e5))], [("y", TensorProto.FLOAT16)],
     to=TensorProto.FLOAT16, saturate=1)
case("dequantize_per_axis_19", 19, "DequantizeLinear", [("x", rng(55).randint(-128, 128, (3, 4)).astype(np.int8))], [("y", F)],
     {"s": np.array([0.5, 0.25, 2.0], np.float32), "zp": np.array([1, -3, 0], np.int8)}, axis=0)
# --- opset 20 ---
case("gelu", 20, "Gelu", [("x", f32(56, 4, 25, lo=-6, hi=6))], [("y", F)])
case("gelu_tanh", 20, "Gelu", [("x", f32(57, 4, 25, lo=-6, hi=6))], [("y", F)], approximate="tanh")
case("grid_sample_linear", 20, "GridSample", [("x", f32(58, 1, 2, 4, 5)), ("grid", f32(59, 1, 3, 6, 2, lo=-1.2, hi=1.2))], [("y", F)],
     mode="linear")
case("grid_sample_cubic_border_aligned", 20, "GridSample", [("x", f32(60, 2, 1, 5, 5)), ("grid", f32(61, 2, 4, 3, 2, lo=-1.3, hi=1.3))],
     [("y", F)], mode="cubic", padding_mode="border", align_corners=1)
case("grid_sample_nearest_reflection", 20, "GridSample", [("x", f32(62, 1, 3, 4, 4)), ("grid", f32(63, 1, 5, 5, 2, lo=-1.6, hi=1.6))],
     [("y", F)], mode="nearest", padding_mode="reflection")
case("grid_sample_3d_linear", 20, "GridSample", [("x", f32(64, 1, 2, 3, 4, 5)), ("grid", f32(65, 1, 2, 3, 4, 3, lo=-1.1, hi=1.1))],
     [("y", F)], mode="linear", align_corners=1)
case("affine_grid_2d", 20, "AffineGrid", [("theta", f32(66, 2, 2, 3, lo=-1, hi=1))], [("y", F)], {"size": i64(2, 3, 4, 5)})
case("affine_grid_3d_aligned", 20, "AffineGrid", [("theta", f32(67, 1, 3, 4, lo=-1, hi=1))], [("y", F)], {"size": i64(1, 1, 3, 2, 4)},
     align_corners=1)
case("affine_grid_aligned_single_row", 20, "AffineGrid", [("theta", f32(109, 1, 2, 3, lo=-1, hi=1))], [("y", F)],
     {"size": i64(1, 1, 1, 3)}, align_corners=1)
case("dft_axis_input", 20, "DFT", [("x", f32(68, 2, 8, 3, 1))], [("y", F)], {"": None, "axis": np.array(1, np.int64)})
case("dft_axis_inverse_length", 20, "DFT", [("x", f32(69, 2, 5, 4, 2))], [("y", F)],
     {"len": np.array(6, np.int64), "axis": np.array(-2, np.int64)}, inverse=1)
case("dft_onesided_axis", 20, "DFT", [("x", f32(70, 3, 6, 1))], [("y", F)], {"": None, "axis": np.array(1, np.int64)}, onesided=1)
case("reducemax_bool", 20, "ReduceMax", [("x", rng(71).rand(3, 4) > 0.5)], [("y", BOOL)], {"axes": i64(1)}, keepdims=0)
case("reducemin_bool", 20, "ReduceMin", [("x", rng(72).rand(3, 4) > 0.3)], [("y", BOOL)], {"axes": i64(0)})
case("isnan_20", 20, "IsNaN", [("x", np.array([1.0, np.nan, np.inf, -0.0], np.float32))], [("y", BOOL)])
case("constant_of_shape_20", 20, "ConstantOfShape", [], [("y", F)], {"shape": i64(2, 3)}, value=helper.make_tensor("value", F, [1], [2.5]))
case("grid_sample_cubic_reflection", 20, "GridSample", [("x", f32(89, 1, 2, 4, 6)), ("grid", f32(90, 1, 3, 5, 2, lo=-1.8, hi=1.8))],
     [("y", F)], mode="cubic", padding_mode="reflection")
case("grid_sample_linear_border_3d", 20, "GridSample", [("x", f32(91, 2, 1, 3, 3, 4)), ("grid", f32(92, 2, 2, 2, 3, 3, lo=-1.4, hi=1.4))],
     [("y", F)], mode="linear", padding_mode="border")
# --- opset 21 ---
case("group_normalization_21", 21, "GroupNormalization", [("x", f32(73, 2, 6, 2, 3)), ("scale", f32(74, 6)), ("bias", f32(75, 6))],
     [("y", F)], num_groups=3, epsilon=1e-4, stash_type=1)
case("dequantize_block", 21, "DequantizeLinear", [("x", rng(76).randint(-128, 128, (4, 6)).astype(np.int8))], [("y", F)],
     {"s": f32(77, 4, 2, lo=0.01, hi=0.5), "zp": rng(78).randint(-5, 5, (4, 2)).astype(np.int8)}, axis=1, block_size=3)
case("dequantize_block_uneven_axis0", 21, "DequantizeLinear", [("x", rng(79).randint(0, 256, (5, 3)).astype(np.uint8))], [("y", F)],
     {"s": f32(80, 3, 3, lo=0.01, hi=0.5)}, axis=0, block_size=2)
case("quantize_block", 21, "QuantizeLinear", [("x", f32(81, 4, 6, lo=-20, hi=20))], [("y", TensorProto.INT8)],
     {"s": f32(82, 4, 3, lo=0.05, hi=0.3), "zp": rng(83).randint(-5, 5, (4, 3)).astype(np.int8)}, axis=1, block_size=2)
case("quantize_output_dtype", 21, "QuantizeLinear", [("x", f32(84, 2, 5, lo=-20, hi=20))], [("y", TensorProto.UINT8)],
     {"s": np.array(0.2, np.float32)}, output_dtype=TensorProto.UINT8)
case("quantize_block_no_zero_point", 21, "QuantizeLinear", [("x", f32(105, 3, 5, lo=-20, hi=20))], [("y", TensorProto.UINT8)],
     {"s": f32(106, 2, 5, lo=0.05, hi=0.3)}, axis=0, block_size=2)
case("dequantize_block_last_axis_3d", 21, "DequantizeLinear", [("x", rng(107).randint(-128, 128, (2, 3, 8)).astype(np.int8))], [("y", F)],
     {"s": f32(108, 2, 3, 2, lo=0.01, hi=0.5)}, axis=-1, block_size=4)
case("flatten_21", 21, "Flatten", [("x", f32(85, 2, 3, 4))], [("y", F)], axis=2)
case("transpose_21", 21, "Transpose", [("x", f32(86, 2, 3, 4))], [("y", F)], perm=[2, 0, 1])
case("squeeze_unsqueeze_21", 21, "Squeeze", [("x", f32(87, 1, 3, 1, 2))], [("y", F)], {"axes": i64(0, 2)})
case("reshape_21", 21, "Reshape", [("x", f32(88, 2, 3, 4))], [("y", F)], {"shape": i64(4, -1)})


def write(name, opset, op, inputs, outputs, consts, attrs):
    d = os.path.join(OUT, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "inputs"))
    node_inputs, graph_inputs, inits = [], [], []
    for n, a in inputs:
        node_inputs.append(n)
        graph_inputs.append(helper.make_tensor_value_info(n, TYPES[a.dtype.type], list(a.shape)))
        np.save(os.path.join(d, "inputs", n + ".npy"), a)
    for n, a in consts.items():
        node_inputs.append(n)
        if n:
            inits.append(numpy_helper.from_array(a, n))
    node = helper.make_node(op, node_inputs, [n for n, _ in outputs], **attrs)
    graph = helper.make_graph([node], name, graph_inputs, [helper.make_tensor_value_info(n, t, None) for n, t in outputs], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], producer_name="geopt-opsets18_21")
    model.ir_version = IR[opset]
    with open(os.path.join(d, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())


for c in CASES:
    write(*c)
print(f"{len(CASES)} cases in {OUT}")
