#!/usr/bin/python3
"""Export a "zoo" of real architectures with random weights, to test geopt's fusion rules on
models nobody tuned them for.

Companion of export_models.py (same helpers: perturb_, export, save_reference, SEED, and its
BERT-like and LLaMA-like classes). Uses Debian's python3-torch 1.13 / python3-torchvision /
python3-onnx: run with /usr/bin/python3. Nothing is downloaded: every weight is random
(torchvision models are built with weights=None), seeded, so the export is deterministic.

Every entry is exported at opset 13 (LayerNorm as primitive ops) and opset 17 (native
LayerNormalization), as <name>_op13.onnx and <name>_op17.onnx, with static shapes.

Two sizes:
  --size small  tiny versions for the repository (each .onnx at most about 400 KB; swin_t
                and DeepLabV3 about 470-500 KB): narrow widths, few blocks, 64x64 images
                (swin_t 32x32, DeepLabV3 48x48), sequence 16, 32 mel frames, but every block
                kind of the architecture appears at least once. Writes reference inputs/outputs.
  --size full   the standard architectures (torchvision's constructors with weights=None,
                224x224 images; BERT-base / GPT-2-small / T5-base sizes at sequence 128; a
                LLaMA of 12 layers of 768 with SwiGLU 2048 and vocabulary 32000; Whisper-base's
                encoder with 600 mel frames -> 300 encoder positions instead of 3000 -> 1500)
                for benchmarks. Not committed; no reference outputs.

List the entries:
    /usr/bin/python3 examples/zoo.py --list
Regenerate the committed small zoo:
    /usr/bin/python3 examples/zoo.py --size small --out examples/zoo
Make full-size benchmark models (slow, hundreds of MB; not committed):
    /usr/bin/python3 examples/zoo.py --size full --out bench/out/zoo [--only resnet50 gpt2 ...] [--opsets 13]

Layout per exported model NAME_opK:
    NAME_opK.onnx
    NAME_opK/inputs/<input name>.npy     reference input (small size only)
    NAME_opK/outputs/<output name>.npy   torch's output for that input (small size only)

Input names: "image" (CNNs, float [1,3,H,W]), "input_ids" (token models, int64 [1,S]; the
encoders torch_encoder, bert and t5_encoder also take "attention_mask", int64 [1,S],
0 = padding; the reference masks the last quarter),
"input_features" (Whisper, float [1,80,frames]). Output names: "logits" (classifiers and
decoders), "out" (DeepLabV3), "last_hidden_state" (encoders; BERT also "pooled").

Weights: export_models.perturb_ (no two tensors equal), then the affine parameters of every
normalization layer are reset to 1 + 0.1*N(0,1) / 0.05*N(0,1) (perturb_ recognizes norms by
parameter name only, and torchvision names its BatchNorms "1", "bn1", "downsample.1", ...), and
BatchNorm running statistics are measured on random images (as training would), so that the
activations of deep random CNNs neither vanish nor explode and a comparison of outputs means
something.

Notes on particular entries:
  swin_t        torch 1.13 exports it (opset 13 and 17), but literally: each block's padding
                and shifted-window mask arithmetic becomes hundreds of Shape/Gather/Slice/
                Concat/Range/Mod/Where nodes, the shift mask's slice assignments become
                ScatterND, and torchvision's F.dropout(attn, p=0.0) (training=True by default)
                becomes Dropout(ratio 0, training_mode true). See build_swin_t.
  t5_encoder    the relative position bias is computed in the forward from torch.arange; with
                static shapes the exporter folds arange/Sub into a constant int64 [S,S] matrix
                of relative positions and exports the bucketing (Abs, Less, Cast, Div, Log, Mul,
                Add, Min, Where) on that constant, then a Gather from the learned [32, heads]
                table: there is no Range in the graph.
"""
import argparse
import math
import os
import sys
from collections import OrderedDict
from functools import partial

import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from torchvision.models import convnext, densenet, efficientnet, mobilenetv2, mobilenetv3, regnet, resnet, shufflenetv2
from torchvision.models import squeezenet, swin_transformer, vision_transformer
from torchvision.models._utils import IntermediateLayerGetter
from torchvision.models.segmentation import deeplabv3
from torchvision.ops.misc import Conv2dNormActivation

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_models import SEED, BertLike, LlamaLike, export, perturb_, save_reference  # noqa: E402

OPSETS = (13, 17)
SEQ = {"small": 16, "full": 128}
IMAGE = {"small": 64, "full": 224}


# ---------------------------------------------------------------- weights
def randomize_(model: nn.Module, calibrate_with=None) -> nn.Module:
    """perturb_, then give every norm layer trained-looking affine parameters and (for BatchNorm)
    running statistics measured on `calibrate_with` (a batch of inputs), as training would."""
    perturb_(model)
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, (nn.modules.batchnorm._NormBase, nn.LayerNorm, nn.GroupNorm)) or type(m).__name__.endswith("Norm"):
                w, b = getattr(m, "weight", None), getattr(m, "bias", None)
                if isinstance(w, nn.Parameter) and w.dim() == 1:
                    w.copy_(1.0 + 0.1 * torch.randn_like(w))
                if isinstance(b, nn.Parameter) and b.dim() == 1:
                    b.copy_(0.05 * torch.randn_like(b))
        bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
        if bns and calibrate_with is not None:
            for m in bns:
                m.reset_running_stats()
                m.momentum = None  # cumulative average over the calibration batch
            model.eval()
            for m in bns:  # only the BatchNorms in training mode: Dropout and stochastic depth stay off
                m.train()
            model(calibrate_with)
            for m in bns:
                m.momentum = 0.1
                # a little noise so that no two BatchNorms carry equal statistics
                m.running_mean.add_(0.01 * torch.randn_like(m.running_mean))
                m.running_var.mul_(1.0 + 0.05 * torch.rand_like(m.running_var))
    return model.eval()


