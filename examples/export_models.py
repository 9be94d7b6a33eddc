#!/usr/bin/python3
"""Export geopt's example models with random weights, plus reference inputs/outputs.

Uses Debian's python3-torch / python3-torchvision / python3-onnx (run with /usr/bin/python3).
Every architecture is exported at opset 13 (LayerNorm as primitive ops) and opset 17
(native LayerNormalization). Weights are random (torch.manual_seed) with noise added to
norm weights so that the exporter does not deduplicate equal tensors.

Regenerate the committed models:
    /usr/bin/python3 examples/export_models.py --out examples/models
Make the BERT-base-sized benchmark model (about 440 MB; not committed):
    /usr/bin/python3 examples/export_models.py --bert-base bench/out/bert_base_op13.onnx
Make ResNet-50 (torchvision, random weights, 224x224, about 100 MB; not committed):
    /usr/bin/python3 examples/export_models.py --resnet50 bench/out/resnet50_op13.onnx

Layout per model NAME:
    NAME.onnx
    NAME/inputs/<input name>.npy     reference input, computed with torch.manual_seed
    NAME/outputs/<output name>.npy   torch's output for that input
"""
import argparse
import math
import os
import sys

import numpy as np
import onnx
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models.resnet import BasicBlock

SEED = 20261129


