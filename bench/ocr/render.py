#!/usr/bin/env python3
"""Text images for PaddleOCR's recognizer and detector, rendered with PIL and the DejaVu
fonts, preprocessed as PaddleOCR does, one sample folder each (x.npy: the layout
`geopt quantize --calibration` and `geopt run --save-inputs` use).

  render.py words OUT_DIR COUNT SEED   # OUT_DIR/NNN/x.npy [1,3,48,320] and OUT_DIR/words.txt
  render.py pages OUT_DIR COUNT SEED   # OUT_DIR/NNN/x.npy [1,3,640,640]
"""
import os
import random
import sys

import numpy as np
from PIL import Image, ImageDraw, ImageFilter, ImageFont

FONTS = ["DejaVuSans.ttf", "DejaVuSerif.ttf", "DejaVuSansMono.ttf", "DejaVuSans-Bold.ttf",
         "DejaVuSansCondensed.ttf", "DejaVuSans-Oblique.ttf", "DejaVuSerif-Bold.ttf", "DejaVuSansMono-Bold.ttf"]
FONT_DIR = "/usr/share/fonts/truetype/dejavu"
VOCABULARY = ("graph engine compiler tensor kernel fusion memory stream layout model export runtime ascend cube vector "
              "matrix buffer shape batch channel height width weight bias scale layer block query value token "
              "window signal station harbor garden winter summer orange purple silver bridge market pocket "
              "rocket planet button camera basket candle doctor engine forest guitar island jacket ladder").split()


def font(rng, size):
    name = rng.choice([f for f in FONTS if os.path.exists(os.path.join(FONT_DIR, f))])
    return ImageFont.truetype(os.path.join(FONT_DIR, name), size)


def word(rng):
    kind = rng.random()
    if kind < 0.6:
        return rng.choice(VOCABULARY)
    if kind < 0.8:
        return rng.choice(VOCABULARY).capitalize() + str(rng.randint(0, 99))
    return str(rng.randint(100, 99999))


def phrase(rng):
    return " ".join(word(rng) for _ in range(1 if rng.random() < 0.5 else rng.randint(2, 3)))


def render_word(text, rng):
    """One line of text as a scanned or photographed word looks: any of the fonts, dark ink
    on a tinted ground (or light on dark), a slight tilt, blur and sensor noise. The
    calibration and held-out words come from the same draw, so the held-out set varies
    as much as the calibration set and in ways it did not see."""
    f = font(rng, rng.randint(24, 42))
    left, top, right, bottom = f.getbbox(text)
    pad = rng.randint(3, 12)
    ground = tuple(rng.randint(170, 255) for _ in range(3))
    ink = tuple(rng.randint(0, 90) for _ in range(3))
    if rng.random() < 0.15:
        ground, ink = tuple(255 - c for c in ground), tuple(255 - c for c in ink)
    img = Image.new("RGB", (right - left + 2 * pad, bottom - top + 2 * pad), ground)
    ImageDraw.Draw(img).text((pad - left, pad - top), text, font=f, fill=ink)
    img = img.rotate(rng.uniform(-2.5, 2.5), resample=Image.BILINEAR, expand=False, fillcolor=ground)
    if rng.random() < 0.3:
        img = img.filter(ImageFilter.GaussianBlur(rng.uniform(0.3, 1.0)))
    # PaddleOCR's resize_norm_img: height 48, width by the aspect ratio (at most 320),
    # (x / 255 - 0.5) / 0.5, zeros to the right up to 320.
    w = min(320, int(np.ceil(48 * img.width / img.height)))
    a = np.asarray(img.resize((w, 48), Image.BILINEAR), dtype=np.float32)
    a = np.clip(a + np_rng(rng).normal(0, rng.uniform(0, 10), a.shape), 0, 255).transpose(2, 0, 1) / 255.0
    x = np.zeros((1, 3, 48, 320), dtype=np.float32)
    x[0, :, :, :w] = (a - 0.5) / 0.5
    return x


def np_rng(rng):
    return np.random.default_rng(rng.randint(0, 2**31))


def render_page(rng):
    img = Image.new("RGB", (640, 640), (255, 255, 255))
    d = ImageDraw.Draw(img)
    y = rng.randint(10, 40)
    while y < 580:
        x = rng.randint(10, 200)
        f = font(rng, rng.randint(22, 44))
        text = " ".join(word(rng) for _ in range(rng.randint(1, 3)))
        d.text((x, y), text, font=f, fill=(rng.randint(0, 80),) * 3)
        y += rng.randint(50, 90)
    # PaddleOCR's detector: ImageNet mean and std on RGB / 255.
    a = np.asarray(img, dtype=np.float32) / 255.0
    a = (a - np.array([0.485, 0.456, 0.406], np.float32)) / np.array([0.229, 0.224, 0.225], np.float32)
    return a.transpose(2, 0, 1)[None].astype(np.float32)


def main():
    kind, out, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    rng = random.Random(seed)
    texts = []
    for i in range(count):
        folder = os.path.join(out, "%03d" % i)
        os.makedirs(folder, exist_ok=True)
        if kind == "words":
            t = phrase(rng)
            texts.append(t)
            np.save(os.path.join(folder, "x.npy"), render_word(t, rng))
        else:
            np.save(os.path.join(folder, "x.npy"), render_page(rng))
    if texts:
        with open(os.path.join(out, "words.txt"), "w") as f:
            f.write("\n".join(texts) + "\n")


if __name__ == "__main__":
    main()
