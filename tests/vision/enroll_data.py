"""Tiny labelled dice for the enrollment tests, and a fake face model that needs no weights.

A drawn die is a flat grey square whose grey level says its face (`level(face)`); the fake face model is
sure every die shows a 1 (so only an enrollment reads them right) and its embedding is a one-hot of the grey
level at the crop's centre, so a correction can tell the faces apart. The model runs through the real
onnxruntime wrapper (`OnnxModel`), its session replaced.
"""

from __future__ import annotations

import io
import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import cv2
import numpy as np

from vision.onnx_session import OnnxModel, load_manifest, sha256_of

EMBED = 8
FRAME_WH = (320, 240)


def level(face: int) -> int:
    return 30 * face + 20


class CentreGreySession:
    """Probabilities sure of a 1 whatever the die; embedding: one-hot of the crop centre's grey level."""

    def get_inputs(self) -> list[Any]:
        return [SimpleNamespace(name="crops")]

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        x = np.asarray(input_feed["crops"])
        centre = x[:, :, 28:36, 28:36].mean(axis=(1, 2, 3)) * 255
        bins = np.clip(((centre - 20) / 30).round().astype(int), 0, EMBED - 1)
        probs = np.tile(np.array([0.9, 0.02, 0.02, 0.02, 0.02, 0.02], np.float32), (len(x), 1))
        return [probs, np.eye(EMBED, dtype=np.float32)[bins]]


class ProbsOnlySession(CentreGreySession):
    """A face model exported with its probabilities alone (no embedding output): it cannot be enrolled."""

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        return super().run(output_names, input_feed)[:1]


class SureRightSession(CentreGreySession):
    """A face model that already reads every drawn die right, sure of it: no enrollment can read them better,
    so the guard refuses one."""

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        _, embedding = super().run(output_names, input_feed)
        face = np.clip(embedding.argmax(axis=1) - 1, 0, 5)  # grey level(face) falls in bin `face`
        probs = np.full((len(face), 6), 0.004, np.float32)
        probs[np.arange(len(face)), face] = 0.98
        return [probs, embedding]


def fake_manifest(folder: Path) -> Path:
    weights = folder / "fake_face.onnx"
    folder.mkdir(parents=True, exist_ok=True)
    weights.write_bytes(b"not a graph: the session is faked")
    entry = {"file": weights.name, "sha256": sha256_of(weights), "version": "t", "input_size_hw": [64, 64]}
    manifest = folder / "manifest.json"
    manifest.write_text(json.dumps({"models": {"pips": {**entry, "labels": list("123456")}}}))
    return manifest


def fake_face_model(folder: Path, session: type[CentreGreySession] = CentreGreySession) -> OnnxModel:
    manifest = fake_manifest(folder)
    spec = load_manifest(manifest)["pips"]
    return OnnxModel(spec, models_dir=manifest.parent, session_factory=lambda *a: session())


def photo(face: int) -> np.ndarray:
    """One die photo (the die filling it)."""
    return np.full((80, 70, 3), level(face), np.uint8)


def jpeg(image: np.ndarray) -> bytes:
    ok, data = cv2.imencode(".jpg", image, [cv2.IMWRITE_JPEG_QUALITY, 95])
    assert ok
    return bytes(data)


def photos_zip(per_face: Mapping[int, int], *, top: str = "dice/") -> bytes:
    """A zip of `<top><face>/<k>.jpg`, `per_face[face]` photos of each face."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for face, count in per_face.items():
            for k in range(count):
                archive.writestr(f"{top}{face}/{k}.jpg", jpeg(photo(face)))
        archive.writestr("__MACOSX/._junk", b"packer's junk, left out")
    return buffer.getvalue()


def die_boxes(count: int) -> list[tuple[float, float, float, float]]:
    """`count` (<= 10) die boxes, 40 px, in two rows of a FRAME_WH frame."""
    return [
        (10.0 + 60 * (i % 5), 40.0 + 100 * (i // 5), 50.0 + 60 * (i % 5), 80.0 + 100 * (i // 5))
        for i in range(count)
    ]


def frame(faces: Sequence[int]) -> np.ndarray:
    """A dark frame with one grey die per face, at `die_boxes`."""
    image = np.full((FRAME_WH[1], FRAME_WH[0], 3), 5, np.uint8)
    for (x0, y0, x1, y1), face in zip(die_boxes(len(faces)), faces, strict=True):
        image[int(y0) : int(y1), int(x0) : int(x1)] = level(face)
    return image


def annotated(image: np.ndarray) -> np.ndarray:
    """The frame as an evidence frame shows it: a label drawn over the middle of every die (the reader's
    box, face and words), so a crop cut from it reads as no die's face: a test that learns from it fails."""
    out = image.copy()
    for x0, y0, x1, y1 in die_boxes(10):
        cx, cy = int((x0 + x1) / 2), int((y0 + y1) / 2)
        cv2.rectangle(out, (cx - 12, cy - 8), (cx + 12, cy + 8), (0, 165, 255), -1)
    return out


def yolo_label(faces: Sequence[int]) -> str:
    w, h = FRAME_WH
    lines = []
    for (x0, y0, x1, y1), face in zip(die_boxes(len(faces)), faces, strict=True):
        centre = f"{(x0 + x1) / 2 / w:.6f} {(y0 + y1) / 2 / h:.6f}"
        lines.append(f"{face - 1} {centre} {(x1 - x0) / w:.6f} {(y1 - y0) / h:.6f}")
    return "\n".join(lines) + "\n"


FRAME_FACES = ([1, 2, 3, 4, 5, 6, 1, 2, 3, 4], [5, 6, 1, 2, 3, 4, 5, 6, 6, 5], [1, 2, 3, 4, 5, 6])


def frames_zip(frames: Sequence[Sequence[int]] = FRAME_FACES, *, layout: str = "images") -> bytes:
    """YOLO-labelled frames: `images/<n>.jpg` with `labels/<n>.txt` ("images"), or side by side ("flat")."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for n, faces in enumerate(frames):
            if layout == "images":
                archive.writestr(f"set/images/f{n}.jpg", jpeg(frame(faces)))
                archive.writestr(f"set/labels/f{n}.txt", yolo_label(faces))
            else:
                archive.writestr(f"f{n}.jpg", jpeg(frame(faces)))
                archive.writestr(f"f{n}.txt", yolo_label(faces))
        archive.writestr("set/classes.txt" if layout == "images" else "classes.txt", "1\n2\n3\n4\n5\n6\n")
    return buffer.getvalue()


def write_frames(folder: Path, frames: Sequence[Sequence[int]] = FRAME_FACES) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for n, faces in enumerate(frames):
        cv2.imwrite(str(folder / f"f{n}.png"), frame(faces))
        (folder / f"f{n}.txt").write_text(yolo_label(faces))
    return folder
