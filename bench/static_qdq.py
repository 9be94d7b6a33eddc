#!/usr/bin/python3
"""onnxruntime's quantize_static, QDQ format, re-enacted with onnx.helper (onnxruntime's
Python quantizer is not installed here; its npm package runs models but does not
quantize): per_channel=True, MinMax calibration, activations uint8 or int8 (asymmetric),
weights int8 symmetric per output channel, biases int32 at the input scale times the
weight's. The ranges come from ONNX Runtime itself (bench/ort/ranges.js on the float
model with every tensor an output).

    bench/static_qdq.py MODEL.onnx OUT.onnx --calibration DIR [--activation-type uint8|int8]

DIR holds one folder per sample, NAME.npy per input (geopt run --save-inputs writes them).
What it writes, as quantize_static does:
- each quantized tensor behind one QuantizeLinear/DequantizeLinear pair its readers share;
- the ops quantized: Conv, Gemm, MatMul (a constant B as a weight, else both operands as
  activations: attention's scores and context), Add, Mul, pools, Concat, Resize,
  Sigmoid, HardSigmoid, HardSwish, Softmax, and the data movers (Reshape, Transpose,
  Flatten, Squeeze, Unsqueeze), which keep their input's scale and zero point;
- a float constant that an Add or Mul reads (a bias, a scale) quantized as an activation,
  per tensor from its own range, behind a DequantizeLinear;
- a Relu or Clip whose input nothing else reads removed (its output's range, which starts
  at 0, does the clamping);
- weights (Conv, Gemm, MatMul) and biases as DequantizeLinear of int8 and int32
  initializers."""
import argparse
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnx.numpy_helper as nh
from onnx import TensorProto, helper, shape_inference

QUANTIZED = {"Conv", "Gemm", "MatMul", "Add", "Mul", "MaxPool", "AveragePool", "GlobalAveragePool", "Concat",
             "Resize", "Sigmoid", "HardSigmoid", "HardSwish", "Softmax", "Reshape", "Transpose", "Flatten",
             "Squeeze", "Unsqueeze"}
SAME_PARAMS = {"MaxPool", "Reshape", "Transpose", "Flatten", "Squeeze", "Unsqueeze"}
REMOVABLE = {"Relu", "Clip"}
CONSTANT_OPERANDS = {"Add", "Mul"}
HERE = os.path.dirname(os.path.abspath(__file__))


def float_tensors(model):
    inferred = shape_inference.infer_shapes(model)
    types = {}
    for vi in list(inferred.graph.value_info) + list(inferred.graph.input) + list(inferred.graph.output):
        types[vi.name] = vi.type.tensor_type.elem_type
    return {n for n, t in types.items() if t == TensorProto.FLOAT}


def calibrate(model, samples, floats):
    """Every float tensor's [min, max] over the samples, from ONNX Runtime."""
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    have = {o.name for o in probe.graph.output}
    for n in probe.graph.node:
        for o in n.output:
            if o and o in floats and o not in have:
                probe.graph.output.append(helper.make_tensor_value_info(o, TensorProto.FLOAT, None))
                have.add(o)
    with tempfile.TemporaryDirectory() as tmp:
        onnx.save(probe, os.path.join(tmp, "probe.onnx"))
        subprocess.run(["node", os.path.join(HERE, "ort", "ranges.js"), os.path.join(tmp, "probe.onnx"),
                        os.path.join(tmp, "ranges.json")] + samples, check=True)
        with open(os.path.join(tmp, "ranges.json")) as f:
            ranges = json.load(f)
    for n in model.graph.input:  # graph inputs: from the samples
        if n.name in floats:
            vals = [np.load(os.path.join(s, n.name.replace("/", "_") + ".npy")) for s in samples]
            ranges[n.name] = [float(min(v.min() for v in vals)), float(max(v.max() for v in vals))]
    return ranges