def cnn(model, size, g, image=None):
    """A torchvision-style classifier: randomized, calibrated on 8 random images, input "image"."""
    image = image or IMAGE[size]
    calib = torch.randn(8, 3, image, image, generator=g)
    return randomize_(model, calib), (torch.randn(1, 3, image, image, generator=g),), ["image"], ["logits"]


# ---------------------------------------------------------------- CNNs (torchvision)
class NarrowResNet(resnet.ResNet):
    """torchvision's ResNet (its forward, _make_layer and blocks) with a configurable base width
    instead of the hard-coded 64."""

    def __init__(self, block, layers, base=64, num_classes=1000):
        nn.Module.__init__(self)
        self._norm_layer = nn.BatchNorm2d
        self.inplanes, self.dilation, self.groups, self.base_width = base, 1, 1, 64
        self.conv1 = nn.Conv2d(3, base, kernel_size=7, stride=2, padding=3, bias=False)
        self.bn1 = nn.BatchNorm2d(base)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, base, layers[0])
        self.layer2 = self._make_layer(block, base * 2, layers[1], stride=2)
        self.layer3 = self._make_layer(block, base * 4, layers[2], stride=2)
        self.layer4 = self._make_layer(block, base * 8, layers[3], stride=2)
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(base * 8 * block.expansion, num_classes)


def build_resnet50(size, g):
    if size == "full":
        return cnn(torchvision.models.resnet50(weights=None), size, g)
    # Bottleneck blocks with and without a projection shortcut (layer1 has two blocks), base width 6
    return cnn(NarrowResNet(resnet.Bottleneck, [2, 1, 1, 1], base=6, num_classes=10), size, g)


def build_mobilenet_v2(size, g):
    if size == "full":
        return cnn(torchvision.models.mobilenet_v2(weights=None), size, g)
    # expand ratio 1 and 6, stride 1 and 2, residual and not; last 1x1 conv narrowed from 1280
    setting = [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 1, 2], [6, 64, 2, 2], [6, 96, 1, 1], [6, 160, 1, 2], [6, 320, 1, 1]]
    m = mobilenetv2.MobileNetV2(num_classes=10, width_mult=0.25, inverted_residual_setting=setting)
    last_in = m.features[-1][0].in_channels
    m.features[-1] = Conv2dNormActivation(last_in, 128, kernel_size=1, norm_layer=nn.BatchNorm2d, activation_layer=nn.ReLU6)
    m.classifier[1] = nn.Linear(128, 10)
    return cnn(m, size, g)


def build_mobilenet_v3_large(size, g):
    if size == "full":
        return cnn(torchvision.models.mobilenet_v3_large(weights=None), size, g)
    setting, last_channel = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large", width_mult=0.125)
    return cnn(mobilenetv3.MobileNetV3(setting, last_channel, num_classes=10), size, g)


def build_efficientnet_b0(size, g):
    if size == "full":
        return cnn(torchvision.models.efficientnet_b0(weights=None), size, g)
    setting, last_channel = efficientnet._efficientnet_conf("efficientnet_b0", width_mult=0.125, depth_mult=0.5)
    return cnn(efficientnet.EfficientNet(setting, 0.2, last_channel=last_channel, num_classes=10), size, g)


def build_shufflenet_v2_x1_0(size, g):
    if size == "full":
        return cnn(torchvision.models.shufflenet_v2_x1_0(weights=None), size, g)
    return cnn(shufflenetv2.ShuffleNetV2([2, 2, 2], [8, 16, 32, 64, 128], num_classes=10), size, g)


def build_densenet121(size, g):
    if size == "full":
        return cnn(torchvision.models.densenet121(weights=None), size, g)
    return cnn(densenet.DenseNet(growth_rate=8, block_config=(2, 2, 2, 2), num_init_features=16, num_classes=10), size, g)


def build_squeezenet1_0(size, g):
    if size == "full":
        return cnn(torchvision.models.squeezenet1_0(weights=None), size, g)
    # SqueezeNet 1.0's layer sequence (8 Fire modules, 3 ceil-mode max pools) at 1/4 width
    m = squeezenet.SqueezeNet("1_0", num_classes=10)
    Fire = squeezenet.Fire
    m.features = nn.Sequential(
        nn.Conv2d(3, 24, kernel_size=7, stride=2), nn.ReLU(inplace=True),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(24, 4, 16, 16), Fire(32, 4, 16, 16), Fire(32, 8, 32, 32),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(64, 8, 32, 32), Fire(64, 12, 48, 48), Fire(96, 12, 48, 48), Fire(96, 16, 64, 64),
        nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
        Fire(128, 16, 64, 64))
    m.classifier[1] = nn.Conv2d(128, 10, kernel_size=1)
    return cnn(m, size, g)


