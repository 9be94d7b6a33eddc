#!/usr/bin/python3
"""The exporter zoo: small models in the idioms of exporters other than torch's, written
node by node with onnx.helper (no tf2onnx, spox or onnxruntime quantizer is installed
here), random weights from fixed seeds.

    /usr/bin/python3 examples/exporters.py examples/exporters     # models and inputs
    examples/exporters_reference.sh                                # ONNX Runtime's outputs (npm)

Per model NAME: NAME.onnx, NAME/inputs/<input>.npy, NAME/outputs/<output>.npy (ONNX
Runtime 1.30's, CPU, optimizations off). tests/test_exporters.cpp runs each through
geopt run, optimize and compile.

| model | idioms |
|---|---|
| tf_mobilenet_style | tf2onnx: NHWC input and Transposes between blocks, an explicit Pad before a VALID stride-2 conv, asymmetric pads, stride-2 depthwise convs, a dilation-5 conv, SAME_UPPER and SAME_LOWER, Clip(0, 6), Resize (linear, half_pixel), Concat |
| tf_blazeface_style | tf2onnx (MediaPipe): 5x5 stride-2 stem with asymmetric pads, residual blocks whose skip is max-pooled and widened by a Pad of the channels, channel padding by Concat with zeros |
| fp16_unet | a torch fp16 export: fp16 weights and compute, Casts at the edges, BatchNormalization, nearest and align_corners upsampling, skip Concats |
| fp16_io_classifier | fp16 end to end, inputs and outputs too (onnxconverter-common's float16 conversion): conv, batch norm, pooling, Gemm, Softmax |
| dynamic_int8 | onnxruntime's quantize_dynamic: DynamicQuantizeLinear, ConvInteger, Cast, Mul by the scales, MatMulInteger with per-column weights |
| dynamic_int8_unet | the same quantizer on a U-Net (64 x 64 here, 1024 x 1024 with `--full-size` for bench/): each bias added through a Reshape, MaxPool, nearest Resize, skip Concats |
| if_vad_like | another builder (spox-style): open batch and samples, a scalar sample rate that picks the If branch, each branch framing the audio with its own Reshape, so the If's output has a shape per branch until the pooling after it (compile moves the readers into the branches) |
| opset18_block | opset 18, IR 9 (torch's dynamo exporter): Split with num_outputs, ReduceMean with axes as an input, Pad with axes, GroupNormalization, Mish |
| static_qdq_resnet_u8 | onnxruntime's quantize_static, QDQ format, uint8 activations (its MinMax calibration on one input, from the float model): each tensor quantized once (a QuantizeLinear and DequantizeLinear pair its readers share), int8 per-channel weights and int32 biases as DequantizeLinear of initializers, the ReLU after each conv removed (the output's range starts at 0), residual Adds, MaxPool and Flatten between pairs of one scale, GlobalAveragePool, Gemm |
| static_qdq_mobilenet_s8 | the same quantizer with int8 activations on an inverted-residual net: depthwise convs, Clip(0, 6) removed likewise, residual Adds, GlobalAveragePool, Gemm |
| static_qdq_efficientnet_u8 | the same quantizer (uint8) on EfficientNet's and MobileNetV3's MBConv blocks: SiLU as a Sigmoid and a Mul between pairs, squeeze-and-excitation gates (Sigmoid, HardSigmoid) and their Mul, HardSwish, a residual Add |
| static_qdq_transformer_u8 | the same quantizer (uint8) on a BERT encoder layer: per-channel int8 projections and their bias Adds (a quantized constant), the heads' Reshape and Transpose at one scale, Q x K^T and P x V between two quantized activations, the 1/sqrt(d) Div and GELU's Div and Erf left in float between pairs, Softmax, residual sums, LayerNormalization |

"""
import math
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper
from onnx import numpy_helper as nh


class Builder:
    """Nodes and initializers with unique names."""

    def __init__(self, seed):
        self.rng = np.random.default_rng(seed)
        self.nodes, self.inits, self.count = [], [], 0

    def name(self, prefix):
        self.count += 1
        return f"{prefix}_{self.count}"

    def const(self, array, prefix="c"):
        n = self.name(prefix)
        self.inits.append(nh.from_array(np.asarray(array), n))
        return n

    def node(self, op, inputs, outputs=1, **attrs):
        names = [self.name(op.lower()) for _ in range(outputs)]
        self.nodes.append(helper.make_node(op, inputs, names, name=names[0], **attrs))
        return names if outputs > 1 else names[0]

    def model(self, name, inputs, outputs, opset, producer, ir_version=8):
        g = helper.make_graph(self.nodes, name, inputs, outputs, self.inits)
        m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)], producer_name=producer)
        m.ir_version = ir_version
        return m


