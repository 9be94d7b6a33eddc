#!/usr/bin/env python3
"""Writes an elementwise chain of N ops (Add, Relu, Mul, Sigmoid, Sub, Tanh repeating,
each binary op with its own [1, 64] constant) as an ONNX model: the scaling benchmark's
long-and-thin case.
    bench/make_chain.py N PATH"""
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def main():
    n, path = int(sys.argv[1]), sys.argv[2]
    rng = np.random.default_rng(0)
    ops = ["Add", "Relu", "Mul", "Sigmoid", "Sub", "Tanh"]
    nodes, inits = [], []
    prev = "x"
    for i in range(n):
        op = ops[i % len(ops)]
        out = f"t{i}" if i + 1 < n else "y"
        if op in ("Add", "Mul", "Sub"):
            c = f"c{i}"
            inits.append(numpy_helper.from_array(rng.uniform(0.5, 1.5, (1, 64)).astype(np.float32), c))
            nodes.append(helper.make_node(op, [prev, c], [out], name=f"n{i}"))
        else:
            nodes.append(helper.make_node(op, [prev], [out], name=f"n{i}"))
        prev = out
    graph = helper.make_graph(nodes, f"chain{n}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 64])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 64])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    onnx.checker.check_model(model)
    onnx.save(model, path)


if __name__ == "__main__":
    main()