class Writer:
    def __init__(self, model, ranges, act):
        self.m, self.ranges, self.act = model, ranges, act
        self.inits = {t.name: t for t in model.graph.initializer}
        self.new_nodes, self.new_inits, self.params, self.count = [], [], {}, 0

    def name(self, base):
        self.count += 1
        return f"{base}_{self.count}"

    def const(self, array, base):
        n = self.name(base)
        self.new_inits.append(nh.from_array(np.asarray(array), n))
        return n

    def params_of(self, tensor):
        if tensor in self.params:
            return self.params[tensor]
        lo, hi = self.ranges[tensor]
        lo, hi = min(0.0, lo), max(0.0, hi)
        qmin, qmax = (0, 255) if self.act == np.uint8 else (-128, 127)
        scale = (hi - lo) / (qmax - qmin) if hi > lo else 1.0
        zp = int(np.clip(round(qmin - lo / scale), qmin, qmax))
        self.params[tensor] = (np.float32(scale), zp)
        return self.params[tensor]

    def constant_operand(self, value):
        lo, hi = min(0.0, float(value.min())), max(0.0, float(value.max()))
        qmin, qmax = (0, 255) if self.act == np.uint8 else (-128, 127)
        scale = (hi - lo) / (qmax - qmin) if hi > lo else 1.0
        zp = int(np.clip(round(qmin - lo / scale), qmin, qmax))
        q = np.clip(np.round(value / scale) + zp, qmin, qmax).astype(self.act)
        out = self.name("c_dequantized")
        self.new_nodes.append(helper.make_node(
            "DequantizeLinear", [self.const(q, "c_quantized"), self.const(np.array(scale, np.float32), "c_scale"),
                                 self.const(np.array(zp, self.act), "c_zero_point")], [out], name=out))
        return out

    def weight(self, w, axis):
        moved = np.moveaxis(w, axis, 0)
        ws = (np.abs(moved).reshape(moved.shape[0], -1).max(1) / 127).astype(np.float32)
        ws[ws == 0] = 1
        shape = [1] * w.ndim
        shape[axis] = -1
        wq = np.clip(np.round(w / ws.reshape(shape)), -127, 127).astype(np.int8)
        out = self.name("w_dequantized")
        self.new_nodes.append(helper.make_node(
            "DequantizeLinear", [self.const(wq, "w_quantized"), self.const(ws, "w_scale"),
                                 self.const(np.zeros(len(ws), np.int8), "w_zero_point")], [out], name=out, axis=axis))
        return out, ws

    def bias(self, b, x_scale, ws):
        bs = (np.float32(x_scale) * ws).astype(np.float32)
        bq = np.round(b / bs).astype(np.int32)
        out = self.name("b_dequantized")
        self.new_nodes.append(helper.make_node(
            "DequantizeLinear", [self.const(bq, "b_quantized"), self.const(bs, "b_scale"),
                                 self.const(np.zeros(len(bs), np.int32), "b_zero_point")], [out], name=out, axis=0))
        return out


