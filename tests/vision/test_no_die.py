"""A table's no-die filter (vision/table/no_die.py, issue 56): learned from the boxes its people struck out,
guarded on frames it did not learn from, stored with a checksum, and used only on a frame's surplus boxes."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from vision.table.no_die import (
    MIN_DICE,
    MIN_STRUCK,
    N_FEATURES,
    NoDieError,
    NoDieFilter,
    cross_validate,
    features,
    fit_no_die,
    load_no_die,
    no_die_path,
    save_no_die,
    set_struck_aside,
    too_few,
)
from vision.types import DieCandidate

DIE = (40, 40, 200)  # BGR: a red die
PRINT = (40, 120, 40)  # a green felt's printed letter


def table_frame(rng: np.random.Generator, n_dice: int, n_print: int) -> tuple[np.ndarray, list, list[bool]]:
    """A green felt with red dice (white pips) and printed letters (dark strokes on the felt); (image, boxes,
    struck flags)."""
    image = np.full((240, 320, 3), PRINT, np.uint8)
    image[:] = np.clip(image.astype(int) + rng.integers(-12, 12, image.shape), 0, 255).astype(np.uint8)
    boxes, struck = [], []
    for k in range(n_dice + n_print):
        x, y = 10 + 50 * (k % 6), 10 + 60 * (k // 6)
        side = int(rng.integers(26, 34)) if k < n_dice else int(rng.integers(18, 26))
        if k < n_dice:
            cv2.rectangle(image, (x, y), (x + side, y + side), DIE, -1)
            cv2.circle(image, (x + side // 2, y + side // 2), 3, (240, 240, 240), -1)
        else:
            cv2.putText(image, "O", (x, y + side), cv2.FONT_HERSHEY_SIMPLEX, 0.8, (20, 30, 20), 2)
        boxes.append((float(x), float(y), float(x + side), float(y + side)))
        struck.append(k >= n_dice)
    return image, boxes, struck


def table_boxes(frames: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    xs, struck, frame_of = [], [], []
    for f in range(frames):
        image, boxes, flags = table_frame(rng, 10, 2)
        xs.append(features(image, boxes))
        struck += flags
        frame_of += [f] * len(boxes)
    return np.vstack(xs), np.array(struck), np.array(frame_of)


def test_features_describe_each_box_by_its_colours_and_size() -> None:
    image, boxes, _ = table_frame(np.random.default_rng(1), 3, 1)
    x = features(image, boxes)
    assert x.shape == (4, N_FEATURES)
    assert np.allclose(x[:, :-2].sum(axis=1), 1.0)  # each histogram a share of the box's pixels
    assert x[3, -2] < 0 < x[0, -2] + 0.2  # the printed letter smaller than the frame's typical box
    assert features(image, []).shape == (0, N_FEATURES)


def test_a_filter_learns_the_tables_print_from_dice_and_proves_itself_on_frames_it_did_not_see() -> None:
    x, struck, frame_of = table_boxes(15)
    assert too_few(struck) == ""
    validation = cross_validate(x, struck, frame_of, table_id="T")
    assert validation.proves_itself, validation.refusal()
    assert validation.dice_at_bar == 0 and validation.struck_at_bar == validation.struck == 30
    fitted = fit_no_die(x, struck, table_id="T")
    p = fitted.probabilities(x)
    assert p[struck].min() >= fitted.bar > p[~struck].max()
    assert fitted.examples == {"die": 150, "no_die": 30}


def test_labels_that_do_not_follow_the_look_are_refused_saying_why() -> None:
    x, struck, frame_of = table_boxes(15)
    shuffled = np.random.default_rng(3).permutation(struck)  # struck boxes chosen at random: nothing to learn
    validation = cross_validate(x, shuffled, frame_of, table_id="T")
    assert not validation.proves_itself
    assert "confirmed dice" in validation.refusal() or "struck-out boxes" in validation.refusal()


def test_too_few_boxes_is_no_filter() -> None:
    assert f"{MIN_DICE} and {MIN_STRUCK}" in too_few(np.array([False] * 50 + [True] * 5))


def test_only_a_frames_surplus_is_set_aside_the_surest_first() -> None:
    image, boxes, struck = table_frame(np.random.default_rng(4), 10, 2)
    x, flags, _ = table_boxes(15)
    fitted = fit_no_die(x, flags, table_id="T")
    candidates = [
        DieCandidate(b, ((b[0], b[1]), (b[2], b[1]), (b[2], b[3]), (b[0], b[3])), 0.9) for b in boxes
    ]
    kept, aside = set_struck_aside(image, candidates, fitted, expected_dice=10)
    assert len(kept) == 10 and [a.box_xyxy for a in aside] == [
        b for b, s in zip(boxes, struck, strict=True) if s
    ]
    assert all(a.reason == "table_no_die" and a.p_no_die is not None and a.p_no_die >= 0.9 for a in aside)
    assert aside[0].label.startswith("table no die ") and aside[0].what == "table no die"
    # one surplus box: only the surest of the two letters goes; no surplus: nothing, whatever it thinks
    kept, aside = set_struck_aside(image, candidates[:11], fitted, expected_dice=10)
    assert (len(kept), len(aside)) == (10, 1)
    assert set_struck_aside(image, candidates, fitted, expected_dice=12) == (tuple(candidates), ())


def test_the_record_round_trips_and_a_damaged_one_is_refused(tmp_path: Path) -> None:
    x, struck, _ = table_boxes(12)
    saved = save_no_die(fit_no_die(x, struck, table_id="T", fitted_at="2026-12-08T01:00:00+00:00"), tmp_path)
    loaded = load_no_die(tmp_path, "T")
    assert loaded is not None and loaded.checksum == saved.checksum and len(saved.checksum) == 64
    assert np.allclose(loaded.probabilities(x), saved.probabilities(x), atol=1e-6)
    assert load_no_die(tmp_path, "other") is None
    path = no_die_path(tmp_path, "T")
    doc = json.loads(path.read_text())
    doc["body"]["bias"] += 5.0  # edited by hand
    path.write_text(json.dumps(doc))
    with pytest.raises(NoDieError, match="checksum mismatch"):
        load_no_die(tmp_path, "T")
    path.write_text("{not json")
    with pytest.raises(NoDieError, match="not readable JSON"):
        load_no_die(tmp_path, "T")


def test_a_reader_with_a_filter_names_it_in_its_reads_models() -> None:
    from vision.reader import Reader

    x, struck, _ = table_boxes(12)
    fitted = NoDieFilter(**{**fit_no_die(x, struck, table_id="T").__dict__, "checksum": "ab" * 32})
    reader = Reader(threads=1)
    table = reader.with_no_die(fitted)
    assert table.models["no_die"] == "table:T:abababab" and "no_die" not in reader.models
    assert table.no_die_filter is fitted and reader.no_die_filter is None


class _Calls(NoDieFilter):
    """A filter sure that one box of a frame, the last in detection order, is no die."""

    def p_no_die(self, image: np.ndarray, boxes: object) -> np.ndarray:
        p = np.zeros(len(boxes))  # type: ignore[arg-type]
        p[-1] = 0.99
        return p


def test_the_reader_sets_the_filters_box_aside_before_the_count_and_names_it() -> None:
    from dataclasses import replace

    from vision.reader import Reader
    from vision.types import Frame

    image = cv2.imread(str(Path(__file__).resolve().parents[1] / "fixtures" / "layout" / "correct.jpg"))
    reader = Reader(threads=1)
    found = len(reader.read(Frame(image=image, frame_id="f"), expected_dice=None).dice)
    assert found >= 3
    x, struck, _ = table_boxes(12)
    calls = _Calls(**{**replace(fit_no_die(x, struck, table_id="T"), checksum="cd" * 32).__dict__})
    roll = reader.with_no_die(calls).read(Frame(image=image, frame_id="f"), expected_dice=found - 1)
    (aside,) = [a for a in roll.set_aside if a.reason == "table_no_die"]
    assert aside.p_no_die == pytest.approx(0.99) and len(roll.dice) == found - 1
    assert roll.models["no_die"] == "table:T:cdcdcdcd"
    assert aside.box_xyxy not in [d.candidate.box_xyxy for d in roll.dice]
    # the game's count already met: the filter takes nothing out
    same = reader.with_no_die(calls).read(Frame(image=image, frame_id="f"), expected_dice=found)
    assert not [a for a in same.set_aside if a.reason == "table_no_die"] and len(same.dice) == found
