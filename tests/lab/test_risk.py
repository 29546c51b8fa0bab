"""Risk and coverage (lab/risk.py, `throwbox lab risk`): the sweep's counting, its intervals, and the records
of real photos and rendered scenes read with the real models, which at the shipped bar give what the shipped
reader gives."""

from __future__ import annotations

import gzip
import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.cli import app
from lab.risk import DieRecord, RollRecord, passes, point, settles_as, shipped_variant, wilson
from vision.onnx_session import manifest_lists

FIXTURES = Path(__file__).resolve().parents[1] / "vision" / "fixtures"  # three real photos, YOLO labels
SEE_THROUGH = FIXTURES / "see_through"  # four rendered scenes of translucent dice
runner = CliRunner()
needs_models = pytest.mark.skipif(
    not manifest_lists("detector", "pips", "die_state"),
    reason="models/manifest.json lists no detector, face and die-state models (models/train_*.py)",
)


def _die(truth: int | None, face: int | None, confidence: float, **more: object) -> DieRecord:
    return DieRecord(image="a.jpg", truth=truth, face=face, confidence=confidence, **more)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("record", "bar", "opinions", "given"),
    [
        (_die(3, 3, 0.95), 0.9, (), True),  # sure enough
        (_die(3, 3, 0.85), 0.9, (), False),  # under the bar
        (_die(3, None, 0.99), 0.0, (), False),  # withheld for another reason (a pip count against it)
        (_die(3, 3, 0.99, turns_agree=False), 0.9, ("turns",), False),  # the turns read another face
        (_die(3, 3, 0.99, turns_agree=False), 0.9, (), True),  # ...heeded only when asked
        (_die(3, 3, 0.99, pip_count=None), 0.9, ("pips",), False),  # the pips must confirm, not abstain
        (_die(3, 3, 0.99, pip_count=3), 0.9, ("pips",), True),
        (_die(None, 3, 0.99, whole_die=False), 0.9, ("whole_die",), False),  # a phantom box
        (_die(3, 3, 0.99, peer_face=4, peer_confidence=0.99), 0.9, ("peer",), False),  # the second model
        (_die(3, 3, 0.99, peer_face=3, peer_confidence=0.5), 0.9, ("peer",), True),  # ...agrees, unsure
        (_die(3, 3, 0.99, peer_face=3, peer_confidence=0.5), 0.9, ("peer_sure",), False),  # under the bar
        (_die(3, 3, 0.99, peer_face=3, peer_confidence=0.95), 0.9, ("peer_sure",), True),
        (_die(3, 3, 0.99), 0.9, ("peer_sure",), True),  # no second model read: no say
        (_die(3, 3, 0.99, peer_face=4, peer_confidence=0.99), 0.9, (), True),  # heeded only when asked
        (_die(None, 3, 0.99, overlap=0.55), 0.9, ("apart",), False),  # a box across two dice
        (_die(3, 3, 0.99, overlap=0.2), 0.9, ("apart",), True),
    ],
)
def test_a_die_is_given_a_face_only_at_its_bar_and_with_the_opinions_asked(
    record: DieRecord, bar: float, opinions: tuple[str, ...], given: bool
) -> None:
    assert passes(record, bar=bar, opinions=opinions) is given


def test_a_face_given_where_there_is_no_die_counts_as_wrong_and_rolls_settle_by_the_rules() -> None:
    dice = [_die(1, 1, 0.99), _die(2, 2, 0.99), _die(3, 4, 0.95), _die(None, 5, 0.97), _die(6, 6, 0.5)]
    rolls = [
        # Read 1, 2, 4 for 1, 2, 3: another multiset, but the ace wins with one of a kind either way.
        RollRecord(image="a.jpg", labelled_faces=(1, 2, 3), valid=True, dice=(0, 1, 2)),
        RollRecord(image="b.jpg", labelled_faces=(6,), valid=True, dice=(4,)),
        RollRecord(image="c.jpg", labelled_faces=(6, 6), valid=True, dice=(3, 4)),
    ]
    at_90 = point(dice, rolls, labelled_dice=6, bar=0.9)
    assert (at_90["given"], at_90["given_wrong"], at_90["given_on_no_die"]) == (4, 2, 1)
    assert at_90["wrong"]["per_1000"] == 500.0
    assert at_90["share_given_pct"] == 50.0  # 3 of the 6 labelled dice given (the phantom is not one)
    assert (at_90["rolls_read_valid"], at_90["rolls_settled_wrong"]) == (1, 0)
    at_0 = point(dice, rolls, labelled_dice=6, bar=0.0)
    # c.jpg read (5, 6) for (6, 6): winner 6 either way, but one of a kind against two.
    assert (at_0["rolls_read_valid"], at_0["rolls_settled_wrong"]) == (3, 1)
    at_96 = point(dice, rolls, labelled_dice=6, bar=0.96)
    assert (at_96["given"], at_96["given_wrong"], at_96["given_on_no_die"]) == (3, 1, 1)
    assert settles_as((1, 2, 3)) == settles_as((1, 2, 4)) == (1, 1)