def quantize(model, ranges, act):
    g = model.graph
    consumers = {}
    for n in g.node:
        for i in n.input:
            consumers.setdefault(i, []).append(n)
    outputs = {o.name for o in g.output}
    producer = {o: n for n in g.node for o in n.output}
    # Relu and Clip removed where their input is read by them alone (the producer writes
    # the activation's output name instead, and the range is the activation's).
    kept = []
    for n in g.node:
        x = n.input[0] if n.input else ""
        p = producer.get(x)
        if (n.op_type in REMOVABLE and p is not None and p.op_type in QUANTIZED and len(consumers.get(x, [])) == 1
                and x not in outputs and n.output[0] in ranges):
            p.output[list(p.output).index(x)] = n.output[0]
            producer[n.output[0]] = p
            continue
        kept.append(n)
    del g.node[:]
    g.node.extend(kept)
    w = Writer(model, ranges, act)
    producer = {o: n for n in g.node for o in n.output}
    # The tensors quantized: float activations read or written by a quantized op (both
    # operands of a MatMul whose B is not a constant: attention's scores and context).
    quantized = []
    for n in g.node:
        if n.op_type not in QUANTIZED:
            continue
        weighted = n.op_type in ("Conv", "Gemm") or (n.op_type == "MatMul" and n.input[1] in w.inits)
        for t in list(n.input[:1] if weighted else n.input) + list(n.output[:1]):
            if t and t in ranges and t not in w.inits and t not in quantized:
                quantized.append(t)
    # A float constant operand of an elementwise op (a bias Add's vector, attention's
    # 1/sqrt(d) Mul) is quantized as quantize_static does an initializer it reads as an
    # activation: the activation type, per tensor, from its own range, a DequantizeLinear
    # of the 8-bit constant.
    for n in g.node:
        if n.op_type not in CONSTANT_OPERANDS:
            continue
        for i, t in enumerate(n.input):
            c = w.inits.get(t)
            if c is not None and c.data_type == TensorProto.FLOAT:
                n.input[i] = w.constant_operand(nh.to_array(c))
    # Scale and zero point: a data mover's output takes its input's.
    for n in g.node:
        if n.op_type in SAME_PARAMS and n.input[0] in ranges and n.output[0] in quantized:
            w.params[n.output[0]] = w.params_of(n.input[0])
    renamed = {}
    for t in quantized:
        scale, zp = w.params_of(t)
        s = w.const(np.array(scale, np.float32), t.replace("/", "_") + "_scale")
        z = w.const(np.array(zp, act), t.replace("/", "_") + "_zero_point")
        q, dq = w.name(t + "_QuantizeLinear"), w.name(t + "_DequantizeLinear")
        src = t
        if t in outputs:  # the graph output keeps its name on the DequantizeLinear
            src = t + "_float"
            producer[t].output[list(producer[t].output).index(t)] = src
        w.new_nodes.append(helper.make_node("QuantizeLinear", [src, s, z], [q], name=q))
        w.new_nodes.append(helper.make_node("DequantizeLinear", [q, s, z], [t if t in outputs else dq], name=dq))
        renamed[t] = t if t in outputs else dq
    for n in g.node:
        for i, x in enumerate(n.input):
            if x in renamed and renamed[x] != x:
                n.input[i] = renamed[x]
        # Weights and biases.
        if n.op_type in ("Conv", "Gemm", "MatMul") and len(n.input) > 1 and n.input[1] in w.inits:
            x = [k for k, v in renamed.items() if v == n.input[0]]
            if not x:
                continue
            weight = nh.to_array(w.inits[n.input[1]]).astype(np.float32)
            if n.op_type == "Conv":
                axis = 0
            elif n.op_type == "Gemm":
                axis = 0 if any(a.name == "transB" and a.i == 1 for a in n.attribute) else 1
            else:
                if weight.ndim != 2:
                    continue
                axis = 1
            wdq, ws = w.weight(weight, axis)
            n.input[1] = wdq
            if len(n.input) > 2 and n.input[2] in w.inits:
                b = nh.to_array(w.inits[n.input[2]]).astype(np.float32)
                if b.ndim == 1 and len(b) == len(ws):
                    n.input[2] = w.bias(b, w.params_of(x[0])[0], ws)
    # Nodes in a topological order: the new ones before everything (their inputs are
    # initializers or produced...): place each Q/DQ right after its source's producer.
    order, placed = [], set()
    by_input = {}
    for n in w.new_nodes:
        by_input.setdefault(n.input[0], []).append(n)

    def emit(n):
        order.append(n)
        for o in n.output:
            for m in by_input.get(o, []):
                emit(m)

    for t in [i.name for i in g.input] + [i.name for i in g.initializer] + [i.name for i in w.new_inits]:
        for m in by_input.pop(t, []):
            emit(m)
    for n in g.node:
        emit(n)
    del g.node[:]
    g.node.extend(order)
    g.initializer.extend(w.new_inits)
    used = {i for n in g.node for i in n.input}
    keep = [t for t in g.initializer if t.name in used]
    del g.initializer[:]
    g.initializer.extend(keep)
    del g.value_info[:]
    model.producer_name = "onnxruntime.quantization (quantize_static, QDQ)-style: geopt bench/static_qdq.py"
    return model


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("out")
    ap.add_argument("--calibration", required=True)
    ap.add_argument("--activation-type", choices=["uint8", "int8"], default="uint8")
    a = ap.parse_args(argv)
    model = onnx.load(a.model)
    if max(o.version for o in model.opset_import if o.domain in ("", "ai.onnx")) < 13:
        sys.exit(f"{a.model}: per-channel DequantizeLinear needs opset 13 or later")
    samples = sorted(os.path.join(a.calibration, d) for d in os.listdir(a.calibration))
    ranges = calibrate(model, samples, float_tensors(model))
    out = quantize(model, ranges, np.uint8 if a.activation_type == "uint8" else np.int8)
    onnx.checker.check_model(out)
    onnx.save(out, a.out)
    ops = {}
    for n in out.graph.node:
        ops[n.op_type] = ops.get(n.op_type, 0) + 1
    print(f"{a.out}: {sum(ops.values())} nodes, QuantizeLinear {ops.get('QuantizeLinear', 0)}, "
          f"DequantizeLinear {ops.get('DequantizeLinear', 0)}")


if __name__ == "__main__":
    main(sys.argv[1:])