def build_regnet_y_400mf(size, g):
    if size == "full":
        return cnn(torchvision.models.regnet_y_400mf(weights=None), size, g)
    # RegNetY: grouped-conv bottlenecks with squeeze-excitation; stage 2 has an identity-shortcut block
    params = regnet.BlockParams(depths=[1, 2, 1, 1], widths=[16, 24, 48, 96], group_widths=[8, 8, 8, 8],
                                bottleneck_multipliers=[1.0] * 4, strides=[2] * 4, se_ratio=0.25)
    m = regnet.RegNet(params, num_classes=10, stem_width=16, norm_layer=partial(nn.BatchNorm2d, eps=1e-05, momentum=0.1))
    return cnn(m, size, g)


def build_convnext_tiny(size, g):
    if size == "full":
        return cnn(torchvision.models.convnext_tiny(weights=None), size, g)
    setting = [convnext.CNBlockConfig(8, 16, 1), convnext.CNBlockConfig(16, 32, 1), convnext.CNBlockConfig(32, 64, 2),
               convnext.CNBlockConfig(64, None, 1)]
    return cnn(convnext.ConvNeXt(setting, stochastic_depth_prob=0.0, num_classes=10), size, g)


def build_vit_b_16(size, g):
    if size == "full":
        return cnn(torchvision.models.vit_b_16(weights=None), size, g)
    # patch 16 on 64x64: 16 patches + class token, nn.MultiheadAttention, pre-LN
    m = vision_transformer.VisionTransformer(image_size=64, patch_size=16, num_layers=2, num_heads=2, hidden_dim=32,
                                             mlp_dim=128, num_classes=10)
    return cnn(m, size, g)


def build_swin_t(size, g):
    """torchvision's SwinTransformer: patch embedding, window attention with a learned relative
    position bias, shifted windows (torch.roll, exported as Slice+Concat), patch merging (strided
    slices + Concat + Linear). torch 1.13 exports it, but the shift mask is built at run time:
    x.new_zeros((pad_H, pad_W)) filled by nine slice assignments (exported as ScatterND), then
    Reshape/Transpose/Sub/Where; each block's padding sizes come from Shape/Gather/Mod arithmetic."""
    if size == "full":
        return cnn(torchvision.models.swin_t(weights=None), size, g)
    # 32x32 / patch 4 = 8x8 tokens, window 4: stage 1 has a W-MSA and a shifted-window SW-MSA
    # block (4 windows, shift mask); in stages 2-4 the window covers the whole map, so torchvision
    # turns the shift off there and a second block would repeat the first: one block each.
    # Stages 3 (2x2) and 4 (1x1) pad to the window. Even so the file is larger than the others
    # (about 500 KB): torch 1.13 exports each block's padding and shift-mask arithmetic as
    # hundreds of Shape/Slice/Concat/ScatterND/... nodes (about 2000 nodes in all).
    m = swin_transformer.SwinTransformer(patch_size=[4, 4], embed_dim=4, depths=[2, 1, 1, 1], num_heads=[1, 1, 2, 2],
                                         window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10)
    return cnn(m, size, g, image=32)


class DeepLabOut(nn.Module):
    """torchvision's DeepLabV3 returns a dict; export its "out" entry only."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, image):
        return self.model(image)["out"]


def build_deeplabv3_mobilenet_v3_large(size, g):
    if size == "full":
        m = torchvision.models.segmentation.deeplabv3_mobilenet_v3_large(weights=None, weights_backbone=None, aux_loss=False)
    else:
        # _deeplabv3_mobilenetv3 with a dilated MobileNetV3-Large at width 0.125 and a DeepLabHead
        # (ASPP rates 12/24/36 + image pooling + 3x3 conv + classifier) at 8 channels instead of 256
        setting, last_channel = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_large", width_mult=0.125, dilated=True)
        backbone = mobilenetv3.MobileNetV3(setting, last_channel).features
        out_pos = len(backbone) - 1
        backbone = IntermediateLayerGetter(backbone, return_layers={str(out_pos): "out"})
        c = 8
        head = nn.Sequential(deeplabv3.ASPP(backbone[str(out_pos)].out_channels, [12, 24, 36], out_channels=c),
                             nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU(), nn.Conv2d(c, 21, 1))
        m = deeplabv3.DeepLabV3(backbone, head, None)
    # small: 48x48 (a 3x3 map at output stride 16) keeps the reference output [1,21,48,48] small
    model, args, ins, _ = cnn(DeepLabOut(m), size, g, image=48 if size == "small" else None)
    return model, args, ins, ["out"]


# ---------------------------------------------------------------- transformers written several ways
class TorchEncoder(nn.Module):
    """Token + learned position embeddings feeding torch.nn.TransformerEncoder (post-LN, GELU,
    batch_first) with a key padding mask."""

    def __init__(self, vocab, hidden, heads, inter, layers, max_pos):
        super().__init__()
        self.embed = nn.Embedding(vocab, hidden)
        self.position = nn.Embedding(max_pos, hidden)
        layer = nn.TransformerEncoderLayer(hidden, heads, inter, dropout=0.1, activation="gelu", batch_first=True,
                                           norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False)

    def forward(self, input_ids, attention_mask):
        pos = torch.arange(input_ids.shape[1]).unsqueeze(0)
        x = self.embed(input_ids) + self.position(pos)
        return self.encoder(x, src_key_padding_mask=attention_mask == 0)


def token_inputs(size, vocab, g, mask=False):
    ids = torch.randint(0, vocab, (1, SEQ[size]), generator=g)
    if not mask:
        return (ids,), ["input_ids"]
    attention_mask = torch.ones(1, SEQ[size], dtype=torch.int64)
    attention_mask[0, SEQ[size] * 3 // 4:] = 0  # the last quarter is padding
    return (ids, attention_mask), ["input_ids", "attention_mask"]


def build_torch_encoder(size, g):
    if size == "full":
        vocab, kw = 30522, dict(hidden=768, heads=12, inter=3072, layers=12, max_pos=512)
    else:
        vocab, kw = 256, dict(hidden=32, heads=2, inter=64, layers=2, max_pos=SEQ[size])
    args, ins = token_inputs(size, vocab, g, mask=True)
    return randomize_(TorchEncoder(vocab, **kw)), args, ins, ["last_hidden_state"]


def build_bert(size, g):
    if size == "full":
        vocab, kw = 30522, dict(hidden=768, layers=12, heads=12, inter=3072, max_pos=512)
    else:
        vocab, kw = 256, dict(hidden=32, layers=2, heads=2, inter=64, max_pos=SEQ[size])
    args, ins = token_inputs(size, vocab, g, mask=True)
    return randomize_(BertLike(vocab=vocab, **kw)), args, ins, ["last_hidden_state", "pooled"]


# GPT-2 as HuggingFace's modeling_gpt2 writes it
def new_gelu(x):
    """HuggingFace's NewGELUActivation."""
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