def tf_conv(b, x, cin, cout, k, s=1, d=1, pads=None, auto_pad=None, group=1, relu6=True, dtype=np.float32):
    w = b.const((b.rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin // group * k * k)).astype(dtype), "w")
    bias = b.const((0.1 * b.rng.standard_normal(cout)).astype(dtype), "b")
    attrs = dict(kernel_shape=[k, k], strides=[s, s], dilations=[d, d], group=group)
    if auto_pad:
        attrs["auto_pad"] = auto_pad
    elif pads is not None:
        attrs["pads"] = pads
    y = b.node("Conv", [x, w, bias], **attrs)
    if relu6:
        y = b.node("Clip", [y, b.const(np.array(0, dtype), "lo"), b.const(np.array(6, dtype), "hi")])
    return y


def pad(b, x, pads):
    return b.node("Pad", [x, b.const(np.array(pads, np.int64), "pads")], mode="constant")


def nchw(b, x):
    return b.node("Transpose", [x], perm=[0, 3, 1, 2])


def nhwc(b, x):
    return b.node("Transpose", [x], perm=[0, 2, 3, 1])


def tf_mobilenet_style():
    b = Builder(1)
    h = nchw(b, "input")
    h = pad(b, h, [0, 0, 0, 0, 0, 0, 1, 1])  # SAME at stride 2, written out: after the end
    h = tf_conv(b, h, 3, 16, 3, s=2, pads=[0, 0, 0, 0])
    h = nchw(b, nhwc(b, h))  # tf2onnx keeps NHWC between blocks
    e = tf_conv(b, h, 16, 48, 1)
    e = tf_conv(b, e, 48, 48, 3, pads=[1, 1, 1, 1], group=48)
    e = tf_conv(b, e, 48, 16, 1, relu6=False)
    h = b.node("Add", [h, e])
    e = tf_conv(b, h, 16, 48, 1)
    e = tf_conv(b, e, 48, 48, 3, s=2, pads=[0, 0, 1, 1], group=48)
    h = tf_conv(b, e, 48, 24, 1, relu6=False)
    a = tf_conv(b, h, 24, 24, 3, d=5, pads=[5, 5, 5, 5])
    s = tf_conv(b, h, 24, 24, 3, auto_pad="SAME_UPPER")
    c = tf_conv(b, pad(b, h, [0, 0, 1, 1, 0, 0, 1, 1]), 24, 24, 3, group=24, pads=[0, 0, 0, 0])
    h = b.node("Concat", [a, s, c], axis=1)
    h = tf_conv(b, h, 72, 32, 1)
    low = tf_conv(b, h, 32, 32, 3, s=2, auto_pad="SAME_LOWER")
    up = b.node("Resize", [low, b.const(np.array([], np.float32), "roi"), b.const(np.array([1, 1, 2, 2], np.float32), "scales")],
                mode="linear", coordinate_transformation_mode="half_pixel")
    h = b.node("Concat", [h, up], axis=1)
    y = nhwc(b, tf_conv(b, h, 64, 8, 1, relu6=False))
    m = b.model("tf_mobilenet_style", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 64, 64, 3])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 16, 16, 8])], 13, "tf2onnx-style")
    return m, {"input": np.random.default_rng(11).standard_normal((1, 64, 64, 3)).astype(np.float32)}


def tf_blazeface_style():
    b = Builder(2)
    h = nchw(b, "input")
    h = tf_conv(b, h, 3, 24, 5, s=2, pads=[1, 1, 2, 2], relu6=False)

    def block(h, cin, cout, s):
        e = tf_conv(b, h, cin, cin, 3, s=s, pads=[0, 0, 1, 1] if s == 2 else [1, 1, 1, 1], group=cin, relu6=False)
        e = tf_conv(b, e, cin, cout, 1, relu6=False)
        skip = h
        if s == 2:
            skip = b.node("MaxPool", [skip], kernel_shape=[2, 2], strides=[2, 2])
        if cout > cin:
            skip = pad(b, skip, [0, 0, 0, 0, 0, cout - cin, 0, 0])
        return b.node("Relu", [b.node("Add", [e, skip])])

    for cin, cout, s in [(24, 24, 1), (24, 28, 1), (28, 32, 2), (32, 36, 1), (36, 42, 1), (42, 48, 2)]:
        h = block(h, cin, cout, s)
    h = b.node("Concat", [h, b.const(np.zeros((1, 16, 8, 8), np.float32), "zeros")], axis=1)
    y = nhwc(b, tf_conv(b, h, 64, 8, 1, relu6=False))
    m = b.model("tf_blazeface_style", [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 64, 64, 3])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 8, 8, 8])], 13, "tf2onnx-style")
    return m, {"input": np.random.default_rng(12).uniform(-1, 1, (1, 64, 64, 3)).astype(np.float32)}


