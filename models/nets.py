"""The two small nets, in PyTorch (training only; the reader runs their ONNX exports).

- `DieDetector`: a small backbone (stride 32) with a light top-down feature pyramid back to stride 4
  and a CenterNet head (centre heatmap, log size, offset). About 0.2 M parameters.
- `FaceClassifier`: a plain 5-conv net on 64x64 crops, about 0.1 M parameters, 6 logits (faces 1..6).
- `WideFaceClassifier`: the same task, 7 convs and about 1.1 M parameters: the face stage's second look at
  the few dice the small net is unsure of (six times the small net's time per crop).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F  # noqa: N812 (torch's own convention)
from torch import Tensor, nn


def _conv_bn(cin: int, cout: int, *, k: int = 3, stride: int = 1, groups: int = 1) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False),
        nn.BatchNorm2d(cout),
        nn.ReLU(inplace=True),
    )


def _dws(cin: int, cout: int, stride: int = 1) -> nn.Sequential:
    """Depthwise 3x3 then pointwise 1x1 (MobileNet block)."""
    return nn.Sequential(_conv_bn(cin, cin, stride=stride, groups=cin), _conv_bn(cin, cout, k=1))


class DieDetector(nn.Module):
    """CenterNet-style die detector; output (N, 5, H/4, W/4): sigmoid heat, log w, log h, dx, dy.

    Plain 3x3 convolutions in the backbone (PyTorch trains them several times faster than depthwise ones
    on a CPU), depthwise-separable blocks only at stride 4 where the maps are large (cheap inference).
    """

    def __init__(self, width: int = 24) -> None:
        super().__init__()
        self.stem = _conv_bn(3, 12, stride=2)
        self.s4 = _conv_bn(12, 24, stride=2)
        self.s8 = nn.Sequential(_conv_bn(24, 40, stride=2), _conv_bn(40, 40))
        self.s16 = nn.Sequential(_conv_bn(40, 64, stride=2), _conv_bn(64, 64))
        self.s32 = nn.Sequential(_conv_bn(64, 96, stride=2), _conv_bn(96, 96), _conv_bn(96, 96))
        self.lat32 = _conv_bn(96, width, k=1)
        self.lat16 = _conv_bn(64, width, k=1)
        self.lat8 = _conv_bn(40, width, k=1)
        self.lat4 = _conv_bn(24, width, k=1)
        self.fuse16 = _conv_bn(width, width)
        self.fuse8 = _conv_bn(width, width)
        self.fuse4 = _dws(width, width)
        last = nn.Conv2d(width, 5, 1)
        with torch.no_grad():
            bias = torch.zeros(5)
            bias[0] = -2.19  # prior 0.1 on the heatmap (CenterNet)
            last.bias = nn.Parameter(bias)
        self.head = nn.Sequential(_dws(width, width), last)

    def forward(self, x: Tensor) -> Tensor:
        c4 = self.s4(self.stem(x))
        c8 = self.s8(c4)
        c16 = self.s16(c8)
        c32 = self.s32(c16)
        p = self.lat32(c32)
        p = self.fuse16(self.lat16(c16) + F.interpolate(p, scale_factor=2.0, mode="nearest"))
        p = self.fuse8(self.lat8(c8) + F.interpolate(p, scale_factor=2.0, mode="nearest"))
        p = self.fuse4(self.lat4(c4) + F.interpolate(p, scale_factor=2.0, mode="nearest"))
        out: Tensor = self.head(p)
        return torch.cat([torch.sigmoid(out[:, :1]), out[:, 1:]], dim=1)


class LiteDieDetector(DieDetector):
    """`DieDetector` with depthwise-separable blocks after the stem: the same input, output and pyramid.

    The stem, the lateral 1x1 convolutions, `fuse16`, `fuse4` and the head keep the teacher's shapes, so a
    student starts with those layers copied from a trained `DieDetector`; `s4`, `s8`, `s16`, `s32` and
    `fuse8` are MobileNet blocks (`_dws`) learned by distillation (models/distill_detector.py). About 0.4x
    the teacher's time per 640x480 frame on one onnxruntime thread (models/detect_centernet/README.md).
    """

    # The layers a student takes from its teacher unchanged.
    SHARED = ("stem", "lat32", "lat16", "lat8", "lat4", "fuse16", "fuse4", "head")
    # The layers it learns, each replacing the teacher's layer of the same name.
    REPLACED = ("s4", "s8", "s16", "s32", "fuse8")

    def __init__(self, width: int = 24) -> None:
        super().__init__(width)
        self.s4 = _dws(12, 24, stride=2)
        self.s8 = nn.Sequential(_dws(24, 40, stride=2), _dws(40, 40))
        self.s16 = nn.Sequential(_dws(40, 64, stride=2), _dws(64, 64))
        self.s32 = nn.Sequential(_dws(64, 96, stride=2), _dws(96, 96), _dws(96, 96))
        self.fuse8 = _dws(width, width)


class _CropClassifier(nn.Module):
    """Convolutions (`features`), global average pooling, dropout and one linear layer (`fc`)."""

    features: nn.Sequential
    dropout: nn.Dropout
    fc: nn.Linear

    def logits(self, x: Tensor) -> Tensor:
        f = self.features(x).mean(dim=(2, 3))
        out: Tensor = self.fc(self.dropout(f))
        return out

    def forward(self, x: Tensor) -> Tensor:
        return torch.softmax(self.logits(x), dim=1)


class FaceClassifier(_CropClassifier):
    """Top-face classifier on 64x64 RGB crops; returns softmax probabilities over faces 1..6."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn(3, 16, stride=2),  # 32x32
            _conv_bn(16, 24),
            nn.MaxPool2d(2),  # 16x16
            _conv_bn(24, 48),
            nn.MaxPool2d(2),  # 8x8
            _conv_bn(48, 96),
            nn.MaxPool2d(2),  # 4x4
            _conv_bn(96, 96),
        )
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(96, 6)


class WideFaceClassifier(_CropClassifier):
    """Top-face classifier for the second look: two convs per scale, widths up to 256 (about 1.1 M params).

    Same input (64x64 RGB crops from `crop_die`) and output (softmax over faces 1..6) as `FaceClassifier`,
    about six times its time per crop on one CPU thread (models/pips_wide/README.md), so the reader runs
    it only on dice the small net is unsure of.
    """

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            _conv_bn(3, 32, stride=2),  # 32x32
            _conv_bn(32, 48),
            nn.MaxPool2d(2),  # 16x16
            _conv_bn(48, 96),
            _conv_bn(96, 96),
            nn.MaxPool2d(2),  # 8x8
            _conv_bn(96, 192),
            _conv_bn(192, 192),
            nn.MaxPool2d(2),  # 4x4
            _conv_bn(192, 256),
        )
        self.dropout = nn.Dropout(0.2)
        self.fc = nn.Linear(256, 6)
