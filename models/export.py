"""Record an exported ONNX file in models/manifest.json (name, file, SHA-256, version, input size, labels)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from vision.onnx_session import MANIFEST_PATH, sha256_of

MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")


def dated_name(task: str, model: str, *, when: datetime | None = None) -> str:
    """`<task>_<model>_<YYYYmon>.onnx`, the opencv_zoo naming."""
    now = when or datetime.now(UTC)
    return f"{task}_{model}_{now.year}{MONTHS[now.month - 1]}.onnx"


def register(
    *,
    name: str,
    onnx_path: Path,
    input_size_hw: tuple[int, int],
    labels: tuple[str, ...],
    manifest_path: Path = MANIFEST_PATH,
    extra: dict[str, object] | None = None,
) -> dict[str, object]:
    """Write (or replace) the manifest entry for `name`; return it. `extra` adds keys (`quantized_from`)."""
    manifest: dict[str, dict[str, object]] = {"models": {}}
    if manifest_path.is_file():
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    entry: dict[str, object] = {
        "file": onnx_path.resolve().relative_to(manifest_path.parent.resolve()).as_posix(),
        "sha256": sha256_of(onnx_path),
        "version": datetime.now(UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "input_size_hw": list(input_size_hw),
        "labels": list(labels),
        **(extra or {}),
    }
    manifest["models"][name] = entry
    manifest_path.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return entry
