"""`throwbox lab bench --outputs / --check-against`: a reference of the reader's documents and the comparison.

The comparison must pass the same code, and catch a changed face, a moved box and other weights; float
noise below the stated tolerance is reported as such, not as a change.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from lab.cli import app
from lab.cli.bench_outputs import BENCH_FRAMES, box_iou, default_images

runner = CliRunner()


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    path = tmp_path_factory.mktemp("outputs") / "ref.jsonl"
    result = runner.invoke(app, ["bench", "--outputs", str(path)])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# The tampering tests use the first fixture photo (a real photo with dice; no bench frames to regenerate).


def _check(tmp_path: Path, docs: list[dict[str, Any]]) -> tuple[int, dict[str, Any] | str]:
    path = tmp_path / "ref.jsonl"
    path.write_text("".join(json.dumps(d) + "\n" for d in docs), encoding="utf-8")
    result = runner.invoke(app, ["bench", "--check-against", str(path)])
    try:
        return result.exit_code, json.loads(result.stdout)
    except json.JSONDecodeError:
        return result.exit_code, result.output


def test_reference_holds_every_default_image_without_timings(reference: list[dict[str, Any]]) -> None:
    assert [d["image"] for d in reference] == default_images()
    assert len(reference) > BENCH_FRAMES  # the bench frames and the committed fixture photos
    assert all("timing_ms" not in d for d in reference)
    # The bench frames hold 10 pasted dice each: the reader finds dice there (not an empty reference).
    assert sum(len(d["dice"]) for d in reference[:BENCH_FRAMES]) >= 9 * BENCH_FRAMES
    for d in reference:
        assert len(d["raw"]["box_xyxy"]) == len(d["dice"]) == len(d["raw"]["face_probs"])


def test_the_same_code_reads_every_image_identically(tmp_path: Path, reference: list[dict[str, Any]]) -> None:
    code, doc = _check(tmp_path, reference)
    assert code == 0, doc
    assert isinstance(doc, dict)
    assert doc["identical"] == doc["images"] == len(reference) and doc["changed"] == 0


def _copy(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = json.loads(json.dumps(docs))
    return out


def _tampered(reference: list[dict[str, Any]], how: str) -> list[dict[str, Any]]:
    docs = _copy(reference)
    die = docs[0]["dice"][0]
    raw = docs[0]["raw"]
    if how == "face":
        die["face"] = 7 - die["face"] if die["face"] is not None else 3
    elif how == "box":  # moved by a fifth of the die: far below IoU 0.99
        x0, y0, x1, y1 = raw["box_xyxy"][0]
        shift = (x1 - x0) / 5
        raw["box_xyxy"][0] = [x0 + shift, y0, x1 + shift, y1]
    elif how == "noise":  # last-digit float noise: within tolerance
        raw["box_xyxy"][0] = [v + 1e-4 for v in raw["box_xyxy"][0]]
        raw["face_probs"][0] = [p + 1e-6 for p in raw["face_probs"][0]]
    return docs


@pytest.mark.parametrize(
    ("how", "exit_code", "changed", "within"),
    [
        ("face", 1, 1, 0),  # a different face is a different reading
        ("box", 1, 1, 0),  # a box that moved is a different reading
        ("noise", 0, 0, 1),  # float rounding only: reported, not a change
    ],
)
def test_a_changed_reading_is_caught(
    tmp_path: Path, reference: list[dict[str, Any]], how: str, exit_code: int, changed: int, within: int
) -> None:
    code, doc = _check(tmp_path, _tampered(reference[BENCH_FRAMES : BENCH_FRAMES + 1], how))
    assert code == exit_code, doc
    assert isinstance(doc, dict)
    assert (doc["changed"], doc["within_tolerance"]) == (changed, within)
    if changed:
        assert doc["changed_images"][0]["image"] == reference[BENCH_FRAMES]["image"]


def test_other_weights_are_refused(tmp_path: Path, reference: list[dict[str, Any]]) -> None:
    docs = _copy(reference[BENCH_FRAMES : BENCH_FRAMES + 1])
    docs[0]["models"]["detector"] = "detect_centernet_1999jan"
    code, out = _check(tmp_path, docs)
    assert code == 2
    assert "pin the reference's weights with --manifest" in str(out)


def test_a_missing_image_is_refused(tmp_path: Path, reference: list[dict[str, Any]]) -> None:
    docs = _copy(reference[BENCH_FRAMES : BENCH_FRAMES + 1])
    docs[0]["image"] = "tests/vision/fixtures/gone.jpg"
    code, out = _check(tmp_path, docs)
    assert code == 2 and "not here" in str(out)


@pytest.mark.parametrize(
    ("a", "b", "iou"),
    [
        ([0, 0, 10, 10], [0, 0, 10, 10], 1.0),  # the same box
        ([0, 0, 10, 10], [5, 0, 15, 10], 50 / 150),  # half overlapping
        ([0, 0, 10, 10], [20, 20, 30, 30], 0.0),  # apart
    ],
)
def test_box_iou(a: list[float], b: list[float], iou: float) -> None:
    assert box_iou(a, b) == pytest.approx(iou)
