"""`throwbox lab eval --failures`: each labelled die read wrong, left uncertain or missed; false
detections."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from lab.failures import KINDS, DieFailure, counts, die_failures, failure_sheet, write
from vision.types import DieCandidate, DieReading, Roll, Verdict


def _die(
    box: tuple[float, float, float, float], face: int | None, p: float, *, count: int | None = None
) -> DieReading:
    learned = face or 4
    probs = [(1.0 - p) / 5] * 6
    probs[learned - 1] = p
    x0, y0, x1, y1 = box
    cand = DieCandidate(box_xyxy=box, top_quad=((x0, y0), (x1, y0), (x1, y1), (x0, y1)), score=0.9)
    return DieReading(candidate=cand, face=face, face_probs=tuple(probs), pip_count=count,
                      uncertain=face is None, reasons=() if face else ("low confidence",))  # fmt: skip


def _roll(*dice: DieReading) -> Roll:
    faces = tuple(d.face for d in dice if d.face is not None)
    return Roll(tuple(dice), Verdict.NO_DECISION, (), None, faces, "f", None, {}, {})


GT = np.asarray([(0, 0, 20, 20), (40, 0, 60, 20), (80, 0, 100, 20), (120, 0, 140, 20)], np.float32)
LABELS = np.asarray([2, 5, 3, 6])


def test_each_labelled_die_not_read_right_and_each_false_detection_is_named() -> None:
    roll = _roll(
        _die((0, 0, 20, 20), 2, 0.99),  # right: not a failure
        _die((40, 0, 60, 20), 6, 0.97, count=6),  # a 5 read as 6 with a sure face: wrong
        _die((80, 0, 100, 20), None, 0.6),  # read 4 (unsure): wrong, though left uncertain
        _die((200, 0, 220, 20), 1, 0.95),  # on no labelled die: false
    )
    out = die_failures(Path("a.jpg"), GT, LABELS, roll, box_kind="die")
    by = {f.kind: [x for x in out if x.kind == f.kind] for f in out}
    assert counts(out) == {"wrong": 2, "missed": 1, "false": 1, "uncertain": 0}
    assert {(f.label, f.read) for f in by["wrong"]} == {(5, 6), (3, 4)}
    assert by["missed"][0].label == 6 and by["missed"][0].box_xyxy == (120.0, 0.0, 140.0, 20.0)
    assert by["false"][0].label is None and by["false"][0].read == 1


def test_a_die_read_right_but_left_uncertain_is_uncertain() -> None:
    probs = [0.04] * 6
    probs[1] = 0.8  # the classifier reads the labelled 2, but the pip count stands against it
    cand = _die((0, 0, 20, 20), 2, 0.99).candidate
    roll = _roll(DieReading(cand, None, tuple(probs), 3, True, ("the pip count is 3",)))
    (f,) = die_failures(Path("a.jpg"), GT[:1], LABELS[:1], roll, box_kind="die")
    assert f.kind == "uncertain" and f.read == 2 and f.pip_count == 3 and f.reasons == ("the pip count is 3",)


def test_the_sheet_draws_a_tile_each_wrong_first_and_is_written_with_its_list(tmp_path: Path) -> None:
    image = np.full((40, 160, 3), 90, np.uint8)
    fails = [
        DieFailure("a.jpg", kind, (40.0, 0.0, 60.0, 20.0), 5, 6, 0.9, None, ())
        for kind in ("uncertain", "wrong", "missed", "false", "uncertain")
    ]
    sheet = failure_sheet(fails, lambda _: image, columns=3)
    assert sheet.shape[1] == 3 * 128 and sheet.shape[0] == 2 * (128 + 30)
    # wrong first: its tile frames the die (a 2.2 times wider crop: its box is 128 / 2.2 px across) in red
    edge = round(128 / 2 - 128 / 2.2 / 2)
    assert tuple(sheet[128 // 2, edge]) == (0, 0, 220)
    assert tuple(sheet[128 // 2, 128 + edge]) == (220, 120, 0)  # then the missed die, in blue
    written = write(fails, tmp_path / "out", lambda _: image)
    lines = (tmp_path / "out" / "failures.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 5 and json.loads(lines[0])["kind"] == "uncertain"
    assert written["by_kind"] == {"wrong": 1, "missed": 1, "false": 1, "uncertain": 2}
    assert (tmp_path / "out" / "failures.jpg").is_file()
    assert set(written["by_kind"]) == set(KINDS)
    with pytest.raises(ValueError, match="columns"):
        failure_sheet(fails, lambda _: image, columns=0)