def new_gelu_b(x):
    """The same GELU written the other common way: x * 0.5 first, x*x*x instead of pow."""
    return x * 0.5 * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


class Conv1D(nn.Module):
    """HuggingFace's Conv1D: a linear layer with a [in, out] weight, x @ W + b via addmm on a 2-D view."""

    def __init__(self, nf, nx):
        super().__init__()
        self.nf = nf
        self.weight = nn.Parameter(torch.empty(nx, nf))
        self.bias = nn.Parameter(torch.zeros(nf))

    def forward(self, x):
        size_out = x.size()[:-1] + (self.nf,)
        x = torch.addmm(self.bias, x.view(-1, x.size(-1)), self.weight)
        return x.view(size_out)


class HfGpt2Attention(nn.Module):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.heads, self.head_dim, self.split_size = heads, hidden // heads, hidden
        # HuggingFace's name for the causal mask buffer
        self.register_buffer("bias", torch.tril(torch.ones((max_pos, max_pos), dtype=torch.bool)).view(1, 1, max_pos, max_pos))
        self.c_attn = Conv1D(3 * hidden, hidden)
        self.c_proj = Conv1D(hidden, hidden)

    def _split_heads(self, t):
        return t.view(t.size()[:-1] + (self.heads, self.head_dim)).permute(0, 2, 1, 3)

    def _merge_heads(self, t):
        t = t.permute(0, 2, 1, 3).contiguous()
        return t.view(t.size()[:-2] + (self.heads * self.head_dim,))

    def forward(self, x):
        query, key, value = self.c_attn(x).split(self.split_size, dim=2)
        query, key, value = self._split_heads(query), self._split_heads(key), self._split_heads(value)
        w = torch.matmul(query, key.transpose(-1, -2))
        w = w / torch.full([], value.size(-1) ** 0.5, dtype=w.dtype)
        q_len, k_len = query.size(-2), key.size(-2)
        causal_mask = self.bias[:, :, k_len - q_len:k_len, :k_len]
        mask_value = torch.full([], torch.finfo(w.dtype).min, dtype=w.dtype)
        w = torch.where(causal_mask, w, mask_value)
        w = F.softmax(w, dim=-1)
        return self.c_proj(self._merge_heads(torch.matmul(w, value)))


class HfGpt2Mlp(nn.Module):
    def __init__(self, hidden, act):
        super().__init__()
        self.c_fc = Conv1D(4 * hidden, hidden)
        self.c_proj = Conv1D(hidden, 4 * hidden)
        self.act = act

    def forward(self, x):
        return self.c_proj(self.act(self.c_fc(x)))