def perturb_(module: nn.Module) -> nn.Module:
    """Give every parameter trained-looking random values (no two equal tensors)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if p.dim() == 1 and ("norm" in name.lower() or name.endswith("ln.weight") or "bn" in name):
                p.copy_(1.0 + 0.1 * torch.randn_like(p)) if name.endswith("weight") else p.copy_(0.05 * torch.randn_like(p))
            elif p.dim() == 1:
                p.copy_(0.05 * torch.randn_like(p))
            else:
                fan_in = p[0].numel()
                p.copy_(torch.randn_like(p) / math.sqrt(fan_in))
        for name, b in module.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(0.1 * torch.randn_like(b))
            elif name.endswith("running_var"):
                b.copy_(1.0 + 0.2 * torch.rand_like(b))
    return module


# ---------------------------------------------------------------- BERT-like encoder
class BertLayer(nn.Module):
    def __init__(self, hidden, heads, inter, eps):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.inter = nn.Linear(hidden, inter)
        self.out = nn.Linear(inter, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)
        self.dropout = nn.Dropout(0.1)

    def split(self, x):
        b, s, _ = x.shape
        return x.view(b, s, self.heads, self.head_dim).transpose(1, 2)

    def forward(self, x, mask_bias):
        q, k, v = self.split(self.query(x)), self.split(self.key(x)), self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim) + mask_bias
        probs = self.dropout(torch.softmax(scores, dim=-1))
        ctx = torch.matmul(probs, v).transpose(1, 2).reshape(x.shape)
        x = self.attn_norm(x + self.dropout(self.attn_out(ctx)))
        h = F.gelu(self.inter(x))  # erf form
        return self.out_norm(x + self.dropout(self.out(h)))


class BertLike(nn.Module):
    def __init__(self, vocab=512, hidden=64, layers=2, heads=4, inter=128, max_pos=64, eps=1e-12):
        super().__init__()
        self.word = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        self.token_type = nn.Embedding(2, hidden)
        self.emb_norm = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, inter, eps) for _ in range(layers)])
        self.pooler = nn.Linear(hidden, hidden)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.shape[1]
        pos = torch.arange(seq, device=input_ids.device).unsqueeze(0)
        x = self.word(input_ids) + self.position(pos) + self.token_type(torch.zeros_like(input_ids))
        x = self.emb_norm(x)
        mask_bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_bias)
        return x, torch.tanh(self.pooler(x[:, 0]))


# ---------------------------------------------------------------- GPT-2-like decoder
class Gpt2Block(nn.Module):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.heads = heads
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.c_attn = nn.Linear(hidden, 3 * hidden)
        self.c_proj = nn.Linear(hidden, hidden)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.proj = nn.Linear(4 * hidden, hidden)
        self.register_buffer("causal", torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool)).view(1, 1, max_pos, max_pos))

    def forward(self, x):
        b, s, h = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(h, dim=2)
        q, k, v = (t.view(b, s, self.heads, h // self.heads).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(h // self.heads)
        scores = torch.where(self.causal[:, :, :s, :s], scores, torch.tensor(-1e4, dtype=scores.dtype))
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, h)
        x = x + self.c_proj(ctx)
        return x + self.proj(F.gelu(self.fc(self.ln_2(x)), approximate="tanh"))


class Gpt2Like(nn.Module):
    def __init__(self, vocab=512, hidden=64, layers=2, heads=4, max_pos=64):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.blocks = nn.ModuleList([Gpt2Block(hidden, heads, max_pos) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)

    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(pos)
        for block in self.blocks:
            x = block(x)
        return torch.matmul(self.ln_f(x), self.wte.weight.t())  # tied LM head


# ---------------------------------------------------------------- LLaMA-like decoder
class RmsNorm(nn.Module):
    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        variance = x.pow(2).mean(-1, keepdim=True)
        return self.weight * (x * torch.rsqrt(variance + self.eps))


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, hidden, heads, inter):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.input_norm = RmsNorm(hidden)
        self.q_proj = nn.Linear(hidden, hidden, bias=False)
        self.k_proj = nn.Linear(hidden, hidden, bias=False)
        self.v_proj = nn.Linear(hidden, hidden, bias=False)
        self.o_proj = nn.Linear(hidden, hidden, bias=False)
        self.post_norm = RmsNorm(hidden)
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x, cos, sin, causal_bias):
        b, s, h = x.shape
        y = self.input_norm(x)
        q, k, v = (p(y).view(b, s, self.heads, self.head_dim).transpose(1, 2) for p in (self.q_proj, self.k_proj, self.v_proj))
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.head_dim) + causal_bias
        ctx = torch.matmul(torch.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, h)
        x = x + self.o_proj(ctx)
        y = self.post_norm(x)
        return x + self.down_proj(F.silu(self.gate_proj(y)) * self.up_proj(y))


class LlamaLike(nn.Module):
    def __init__(self, vocab=512, hidden=64, layers=2, heads=4, inter=172, max_pos=64):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.blocks = nn.ModuleList([LlamaBlock(hidden, heads, inter) for _ in range(layers)])
        self.norm = RmsNorm(hidden)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)
        head_dim = hidden // heads
        inv_freq = 1.0 / (10000 ** (torch.arange(0, head_dim, 2).float() / head_dim))
        freqs = torch.outer(torch.arange(max_pos).float(), inv_freq)
        emb = torch.cat((freqs, freqs), dim=-1)
        self.register_buffer("cos_cached", emb.cos()[None, None])
        self.register_buffer("sin_cached", emb.sin()[None, None])
        self.register_buffer("causal", torch.triu(torch.full((max_pos, max_pos), -1e4), diagonal=1)[None, None])

    def forward(self, input_ids):
        s = input_ids.shape[1]
        x = self.embed(input_ids)
        cos, sin = self.cos_cached[:, :, :s], self.sin_cached[:, :, :s]
        causal = self.causal[:, :, :s, :s]
        for block in self.blocks:
            x = block(x, cos, sin, causal)
        return self.lm_head(self.norm(x))


# ---------------------------------------------------------------- CNNs
class ResNet18Narrow(nn.Module):
    """ResNet-18 topology (torchvision BasicBlock) at a quarter of the width."""

    def __init__(self, base=16, num_classes=100):
        super().__init__()
        self.conv1 = nn.Conv2d(3, base, 7, 2, 3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(3, 2, 1)
        layers, inplanes = [], base
        for i, blocks in enumerate([2, 2, 2, 2]):
            planes, stride = base * 2 ** i, 1 if i == 0 else 2
            for j in range(blocks):
                down = None
                if j == 0 and (stride != 1 or inplanes != planes):
                    down = nn.Sequential(nn.Conv2d(inplanes, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))
                layers.append(BasicBlock(inplanes, planes, stride if j == 0 else 1, down))
                inplanes = planes
        self.layers = nn.Sequential(*layers)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(inplanes, num_classes)

    def forward(self, x):
        x = self.maxpool(self.relu(self.bn1(self.conv1(x))))
        return self.fc(torch.flatten(self.avgpool(self.layers(x)), 1))


# ---------------------------------------------------------------- export
def export(model, args, names_in, names_out, path, opset, dynamic_axes=None):
    model.eval()
    torch.onnx.export(model, args, path, opset_version=opset, input_names=names_in, output_names=names_out,
                      dynamic_axes=dynamic_axes, do_constant_folding=True)
    onnx.checker.check_model(onnx.load(path))  # check a loaded model: check_model(path) may rewrite the file


def save_reference(model, args, names_in, names_out, directory):
    with torch.no_grad():
        outs = model(*args)
    if isinstance(outs, torch.Tensor):
        outs = (outs,)
    for sub, names, tensors in (("inputs", names_in, args), ("outputs", names_out, outs)):
        os.makedirs(os.path.join(directory, sub), exist_ok=True)
        for n, t in zip(names, tensors):
            np.save(os.path.join(directory, sub, n + ".npy"), t.numpy())


def build(name):
    """Return (model, example args, input names, output names, dynamic axes) for one architecture."""
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED + 1)
    if name == "bert_tiny":
        ids = torch.randint(0, 512, (1, 16), generator=g)
        mask = torch.ones(1, 16, dtype=torch.int64)
        mask[0, 12:] = 0
        return perturb_(BertLike()), (ids, mask), ["input_ids", "attention_mask"], ["last_hidden_state", "pooled"], None
    if name == "gpt2_tiny":
        return perturb_(Gpt2Like()), (torch.randint(0, 512, (1, 16), generator=g),), ["input_ids"], ["logits"], None
    if name == "llama_tiny":
        return perturb_(LlamaLike()), (torch.randint(0, 512, (1, 16), generator=g),), ["input_ids"], ["logits"], None
    if name == "resnet18_narrow":
        return perturb_(ResNet18Narrow()), (torch.randn(1, 3, 64, 64, generator=g),), ["image"], ["logits"], None
    if name == "mobilenetv2_half":
        m = torchvision.models.mobilenet_v2(width_mult=0.5, num_classes=100)
        return perturb_(m), (torch.randn(1, 3, 96, 96, generator=g),), ["image"], ["logits"], None
    if name == "vit_tiny":  # torchvision's ViT (nn.MultiheadAttention, pre-LN), 2 layers of width 32
        m = torchvision.models.VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2, hidden_dim=32,
                                                 mlp_dim=64, num_classes=10)
        return perturb_(m), (torch.randn(1, 3, 32, 32, generator=g),), ["image"], ["logits"], None
    if name == "bert_tiny_dynamic":  # bert_tiny with positions up to 128, so that every gear of the tests fits
        _, args, ins, outs, _ = build("bert_tiny")
        torch.manual_seed(SEED)
        model = perturb_(BertLike(max_pos=128))
        axes = {"input_ids": {0: "batch", 1: "seq"}, "attention_mask": {0: "batch", 1: "seq"},
                "last_hidden_state": {0: "batch", 1: "seq"}, "pooled": {0: "batch"}}
        return model, args, ins, outs, axes
    raise ValueError(name)


def export_all(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    plan = [(a, o) for a in ("bert_tiny", "gpt2_tiny", "llama_tiny", "resnet18_narrow", "mobilenetv2_half", "vit_tiny") for o in (13, 17)]
    for arch, opset in plan:
        name = f"{arch}_op{opset}"
        model, args, ins, outs, axes = build(arch)
        path = os.path.join(out_dir, name + ".onnx")
        export(model, args, ins, outs, path, opset, axes)
        save_reference(model, args, ins, outs, os.path.join(out_dir, name))
        print(f"{path}: {os.path.getsize(path)} bytes")
    # A model whose weights live in a side file, written by ONNX's own external-data writer.
    ext = onnx.load(os.path.join(out_dir, "resnet18_narrow_op13.onnx"))
    ext_path = os.path.join(out_dir, "resnet18_narrow_external_op13.onnx")
    onnx.save_model(ext, ext_path, save_as_external_data=True, all_tensors_to_one_file=True,
                    location="resnet18_narrow_external_op13.weights", size_threshold=1024)
    print(f"{ext_path}: external data")


def export_seed_case(out_dir):
    """The seed article's case, written node by node (torch drops Dropout at export):
    x -> attention (MatMul, Div, Add mask, Softmax, MatMul) -> LayerNormalization(eps)
    -> Dropout -> Add(x). One model with eps 1e-5 (the fused kernel's condition), one
    with 1e-6 (left unfused)."""
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(SEED)
    heads, seq, dim = 4, 16, 32
    for eps, tag in ((1e-5, "1e-5"), (1e-6, "1e-6")):
        inits = [
            numpy_helper.from_array(np.array(np.sqrt(dim), dtype=np.float32), "scale"),
            numpy_helper.from_array(rng.uniform(0.5, 1.5, dim).astype(np.float32), "gamma"),
            numpy_helper.from_array(rng.uniform(-0.1, 0.1, dim).astype(np.float32), "beta"),
            numpy_helper.from_array(np.array(0.1, dtype=np.float32), "ratio"),
        ]
        nodes = [
            helper.make_node("Transpose", ["x"], ["kt"], name="/attn/Transpose", perm=[0, 1, 3, 2]),
            helper.make_node("MatMul", ["x", "kt"], ["scores"], name="/attn/MatMul"),
            helper.make_node("Div", ["scores", "scale"], ["scaled"], name="/attn/Div"),
            helper.make_node("Add", ["scaled", "mask"], ["masked"], name="/attn/Add"),
            helper.make_node("Softmax", ["masked"], ["probs"], name="/attn/Softmax", axis=-1),
            helper.make_node("MatMul", ["probs", "x"], ["attn"], name="/attn/MatMul_1"),
            helper.make_node("LayerNormalization", ["attn", "gamma", "beta"], ["normed"], name="/norm/LayerNormalization",
                             axis=-1, epsilon=eps),
            helper.make_node("Dropout", ["normed", "ratio"], ["dropped"], name="/dropout/Dropout"),
            helper.make_node("Add", ["x", "dropped"], ["y"], name="/residual/Add"),
        ]
        graph = helper.make_graph(
            nodes, f"seed_attention_ln_eps{tag}",
            [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, heads, seq, dim]),
             helper.make_tensor_value_info("mask", TensorProto.FLOAT, [1, 1, 1, seq])],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, heads, seq, dim])], inits)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="geopt examples")
        model.ir_version = 8
        onnx.checker.check_model(model, full_check=True)
        path = os.path.join(out_dir, f"seed_attention_ln_eps{tag}.onnx")
        onnx.save(model, path)
        print(f"{path}: {os.path.getsize(path)} bytes")


def export_bert_base(path):
    torch.manual_seed(SEED)
    model = perturb_(BertLike(vocab=30522, hidden=768, layers=12, heads=12, inter=3072, max_pos=512))
    ids = torch.randint(0, 30522, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    model.eval()
    torch.onnx.export(model, (ids, mask), path, opset_version=13, input_names=["input_ids", "attention_mask"],
                      output_names=["last_hidden_state", "pooled"], do_constant_folding=True)
    print(f"{path}: {os.path.getsize(path)} bytes")


class DynamicConvNet(nn.Module):
    """A small detector-like CNN for dynamic H and W: a stride-4 encoder (conv, BN, ReLU;
    a depthwise block with ReLU6), an upsample back to the stride-2 feature's size read
    from its shape (Shape -> Slice -> Resize sizes), a skip sum, and a x2 bilinear
    upsample to a probability map (as PaddleOCR's DB head ends)."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, 2, 1, bias=False), nn.BatchNorm2d(8), nn.ReLU())
        self.down = nn.Sequential(nn.Conv2d(8, 16, 3, 2, 1, bias=False), nn.BatchNorm2d(16), nn.ReLU())
        self.dw = nn.Sequential(nn.Conv2d(16, 16, 3, 1, 1, groups=16, bias=False), nn.BatchNorm2d(16), nn.ReLU6())
        self.pw = nn.Conv2d(16, 8, 1)
        self.head = nn.Conv2d(8, 1, 3, 1, 1)

    def forward(self, image):
        a = self.stem(image)
        c = self.pw(self.dw(self.down(a)))
        u = F.interpolate(c, size=a.shape[-2:], mode="nearest")
        y = self.head(F.relu(u + a))
        return torch.sigmoid(F.interpolate(y, scale_factor=2.0, mode="bilinear", align_corners=False))


def save_at_sizes(model, make_args, names_in, names_out, directory, sizes, label):
    """Reference inputs and torch outputs at each size, in DIRECTORY/<label(size)>/{inputs,outputs}."""
    for size in sizes:
        save_reference(model, make_args(size), names_in, names_out, os.path.join(directory, label(size)))


def export_dynamic(out_dir):
    """The dynamic-shape examples: bert_tiny_dynamic_seq_op17 (dynamic batch and seq) with
    references at seq 32, 37, 64 and 128, and conv_dynamic_hw_op13 (dynamic H and W) with
    references at 32x32, 64x64, 40x56 and 96x96."""
    model, args, ins, outs, axes = build("bert_tiny_dynamic")
    name = "bert_tiny_dynamic_seq_op17"
    export(model, args, ins, outs, os.path.join(out_dir, name + ".onnx"), 17, axes)
    save_reference(model, args, ins, outs, os.path.join(out_dir, name))

    def bert_args(seq):
        g = torch.Generator().manual_seed(SEED + seq)
        ids = torch.randint(0, 512, (1, seq), generator=g)
        mask = torch.ones(1, seq, dtype=torch.int64)
        mask[0, seq - seq // 4:] = 0  # the last quarter is padding
        return ids, mask

    model.eval()
    save_at_sizes(model, bert_args, ins, outs, os.path.join(out_dir, name), (32, 37, 64, 128), lambda s: f"seq_{s}")

    torch.manual_seed(SEED)
    conv = perturb_(DynamicConvNet()).eval()
    name = "conv_dynamic_hw_op13"
    g = torch.Generator().manual_seed(SEED + 1)
    example = (torch.randn(1, 3, 64, 64, generator=g),)
    export(conv, example, ["image"], ["prob"], os.path.join(out_dir, name + ".onnx"), 13,
           {"image": {2: "height", 3: "width"}, "prob": {2: "height", 3: "width"}})
    save_reference(conv, example, ["image"], ["prob"], os.path.join(out_dir, name))

    def image_args(hw):
        return (torch.randn(1, 3, hw[0], hw[1], generator=torch.Generator().manual_seed(SEED + hw[0] * 1000 + hw[1])),)

    save_at_sizes(conv, image_args, ["image"], ["prob"], os.path.join(out_dir, name), ((32, 32), (64, 64), (40, 56), (96, 96)),
                  lambda hw: f"hw_{hw[0]}x{hw[1]}")
    for n in ("bert_tiny_dynamic_seq_op17", name):
        path = os.path.join(out_dir, n + ".onnx")
        print(f"{path}: {os.path.getsize(path)} bytes")


def export_bert_base_dynamic(path):
    """BERT-base (as export_bert_base) with a dynamic sequence axis, and torch's outputs at
    seq 32, 37, 64 and 128 in PATH's folder, <name>/seq_<N>/{inputs,outputs}."""
    torch.manual_seed(SEED)
    model = perturb_(BertLike(vocab=30522, hidden=768, layers=12, heads=12, inter=3072, max_pos=512)).eval()
    ins, outs = ["input_ids", "attention_mask"], ["last_hidden_state", "pooled"]
    ids = torch.randint(0, 30522, (1, 128))
    mask = torch.ones(1, 128, dtype=torch.int64)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    torch.onnx.export(model, (ids, mask), path, opset_version=13, input_names=ins, output_names=outs, do_constant_folding=True,
                      dynamic_axes={"input_ids": {1: "seq"}, "attention_mask": {1: "seq"}, "last_hidden_state": {1: "seq"}})

    def bert_args(seq):
        g = torch.Generator().manual_seed(SEED + seq)
        m = torch.ones(1, seq, dtype=torch.int64)
        m[0, seq - seq // 4:] = 0
        return torch.randint(0, 30522, (1, seq), generator=g), m

    base = os.path.splitext(path)[0]
    save_at_sizes(model, bert_args, ins, outs, base, (32, 37, 64, 128), lambda s: f"seq_{s}")
    print(f"{path}: {os.path.getsize(path)} bytes")


def export_resnet50(path):
    torch.manual_seed(SEED)
    model = perturb_(torchvision.models.resnet50())
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    export(model, (torch.randn(1, 3, 224, 224),), ["image"], ["logits"], path, 13)
    print(f"{path}: {os.path.getsize(path)} bytes")


def export_gpt2_small(path):
    torch.manual_seed(SEED)
    model = perturb_(Gpt2Like(vocab=50257, hidden=768, layers=12, heads=12, max_pos=1024))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    export(model, (torch.randint(0, 50257, (1, 128)),), ["input_ids"], ["logits"], path, 13)
    print(f"{path}: {os.path.getsize(path)} bytes")


def export_gpt2_scaled(layers, hidden, path):
    """A GPT-2-style decoder that differs from its siblings only in depth or width
    (4 heads, sequence 64, vocab 512): the scaling benchmark's series."""
    torch.manual_seed(SEED)
    model = perturb_(Gpt2Like(vocab=512, hidden=hidden, layers=layers, heads=4, max_pos=64))
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    export(model, (torch.randint(0, 512, (1, 64)),), ["input_ids"], ["logits"], path, 13)
    print(f"{path}: {os.path.getsize(path)} bytes")


def export_torchvision(name, path):
    torch.manual_seed(SEED)
    model = perturb_(getattr(torchvision.models, name)())
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    export(model, (torch.randn(1, 3, 224, 224),), ["image"], ["logits"], path, 13)
    print(f"{path}: {os.path.getsize(path)} bytes")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "models"))
    ap.add_argument("--bert-base", metavar="PATH", help="write only the BERT-base-sized benchmark model to PATH")
    ap.add_argument("--resnet50", metavar="PATH", help="write only ResNet-50 (benchmark model) to PATH")
    ap.add_argument("--gpt2-small", metavar="PATH", help="write only a GPT-2-small-sized decoder (seq 128) to PATH")
    ap.add_argument("--vit-b16", metavar="PATH", help="write only ViT-B/16 (benchmark model) to PATH")
    ap.add_argument("--mobilenetv2", metavar="PATH", help="write only MobileNetV2 (benchmark model) to PATH")
    ap.add_argument("--gpt2-scaled", nargs=3, metavar=("LAYERS", "HIDDEN", "PATH"),
                    help="write only a GPT-2-style decoder of LAYERS layers and width HIDDEN (scaling benchmark) to PATH")
    ap.add_argument("--dynamic", action="store_true", help="write only the dynamic-shape examples (BERT with dynamic seq, CNN with dynamic H, W) to --out")
    ap.add_argument("--bert-base-dynamic", metavar="PATH", help="write only BERT-base with a dynamic sequence, and torch's outputs at 4 lengths, to PATH")
    ap.add_argument("--seed-case", action="store_true", help="write only the seed case (attention + LayerNorm + Dropout + residual) to --out")
    a = ap.parse_args()
    torch.set_num_threads(1)
    if a.bert_base:
        export_bert_base(a.bert_base)
    elif a.resnet50:
        export_resnet50(a.resnet50)
    elif a.gpt2_small:
        export_gpt2_small(a.gpt2_small)
    elif a.vit_b16:
        export_torchvision("vit_b_16", a.vit_b16)
    elif a.mobilenetv2:
        export_torchvision("mobilenet_v2", a.mobilenetv2)
    elif a.gpt2_scaled:
        export_gpt2_scaled(int(a.gpt2_scaled[0]), int(a.gpt2_scaled[1]), a.gpt2_scaled[2])
    elif a.seed_case:
        export_seed_case(a.out)
    elif a.dynamic:
        export_dynamic(a.out)
    elif a.bert_base_dynamic:
        export_bert_base_dynamic(a.bert_base_dynamic)
    else:
        export_all(a.out)
        export_seed_case(a.out)
        export_dynamic(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