def test_wilson_intervals_match_the_figures_already_published() -> None:
    # docs/history/faces-wrong-rate.md: 6 wrong of 9,034 given, 0.66 per 1,000 (0.30-1.45).
    low, high = wilson(6, 9034) or (0.0, 0.0)
    assert (round(1000 * low, 2), round(1000 * high, 2)) == (0.30, 1.45)
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=1e-4)
    assert wilson(0, 0) is None


def _risk(tmp_path: Path, *sets: str, extra: tuple[str, ...] = ()) -> list[dict[str, object]]:
    result = runner.invoke(app, ["risk", *sets, "--out", str(tmp_path / "r"), "--json", *extra])
    assert result.exit_code == 0, result.output
    return [json.loads(line) for line in result.output.splitlines() if line.startswith("{")]


@needs_models
def test_real_photos_at_the_shipped_bar_give_what_the_shipped_reader_gives(tmp_path: Path) -> None:
    from models.data import load_dataset
    from vision.image import load_image
    from vision.reader import Reader
    from vision.types import Frame

    (rep,) = _risk(tmp_path, str(FIXTURES), extra=("--turns",))
    reader = Reader()
    given = valid = 0
    for item in load_dataset(FIXTURES):
        roll = reader.read(Frame(image=load_image(item.path), frame_id="x"), expected_dice=len(item.faces))
        given += sum(d.face is not None for d in roll.dice)
        valid += roll.verdict.value == "valid"
    variants = rep["variants"]
    peer = {"bar+peer", "bar+peer_sure", "bar+peer_sure+whole_die", "bar+peer_sure+turns_unsure+whole_die",
            "bar+peer_sure+whole_die+apart"} if "pips_peer" in reader.models else set()  # fmt: skip
    assert isinstance(variants, dict) and set(variants) == peer | {
        "bar", "bar+turns", "bar+turns_unsure", "bar+pips", "bar+whole_die", "bar+turns+whole_die",
        "bar+turns_unsure+whole_die", "bar+all", "bar+apart", "bar+whole_die+apart"
    }  # fmt: skip
    # The shipped reader gives what its own variant gives at its own bar (the manifest's, else 0.90).
    shipped = variants[shipped_variant()]["shipped_bar"]
    assert shipped["bar"] == reader.config.validity.min_confidence and shipped["given"] == given
    assert rep["labelled_dice"] == 38 and shipped["rolls_read_valid"] == valid >= 1
    curve = variants["bar"]["curve"]
    shares = [p["share_given_pct"] for p in curve]
    bar_alone = variants["bar"]["shipped_bar"]
    assert shares == sorted(shares, reverse=True) and shares[-1] < shares[0]  # a higher bar gives fewer
    every = variants["bar+all"]["shipped_bar"]["given"]
    assert every <= bar_alone["given"] and shipped["given"] <= bar_alone["given"]  # opinions only take away
    out = tmp_path / "r"
    assert (out / "reader-fixtures.png").stat().st_size > 0
    with gzip.open(out / "reader-fixtures.records.json.gz", "rt", encoding="utf-8") as fh:
        records = json.load(fh)
    assert len(records["dice"]) == rep["detected_dice"] and len(records["rolls"]) == 3
    assert all(d["turns_agree"] is not None and d["whole_die"] is not None for d in records["dice"])