def fp16_unet():
    b = Builder(3)
    f16 = np.float16

    def conv_bn_relu(x, cin, cout):
        y = tf_conv(b, x, cin, cout, 3, pads=[1, 1, 1, 1], relu6=False, dtype=f16)
        bn = [b.const((1 + 0.1 * b.rng.standard_normal(cout)).astype(f16)), b.const((0.1 * b.rng.standard_normal(cout)).astype(f16)),
              b.const((0.1 * b.rng.standard_normal(cout)).astype(f16)), b.const((1 + 0.2 * b.rng.random(cout)).astype(f16))]
        return b.node("Relu", [b.node("BatchNormalization", [y] + bn, epsilon=1e-5)])

    h = b.node("Cast", ["image"], to=TensorProto.FLOAT16)
    e1 = conv_bn_relu(h, 3, 16)
    e2 = conv_bn_relu(b.node("MaxPool", [e1], kernel_shape=[2, 2], strides=[2, 2]), 16, 32)
    e3 = conv_bn_relu(b.node("MaxPool", [e2], kernel_shape=[2, 2], strides=[2, 2]), 32, 64)
    u2 = b.node("Resize", [e3, "", b.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    d2 = conv_bn_relu(b.node("Concat", [u2, e2], axis=1), 96, 32)
    u1 = b.node("Resize", [d2, "", b.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="linear",
                coordinate_transformation_mode="align_corners")
    d1 = conv_bn_relu(b.node("Concat", [u1, e1], axis=1), 48, 16)
    mask = b.node("Sigmoid", [tf_conv(b, d1, 16, 1, 1, pads=[0, 0, 0, 0], relu6=False, dtype=f16)])
    y = b.node("Cast", [mask], to=TensorProto.FLOAT)
    m = b.model("fp16_unet", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 64, 64])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 1, 64, 64])], 15, "pytorch-fp16-style")
    return m, {"image": np.random.default_rng(13).uniform(0, 1, (1, 3, 64, 64)).astype(np.float32)}


def fp16_io_classifier():
    """fp16 end to end (a model converted with onnxconverter-common's float16 tool, inputs and
    outputs kept in fp16): conv, batch norm, ReLU, pooling, Gemm, Softmax."""
    b = Builder(21)
    f16 = np.float16

    def conv_bn_relu(x, cin, cout, s):
        y = tf_conv(b, x, cin, cout, 3, s=s, pads=[1, 1, 1, 1], relu6=False, dtype=f16)
        bn = [b.const((1 + 0.1 * b.rng.standard_normal(cout)).astype(f16)), b.const((0.1 * b.rng.standard_normal(cout)).astype(f16)),
              b.const((0.1 * b.rng.standard_normal(cout)).astype(f16)), b.const((1 + 0.2 * b.rng.random(cout)).astype(f16))]
        return b.node("Relu", [b.node("BatchNormalization", [y] + bn, epsilon=1e-5)])

    h = conv_bn_relu("image", 3, 16, 2)
    h = conv_bn_relu(h, 16, 32, 2)
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])])
    logits = b.node("Gemm", [h, b.const((b.rng.standard_normal((10, 32)) / np.sqrt(32)).astype(f16), "fc"),
                             b.const((0.1 * b.rng.standard_normal(10)).astype(f16), "fc_b")], transB=1)
    y = b.node("Softmax", [logits], axis=1)
    m = b.model("fp16_io_classifier", [helper.make_tensor_value_info("image", TensorProto.FLOAT16, [1, 3, 32, 32])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT16, [1, 10])], 13, "onnxconverter-common-fp16-style")
    return m, {"image": np.random.default_rng(22).uniform(0, 1, (1, 3, 32, 32)).astype(np.float16)}


def dynamic_int8():
    b = Builder(5)

    def qconv(x, cin, cout, s):
        w = b.rng.standard_normal((cout, cin, 3, 3)) / np.sqrt(cin * 9)
        ws = np.abs(w).max() / 127
        xq, xs, xzp = b.node("DynamicQuantizeLinear", [x], outputs=3)
        y = b.node("ConvInteger", [xq, b.const(np.clip(np.round(w / ws), -127, 127).astype(np.int8), "w"), xzp,
                                   b.const(np.array(0, np.int8), "wzp")], kernel_shape=[3, 3], strides=[s, s], pads=[1, 1, 1, 1])
        y = b.node("Mul", [b.node("Cast", [y], to=TensorProto.FLOAT), b.node("Mul", [xs, b.const(np.array(ws, np.float32), "ws")])])
        y = b.node("Add", [y, b.const((0.1 * b.rng.standard_normal((cout, 1, 1))).astype(np.float32), "b")])
        return b.node("Relu", [y])

    h = qconv("image", 3, 16, 2)
    h = qconv(h, 16, 32, 2)
    h = qconv(h, 32, 32, 1)
    h = b.node("Flatten", [b.node("GlobalAveragePool", [h])])
    wf = b.rng.standard_normal((32, 10)) / np.sqrt(32)
    wsf = np.abs(wf).max(0) / 127  # per output column
    hq, hs, hzp = b.node("DynamicQuantizeLinear", [h], outputs=3)
    y = b.node("MatMulInteger", [hq, b.const(np.clip(np.round(wf / wsf), -127, 127).astype(np.int8), "wf"), hzp,
                                 b.const(np.zeros(10, np.int8), "wfzp")])
    y = b.node("Mul", [b.node("Cast", [y], to=TensorProto.FLOAT), b.node("Mul", [hs, b.const(wsf.astype(np.float32), "wfs")])])
    m = b.model("dynamic_int8", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, 64, 64])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 10])], 13, "onnxruntime.quantization-style")
    return m, {"image": np.random.default_rng(14).uniform(0, 1, (1, 3, 64, 64)).astype(np.float32)}