class HfGpt2Block(nn.Module):
    def __init__(self, hidden, heads, max_pos, act):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=1e-5)
        self.attn = HfGpt2Attention(hidden, heads, max_pos)
        self.ln_2 = nn.LayerNorm(hidden, eps=1e-5)
        self.mlp = HfGpt2Mlp(hidden, act)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class HfGpt2(nn.Module):
    """GPT2LMHeadModel's inference path: wte + wpe, pre-LN blocks, ln_f, LM head tied to wte."""

    def __init__(self, vocab, hidden, layers, heads, max_pos, act=new_gelu):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.h = nn.ModuleList([HfGpt2Block(hidden, heads, max_pos, act) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, eps=1e-5)
        self.lm_head = nn.Linear(hidden, vocab, bias=False)

    def forward(self, input_ids):
        position_ids = torch.arange(0, input_ids.size(-1), dtype=torch.long).unsqueeze(0)
        x = self.wte(input_ids) + self.wpe(position_ids)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def build_gpt2(size, g, act=new_gelu):
    if size == "full":
        vocab, kw = 50257, dict(hidden=768, layers=12, heads=12, max_pos=1024)
    else:
        vocab, kw = 256, dict(hidden=32, layers=2, heads=2, max_pos=SEQ[size])
    model = HfGpt2(vocab, act=act, **kw)
    randomize_(model)
    model.lm_head.weight = model.wte.weight  # tied, as GPT2LMHeadModel.tie_weights does
    args, ins = token_inputs(size, vocab, g)
    return model, args, ins, ["logits"]


def build_gpt2_gelu_b(size, g):
    return build_gpt2(size, g, act=new_gelu_b)


# T5 encoder as HuggingFace's modeling_t5 writes it
class T5LayerNorm(nn.Module):
    """RMS norm without mean subtraction or bias."""

    def __init__(self, hidden, eps=1e-6):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(hidden))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class T5Attention(nn.Module):
    def __init__(self, hidden, heads, d_kv, has_relative_bias, num_buckets=32, max_distance=128):
        super().__init__()
        self.heads, self.d_kv = heads, d_kv
        self.num_buckets, self.max_distance = num_buckets, max_distance
        inner = heads * d_kv
        self.q = nn.Linear(hidden, inner, bias=False)
        self.k = nn.Linear(hidden, inner, bias=False)
        self.v = nn.Linear(hidden, inner, bias=False)
        self.o = nn.Linear(inner, hidden, bias=False)
        if has_relative_bias:
            self.relative_attention_bias = nn.Embedding(num_buckets, heads)

    @staticmethod
    def _relative_position_bucket(relative_position, num_buckets, max_distance):
        """Bidirectional buckets: half for each sign, exact below num_buckets/4, log-spaced above."""
        num_buckets //= 2
        relative_buckets = (relative_position > 0).to(torch.long) * num_buckets
        relative_position = torch.abs(relative_position)
        max_exact = num_buckets // 2
        is_small = relative_position < max_exact
        if_large = max_exact + (torch.log(relative_position.float() / max_exact) / math.log(max_distance / max_exact)
                                * (num_buckets - max_exact)).to(torch.long)
        if_large = torch.min(if_large, torch.full_like(if_large, num_buckets - 1))
        return relative_buckets + torch.where(is_small, relative_position, if_large)

    def compute_bias(self, q_len, k_len):
        context_position = torch.arange(q_len, dtype=torch.long)[:, None]
        memory_position = torch.arange(k_len, dtype=torch.long)[None, :]
        buckets = self._relative_position_bucket(memory_position - context_position, self.num_buckets, self.max_distance)
        values = self.relative_attention_bias(buckets)  # [q, k, heads]
        return values.permute([2, 0, 1]).unsqueeze(0)  # [1, heads, q, k]

    def forward(self, x, mask, position_bias=None):
        b, s, _ = x.shape

        def shape(t):
            return t.view(b, -1, self.heads, self.d_kv).transpose(1, 2)

        q, k, v = shape(self.q(x)), shape(self.k(x)), shape(self.v(x))
        scores = torch.matmul(q, k.transpose(3, 2))  # T5 does not scale the scores
        if position_bias is None:
            position_bias = self.compute_bias(s, s) + mask
        scores = scores + position_bias
        w = F.softmax(scores.float(), dim=-1).type_as(scores)
        out = torch.matmul(w, v).transpose(1, 2).contiguous().view(b, -1, self.heads * self.d_kv)
        return self.o(out), position_bias


class T5Block(nn.Module):
    def __init__(self, hidden, heads, d_kv, d_ff, has_relative_bias):
        super().__init__()
        self.attn_layer_norm = T5LayerNorm(hidden)
        self.SelfAttention = T5Attention(hidden, heads, d_kv, has_relative_bias)
        self.ff_layer_norm = T5LayerNorm(hidden)
        self.wi = nn.Linear(hidden, d_ff, bias=False)
        self.wo = nn.Linear(d_ff, hidden, bias=False)
        self.dropout = nn.Dropout(0.1)

    def forward(self, x, mask, position_bias):
        y, position_bias = self.SelfAttention(self.attn_layer_norm(x), mask, position_bias)
        x = x + self.dropout(y)
        x = x + self.dropout(self.wo(self.dropout(F.relu(self.wi(self.ff_layer_norm(x))))))
        return x, position_bias


class T5Encoder(nn.Module):
    """T5EncoderModel: shared embedding, pre-norm blocks (T5LayerNorm), relative position bias
    computed by the first block and reused by the others, ReLU feed-forward, no biases."""

    def __init__(self, vocab, hidden, heads, d_kv, d_ff, layers):
        super().__init__()
        self.shared = nn.Embedding(vocab, hidden)
        self.block = nn.ModuleList([T5Block(hidden, heads, d_kv, d_ff, i == 0) for i in range(layers)])
        self.final_layer_norm = T5LayerNorm(hidden)

    def forward(self, input_ids, attention_mask):
        x = self.shared(input_ids)
        mask = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        position_bias = None
        for blk in self.block:
            x, position_bias = blk(x, mask, position_bias)
        return self.final_layer_norm(x)


def build_t5_encoder(size, g):
    if size == "full":  # t5-base
        vocab, kw = 32128, dict(hidden=768, heads=12, d_kv=64, d_ff=3072, layers=12)
    else:
        vocab, kw = 256, dict(hidden=32, heads=4, d_kv=8, d_ff=64, layers=2)
    args, ins = token_inputs(size, vocab, g, mask=True)
    return randomize_(T5Encoder(vocab, **kw)), args, ins, ["last_hidden_state"]


