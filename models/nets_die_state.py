"""The die-state net: a small CNN on 64x64 context crops (training only; the reader runs its ONNX export)."""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from torch import Tensor, nn

if TYPE_CHECKING:
    from models.nets_lite import LiteStateNet


def _block(cin: int, cout: int) -> nn.Sequential:
    return nn.Sequential(
        nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(inplace=True)
    )


class DieStateNet(nn.Module):
    """(N, 3, 64, 64) RGB in [0, 1] -> (N, states + 1): state logits and a tilt logit (sigmoid * 90 deg)."""

    def __init__(self, width: int = 16, states: int = 7) -> None:
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
        self.states = states
        self.head = nn.Linear(6 * w, states + 1)

    def forward(self, x: Tensor) -> Tensor:
        f = self.features(x).mean(dim=(2, 3))
        out: Tensor = self.head(f)
        return out


class ExportWrapper(nn.Module):
    """What the ONNX file computes: softmax over the states, then the tilt in degrees (of a `DieStateNet` or
    any net with its output: `states` logits then the tilt's, e.g. `models.nets_lite.LiteStateNet`)."""

    def __init__(self, net: DieStateNet | LiteStateNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, x: Tensor) -> Tensor:
        out = self.net(x)
        k = self.net.states
        return torch.cat([torch.softmax(out[:, :k], dim=1), torch.sigmoid(out[:, k : k + 1]) * 90.0], dim=1)


def load_widened(net: DieStateNet, state: dict[str, Tensor]) -> None:
    """Load weights of a net with fewer states into `net`: shared rows copied, the tilt row moved last.

    The states added (e.g. `no_die` after the six die states) start from the new head's random rows.
    """
    w, b = state["head.weight"], state["head.bias"]
    old = w.shape[0] - 1
    if old == net.states:
        net.load_state_dict(state)
        return
    if old > net.states:
        raise ValueError(f"weights have {old} states, the net only {net.states}")
    with torch.no_grad():
        head_w, head_b = net.head.weight.clone(), net.head.bias.clone()
        head_w[:old], head_b[:old] = w[:old], b[:old]
        head_w[-1], head_b[-1] = w[-1], b[-1]
    net.load_state_dict({**state, "head.weight": head_w, "head.bias": head_b})
