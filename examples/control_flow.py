#!/usr/bin/python3
"""Export small models with control flow and recurrent ops, with reference outputs, for
geopt's tests of If, Loop, LSTM, GRU and ScatterND end to end (run, optimize --check,
compile + run PLAN).

Uses Debian's python3-torch / python3-onnx (run with /usr/bin/python3). Weights are random
and seeded (export_models.SEED), so the export is deterministic. Writes, per model NAME:
    NAME.onnx
    NAME/inputs/<input>.npy     reference input
    NAME/outputs/<output>.npy   the reference output for that input

Models:
  if_branch_shapes  torch.jit.script: the branch taken depends on the data, and the two
                    branches give outputs of different shapes ([1, 8] against [1, 4]).
                    Two reference input sets: inputs/outputs take the then branch,
                    inputs_else/outputs_else the else branch. Reference: torch.
  loop_scan         an ONNX Loop (built with onnx.helper: torch exports list-building loops
                    as sequence ops) of 5 trips carrying a state h <- tanh(h W + x) and
                    emitting h * 2 per trip as a scan output; it reads W from the outer
                    graph. Reference: numpy, written independently of geopt.
  lstm_gru          torch: a bidirectional 2-layer LSTM, then a bidirectional 2-layer GRU,
                    batch-first, with initial states given. Reference: torch.
  window_mask       torch: Swin's shifted-window attention mask built by slice assignment
                    (exported as ScatterND), added to attention scores. Reference: torch.

Regenerate:
    /usr/bin/python3 examples/control_flow.py --out examples/control_flow
"""
import argparse
import os

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper
from torch import nn

from export_models import SEED, perturb_


def save(directory, sub, names, arrays):
    os.makedirs(os.path.join(directory, sub), exist_ok=True)
    for n, a in zip(names, arrays):
        np.save(os.path.join(directory, sub, n + ".npy"), np.asarray(a))


class IfBranchShapes(nn.Module):
    def __init__(self):
        super().__init__()
        self.wide = nn.Linear(6, 8)
        self.narrow = nn.Linear(6, 4)

    def forward(self, x):
        if bool(x.sum() > 0):
            return torch.relu(self.wide(x))
        return torch.sigmoid(self.narrow(x)) * 2.0


def export_if(out):
    torch.manual_seed(SEED)
    model = torch.jit.script(perturb_(IfBranchShapes()).eval())
    g = torch.Generator().manual_seed(SEED + 1)
    x_then = torch.rand(1, 6, generator=g) + 0.1  # sum > 0
    x_else = -torch.rand(1, 6, generator=g) - 0.1
    path = os.path.join(out, "if_branch_shapes.onnx")
    torch.onnx.export(model, (x_then,), path, opset_version=13, input_names=["x"], output_names=["y"])
    onnx.checker.check_model(onnx.load(path))
    d = os.path.join(out, "if_branch_shapes")
    with torch.no_grad():
        save(d, "inputs", ["x"], [x_then.numpy()])
        save(d, "outputs", ["y"], [model(x_then).numpy()])
        save(d, "inputs_else", ["x"], [x_else.numpy()])
        save(d, "outputs_else", ["y"], [model(x_else).numpy()])


