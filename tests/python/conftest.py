"""Shared fixtures: small torch exports (written once per session) and the CLI's path."""
import os
import pathlib
import subprocess

import numpy as np
import pytest


def _export(module, inputs, path, names, dynamic_axes=None, opset=13):
    import torch
    module.eval()
    with torch.no_grad():
        torch.onnx.export(module, inputs, str(path), input_names=names, output_names=["out"],
                          opset_version=opset, dynamic_axes=dynamic_axes)
        expected = module(*inputs).numpy()
    return expected


@pytest.fixture(scope="session")
def encoder(tmp_path_factory):
    """A two-layer BERT-style encoder (attention, GELU MLP, LayerNorm) and torch's output."""
    import torch

    class Layer(torch.nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.heads = heads
            self.qkv = torch.nn.Linear(d, 3 * d)
            self.out = torch.nn.Linear(d, d)
            self.ln1 = torch.nn.LayerNorm(d)
            self.fc1 = torch.nn.Linear(d, 4 * d)
            self.fc2 = torch.nn.Linear(4 * d, d)
            self.ln2 = torch.nn.LayerNorm(d)

        def forward(self, x):
            b, s, d = x.shape
            q, k, v = self.qkv(x).split(d, dim=-1)
            split = lambda t: t.reshape(b, s, self.heads, d // self.heads).transpose(1, 2)
            q, k, v = split(q), split(k), split(v)
            a = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1) @ v
            x = self.ln1(x + self.out(a.transpose(1, 2).reshape(b, s, d)))
            return self.ln2(x + self.fc2(torch.nn.functional.gelu(self.fc1(x))))

    torch.manual_seed(0)
    model = torch.nn.Sequential(Layer(64, 4), Layer(64, 4))
    x = torch.randn(2, 16, 64)
    path = tmp_path_factory.mktemp("models") / "encoder.onnx"
    expected = _export(model, (x,), path, ["x"])
    return path, {"x": x.numpy()}, expected


@pytest.fixture(scope="session")
def cnn(tmp_path_factory):
    """A small conv net (conv, batch norm, ReLU, pooling, a classifier) and torch's output."""
    import torch
    torch.manual_seed(1)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, padding=1), torch.nn.BatchNorm2d(16), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.BatchNorm2d(32), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
    for m in model.modules():  # batch norm with statistics that are not the identity
        if isinstance(m, torch.nn.BatchNorm2d):
            m.running_mean.uniform_(-0.5, 0.5)
            m.running_var.uniform_(0.5, 1.5)
    x = torch.randn(1, 3, 32, 32)
    path = tmp_path_factory.mktemp("models") / "cnn.onnx"
    expected = _export(model, (x,), path, ["input"])
    return path, {"input": x.numpy()}, expected


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("GEOPT_CLI")
    if not path:
        pytest.skip("GEOPT_CLI is not set (CTest sets it)")
    return pathlib.Path(path)


def rss_bytes():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
