#!/usr/bin/python3
"""Train a small CNN on synthetic shapes and export it with real data, for tests of
precision on a model whose weights and inputs mean something (tests/test_quantize.cpp).

A grayscale 24x24 image holds one shape (a filled disc, a filled square, a triangle or a
cross) at a random place, size and brightness, with noise. The CNN learns the class in a
few seconds of CPU training. Deterministic: seeded data and training.

    /usr/bin/python3 examples/train_shapes.py --out examples/trained

Writes:
    shapes_cnn_op13.onnx                       input 'image' f32[batch,1,24,24], output 'logits' f32[batch,4]
    shapes_cnn_op13/calibration/NNN/image.npy  20 training images, one sample folder each
    shapes_cnn_op13/test/image.npy             200 held-out images [200,1,24,24]
    shapes_cnn_op13/test/labels.npy            their classes (int64)
"""
import argparse
import os

import numpy as np
import torch
import torch.nn as nn

SIZE = 24
CLASSES = 4  # disc, square, triangle, cross


def draw(cls, rng):
    img = np.zeros((SIZE, SIZE), np.float32)
    r = rng.uniform(4, 8)
    cy, cx = rng.uniform(r + 1, SIZE - r - 1, size=2)
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float32)
    dy, dx = yy - cy, xx - cx
    if cls == 0:
        mask = dy * dy + dx * dx <= r * r
    elif cls == 1:
        mask = (np.abs(dy) <= r * 0.8) & (np.abs(dx) <= r * 0.8)
    elif cls == 2:
        mask = (dy <= r * 0.7) & (dy >= -r) & (np.abs(dx) <= (dy + r) * 0.6)
    else:
        w = max(1.2, r * 0.25)
        mask = ((np.abs(dy) <= w) & (np.abs(dx) <= r)) | ((np.abs(dx) <= w) & (np.abs(dy) <= r))
    img[mask] = rng.uniform(0.5, 1.0)
    img += rng.normal(0, 0.08, img.shape).astype(np.float32)
    return img


def dataset(n, rng):
    labels = rng.integers(0, CLASSES, size=n)
    images = np.stack([draw(int(c), rng) for c in labels])[:, None]
    return images.astype(np.float32), labels.astype(np.int64)


class ShapesCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1))
        self.classifier = nn.Linear(32, CLASSES)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="examples/trained")
    args = ap.parse_args()
    torch.manual_seed(7)
    rng = np.random.default_rng(7)
    train_x, train_y = dataset(3000, rng)
    test_x, test_y = dataset(200, rng)
    model = ShapesCNN()
    opt = torch.optim.Adam(model.parameters(), lr=3e-3)
    x, y = torch.from_numpy(train_x), torch.from_numpy(train_y)
    for epoch in range(8):
        perm = torch.randperm(len(x))
        for i in range(0, len(x), 64):
            idx = perm[i:i + 64]
            opt.zero_grad()
            loss = nn.functional.cross_entropy(model(x[idx]), y[idx])
            loss.backward()
            opt.step()
    model.eval()
    with torch.no_grad():
        accuracy = (model(torch.from_numpy(test_x)).argmax(1).numpy() == test_y).mean()
    print("held-out accuracy %.3f" % accuracy)

    os.makedirs(args.out, exist_ok=True)
    name = os.path.join(args.out, "shapes_cnn_op13")
    torch.onnx.export(model, torch.from_numpy(test_x[:1]), name + ".onnx", opset_version=13, input_names=["image"],
                      output_names=["logits"], dynamic_axes={"image": {0: "batch"}, "logits": {0: "batch"}})
    for i in range(20):
        folder = os.path.join(name, "calibration", "%03d" % i)
        os.makedirs(folder, exist_ok=True)
        np.save(os.path.join(folder, "image.npy"), train_x[i:i + 1])
    os.makedirs(os.path.join(name, "test"), exist_ok=True)
    np.save(os.path.join(name, "test", "image.npy"), test_x)
    np.save(os.path.join(name, "test", "labels.npy"), test_y)


if __name__ == "__main__":
    main()
