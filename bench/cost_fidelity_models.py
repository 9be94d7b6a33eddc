#!/usr/bin/python3
"""Export the models bench/cost_fidelity.sh prices at ModelZoo's published points.

Random weights (the cost model reads shapes, not values), seeded, with symbolic dims so
that one file serves every batch size and sequence length:
    resnet{18,34,50,101,152}.onnx                  torchvision, image [batch, 3, 224, 224]
    vit_b_16.onnx, vit_b_32.onnx                   torchvision ViT-B/16 and B/32, image [batch, 3, 224, 224]
    bert_base.onnx                                 BERT-base (12 x 768, 12 heads, FFN 3072),
                                                   input_ids and attention_mask [batch, seq]
    llama_layer.onnx                               one LLaMA-2-7B-shaped decoder layer
                                                   (hidden 4096, 32 heads, SwiGLU 11008, RMSNorm,
                                                   rotary, causal), hidden [batch, seq, 4096]
    flash_attention_1024.onnx, flash_attention_4096.onnx, gemm_4096.onnx
                                                   single kernels (kernel_model)
Opset 17 (native LayerNormalization), as torch 1.13's exporter writes it.

    /usr/bin/python3 bench/cost_fidelity_models.py OUT_DIR [--only NAME ...]
"""
import argparse
import os
import sys

import onnx
import torch
import torch.nn as nn
import torchvision

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples"))
from export_models import BertLike, LlamaBlock, perturb_  # noqa: E402

SEED = 20261204


def export(model, args, names_in, names_out, axes, path):
    model.eval()
    torch.onnx.export(model, args, path, opset_version=17, input_names=names_in, output_names=names_out,
                      dynamic_axes=axes, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))
    print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")


def image_model(ctor):
    torch.manual_seed(SEED)
    return ctor(weights=None), (torch.randn(1, 3, 224, 224),), ["image"], ["logits"], {"image": {0: "batch"}, "logits": {0: "batch"}}


class LlamaDecoderLayer(nn.Module):
    """One decoder layer over hidden states, with its rotary tables and causal mask built
    in the graph from the sequence length."""

    def __init__(self):
        super().__init__()
        self.layer = LlamaBlock(4096, 32, 11008)
        self.head_dim = 128

    def forward(self, x):
        seq = x.shape[1]
        pos = torch.arange(seq, dtype=torch.float32)
        inv = 1.0 / (10000 ** (torch.arange(0, self.head_dim, 2, dtype=torch.float32) / self.head_dim))
        freqs = pos[:, None] * inv[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        causal = torch.triu(torch.full((seq, seq), -10000.0), diagonal=1)
        return self.layer(x, emb.cos(), emb.sin(), causal)


TORCHVISION = ["resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "vit_b_16", "vit_b_32"]


def build(name):
    if name in TORCHVISION:
        return image_model(getattr(torchvision.models, name))
    if name == "bert_base":
        torch.manual_seed(SEED)
        model = perturb_(BertLike(vocab=30522, hidden=768, layers=12, heads=12, inter=3072, max_pos=512))
        ids = torch.randint(0, 30522, (1, 128))
        mask = torch.ones(1, 128, dtype=torch.int64)
        axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                "last_hidden_state": {0: "batch", 1: "seq"}, "pooled": {0: "batch"}}
        return model, (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state", "pooled"], axes
    if name == "llama_layer":
        torch.manual_seed(SEED)
        model = LlamaDecoderLayer()
        return model, (torch.randn(1, 16, 4096),), ["hidden"], ["out"], {"hidden": {0: "batch", 1: "seq"}, "out": {0: "batch", 1: "seq"}}
    raise ValueError(name)


def kernel_model(name):
    """A single kernel, as the published single-kernel figures time it: FlashAttention over
    one head of fp16 Q, K, V [1, 1, S, 128] (geopt's ai.geopt kernel, BNSD), or an fp16
    4096^3 MatMul against a constant (its weight laid out at compile time)."""
    from onnx import TensorProto, helper, numpy_helper
    import numpy as np
    if name.startswith("flash_attention_"):
        s = int(name.rsplit("_", 1)[1])
        ins = [helper.make_tensor_value_info(n, TensorProto.FLOAT16, [1, 1, s, 128]) for n in ("q", "k", "v")]
        out = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [1, 1, s, 128])
        node = helper.make_node("FlashAttention", ["q", "k", "v"], ["y"], domain="ai.geopt")
        graph = helper.make_graph([node], name, ins, [out])
        opsets = [helper.make_opsetid("", 17), helper.make_opsetid("ai.geopt", 1)]
    else:
        n = 4096
        a = helper.make_tensor_value_info("a", TensorProto.FLOAT16, [n, n])
        y = helper.make_tensor_value_info("y", TensorProto.FLOAT16, [n, n])
        w = numpy_helper.from_array((np.random.default_rng(SEED).standard_normal((n, n)) * 0.01).astype(np.float16), "w")
        graph = helper.make_graph([helper.make_node("MatMul", ["a", "w"], ["y"])], name, [a], [y], [w])
        opsets = [helper.make_opsetid("", 17)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8)


KERNELS = ["flash_attention_1024", "flash_attention_4096", "gemm_4096"]
NAMES = TORCHVISION + ["bert_base", "llama_layer"]

if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--only", nargs="*", default=NAMES + KERNELS)
    a = ap.parse_args()
    os.makedirs(a.out, exist_ok=True)
    for n in a.only:
        path = os.path.join(a.out, n + ".onnx")
        if os.path.exists(path):
            print(f"{path}: kept")
            continue
        if n in KERNELS:
            onnx.save(kernel_model(n), path)
            print(f"{path}: {os.path.getsize(path) / 1e6:.1f} MB")
            continue
        model, args, ins, outs, axes = build(n)
        export(model, args, ins, outs, axes, path)