def dynamic_int8_unet(size):
    """The U-Net of fp16_unet (fp32) as onnxruntime's quantize_dynamic writes it: each conv a
    DynamicQuantizeLinear, a ConvInteger of int8 weights, a Cast, a Mul by the two scales, and
    its bias added through a Reshape. Full size (1024) for bench/, small for the zoo."""
    b = Builder(17)

    def qconv(x, cin, cout, k=3):
        w = b.rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)
        ws = np.abs(w).max() / 127
        xq, xs, xzp = b.node("DynamicQuantizeLinear", [x], outputs=3)
        y = b.node("ConvInteger", [xq, b.const(np.clip(np.round(w / ws), -127, 127).astype(np.int8), "w"), xzp,
                                   b.const(np.array(0, np.int8), "wzp")], kernel_shape=[k, k], pads=[k // 2] * 4)
        scales = b.node("Mul", [xs, b.const(np.array(ws, np.float32), "ws")])
        y = b.node("Mul", [b.node("Cast", [y], to=TensorProto.FLOAT), scales])
        bias = b.node("Reshape", [b.const((0.1 * b.rng.standard_normal(cout)).astype(np.float32), "b"),
                                  b.const(np.array([1, -1, 1, 1], np.int64), "shape")])
        return b.node("Add", [y, bias])

    def block(x, cin, cout):
        return b.node("Relu", [qconv(b.node("Relu", [qconv(x, cin, cout)]), cout, cout)])

    e1 = block("image", 3, 16)
    e2 = block(b.node("MaxPool", [e1], kernel_shape=[2, 2], strides=[2, 2]), 16, 32)
    e3 = block(b.node("MaxPool", [e2], kernel_shape=[2, 2], strides=[2, 2]), 32, 64)
    u2 = b.node("Resize", [e3, "", b.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    d2 = block(b.node("Concat", [u2, e2], axis=1), 96, 32)
    u1 = b.node("Resize", [d2, "", b.const(np.array([1, 1, 2, 2], np.float32), "scales")], mode="nearest")
    d1 = block(b.node("Concat", [u1, e1], axis=1), 48, 16)
    y = b.node("Sigmoid", [qconv(d1, 16, 1, k=1)])
    m = b.model("dynamic_int8_unet", [helper.make_tensor_value_info("image", TensorProto.FLOAT, [1, 3, size, size])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 1, size, size])], 13, "onnxruntime.quantization-style")
    return m, {"image": np.random.default_rng(18).uniform(0, 1, (1, 3, size, size)).astype(np.float32)}


def opset18_block():
    b = Builder(7)
    r = b.rng
    n = b.node
    ln = n("LayerNormalization", ["x", b.const((1 + 0.1 * r.standard_normal(32)).astype(np.float32)),
                                  b.const((0.1 * r.standard_normal(32)).astype(np.float32))], axis=-1, epsilon=1e-5)
    qkv = n("MatMul", [ln, b.const((r.standard_normal((32, 96)) / 6).astype(np.float32), "wqkv")])
    q, k, v = n("Split", [qkv], outputs=3, axis=-1, num_outputs=3)
    s = n("Mul", [n("MatMul", [q, n("Transpose", [k], perm=[0, 2, 1])]), b.const(np.array(32 ** -0.5, np.float32), "scale")])
    o = n("MatMul", [n("MatMul", [n("Softmax", [s], axis=-1), v]), b.const((r.standard_normal((32, 32)) / 6).astype(np.float32), "wo")])
    res = n("Add", ["x", o])
    c = n("Sub", [res, n("ReduceMean", [res, b.const(np.array([-1], np.int64), "axes")], keepdims=1)])
    cp = n("Pad", [c, b.const(np.array([1, 1], np.int64), "pads"), b.const(np.array(0, np.float32), "zero"),
                   b.const(np.array([2], np.int64), "pad_axes")], mode="constant")
    cs = n("Slice", [cp, b.const(np.array([1], np.int64)), b.const(np.array([33], np.int64)), b.const(np.array([2], np.int64))])
    c4 = n("Reshape", [cs, b.const(np.array([1, 4, 9, 16], np.int64), "shape")])
    gn = n("GroupNormalization", [c4, b.const((1 + 0.1 * r.standard_normal(2)).astype(np.float32)),
                                  b.const((0.1 * r.standard_normal(2)).astype(np.float32))], num_groups=2, epsilon=1e-5)
    y = n("Mish", [gn])
    m = b.model("opset18_block", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 18, 32])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 4, 9, 16])], 18, "pytorch-dynamo-style", ir_version=9)
    return m, {"x": np.random.default_rng(15).standard_normal((1, 18, 32)).astype(np.float32)}


