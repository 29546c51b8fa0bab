"""The side-by-side judge (lab/judge.py): its rule applied again to reports it replaced the scripts of gives
the verdicts those scripts gave; bad arguments are refused with a message; the candidate manifest."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pytest

from lab import face_rates
from lab.judge import (
    Check,
    JudgeError,
    candidate_manifest,
    judge,
    main,
    parse_check,
    parse_field,
    parse_set,
)

REPORTS = Path(__file__).resolve().parents[2] / "reports" / "reader"

# The rules the removed scripts applied (faces-lite-5/6 verdict.py, detector-lite/verdict.py), as checks.
FACES_6 = [
    Check("nellbyler", "face_accuracy_pct.final_of_gt_dice", up=True),
    Check("nellbyler", "faces_wrong", up=False),
    Check("matteop65", "face_accuracy_pct.final_of_matched", up=True),
    Check("matteop65", "faces_wrong", up=False),
    Check("clearfresh", "face_accuracy_pct.final_of_gt_dice", up=True),
    Check("clearfresh", "faces_wrong", up=False),
    Check("clearfresh2", "face_accuracy_pct.final_of_gt_dice", up=True),
    Check("clearfresh2", "faces_wrong", up=False),
]
DETECTOR = [
    Check("wide", "good_read_exactly", up=True),
    Check("wide", "rolls_read_valid_settled_wrong", up=False),
    Check("usual", "good_read_exactly", up=True),
    Check("usual", "rolls_read_valid_settled_wrong", up=False),
    Check("nellbyler", "detection.recall_pct", up=True),
    Check("nellbyler", "detection.precision_pct", up=True),
    Check("matteop65", "detection.recall_pct", up=True),
    Check("matteop65", "detection.precision_pct", up=True),
]


STATE = [
    Check("held", "recall_pct.cocked_flagged", up=True),
    Check("held", "recall_pct.cocked_read_by_rule", up=True),
    Check("held", "recall_pct.die_on_die_invalid_any_reason", up=True),
    Check("held", "valid_no_decision_pct", up=False),
    Check("held", "valid_called_invalid_or_void_pct", up=False),
    Check("held", "rolls_read_valid_settled_wrong", up=False),
] + [
    Check(real, figure, up=up)
    for real in ("nellbyler", "matteop65")
    for figure, up in (
        ("detection.recall_pct", True),
        ("detection.precision_pct", True),
        ("face_accuracy_pct.final_of_gt_dice", True),
        ("face_accuracy_pct.final_of_matched", True),
        ("face_accuracy_pct.uncertain_of_matched", False),
        ("faces_wrong", False),
        ("rolls.exact_valid_pct", True),
        ("rolls.read_valid_settled_wrong", False),
    )
]


def kept_verdicts(path: Path) -> list[bool]:
    """The pass/fail column of the first table of a report's kept verdict (verdict.md or the judge's log)."""
    rows: list[bool] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("| ") and rows:
            break
        cell = line.rstrip(" |").rsplit("|", 1)[-1].strip().lower()
        if cell in ("pass", "**fail**", "fail"):
            rows.append(cell == "pass")
    return rows


@pytest.mark.parametrize(
    ("report", "kept_in", "checks", "shipped_tag"),
    [
        ("faces-lite-6", "verdict.md", FACES_6, "old"),
        ("faces-lite-5", "verdict.md", FACES_6, "old"),
        ("faces-lite-3", "verdict.md", FACES_6[:6], "old"),
        ("faces-lite-2", "verdict.md", FACES_6[:6], "old"),
        ("detector-lite", "verdict.md", DETECTOR, "shipped"),
        ("state-lite", "judge-2026-12-06.log", STATE, "shipped"),
    ],
)
def test_the_judge_gives_again_the_verdicts_the_reports_kept(
    report: str, kept_in: str, checks: list[Check], shipped_tag: str
) -> None:
    results, passed = judge(
        folder=REPORTS / report, checks=checks, max_bench_ratio=1.2, shipped_tag=shipped_tag, cand_tag="cand"
    )
    kept = kept_verdicts(REPORTS / report / kept_in)
    assert [r.passed for r in results] == kept
    assert passed == all(kept)


def test_verdict_only_prints_the_rule_and_exits_1_when_it_fails(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["--verdict-only", "--out", str(REPORTS / "faces-lite-6"), "--shipped-tag", "old"]
    argv += ["--check", "matteop65:faces_wrong:down"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert re.search(r"\| matteop65: faces_wrong \(lower is better\) \| 2 \| 3 \| \*\*fail\*\* \|", out)
    assert "FAILED: register nothing" in out


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("nellbyler", "NAME=PATH"),  # no path
        ("n=/data/x,colour=red", "unknown option 'colour=red'"),
        ("n=$THROWBOX_NOT_SET_ANYWHERE/real", "set the variable"),  # an unset variable is not a path
    ],
)
def test_a_bad_set_is_refused_with_what_is_wrong(text: str, message: str) -> None:
    with pytest.raises(JudgeError, match=re.escape(message)):
        parse_set(text)


def test_a_set_expands_the_data_root_and_reads_its_options(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THROWBOX_DATA_ROOT", "/srv/data")
    s = parse_set("nb=$THROWBOX_DATA_ROOT/real/nb,split=test,overrides=fix.json,verdicts")
    assert s.path == Path("/srv/data/real/nb")
    assert s.eval_args() == [
        "lab", "eval", "/srv/data/real/nb", "--json", "--split", "test", "--label-overrides", "fix.json",
        "--verdicts",
    ]  # fmt: skip


@pytest.mark.parametrize("text", ["nb:faces_wrong", "nb:faces_wrong:sideways", ":faces_wrong:up"])
def test_a_bad_check_is_refused(text: str) -> None:
    with pytest.raises(JudgeError, match="SET:FIGURE:up"):
        parse_check(text)


def test_a_figure_the_json_lacks_is_named(tmp_path: Path) -> None:
    for tag in ("shipped", "cand"):
        (tmp_path / f"s-{tag}.json").write_text(json.dumps({"detection": {"recall_pct": 1.0}}))
    with pytest.raises(JudgeError, match=re.escape("no 'detection.precision_pct'")):
        judge(
            folder=tmp_path,
            checks=[Check("s", "detection.precision_pct", up=True)],
            max_bench_ratio=0.0,
            shipped_tag="shipped",
            cand_tag="cand",
        )


def test_the_candidate_manifest_changes_one_slot_and_pins_the_new_file(tmp_path: Path) -> None:
    shipped_dir = tmp_path / "models"
    (shipped_dir / "pips_x").mkdir(parents=True)
    shipped = shipped_dir / "manifest.json"
    other = {"file": "det/d.onnx", "sha256": "ab", "version": "v1"}
    shipped.write_text(json.dumps({"models": {"pips": {"file": "pips_x/p.onnx"}, "detector": other}}))
    onnx = tmp_path / "run" / "pips_new.onnx"
    onnx.parent.mkdir()
    onnx.write_bytes(b"not really a model")

    made = candidate_manifest(shipped=shipped, slot="pips", onnx=onnx, work=tmp_path / "cand")

    doc = json.loads(made.read_text())
    assert doc["models"]["detector"] == other
    assert doc["models"]["pips"]["file"] == "pips_new.onnx"
    assert doc["models"]["pips"]["version"] == "candidate"
    assert doc["models"]["pips"]["sha256"] == hashlib.sha256(b"not really a model").hexdigest()
    assert (tmp_path / "cand" / "pips_x").resolve() == (shipped_dir / "pips_x").resolve()
    with pytest.raises(JudgeError, match="no model slot 'faces'"):
        candidate_manifest(shipped=shipped, slot="faces", onnx=onnx, work=tmp_path / "cand2")


def test_a_new_slot_starts_as_a_copy_and_takes_the_fields_given(tmp_path: Path) -> None:
    """How the fourth faces try made its `pips_second` candidates (a copy of `pips`, weight and bar set)."""
    shipped = tmp_path / "manifest.json"
    shipped.write_text(json.dumps({"models": {"pips": {"file": "p.onnx", "input_size_hw": [64, 64]}}}))
    onnx = tmp_path / "lite.onnx"
    onnx.write_bytes(b"lite")
    fields = dict(parse_field(f) for f in ("second_weight=0.5", "second_accept=0.9"))
    made = candidate_manifest(
        shipped=shipped, slot="pips_second", onnx=onnx, work=tmp_path / "c", from_slot="pips", fields=fields
    )
    doc = json.loads(made.read_text())["models"]
    assert doc["pips"] == {"file": "p.onnx", "input_size_hw": [64, 64]}
    assert doc["pips_second"]["input_size_hw"] == [64, 64]
    assert (doc["pips_second"]["file"], doc["pips_second"]["second_weight"]) == ("lite.onnx", 0.5)
    assert doc["pips_second"]["second_accept"] == 0.9


def test_face_rates_gives_again_the_table_the_report_kept(capsys: pytest.CaptureFixture[str]) -> None:
    folder = REPORTS / "faces-wrong-rate"
    assert face_rates.main([str(folder / "clearbig-old.json"), str(folder / "clearbig-cand.json")]) == 0
    assert capsys.readouterr().out == (folder / "rates.md").read_text(encoding="utf-8")


def test_wilson_interval_holds_the_rate_and_is_the_whole_range_for_nothing() -> None:
    lo, hi = face_rates.wilson(k=6, n=9034)
    assert lo < 6 / 9034 < hi
    assert (round(1000 * lo, 2), round(1000 * hi, 2)) == (0.30, 1.45)  # rates.md, clearbig-old
    assert face_rates.wilson(k=0, n=0) == (0.0, 1.0)
