"""Fake onnxruntime sessions and a manifest of dummy weight files, so the pipeline runs without models."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from vision.detect.centernet import STRIDE, DetectorConfig
from vision.onnx_session import InferenceBackend


@dataclass(frozen=True)
class FakeInput:
    """What `InferenceSession.get_inputs()` yields (only `.name` is read)."""

    name: str


class FakeDetectorSession:
    """Returns a CenterNet head with one peak per given box (boxes in net-input pixels of its first input).

    Sizes are written divided by the default `size_scale`, so the decoded boxes are the given ones. A later
    input of another size (the detector's coarse looks) sees the same boxes scaled, as a real net would.
    """

    def __init__(self, boxes_xyxy: Sequence[tuple[float, float, float, float]], score: float = 0.9) -> None:
        self.boxes = list(boxes_xyxy)
        self.score = score
        self.calls = 0
        self.first_width: int | None = None

    def get_inputs(self) -> list[Any]:
        return [FakeInput("image")]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        self.calls += 1
        (x,) = input_feed.values()
        _, _, h, w = x.shape
        self.first_width = self.first_width or w
        k = w / self.first_width
        head = np.zeros((1, 5, h // STRIDE, w // STRIDE), np.float32)
        head[0, 0] = 0.01
        for x0, y0, x1, y1 in ((k * a, k * b, k * c, k * d) for a, b, c, d in self.boxes):
            cx, cy = (x0 + x1) / 2 / STRIDE, (y0 + y1) / 2 / STRIDE
            ix, iy = int(cx), int(cy)
            if not (0 <= iy < head.shape[2] and 0 <= ix < head.shape[3]):
                continue
            head[0, 0, iy, ix] = self.score
            head[0, 1, iy, ix] = np.log((x1 - x0) / STRIDE / DetectorConfig().size_scale)
            head[0, 2, iy, ix] = np.log((y1 - y0) / STRIDE / DetectorConfig().size_scale)
            head[0, 3, iy, ix] = cx - ix
            head[0, 4, iy, ix] = cy - iy
        return [head]


class FakeFaceSession:
    """Returns the given probability rows, one per crop, in order."""

    def __init__(self, rows: Sequence[Sequence[float]]) -> None:
        self.rows = np.asarray(rows, np.float32)

    def get_inputs(self) -> list[Any]:
        return [FakeInput("crops")]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        (x,) = input_feed.values()
        return [self.rows[: x.shape[0]]]


def one_hot(face: int, p: float = 0.97) -> list[float]:
    """A probability row with `p` on `face` and the rest spread evenly."""
    row = [(1.0 - p) / 5] * 6
    row[face - 1] = p
    return row


def write_manifest(
    folder: Path,
    *,
    detector_bytes: bytes = b"det",
    pips_bytes: bytes = b"pips",
    detector_threshold: float | None = None,
    detector_blur: float | None = None,
) -> Path:
    """Dummy weight files and a manifest that lists them with their true SHA-256.

    `detector_threshold` writes the detector's own `score_threshold` into its entry, `detector_blur` its
    `input_blur_sigma`.
    """
    models = {}
    for name, data in (("detector", detector_bytes), ("pips", pips_bytes)):
        path = folder / f"{name}_fake_2026nov.onnx"
        path.write_bytes(data)
        models[name] = {
            "file": path.name,
            "sha256": hashlib.sha256(data).hexdigest(),
            "version": "test",
            "input_size_hw": [480, 640],
            "labels": [],
        }
    if detector_threshold is not None:
        models["detector"]["score_threshold"] = detector_threshold
    if detector_blur is not None:
        models["detector"]["input_blur_sigma"] = detector_blur
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"models": models}), encoding="utf-8")
    return manifest


def factory(detector: InferenceBackend, pips: InferenceBackend) -> Any:
    """A session factory handing out the fakes by file name."""

    def make(path: Path, threads: int, providers: tuple[str, ...]) -> InferenceBackend:
        return detector if path.name.startswith("detector") else pips

    return make