def if_vad_like():
    b = Builder(9)

    def branch(name, frame):
        w = (b.rng.standard_normal((frame, 16)) / np.sqrt(frame)).astype(np.float32)
        inits = [nh.from_array(np.array([0, -1, frame], np.int64), f"{name}_shape"), nh.from_array(w, f"{name}_w")]
        nodes = [helper.make_node("Reshape", ["audio", f"{name}_shape"], [f"{name}_frames"]),
                 helper.make_node("MatMul", [f"{name}_frames", f"{name}_w"], [f"{name}_h"]),
                 helper.make_node("Tanh", [f"{name}_h"], [f"{name}_out"])]
        return helper.make_graph(nodes, name, [], [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, None)], inits)

    is16k = b.node("Equal", ["sr", b.const(np.array(16000, np.int64), "k16000")])
    feat = b.node("If", [is16k], then_branch=branch("at16k", 512), else_branch=branch("at8k", 256))
    pooled = b.node("ReduceMean", [feat], axes=[1], keepdims=0)
    y = b.node("Sigmoid", [b.node("MatMul", [pooled, b.const((b.rng.standard_normal((16, 1)) / 4).astype(np.float32), "head")])])
    m = b.model("if_vad_like", [helper.make_tensor_value_info("audio", TensorProto.FLOAT, ["batch", "samples"]),
                                helper.make_tensor_value_info("sr", TensorProto.INT64, [])],
                [helper.make_tensor_value_info(y, TensorProto.FLOAT, ["batch", 1])], 13, "spox-style")
    return m, {"audio": np.random.default_rng(16).uniform(-1, 1, (1, 2048)).astype(np.float32),
               "sr": np.array(16000, np.int64)}


class StaticQdq:
    """onnxruntime's quantize_static in its QDQ format (QuantFormat.QDQ, per_channel=True, MinMax
    calibration), written op by op: the float model is computed in numpy as it is built (the
    calibration), and each quantized tensor gets one QuantizeLinear/DequantizeLinear pair that
    its readers share. `act` is the activations' type, uint8 or int8 (asymmetric); weights are
    symmetric int8 per output channel, biases int32 at the input scale times the weight's."""

    def __init__(self, seed, act):
        self.b = Builder(seed)
        self.act = act

    def params(self, value, rmin=None):
        lo = min(0.0, float(value.min()) if rmin is None else rmin)
        hi = max(0.0, float(value.max()))
        qmin, qmax = (0, 255) if self.act == np.uint8 else (-128, 127)
        scale = (hi - lo) / (qmax - qmin) if hi > lo else 1.0
        zp = int(np.clip(round(qmin - lo / scale), qmin, qmax))
        return np.float32(scale), zp

    def qdq(self, x, value, scale_zp=None, rmin=None):
        """x -> QuantizeLinear -> DequantizeLinear, at value's range (or the given scale and
        zero point); returns the DequantizeLinear's output and the scale."""
        scale, zp = scale_zp or self.params(value, rmin)
        s = self.b.const(np.array(scale, np.float32), x + "_scale")
        z = self.b.const(np.array(zp, self.act), x + "_zero_point")
        q = self.b.node("QuantizeLinear", [x, s, z])
        return self.b.node("DequantizeLinear", [q, s, z]), (scale, zp)

    def weight(self, w, axis=0):
        ws = (np.abs(w).reshape(w.shape[0], -1).max(1) / 127).astype(np.float32)
        ws[ws == 0] = 1
        shape = (-1,) + (1,) * (w.ndim - 1)
        wq = np.clip(np.round(w / ws.reshape(shape)), -127, 127).astype(np.int8)
        dq = self.b.node("DequantizeLinear", [self.b.const(wq, "w_quantized"), self.b.const(ws, "w_scale"),
                                              self.b.const(np.zeros(len(ws), np.int8), "w_zero_point")], axis=axis)
        return dq, ws, (wq.astype(np.float32) * ws.reshape(shape))

    def bias(self, bias, x_scale, ws):
        bs = (x_scale * ws).astype(np.float32)
        bq = np.round(bias / bs).astype(np.int32)
        return self.b.node("DequantizeLinear", [self.b.const(bq, "b_quantized"), self.b.const(bs, "b_scale"),
                                                self.b.const(np.zeros(len(bs), np.int32), "b_zero_point")], axis=0)

    def conv(self, x, xv, x_scale, cout, k, s=1, group=1, act=None):
        """A conv (with the activation ORT removes: its range starts the output's at 0)."""
        cin = xv.shape[1]
        w = (self.b.rng.standard_normal((cout, cin // group, k, k)) / np.sqrt(cin // group * k * k)).astype(np.float32)
        bias = (0.1 * self.b.rng.standard_normal(cout)).astype(np.float32)
        wdq, ws, _ = self.weight(w)
        p = k // 2
        y = self.b.node("Conv", [x, wdq, self.bias(bias, x_scale, ws)], kernel_shape=[k, k], strides=[s, s],
                        pads=[p, p, p, p], group=group)
        yv = conv2d(xv, w, bias, s, p, group)
        if act == "relu":
            yv = np.maximum(yv, 0)
        elif act == "relu6":
            yv = np.clip(yv, 0, 6)
        out, (scale, _) = self.qdq(y, yv)
        return out, yv, scale

    def add(self, a, av, c, cv, relu=False):
        y = self.b.node("Add", [a, c])
        yv = av + cv
        if relu:  # a Relu after the Add is removed too: Add -> Q(range from 0) -> DQ
            yv = np.maximum(yv, 0)
        out, (scale, _) = self.qdq(y, yv)
        return out, yv, scale

    def model(self, name, image, y, opset):
        """The model from the image to the classifier's dequantized output y, and its input."""
        m = self.b.model(name, [helper.make_tensor_value_info("image", TensorProto.FLOAT, list(image.shape))],
                         [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, 10])], opset,
                         "onnxruntime.quantization (quantize_static, QDQ)-style")
        return m, {"image": image}

    def head(self, x, xv, x_scale, classes):
        """GlobalAveragePool, Flatten (one scale through it) and a Gemm, its output dequantized."""
        g = self.b.node("GlobalAveragePool", [x])
        gv = xv.mean(axis=(2, 3), keepdims=True)
        gdq, gp = self.qdq(g, gv)
        f = self.b.node("Flatten", [gdq])
        fdq, _ = self.qdq(f, gv.reshape(1, -1), gp)
        w = (self.b.rng.standard_normal((classes, gv.shape[1])) / np.sqrt(gv.shape[1])).astype(np.float32)
        bias = (0.1 * self.b.rng.standard_normal(classes)).astype(np.float32)
        wdq, ws, _ = self.weight(w)
        y = self.b.node("Gemm", [fdq, wdq, self.bias(bias, gp[0], ws)], transB=1)
        yv = gv.reshape(1, -1) @ w.T + bias
        out, _ = self.qdq(y, yv)
        return out


def conv2d(x, w, bias, stride, pad, group):
    """The float conv the calibration runs (NCHW, square kernel and symmetric pads)."""
    n, cin, h, wd = x.shape
    cout, cpg, k, _ = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad)))
    win = np.lib.stride_tricks.sliding_window_view(xp, (k, k), axis=(2, 3))[:, :, ::stride, ::stride]
    oh, ow = win.shape[2], win.shape[3]
    out = np.empty((n, cout, oh, ow), np.float32)
    per = cout // group
    for g in range(group):
        patch = win[:, g * cpg:(g + 1) * cpg]  # n, cpg, oh, ow, k, k
        out[:, g * per:(g + 1) * per] = np.einsum("ncyxij,ocij->noyx", patch, w[g * per:(g + 1) * per])
    return out + bias.reshape(1, -1, 1, 1)


