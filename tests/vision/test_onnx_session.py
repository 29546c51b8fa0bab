"""The onnxruntime wrapper: manifest lookup, SHA-256 check at load, a fake session instead of onnxruntime."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.vision.fakes import FakeFaceSession, factory, one_hot, write_manifest
from vision.onnx_session import (
    ChecksumMismatchError,
    ManifestError,
    ModelFileError,
    load_manifest,
    load_model,
    manifest_lists,
    sha256_of,
)


def test_manifest_lists_names_only_what_a_readable_manifest_has(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    assert manifest_lists("detector", "pips", manifest_path=manifest)
    assert not manifest_lists("detector", "die_state", manifest_path=manifest)
    assert not manifest_lists("detector", manifest_path=tmp_path / "absent.json")
    manifest.write_text("{not json", encoding="utf-8")
    assert not manifest_lists("detector", manifest_path=manifest)


def test_fake_session_runs_through_the_wrapper(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    fake = FakeFaceSession([one_hot(4)])
    model = load_model("pips", manifest_path=manifest, session_factory=factory(fake, fake))
    (probs,) = model.run(np.zeros((1, 3, 64, 64), np.float32))
    assert probs.dtype == np.float32
    assert int(np.argmax(probs[0])) == 3
    assert model.spec.tag == "pips_fake_2026nov"


def test_the_wrapper_sums_the_time_spent_in_the_session(tmp_path: Path) -> None:
    """`OnnxModel.run_ms` and `runs`: what `throwbox lab bench` subtracts to split a read into models and
    rest."""
    import time

    class SlowSession(FakeFaceSession):
        def run(self, output_names: Any, input_feed: Any) -> list[Any]:
            time.sleep(0.02)
            return super().run(output_names, input_feed)

    manifest = write_manifest(tmp_path)
    slow = SlowSession([one_hot(2)])
    model = load_model("pips", manifest_path=manifest, session_factory=factory(slow, slow))
    assert (model.run_ms, model.runs) == (0.0, 0)
    for _ in range(2):
        model.run(np.zeros((1, 3, 64, 64), np.float32))
    assert model.runs == 2
    assert 40.0 <= model.run_ms < 2000.0  # two sleeps of 20 ms, however slow the machine


def test_changed_weights_are_refused_with_both_hashes(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    weights = tmp_path / "detector_fake_2026nov.onnx"
    expected = sha256_of(weights)
    weights.write_bytes(b"tampered")
    with pytest.raises(ChecksumMismatchError) as info:
        load_model("detector", manifest_path=manifest, session_factory=factory(*[FakeFaceSession([])] * 2))
    assert info.value.expected == expected
    assert info.value.actual == sha256_of(weights)
    assert "refusing model" in str(info.value) and expected in str(info.value)
    # It names the manifest that was read (a candidate's, given with --manifest), not always the default.
    assert f"but {manifest} expects" in str(info.value)
    assert "models/manifest.json" not in str(info.value)


def test_the_session_is_never_built_for_a_bad_checksum(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    (tmp_path / "pips_fake_2026nov.onnx").write_bytes(b"other")
    built: list[Path] = []

    def spy(path: Path, threads: int, providers: tuple[str, ...]) -> FakeFaceSession:
        built.append(path)
        return FakeFaceSession([])

    with pytest.raises(ChecksumMismatchError):
        load_model("pips", manifest_path=manifest, session_factory=spy)
    assert built == []


@pytest.mark.parametrize(
    ("content", "name", "error", "message"),
    [
        (None, "pips", ManifestError, "not found"),  # no manifest file at all
        ("{not json", "pips", ManifestError, "unreadable"),  # corrupt JSON
        ('{"models": []}', "pips", ManifestError, "'models' object"),  # wrong shape
        ('{"models": {"pips": {"file": "x.onnx"}}}', "pips", ManifestError, "malformed"),  # missing keys
        ('{"models": {}}', "detector", ManifestError, "not in"),  # unknown model name
        (  # a detector's own threshold outside (0, 1)
            '{"models": {"detector": {"file": "d.onnx", "sha256": "0", "version": "v",'
            ' "input_size_hw": [4, 4],'
            ' "score_threshold": 1.5}}}',
            "detector",
            ManifestError,
            "score_threshold must be a number in",
        ),
        (  # ... or not a number
            '{"models": {"detector": {"file": "d.onnx", "sha256": "0", "version": "v",'
            ' "input_size_hw": [4, 4],'
            ' "score_threshold": "0.3"}}}',
            "detector",
            ManifestError,
            "score_threshold must be a number in",
        ),
        (  # a detector's own input blur outside [0, 5]
            '{"models": {"detector": {"file": "d.onnx", "sha256": "0", "version": "v",'
            ' "input_size_hw": [4, 4],'
            ' "input_blur_sigma": -1}}}',
            "detector",
            ManifestError,
            "input_blur_sigma must be a number in",
        ),
    ],
)
def test_manifest_errors_are_typed_and_clear(
    tmp_path: Path, content: str | None, name: str, error: type[Exception], message: str
) -> None:
    manifest = tmp_path / "manifest.json"
    if content is not None:
        manifest.write_text(content, encoding="utf-8")
    with pytest.raises(error, match=message):
        load_model(name, manifest_path=manifest)


def test_missing_weight_file_is_a_model_file_error(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    (tmp_path / "pips_fake_2026nov.onnx").unlink()
    with pytest.raises(ModelFileError, match="not found"):
        load_model("pips", manifest_path=manifest)


def test_a_file_that_is_not_onnx_is_refused_by_onnxruntime_as_model_file_error(tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path, pips_bytes=b"this is not an onnx graph")
    with pytest.raises(ModelFileError, match="could not be loaded"):
        load_model("pips", manifest_path=manifest)  # the real onnxruntime factory


def test_committed_manifest_matches_committed_weights() -> None:
    specs = load_manifest()
    assert {"detector", "pips"} <= set(specs)
    root = Path(__file__).resolve().parents[2] / "models"
    for spec in specs.values():
        assert sha256_of(root / spec.file) == spec.sha256, spec.file
        assert json.loads((root / "manifest.json").read_text())["models"][spec.name]["sha256"] == spec.sha256
