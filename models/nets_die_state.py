"""The die-state net: a small CNN on 64x64 context crops (training only; the reader runs its ONNX export)."""

from __future__ import annotations

import torch
from torch import Tensor, nn


def _block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
    )


class DieStateNet(nn.Module):
    """(N, 3, 64, 64) RGB in [0, 1] -> (N, 7): six state logits and a tilt logit (tilt = sigmoid * 90 deg)."""

    def __init__(self, width: int = 16) -> None:
        super().__init__()
        w = width
        self.features = nn.Sequential(
            _block(3, w),
            nn.MaxPool2d(2),  # 32
            _block(w, 2 * w),
            nn.MaxPool2d(2),  # 16
            _block(2 * w, 4 * w),
            nn.MaxPool2d(2),  # 8
            _block(4 * w, 6 * w),
            nn.MaxPool2d(2),  # 4
            _block(6 * w, 6 * w),
        )
        self.head = nn.Linear(6 * w, 7)

    def forward(self, x: Tensor) -> Tensor:
        f = self.features(x).mean(dim=(2, 3))
        out: Tensor = self.head(f)
        return out


class ExportWrapper(nn.Module):
    """What the ONNX file computes: softmax over the six states, then the tilt in degrees."""

    def __init__(self, net: DieStateNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: Tensor) -> Tensor:
        out = self.net(x)
        return torch.cat([torch.softmax(out[:, :6], dim=1), torch.sigmoid(out[:, 6:7]) * 90.0], dim=1)