# Whisper's audio encoder as OpenAI's whisper/model.py writes it
def sinusoids(length, channels, max_timescale=10000):
    log_timescale_increment = math.log(max_timescale) / (channels // 2 - 1)
    inv_timescales = torch.exp(-log_timescale_increment * torch.arange(channels // 2))
    scaled_time = torch.arange(length)[:, None] * inv_timescales[None, :]
    return torch.cat([torch.sin(scaled_time), torch.cos(scaled_time)], dim=1)


class WhisperAttention(nn.Module):
    def __init__(self, n_state, n_head):
        super().__init__()
        self.n_head = n_head
        self.query = nn.Linear(n_state, n_state)
        self.key = nn.Linear(n_state, n_state, bias=False)
        self.value = nn.Linear(n_state, n_state)
        self.out = nn.Linear(n_state, n_state)

    def forward(self, x):
        q, k, v = self.query(x), self.key(x), self.value(x)
        n_batch, n_ctx, n_state = q.shape
        scale = (n_state // self.n_head) ** -0.25
        q = q.view(*q.shape[:2], self.n_head, -1).permute(0, 2, 1, 3) * scale
        k = k.view(*k.shape[:2], self.n_head, -1).permute(0, 2, 3, 1) * scale
        v = v.view(*v.shape[:2], self.n_head, -1).permute(0, 2, 1, 3)
        w = F.softmax((q @ k).float(), dim=-1).to(q.dtype)
        return self.out((w @ v).permute(0, 2, 1, 3).flatten(start_dim=2))


class WhisperBlock(nn.Module):
    def __init__(self, n_state, n_head):
        super().__init__()
        self.attn = WhisperAttention(n_state, n_head)
        self.attn_ln = nn.LayerNorm(n_state)
        self.mlp = nn.Sequential(nn.Linear(n_state, 4 * n_state), nn.GELU(), nn.Linear(4 * n_state, n_state))
        self.mlp_ln = nn.LayerNorm(n_state)

    def forward(self, x):
        x = x + self.attn(self.attn_ln(x))
        return x + self.mlp(self.mlp_ln(x))


class WhisperEncoder(nn.Module):
    def __init__(self, n_mels, n_ctx, n_state, n_head, n_layer):
        super().__init__()
        self.conv1 = nn.Conv1d(n_mels, n_state, kernel_size=3, padding=1)
        self.conv2 = nn.Conv1d(n_state, n_state, kernel_size=3, stride=2, padding=1)
        self.register_buffer("positional_embedding", sinusoids(n_ctx, n_state))
        self.blocks = nn.ModuleList([WhisperBlock(n_state, n_head) for _ in range(n_layer)])
        self.ln_post = nn.LayerNorm(n_state)

    def forward(self, input_features):
        x = F.gelu(self.conv1(input_features))
        x = F.gelu(self.conv2(x))
        x = x.permute(0, 2, 1)
        x = (x + self.positional_embedding).to(x.dtype)
        for block in self.blocks:
            x = block(x)
        return self.ln_post(x)


def build_whisper_encoder(size, g):
    if size == "full":  # whisper-base, 600 mel frames (6 s) instead of 3000
        frames, kw = 600, dict(n_state=512, n_head=8, n_layer=6)
    else:
        frames, kw = 2 * SEQ[size], dict(n_state=32, n_head=2, n_layer=2)
    model = randomize_(WhisperEncoder(80, frames // 2, **kw))
    return model, (torch.randn(1, 80, frames, generator=g),), ["input_features"], ["last_hidden_state"]


def build_llama(size, g):
    if size == "full":  # GPT-2-small-sized LLaMA: 12 layers of 768, SwiGLU 2048, vocab 32000
        vocab, kw = 32000, dict(hidden=768, layers=12, heads=12, inter=2048, max_pos=2048)
    else:
        vocab, kw = 256, dict(hidden=32, layers=2, heads=2, inter=86, max_pos=SEQ[size])
    args, ins = token_inputs(size, vocab, g)
    return randomize_(LlamaLike(vocab=vocab, **kw)), args, ins, ["logits"]


# CLIP's text transformer as OpenAI's clip/model.py writes it
class QuickGELU(nn.Module):
    def forward(self, x):
        return x * torch.sigmoid(1.702 * x)


class ClipResidualAttentionBlock(nn.Module):
    def __init__(self, d_model, n_head, attn_mask):
        super().__init__()
        self.attn = nn.MultiheadAttention(d_model, n_head)
        self.ln_1 = nn.LayerNorm(d_model)
        self.mlp = nn.Sequential(OrderedDict([("c_fc", nn.Linear(d_model, d_model * 4)), ("gelu", QuickGELU()),
                                              ("c_proj", nn.Linear(d_model * 4, d_model))]))
        self.ln_2 = nn.LayerNorm(d_model)
        self.register_buffer("attn_mask", attn_mask)

    def attention(self, x):
        return self.attn(x, x, x, need_weights=False, attn_mask=self.attn_mask)[0]

    def forward(self, x):
        x = x + self.attention(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class ClipTextEncoder(nn.Module):
    """CLIP's encode_text: token + learned positional embeddings, pre-LN blocks with a causal
    additive mask (-inf above the diagonal), sequence-first inside the transformer (the
    permute around it), QuickGELU MLPs, ln_final."""

    def __init__(self, vocab, width, heads, layers, context):
        super().__init__()
        mask = torch.empty(context, context).fill_(float("-inf")).triu_(1)
        self.token_embedding = nn.Embedding(vocab, width)
        self.positional_embedding = nn.Parameter(torch.empty(context, width))
        self.resblocks = nn.Sequential(*[ClipResidualAttentionBlock(width, heads, mask) for _ in range(layers)])
        self.ln_final = nn.LayerNorm(width)

    def forward(self, input_ids):
        x = self.token_embedding(input_ids) + self.positional_embedding
        x = x.permute(1, 0, 2)  # NLD -> LND
        x = self.resblocks(x)
        x = x.permute(1, 0, 2)
        return self.ln_final(x)


def build_clip_text(size, g):
    if size == "full":  # ViT-B/32's text tower: width 512, 8 heads, 12 layers, context 77
        vocab, kw = 49408, dict(width=512, heads=8, layers=12, context=SEQ[size])
    else:
        vocab, kw = 256, dict(width=32, heads=2, layers=2, context=SEQ[size])
    args, ins = token_inputs(size, vocab, g)
    return randomize_(ClipTextEncoder(vocab, **kw)), args, ins, ["last_hidden_state"]


# A YOLOv4-style CSPDarknet backbone: Conv-BN-Mish everywhere
class ConvBnMish(nn.Sequential):
    def __init__(self, cin, cout, k=1, stride=1):
        super().__init__(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False), nn.BatchNorm2d(cout), nn.Mish())


class DarkResidual(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.block = nn.Sequential(ConvBnMish(c, c, 1), ConvBnMish(c, c, 3))

    def forward(self, x):
        return x + self.block(x)


class CSPStage(nn.Module):
    """Downsample, split into a shortcut 1x1 and a residual path, concatenate, fuse."""

    def __init__(self, cin, cout, blocks):
        super().__init__()
        self.down = ConvBnMish(cin, cout, 3, 2)
        self.split0 = ConvBnMish(cout, cout // 2)
        self.split1 = ConvBnMish(cout, cout // 2)
        self.blocks = nn.Sequential(*[DarkResidual(cout // 2) for _ in range(blocks)], ConvBnMish(cout // 2, cout // 2))
        self.fuse = ConvBnMish(cout, cout)

    def forward(self, x):
        x = self.down(x)
        return self.fuse(torch.cat([self.blocks(self.split1(x)), self.split0(x)], dim=1))


class CSPDarknet(nn.Module):
    def __init__(self, widths, depths, num_classes=1000):
        super().__init__()
        self.stem = ConvBnMish(3, widths[0], 3)
        self.stages = nn.Sequential(*[CSPStage(a, b, d) for a, b, d in zip(widths[:-1], widths[1:], depths)])
        self.head = nn.Linear(widths[-1], num_classes)

    def forward(self, image):
        x = self.stages(self.stem(image))
        return self.head(torch.flatten(F.adaptive_avg_pool2d(x, 1), 1))


def build_csp_darknet(size, g):
    if size == "full":  # CSPDarknet-53's widths and depths
        model = CSPDarknet([32, 64, 128, 256, 512, 1024], [1, 2, 8, 8, 4])
    else:
        model = CSPDarknet([8, 16, 32, 64], [1, 2, 1], num_classes=10)
    return cnn(model, size, g)


# ---------------------------------------------------------------- the zoo
# name: (builder, architecture, what it exercises)
ZOO = OrderedDict([
    ("resnet50", (build_resnet50, "torchvision ResNet-50 (Bottleneck)",
                  "Conv+BN(folded)+ReLU, projection and identity residual Adds, MaxPool, GlobalAveragePool, Gemm")),
    ("mobilenet_v2", (build_mobilenet_v2, "torchvision MobileNetV2",
                      "depthwise Conv, ReLU6 as Clip, linear bottlenecks, residual Adds")),
    ("mobilenet_v3_large", (build_mobilenet_v3_large, "torchvision MobileNetV3-Large",
                            "hardswish, hardsigmoid squeeze-excitation (GlobalAveragePool, Mul), 5x5 depthwise")),
    ("efficientnet_b0", (build_efficientnet_b0, "torchvision EfficientNet-B0 (MBConv)",
                         "SiLU as Sigmoid*Mul, sigmoid squeeze-excitation, stochastic depth dropped in eval")),
    ("shufflenet_v2_x1_0", (build_shufflenet_v2_x1_0, "torchvision ShuffleNetV2 x1.0",
                            "channel split (Split/Slice), Concat, channel shuffle (Reshape-Transpose-Reshape)")),
    ("densenet121", (build_densenet121, "torchvision DenseNet-121 (dense blocks, transitions)",
                     "BN-ReLU-Conv pre-activation (BN not foldable), growing Concats, AveragePool")),
    ("squeezenet1_0", (build_squeezenet1_0, "torchvision SqueezeNet 1.0 (Fire modules)",
                       "squeeze/expand Concat, ceil-mode MaxPool, conv classifier + GlobalAveragePool")),
    ("regnet_y_400mf", (build_regnet_y_400mf, "torchvision RegNetY-400MF",
                        "grouped Conv, ReLU squeeze-excitation with Sigmoid gate, residual Adds")),
    ("convnext_tiny", (build_convnext_tiny, "torchvision ConvNeXt-Tiny",
                       "7x7 depthwise Conv, LayerNorm over channels via Transpose, GELU (erf), layer scale Mul")),
    ("vit_b_16", (build_vit_b_16, "torchvision ViT-B/16",
                  "patch Conv, class token Concat, nn.MultiheadAttention, pre-LN, GELU (erf)")),
    ("swin_t", (build_swin_t, "torchvision Swin-T",
                "window partition Reshape/Transpose, relative position bias, shifted windows (roll as Slice+Concat), "
                "patch merging, Pad")),
    ("deeplabv3_mobilenet_v3_large", (build_deeplabv3_mobilenet_v3_large,
                                      "torchvision DeepLabV3 with a dilated MobileNetV3-Large backbone ('out' only)",
                                      "dilated Convs (ASPP 12/24/36), image pooling branch, bilinear Resize")),
    ("torch_encoder", (build_torch_encoder, "torch.nn.TransformerEncoder (post-LN, GELU, batch_first) with padding mask",
                       "nn.MultiheadAttention's export with a bool key padding mask, post-LN residuals")),
    ("bert", (build_bert, "BERT (export_models.BertLike)",
              "separate Q/K/V MatMuls, additive mask, GELU (erf), post-LN, pooler Tanh")),
    ("gpt2", (build_gpt2, "GPT-2 as HuggingFace writes it",
              "packed c_attn via addmm (Gemm) + Split, tril buffer + Where causal mask, NewGELU with Pow, tied head")),
    ("gpt2_gelu_b", (build_gpt2_gelu_b, "GPT-2 as HuggingFace writes it, GELU written x*0.5*(...) with x*x*x",
                     "the same tanh GELU in another operand order, Mul chain instead of Pow")),
    ("t5_encoder", (build_t5_encoder, "T5 encoder as HuggingFace writes it",
                    "unscaled scores + bucketed relative position bias, T5LayerNorm (RMS), ReLU FFN, no biases")),
    ("whisper_encoder", (build_whisper_encoder, "Whisper audio encoder as OpenAI writes it",
                         "Conv1d+GELU stem (stride 2), sinusoidal positions, q and k each scaled by d^-0.25, "
                         "k without bias, pre-LN")),
    ("llama", (build_llama, "LLaMA (export_models.LlamaLike)",
               "RMSNorm, rotary embeddings (Slice, Neg, Concat), SiLU-gated MLP, additive causal mask")),
    ("clip_text", (build_clip_text, "CLIP's text encoder as OpenAI writes it",
                   "nn.MultiheadAttention sequence-first with a -inf causal mask buffer, QuickGELU x*sigmoid(1.702x), pre-LN")),
    ("csp_darknet", (build_csp_darknet, "a YOLOv4-style CSPDarknet backbone",
                     "Conv-BN-Mish (x*tanh(softplus(x))), CSP split and Concat, stride-2 3x3 downsampling, residual Adds")),
])


def build(name, size):
    torch.manual_seed(SEED)
    g = torch.Generator().manual_seed(SEED + 1)
    model, args, ins, outs = ZOO[name][0](size, g)
    return model.eval(), args, ins, outs


def dynamic_axes(ins, outs):
    """The axes a deployment varies: a CNN's H and W, a sequence model's length (dim 1 of
    its token inputs and of its outputs but a pooled one)."""
    if ins == ["image"]:
        return {"image": {2: "height", 3: "width"}}
    axes = {n: {1: "seq"} for n in ins}
    axes.update({o: {1: "seq"} for o in outs if o != "pooled"})
    return axes


def export_entry(name, size, out_dir, opsets, dynamic=False):
    model, args, ins, outs = build(name, size)
    for opset in opsets:
        stem = f"{name}_op{opset}"
        path = os.path.join(out_dir, stem + ".onnx")
        if dynamic:
            torch.onnx.export(model, args, path, opset_version=opset, input_names=ins, output_names=outs,
                              dynamic_axes=dynamic_axes(ins, outs), do_constant_folding=True)
            print(f"{path}: {os.path.getsize(path)} bytes (dynamic axes)", flush=True)
            continue
        export(model, args, ins, outs, path, opset)
        if size == "small":
            save_reference(model, args, ins, outs, os.path.join(out_dir, stem))
        print(f"{path}: {os.path.getsize(path)} bytes", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--list", action="store_true", help="print the entries and exit")
    ap.add_argument("--size", choices=("small", "full"), default="small")
    ap.add_argument("--out", help="output folder (default examples/zoo for small, bench/out/zoo for full)")
    ap.add_argument("--only", nargs="+", metavar="NAME", choices=list(ZOO), help="export only these entries")
    ap.add_argument("--opsets", nargs="+", type=int, default=list(OPSETS), choices=OPSETS)
    ap.add_argument("--dynamic", action="store_true",
                    help="export with dynamic axes (a CNN's H and W, a sequence model's length), no references (bench/dynamic_zoo_bench.sh)")
    a = ap.parse_args()
    if a.list:
        for name, (_, arch, exercises) in ZOO.items():
            print(f"{name:30s} {arch}: {exercises}")
        return 0
    here = os.path.dirname(os.path.abspath(__file__))
    out = a.out or (os.path.join(here, "zoo") if a.size == "small" else os.path.join(here, "..", "bench", "out", "zoo"))
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(1)
    for name in a.only or ZOO:
        export_entry(name, a.size, out, a.opsets, a.dynamic)
    return 0


if __name__ == "__main__":
    sys.exit(main())