def export_loop(out):
    rng = np.random.default_rng(SEED)
    w = (rng.standard_normal((4, 4)) * 0.5).astype(np.float32)
    trips = 5
    body = helper.make_graph(
        [
            helper.make_node("MatMul", ["h_in", "W"], ["hw"]),
            helper.make_node("Add", ["hw", "x"], ["pre"]),
            helper.make_node("Tanh", ["pre"], ["h_out"]),
            helper.make_node("Mul", ["h_out", "two"], ["scan_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [
            helper.make_tensor_value_info("iter", TensorProto.INT64, []),
            helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h_in", TensorProto.FLOAT, [1, 4]),
        ],
        [
            helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
            helper.make_tensor_value_info("h_out", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("scan_out", TensorProto.FLOAT, [1, 4]),
        ],
        [numpy_helper.from_array(np.array(2.0, dtype=np.float32), "two")],
    )
    graph = helper.make_graph(
        [
            helper.make_node("Relu", ["h0"], ["h_start"]),
            helper.make_node("Loop", ["trips", "cond", "h_start"], ["h_final", "steps"], body=body),
            helper.make_node("Add", ["h_final", "x"], ["h_plus_x"]),
        ],
        "loop_scan",
        [
            helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, 4]),
        ],
        [
            helper.make_tensor_value_info("h_plus_x", TensorProto.FLOAT, [1, 4]),
            helper.make_tensor_value_info("steps", TensorProto.FLOAT, [trips, 1, 4]),
        ],
        [
            numpy_helper.from_array(w, "W"),
            numpy_helper.from_array(np.array(trips, dtype=np.int64), "trips"),
            numpy_helper.from_array(np.array(True), "cond"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="geopt examples/control_flow.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    onnx.save(model, os.path.join(out, "loop_scan.onnx"))
    x = rng.standard_normal((1, 4)).astype(np.float32)
    h0 = rng.standard_normal((1, 4)).astype(np.float32)
    h = np.maximum(h0, 0)
    steps = []
    for _ in range(trips):
        h = np.tanh(h @ w + x)
        steps.append(h * 2)
    d = os.path.join(out, "loop_scan")
    save(d, "inputs", ["x", "h0"], [x, h0])
    save(d, "outputs", ["h_plus_x", "steps"], [h + x, np.stack(steps)])


class LstmGru(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(5, 6, num_layers=2, bidirectional=True, batch_first=True)
        self.gru = nn.GRU(12, 4, num_layers=2, bidirectional=True, batch_first=True)
        self.head = nn.Linear(8, 3)

    def forward(self, x, h0, c0, g0):
        y, (h, c) = self.lstm(x, (h0, c0))
        z, hg = self.gru(y, g0)
        return self.head(z), h, c, hg


def export_lstm_gru(out):
    torch.manual_seed(SEED)
    model = perturb_(LstmGru()).eval()
    g = torch.Generator().manual_seed(SEED + 2)
    args = (torch.randn(2, 7, 5, generator=g), torch.randn(4, 2, 6, generator=g) * 0.5, torch.randn(4, 2, 6, generator=g) * 0.5,
            torch.randn(4, 2, 4, generator=g) * 0.5)
    names_in, names_out = ["x", "h0", "c0", "g0"], ["logits", "lstm_h", "lstm_c", "gru_h"]
    path = os.path.join(out, "lstm_gru.onnx")
    torch.onnx.export(model, args, path, opset_version=14, input_names=names_in, output_names=names_out)
    onnx.checker.check_model(onnx.load(path))
    with torch.no_grad():
        outs = model(*args)
    d = os.path.join(out, "lstm_gru")
    save(d, "inputs", names_in, [a.numpy() for a in args])
    save(d, "outputs", names_out, [o.numpy() for o in outs])


class WindowMask(nn.Module):
    """Swin's shifted-window mask: regions labelled by slice assignment, windows compared."""

    def __init__(self, size=8, window=4, shift=2):
        super().__init__()
        self.size, self.window, self.shift = size, window, shift
        self.proj = nn.Linear(8, 8)

    def forward(self, tokens):
        s, w, sh = self.size, self.window, self.shift
        img = torch.zeros(1, s, s, 1)
        count = 0
        for hs in (slice(0, -w), slice(-w, -sh), slice(-sh, None)):
            for ws in (slice(0, -w), slice(-w, -sh), slice(-sh, None)):
                img[:, hs, ws, :] = count
                count += 1
        win = img.view(1, s // w, w, s // w, w, 1).permute(0, 1, 3, 2, 4, 5).reshape(-1, w * w)
        mask = win.unsqueeze(1) - win.unsqueeze(2)
        mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
        q = self.proj(tokens)  # [windows, w*w, 8]
        scores = q @ tokens.transpose(-1, -2) + mask
        return torch.softmax(scores, dim=-1) @ tokens


def export_window_mask(out):
    torch.manual_seed(SEED)
    model = perturb_(WindowMask()).eval()
    g = torch.Generator().manual_seed(SEED + 3)
    tokens = torch.randn(4, 16, 8, generator=g)
    path = os.path.join(out, "window_mask.onnx")
    torch.onnx.export(model, (tokens,), path, opset_version=13, input_names=["tokens"], output_names=["attended"],
                      do_constant_folding=False)
    m = onnx.load(path)
    onnx.checker.check_model(m)
    assert any(n.op_type == "ScatterND" for n in m.graph.node), "the mask should export as ScatterND"
    d = os.path.join(out, "window_mask")
    with torch.no_grad():
        save(d, "inputs", ["tokens"], [tokens.numpy()])
        save(d, "outputs", ["attended"], [model(tokens).numpy()])


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="examples/control_flow")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    export_if(args.out)
    export_loop(args.out)
    export_lstm_gru(args.out)
    export_window_mask(args.out)


if __name__ == "__main__":
    main()