def static_qdq_resnet(act, name):
    q = StaticQdq(21, act)
    image = np.random.default_rng(22).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    x, (xs, _) = q.qdq("image", image)
    h, hv, hs = q.conv(x, image, xs, 16, 3, act="relu")
    # A basic block: two convs, the skip added, then ReLU.
    a, av, as_ = q.conv(h, hv, hs, 16, 3, act="relu")
    c, cv, _ = q.conv(a, av, as_, 16, 3)
    h, hv, hs = q.add(c, cv, h, hv, relu=True)
    # A downsampling block: a strided pair and a strided 1x1 projection of the skip.
    a, av, as_ = q.conv(h, hv, hs, 32, 3, s=2, act="relu")
    c, cv, _ = q.conv(a, av, as_, 32, 3)
    p, pv, _ = q.conv(h, hv, hs, 32, 1, s=2)
    h, hv, hs = q.add(c, cv, p, pv, relu=True)
    # MaxPool keeps its input's scale and zero point (ORT quantizes its output alike).
    m = q.b.node("MaxPool", [h], kernel_shape=[2, 2], strides=[2, 2])
    mv = hv.reshape(1, 32, 8, 2, 8, 2).max(axis=(3, 5))
    h, _ = q.qdq(m, mv, q.params(hv))
    y = q.head(h, mv, hs, 10)
    return q.model(name, image, y, 13)


