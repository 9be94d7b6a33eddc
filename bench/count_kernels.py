#!/usr/bin/python3
"""The one kernel counter of geopt's benchmarks, applied alike to every graph.

A kernel is a node that launches work at run time. Not counted:
  - Constant nodes;
  - views, which move no bytes: Reshape, Squeeze, Unsqueeze, Flatten, Identity, Dropout
    (inference), Shape, Size;
  - nodes whose inputs are all constants (initializers that are not graph inputs, or
    outputs of such nodes): compile-time work, which ONNX Runtime folds when it loads a
    model and geopt compile folds before lowering (a weight laid out for the Cube).
Everything else counts, whatever its domain: a Transpose, a TransData of an activation,
ONNX Runtime's com.microsoft.Attention and geopt's ai.geopt.FlashAttention are one each.

    count_kernels.py MODEL.onnx [MODEL.onnx ...] [--json]

Prints, per model, the kernels and the op types left (with --json: one object per model).
"""
import argparse
import collections
import json
import sys

import onnx

VIEWS = {"Reshape", "Squeeze", "Unsqueeze", "Flatten", "Identity", "Dropout", "Shape", "Size"}


def count(model: onnx.ModelProto) -> collections.Counter:
    """Kernel count per op type ('domain::Op' outside the default domain)."""
    g = model.graph
    constant = {i.name for i in g.initializer} - {i.name for i in g.input}
    kernels = collections.Counter()
    for n in g.node:
        default = n.domain in ("", "ai.onnx")
        inputs = [v for v in n.input if v]
        if (default and n.op_type == "Constant") or (inputs and all(v in constant for v in inputs)):
            constant.update(n.output)
            continue
        if default and n.op_type in VIEWS:
            continue
        kernels[n.op_type if default else f"{n.domain}::{n.op_type}"] += 1
    return kernels


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("models", nargs="+")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    rows = []
    for path in args.models:
        k = count(onnx.load(path, load_external_data=False))
        rows.append({"model": path, "kernels": sum(k.values()), "by_op": dict(sorted(k.items()))})
    if args.json:
        json.dump(rows if len(rows) > 1 else rows[0], sys.stdout, indent=2)
        print()
    else:
        for r in rows:
            ops = ", ".join(f"{op} {n}" for op, n in sorted(r["by_op"].items(), key=lambda kv: (-kv[1], kv[0])))
            print(f"{r['model']}: {r['kernels']} kernels ({ops})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