@needs_models
def test_rendered_scenes_are_read_and_two_reports_drawn_on_one_plot(tmp_path: Path) -> None:
    scenes = tmp_path / "see-through"
    (scenes / "labels").mkdir(parents=True)
    for f in SEE_THROUGH.glob("s9700-*"):  # a rendered set's layout: labels/, their images named from there
        shutil.copy(f, scenes / ("labels" if f.suffix == ".json" else "") / f.name)
    (rep,) = _risk(tmp_path, str(scenes), extra=("--label", "a", "--limit", "2"))
    assert rep["images"] == 2 and rep["labelled_dice"] == 20
    assert {"bar", "bar+pips", "bar+whole_die", "bar+apart", "bar+whole_die+apart"} <= set(
        rep["variants"]  # type: ignore[arg-type]
    )  # and the second model's variants where the manifest lists one
    report_path = tmp_path / "r" / "a-see-through.json"
    png = tmp_path / "both.png"
    both = runner.invoke(app, ["risk-plot", f"one={report_path}", f"two={report_path}", "--out", str(png)])
    assert both.exit_code == 0, both.output
    assert png.stat().st_size > 0


def test_a_missing_set_or_report_is_said_before_anything_is_read(tmp_path: Path) -> None:
    missing = runner.invoke(app, ["risk", str(tmp_path / "nowhere"), "--out", str(tmp_path)])
    assert missing.exit_code == 2 and "dataset not found" in missing.output
    not_a_report = tmp_path / "x.json"
    not_a_report.write_text("[]", encoding="utf-8")
    bad = runner.invoke(app, ["risk-plot", str(not_a_report), "--out", str(tmp_path / "p.png")])
    assert bad.exit_code == 2 and "is not a risk report" in bad.output


def test_a_die_the_labels_do_not_score_is_neither_given_nor_wrong_but_its_roll_still_counts() -> None:
    # A rendered die under 30 % visible (truth 0) read as a 4: not a face on no die, not a labelled die.
    dice = [_die(2, 2, 0.99), _die(0, 4, 0.99)]
    rolls = [RollRecord(image="a.jpg", labelled_faces=(2,), valid=True, dice=(0, 1))]
    at_90 = point(dice, rolls, labelled_dice=1, bar=0.9)
    assert (at_90["given"], at_90["given_wrong"], at_90["given_on_no_die"]) == (1, 0, 0)
    assert at_90["rolls_read_valid"] == 1  # the reader gave both faces: the roll is read valid


def test_sets_pool_into_one_report_and_a_tuning_curve_gives_a_bar_to_a_manifest(tmp_path: Path) -> None:
    from lab.risk import records_json

    one = [_die(1, 1, 0.99), _die(2, 3, 0.95)]  # one wrong at 0.95
    two = [_die(4, 4, 0.999), _die(None, 6, 0.97)]  # a face on no die at 0.97
    paths = []
    for k, dice in enumerate((one, two)):
        rolls = [RollRecord(image=f"{k}.jpg", labelled_faces=(1, 2), valid=True, dice=(0, 1))]
        path = tmp_path / f"s{k}.records.json"
        path.write_text(json.dumps(records_json(dice, rolls, labelled_dice=2)), encoding="utf-8")
        paths.append(str(path))
    out = tmp_path / "pooled.json"
    pooled = runner.invoke(app, ["risk-pool", *paths, "--bar", "0.9", "--out", str(out)])
    assert pooled.exit_code == 0, pooled.output
    rep = json.loads(out.read_text(encoding="utf-8"))
    shipped = rep["variants"]["bar"]["shipped_bar"]
    assert rep["labelled_dice"] == 4 and (shipped["given"], shipped["given_wrong"]) == (4, 2)
    assert shipped["rolls_read_valid"] == 2  # each roll's dice found in its own set after pooling
    manifest = tmp_path / "m.json"
    manifest.write_text(json.dumps({"models": {"pips": {"file": "x.onnx"}}}), encoding="utf-8")
    found = runner.invoke(app, ["risk-bar", str(out), "--target-per-1000", "0", "--manifest", str(manifest)])
    assert found.exit_code == 0, found.output
    # The lowest bar with no face given wrong: above the wrong 0.95 and the phantom's 0.97.
    assert json.loads(manifest.read_text(encoding="utf-8"))["models"]["pips"]["sure_bar"] == 0.98
    bad = runner.invoke(app, ["risk-pool", str(manifest), "--bar", "0.9", "--out", str(out)])
    assert bad.exit_code == 2 and "is not a risk records file" in bad.output