def static_qdq_efficientnet(act, name):
    """MBConv blocks as EfficientNet and MobileNetV3 have them, quantized by quantize_static:
    SiLU as a Sigmoid and a Mul (each between pairs), squeeze-and-excitation (a pooled
    mean, two 1x1 convs, a Sigmoid or HardSigmoid gate, a Mul), HardSwish, a residual Add."""
    q = StaticQdq(25, act)
    image = np.random.default_rng(26).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    x, (xs, _) = q.qdq("image", image)

    def unary(t, tv, op, fn, **attrs):
        y = q.b.node(op, [t], **attrs)
        yv = fn(tv)
        out, (scale, _) = q.qdq(y, yv)
        return out, yv, scale

    def mul(a, av, c, cv):
        y = q.b.node("Mul", [a, c])
        yv = av * cv
        out, (scale, _) = q.qdq(y, yv)
        return out, yv, scale

    sigmoid = lambda v: 1 / (1 + np.exp(-v))
    hard_sigmoid = lambda v: np.clip(v / 6 + 0.5, 0, 1)

    def silu(t, tv):
        g, gv, _ = unary(t, tv, "Sigmoid", sigmoid)
        return mul(t, tv, g, gv)

    def gate(t, tv, ts, hard):
        p = q.b.node("GlobalAveragePool", [t])
        pv = tv.mean(axis=(2, 3), keepdims=True)
        p, (ps, _) = q.qdq(p, pv)
        r, rv, rs = q.conv(p, pv, ps, max(4, tv.shape[1] // 4), 1)
        r, rv, rs = silu(r, rv) if not hard else q.conv(r, rv, rs, rv.shape[1], 1, act="relu")[:3]
        e, ev, _ = q.conv(r, rv, rs, tv.shape[1], 1)
        if hard:
            g, gv, _ = unary(e, ev, "HardSigmoid", hard_sigmoid, alpha=1 / 6, beta=0.5)
        else:
            g, gv, _ = unary(e, ev, "Sigmoid", sigmoid)
        return mul(t, tv, g, gv)

    h, hv, hs = q.conv(x, image, xs, 16, 3, s=2)
    h, hv, hs = silu(h, hv)
    for cout, hard in ((16, False), (24, True)):
        e, ev, es = q.conv(h, hv, hs, hv.shape[1] * 4, 1)
        if hard:
            e, ev, es = unary(e, ev, "HardSwish", lambda v: v * hard_sigmoid(v))
        else:
            e, ev, es = silu(e, ev)
        d, dv, ds = q.conv(e, ev, es, ev.shape[1], 3, group=ev.shape[1])
        d, dv, ds = silu(d, dv) if not hard else unary(d, dv, "HardSwish", lambda v: v * hard_sigmoid(v))
        d, dv, ds = gate(d, dv, ds, hard)
        p, pv, ps = q.conv(d, dv, ds, cout, 1)
        if cout == hv.shape[1]:
            h, hv, hs = q.add(p, pv, h, hv)
        else:
            h, hv, hs = p, pv, ps
    y = q.head(h, hv, hs, 10)
    return q.model(name, image, y, 14)


def static_qdq_mobilenet(act, name):
    q = StaticQdq(23, act)
    image = np.random.default_rng(24).uniform(-1, 1, (1, 3, 32, 32)).astype(np.float32)
    x, (xs, _) = q.qdq("image", image)
    h, hv, hs = q.conv(x, image, xs, 16, 3, s=2, act="relu6")
    for cout, s in ((16, 1), (24, 2), (24, 1)):  # inverted residuals: expand, depthwise, project
        e, ev, es = q.conv(h, hv, hs, hv.shape[1] * 4, 1, act="relu6")
        d, dv, ds = q.conv(e, ev, es, ev.shape[1], 3, s=s, group=ev.shape[1], act="relu6")
        p, pv, ps = q.conv(d, dv, ds, cout, 1)
        if s == 1 and cout == hv.shape[1]:
            h, hv, hs = q.add(p, pv, h, hv)
        else:
            h, hv, hs = p, pv, ps
    y = q.head(h, hv, hs, 10)
    return q.model(name, image, y, 13)


def static_qdq_transformer(act, name):
    """A BERT encoder layer quantized by quantize_static (QDQ): projections by per-channel
    int8 weights, their bias Adds reading a quantized constant, the heads' Reshape and
    Transpose at their input's scale, the scores and context as products of two quantized
    activations, the 1/sqrt(d) Div and GELU's Div and Erf left in float between pairs (not
    among the quantizer's op types), Softmax, residual sums, LayerNormalization between a
    DequantizeLinear and the next projection's QuantizeLinear; the last norm's output float."""
    q = StaticQdq(27, act)
    seq, hidden, heads, ffn = 16, 32, 2, 64
    d = hidden // heads
    xv = np.random.default_rng(28).standard_normal((1, seq, hidden)).astype(np.float32)
    x, (xs, _) = q.qdq("x", xv)

    def const(value):
        """A float constant an Add or Mul reads, quantized as an activation from its own range."""
        scale, zp = q.params(value)
        qmin, qmax = (0, 255) if q.act == np.uint8 else (-128, 127)
        cq = np.clip(np.round(value / scale) + zp, qmin, qmax).astype(q.act)
        c = q.b.node("DequantizeLinear", [q.b.const(cq, "c_quantized"), q.b.const(np.array(scale, np.float32), "c_scale"),
                                          q.b.const(np.array(zp, q.act), "c_zero_point")])
        return c, (cq.astype(np.float32) - zp) * scale

    def linear(t, tv, n_out):
        w = (q.b.rng.standard_normal((tv.shape[-1], n_out)) / np.sqrt(tv.shape[-1])).astype(np.float32)
        ws = (np.abs(w).max(0) / 127).astype(np.float32)
        wq = np.clip(np.round(w / ws), -127, 127).astype(np.int8)
        wdq = q.b.node("DequantizeLinear", [q.b.const(wq, "w_quantized"), q.b.const(ws, "w_scale"),
                                            q.b.const(np.zeros(n_out, np.int8), "w_zero_point")], axis=1)
        m = q.b.node("MatMul", [t, wdq])
        mv = tv @ (wq.astype(np.float32) * ws)
        m, _ = q.qdq(m, mv)
        b, bv = const((0.1 * q.b.rng.standard_normal(n_out)).astype(np.float32))
        y = q.b.node("Add", [m, b])
        yv = mv + bv
        out, _ = q.qdq(y, yv)
        return out, yv

    def mover(op, t, tv, yv, inputs=(), **attrs):
        """A Reshape or Transpose: its output quantized at its input's scale and zero point."""
        y = q.b.node(op, [t, *inputs], **attrs)
        out, _ = q.qdq(y, yv, q.params(tv))
        return out, yv

    def heads_of(t, tv, perm):
        r, rv = mover("Reshape", t, tv, tv.reshape(1, seq, heads, d),
                      [q.b.const(np.array([1, seq, heads, d], np.int64), "heads_shape")])
        return mover("Transpose", r, rv, rv.transpose(perm), perm=list(perm))

    def add(a, av, c, cv):
        y = q.b.node("Add", [a, c])
        out, _ = q.qdq(y, av + cv)
        return out, av + cv

    def norm(t, tv, quantized=True):
        g = (1 + 0.1 * q.b.rng.standard_normal(hidden)).astype(np.float32)
        b = (0.1 * q.b.rng.standard_normal(hidden)).astype(np.float32)
        y = q.b.node("LayerNormalization", [t, q.b.const(g, "gamma"), q.b.const(b, "beta")], axis=-1, epsilon=1e-12)
        mu, var = tv.mean(-1, keepdims=True), tv.var(-1, keepdims=True)
        yv = (tv - mu) / np.sqrt(var + 1e-12) * g + b
        return (q.qdq(y, yv)[0] if quantized else y), yv

    qp, qpv = linear(x, xv, hidden)
    kp, kpv = linear(x, xv, hidden)
    vp, vpv = linear(x, xv, hidden)
    qh, qhv = heads_of(qp, qpv, (0, 2, 1, 3))
    kh, khv = heads_of(kp, kpv, (0, 2, 3, 1))
    vh, vhv = heads_of(vp, vpv, (0, 2, 1, 3))
    s = q.b.node("MatMul", [qh, kh])
    sv = qhv @ khv
    s, _ = q.qdq(s, sv)
    sc = q.b.node("Div", [s, q.b.const(np.array(np.sqrt(d), np.float32), "sqrt_d")])
    scv = sv / np.float32(np.sqrt(d))
    sc, _ = q.qdq(sc, scv)
    p = q.b.node("Softmax", [sc], axis=-1)
    e = np.exp(scv - scv.max(-1, keepdims=True))
    pv = e / e.sum(-1, keepdims=True)
    p, _ = q.qdq(p, pv)
    c = q.b.node("MatMul", [p, vh])
    cv = pv @ vhv
    c, _ = q.qdq(c, cv)
    c, cv = mover("Transpose", c, cv, cv.transpose(0, 2, 1, 3), perm=[0, 2, 1, 3])
    c, cv = mover("Reshape", c, cv, cv.reshape(1, seq, hidden), [q.b.const(np.array([1, seq, hidden], np.int64), "merged_shape")])
    o, ov = linear(c, cv, hidden)
    h, hv = add(o, ov, x, xv)
    h, hv = norm(h, hv)
    f, fv = linear(h, hv, ffn)
    # GELU, erf's form: x / sqrt(2) and its erf in float, then 1 + erf, x times that and half of it quantized.
    t = q.b.node("Erf", [q.b.node("Div", [f, q.b.const(np.array(np.sqrt(2), np.float32), "sqrt_2")])])
    tv = np.vectorize(math.erf)(fv / np.float32(np.sqrt(2))).astype(np.float32)
    t, _ = q.qdq(t, tv)
    one, onev = const(np.array(1, np.float32))
    t, tv = add(t, tv, one, onev)
    g = q.b.node("Mul", [f, t])
    gv = fv * tv
    g, _ = q.qdq(g, gv)
    half, halfv = const(np.array(0.5, np.float32))
    g2 = q.b.node("Mul", [g, half])
    g2v = gv * halfv
    g2, _ = q.qdq(g2, g2v)
    o2, o2v = linear(g2, g2v, hidden)
    h2, h2v = add(o2, o2v, h, hv)
    y, _ = norm(h2, h2v, quantized=False)
    m = q.b.model(name, [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, seq, hidden])],
                  [helper.make_tensor_value_info(y, TensorProto.FLOAT, [1, seq, hidden])], 17,
                  "onnxruntime.quantization (quantize_static, QDQ)-style")
    return m, {"x": xv}


MODELS = [tf_mobilenet_style, tf_blazeface_style, fp16_unet, fp16_io_classifier, dynamic_int8, lambda: dynamic_int8_unet(64), opset18_block, if_vad_like,
          lambda: static_qdq_resnet(np.uint8, "static_qdq_resnet_u8"),
          lambda: static_qdq_mobilenet(np.int8, "static_qdq_mobilenet_s8"),
          lambda: static_qdq_efficientnet(np.uint8, "static_qdq_efficientnet_u8"),
          lambda: static_qdq_transformer(np.uint8, "static_qdq_transformer_u8")]


def save(out, model, inputs):
    name = model.graph.name
    if model.opset_import[0].version <= 17:  # Debian's onnx 1.12 knows opsets up to 17
        onnx.checker.check_model(model, full_check=True)
    onnx.save(model, os.path.join(out, name + ".onnx"))
    os.makedirs(os.path.join(out, name, "inputs"), exist_ok=True)
    for k, v in inputs.items():
        np.save(os.path.join(out, name, "inputs", k + ".npy"), v)
    print(name)


def main(argv):
    """exporters.py [OUT_DIR]: the zoo at its committed sizes; exporters.py --full-size OUT_DIR:
    the dynamically quantized U-Net at 1024 x 1024 (bench/int8_ops_bench.sh)."""
    if argv[:1] == ["--full-size"]:
        save(argv[1], *dynamic_int8_unet(1024))
        return
    out = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "exporters")
    for make in MODELS:
        save(out, *make())


if __name__ == "__main__":
    main(sys.argv[1:])
