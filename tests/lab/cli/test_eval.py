"""`throwbox lab eval`: --skip and --limit pick the images, --manifest the weights; a bad manifest is an
error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from lab.cli import app
from vision.onnx_session import MANIFEST_PATH, manifest_lists
from vision.pips.classifier import SECOND_LOOK_BELOW

FIXTURES = Path(__file__).resolve().parents[2] / "vision" / "fixtures"  # three real photos, YOLO labels
runner = CliRunner()

pytestmark = pytest.mark.skipif(
    not manifest_lists("detector", "pips", "die_state"),
    reason="models/manifest.json lists no detector, face and die-state models (models/train_*.py)",
)


def _eval(tmp_path: Path, *extra: str) -> dict[str, object]:
    result = runner.invoke(app, ["eval", str(FIXTURES), "--json", "--plot", str(tmp_path / "e.png"), *extra])
    assert result.exit_code == 0, result.output
    summary: dict[str, object] = json.loads(result.output)
    return summary


def test_skip_and_limit_choose_which_images_are_scored(tmp_path: Path) -> None:
    every = _eval(tmp_path)
    assert every["images"] == 3
    last_two = _eval(tmp_path, "--skip", "1")
    second = _eval(tmp_path, "--skip", "1", "--limit", "1")
    first = _eval(tmp_path, "--limit", "1")
    assert last_two["images"] == 2 and second["images"] == 1 and first["images"] == 1
    assert first["gt_dice"] + last_two["gt_dice"] == every["gt_dice"]  # type: ignore[operator]
    result = runner.invoke(app, ["eval", str(FIXTURES), "--skip", "3", "--plot", str(tmp_path / "e.png")])
    assert result.exit_code == 2 and "no labelled images" in result.output


def test_failures_are_listed_and_drawn_and_go_only_with_the_readers_figures(tmp_path: Path) -> None:
    summary = _eval(tmp_path, "--failures", str(tmp_path / "fail"))
    written = summary["failures_written"]
    assert isinstance(written, dict) and Path(written["sheet"]).is_file()
    lines = (tmp_path / "fail" / "failures.jsonl").read_text(encoding="utf-8").splitlines()
    assert sum(written["by_kind"].values()) == len(lines)
    # Every labelled die not matched is one "missed" line; every detection matched to none, one "false".
    kinds = [json.loads(line)["kind"] for line in lines]
    assert kinds.count("missed") == summary["gt_dice"] - summary["matched_dice"]  # type: ignore[operator]
    assert kinds.count("false") == summary["detected_dice"] - summary["matched_dice"]  # type: ignore[operator]
    plot = str(tmp_path / "v.png")
    both = runner.invoke(
        app, ["eval", str(FIXTURES), "--verdicts", "--failures", str(tmp_path), "--plot", plot]
    )
    assert both.exit_code == 2 and "--failures is for the reader's figures" in both.output


def test_a_failures_folder_that_cannot_be_written_is_said_and_the_figures_are_not_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    a_file = tmp_path / "taken"
    a_file.write_text("not a folder", encoding="utf-8")
    plot = str(tmp_path / "e.png")
    early = runner.invoke(app, ["eval", str(FIXTURES), "--failures", str(a_file), "--plot", plot])
    assert early.exit_code == 2 and "cannot write the failures to" in early.output  # before any image is read
    assert a_file.read_text(encoding="utf-8") == "not a folder"

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError("No space left on device")

    monkeypatch.setattr("lab.failures.write", full_disk)
    late = runner.invoke(
        app, ["eval", str(FIXTURES), "--json", "--failures", str(tmp_path / "f"), "--plot", plot]
    )
    assert late.exit_code == 1
    assert "the failures were not written" in late.output and "No space left" in late.output
    summary = json.loads(late.output.splitlines()[0])  # the figures were printed all the same
    assert summary["images"] == 3 and "error" in summary["failures_written"]


@pytest.mark.parametrize("mode", [[], ["--verdicts"], ["--layout-moves"]])
def test_a_plot_that_cannot_be_written_is_refused_before_the_run(tmp_path: Path, mode: list[str]) -> None:
    """The plot is written last: a path where it cannot be is said at once (exit 2), not after the run."""
    a_file = tmp_path / "taken"
    a_file.write_text("not a folder", encoding="utf-8")
    for plot, why in ((tmp_path, "is a folder"), (a_file / "e.png", "taken")):
        result = runner.invoke(app, ["eval", str(FIXTURES), *mode, "--plot", str(plot)])
        assert result.exit_code == 2, result.output
        assert f"cannot write the plot to {plot}" in result.output and why in result.output
        assert "detection" not in result.output and "verdict accuracy" not in result.output
    assert a_file.read_text(encoding="utf-8") == "not a folder"


def test_a_misses_folder_that_cannot_be_made_is_refused_before_the_run(tmp_path: Path) -> None:
    a_file = tmp_path / "taken"
    a_file.write_text("not a folder", encoding="utf-8")
    args = ["eval", str(FIXTURES), "--verdicts", "--misses", str(a_file), "--plot", str(tmp_path / "v.png")]
    result = runner.invoke(app, args)
    assert result.exit_code == 2 and f"cannot write the misses to {a_file}" in result.output


def test_a_manifest_given_is_the_one_read_and_a_wrong_checksum_is_refused(tmp_path: Path) -> None:
    raw = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    for entry in raw["models"].values():  # the same weights, named by absolute path from elsewhere
        entry["file"] = (MANIFEST_PATH.parent / entry["file"]).as_posix()
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps(raw), encoding="utf-8")
    assert _eval(tmp_path, "--manifest", str(manifest))["detection"] == _eval(tmp_path)["detection"]

    raw["models"]["detector"]["sha256"] = "0" * 64
    manifest.write_text(json.dumps(raw), encoding="utf-8")
    result = runner.invoke(
        app, ["eval", str(FIXTURES), "--manifest", str(manifest), "--plot", str(tmp_path / "e.png")]
    )
    assert result.exit_code == 2
    assert "cannot load the models" in result.output and "SHA-256" in result.output


def _as_synth_set(src: Path, root: Path) -> Path:
    """The committed labelled frames in `src` laid out as a `throwbox lab synth` folder (images/, labels/)."""
    (root / "images").mkdir(parents=True)
    (root / "labels").mkdir()
    for label in sorted(src.glob("*.json")):
        doc = json.loads(label.read_text(encoding="utf-8"))
        (root / "images" / doc["image"]).write_bytes((src / doc["image"]).read_bytes())
        doc["image"] = f"images/{doc['image']}"
        (root / "labels" / label.name).write_text(json.dumps(doc), encoding="utf-8")
    return root


def _judge_set(tmp_path: Path) -> Path:
    """The six committed judge frames as a `throwbox lab synth` folder."""
    return _as_synth_set(FIXTURES / "judge", tmp_path / "judge-set")


def test_verdicts_report_wrong_settlements_and_split_by_camera(tmp_path: Path) -> None:
    root = _judge_set(tmp_path)
    plot = str(tmp_path / "v.png")
    result = runner.invoke(app, ["eval", str(root), "--verdicts", "--oracle-boxes", "--json", "--plot", plot])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["scenes"] == 6
    by_camera = summary["by_camera"]
    assert set(by_camera) <= {"top_down", "oblique"}
    assert sum(k["scenes"] for k in by_camera.values()) == 6
    # Oracle boxes and true faces: every roll read valid is read right.
    assert summary["rolls_read_valid"] >= 1
    assert summary["rolls_read_valid_with_a_wrong_die"] == 0
    # ... so a roll settles wrong only if it was not a valid roll
    conf = summary["confusion_truth_rows_read_cols"]
    assert summary["rolls_read_valid_settled_wrong"] == conf["invalid"]["valid"] + conf["void"]["valid"]
    table = runner.invoke(app, ["eval", str(root), "--verdicts", "--oracle-boxes", "--plot", plot])
    assert table.exit_code == 0, table.output
    assert "by camera" in table.output and "rolls read valid with a wrong or unmatched die" in table.output
    assert "rolls read valid that settle wrong" in table.output
    assert "die off table, the throw box wholly in view" in table.output
    assert "by camera and frame" in table.output
    # Every committed frame is a still one (the label's render.degradation.motion_px is 0).
    frames = summary["by_camera_and_frame"]
    assert {key.split("/")[1] for key in frames} == {"still"}
    assert sum(k["scenes"] for k in frames.values()) == 6
    # ... and by the generator's scenario (the six committed frames: normal, cocked, wedged, stacked and two
    # off the table); a scenario with no valid roll shows "-" for the rates of valid rolls, not "None%"
    scenarios = summary["by_scenario"]
    assert list(scenarios) == ["normal", "cocked", "wedged", "stacked", "off_table"]
    assert scenarios["off_table"]["scenes"] == 2 and scenarios["normal"]["valid_rolls"] == 1
    assert "by scenario" in table.output and "| off_table | 2 | 0 | 0 | - | - | 0 |" in table.output
    assert "None" not in table.output


def test_verdicts_split_frames_by_the_labels_camera_shake(tmp_path: Path) -> None:
    root = _judge_set(tmp_path)
    labels = sorted((root / "labels").glob("*.json"))
    shaken, untold, told_null = labels[0], labels[1], labels[2]
    for label, degradation in ((shaken, "shake"), (untold, "drop"), (told_null, "null")):
        doc = json.loads(label.read_text(encoding="utf-8"))
        if degradation == "shake":
            doc["render"]["degradation"]["motion_px"] = 6
        elif degradation == "drop":
            del doc["render"]["degradation"]
        else:
            doc["render"]["degradation"] = None
        label.write_text(json.dumps(doc), encoding="utf-8")
    plot = str(tmp_path / "v.png")
    result = runner.invoke(app, ["eval", str(root), "--verdicts", "--oracle-boxes", "--json", "--plot", plot])
    assert result.exit_code == 0, result.output
    frames = json.loads(result.output)["by_camera_and_frame"]
    by_frame: dict[str, int] = {}
    for key, k in frames.items():
        by_frame[key.split("/")[1]] = by_frame.get(key.split("/")[1], 0) + k["scenes"]
    assert by_frame == {"motion_blur": 1, "unknown": 2, "still": 3}


def test_the_second_look_bar_can_be_weighed_and_is_recorded(tmp_path: Path) -> None:
    root = _judge_set(tmp_path)
    plot = str(tmp_path / "v.png")
    docs = {}
    for bar in (None, 1.01):
        extra = [] if bar is None else ["--second-look-below", str(bar)]
        result = runner.invoke(app, ["eval", str(root), "--verdicts", "--json", "--plot", plot, *extra])
        assert result.exit_code == 0, result.output
        docs[bar] = json.loads(result.output)
    assert docs[None]["second_look_below"] == SECOND_LOOK_BELOW  # the shipped bar
    assert docs[1.01]["second_look_below"] == 1.01  # every die looked at again
    # the face and detection scores (no --verdicts) record the bar they read with, too
    assert _eval(tmp_path)["second_look_below"] == SECOND_LOOK_BELOW
    assert _eval(tmp_path, "--second-look-below", "1.01")["second_look_below"] == 1.01
    # ... and the detector's score threshold: DetectorConfig's, or the manifest entry's own (a candidate's)
    assert docs[None]["detector_score_threshold"] == _eval(tmp_path)["detector_score_threshold"] == 0.35
    manifest = json.loads(MANIFEST_PATH.read_text(encoding="utf-8"))
    for entry in manifest["models"].values():
        entry["file"] = str(MANIFEST_PATH.parent / entry["file"])
    manifest["models"]["detector"]["score_threshold"] = 0.3
    own = tmp_path / "own-threshold.json"
    own.write_text(json.dumps(manifest), encoding="utf-8")
    result = runner.invoke(
        app, ["eval", str(root), "--verdicts", "--json", "--plot", plot, "--manifest", str(own)]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["detector_score_threshold"] == 0.3
    too_high = ["eval", str(root), "--verdicts", "--second-look-below", "2", "--plot", plot]
    refused = runner.invoke(app, too_high)
    assert refused.exit_code == 2


def _layout_set(tmp_path: Path) -> Path:
    """The four committed dealer's-move frames (tests/fixtures/layout) as a `throwbox lab synth` folder."""
    return _as_synth_set(Path(__file__).resolve().parents[2] / "fixtures" / "layout", tmp_path / "layout-set")


@pytest.mark.skipif(not manifest_lists("detector", "pips", "die_state"), reason="models not committed")
def test_layout_moves_scores_the_dealers_move_check(tmp_path: Path) -> None:
    root = _layout_set(tmp_path)
    plot = tmp_path / "moves.png"
    result = runner.invoke(app, ["eval", str(root), "--layout-moves", "--json", "--plot", str(plot)])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["moves"] == 4
    assert summary["plot"] == str(plot) and plot.stat().st_size > 1000
    assert {k: v["moves"] for k, v in summary["by_kind"].items()} == dict.fromkeys(
        ("none", "wrong_box", "missing", "extra"), 1
    )
    alerted_right = summary["by_kind"]["none"]["alerts"]
    assert summary["right_moves_alerted"] == alerted_right == len(summary["scenes_right_move_alerted"])
    table = runner.invoke(app, ["eval", str(root), "--layout-moves", "--plot", str(plot)])
    assert table.exit_code == 0, table.output
    assert "right moves with a dealer_error (false accusations)" in table.output
    assert "| wrong_box | 1 |" in table.output


def test_layout_moves_says_when_no_scene_records_a_move(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(_judge_set(tmp_path)), "--layout-moves"])
    assert result.exit_code == 2
    assert "no scene" in result.output and "records a dealer's move" in result.output


def test_layout_moves_refuses_the_verdict_options(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(tmp_path), "--layout-moves", "--verdicts"])
    assert result.exit_code == 2 and "--layout-moves goes alone" in result.output


@pytest.mark.skipif(not manifest_lists("detector", "pips", "die_state"), reason="models not committed")
def test_extra_rolls_decides_each_extra_roll_as_the_live_loop(tmp_path: Path) -> None:
    """Two freshly rendered Extra Roll scenes (kept dice in the winner's box, the rest rethrown)."""
    root = tmp_path / "extra"
    made = runner.invoke(
        app,
        [
            "synth",
            str(root),
            "--scenes",
            "2",
            "--seed",
            "7",
            "--mix",
            "extra_roll=1",
            "--width",
            "640",
            "--height",
            "480",
            "--workers",
            "1",
        ],
    )
    assert made.exit_code == 0, made.output
    result = runner.invoke(app, ["eval", str(root), "--extra-rolls", "--json"])
    assert result.exit_code == 0, result.output
    s = json.loads(result.output)
    assert s["extra_rolls"] + len(s["scenes_left_out"]) == 2 and s["extra_rolls"] >= 1
    assert s["models"]["detector"] and s["settled_wrong"] == len(s["scenes_settled_wrong"])
    table = runner.invoke(app, ["eval", str(root), "--extra-rolls"])
    assert table.exit_code == 0 and "right Extra Rolls" in table.output


def test_extra_rolls_says_when_no_scene_has_kept_dice(tmp_path: Path) -> None:
    result = runner.invoke(app, ["eval", str(_judge_set(tmp_path)), "--extra-rolls"])
    assert result.exit_code == 2 and "is a right Extra Roll" in result.output
    both = runner.invoke(app, ["eval", str(tmp_path), "--extra-rolls", "--layout-moves"])
    assert both.exit_code == 2 and "--extra-rolls goes alone" in both.output


def test_calibrated_reads_each_scene_with_its_own_camera(tmp_path: Path) -> None:
    # The committed oblique frame (a camera leaning 39 degrees): as a photo the face stage is unsure of
    # dice the calibrated read cuts from the die-top plane and reads (tests/vision/test_rectified_crops.py).
    root = _as_synth_set(FIXTURES / "oblique", tmp_path / "oblique-set")
    plot = str(tmp_path / "o.png")
    as_photo = runner.invoke(app, ["eval", str(root), "--json", "--plot", plot])
    calibrated = runner.invoke(app, ["eval", str(root), "--calibrated", "--json", "--plot", plot])
    assert as_photo.exit_code == 0 and calibrated.exit_code == 0, as_photo.output + calibrated.output
    photo, table = json.loads(as_photo.output), json.loads(calibrated.output)
    assert photo["calibrated"] is False and table["calibrated"] is True
    assert (
        table["face_accuracy_pct"]["uncertain_of_matched"]
        < photo["face_accuracy_pct"]["uncertain_of_matched"]
    )


def test_the_readers_figures_on_a_synthetic_set_are_split_by_camera_and_camera_shake(tmp_path: Path) -> None:
    root = _judge_set(tmp_path)
    labels = sorted((root / "labels").glob("*.json"))
    doc = json.loads(labels[0].read_text(encoding="utf-8"))
    doc["render"]["degradation"]["motion_px"] = 6  # one frame the generator shook
    labels[0].write_text(json.dumps(doc), encoding="utf-8")
    result = runner.invoke(app, ["eval", str(root), "--json", "--plot", str(tmp_path / "g.png")])
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    groups = summary["by_camera_and_frame"]
    frames: dict[str, int] = {}
    for key, figures in groups.items():
        frames[key.split("/")[1]] = frames.get(key.split("/")[1], 0) + figures["images"]
    assert frames == {"motion_blur": 1, "still": 5}
    assert sum(g["matched_dice"] for g in groups.values()) == summary["matched_dice"]
    # Photos carry no truth of camera or shake: no split.
    assert "by_camera_and_frame" not in _eval(tmp_path)


def test_the_readers_figures_count_the_rolls_read_valid_that_settle_wrong(tmp_path: Path) -> None:
    """With every label's faces moved by one pip, each roll the reader calls valid pays wrong by the labels,
    and the count names them; with the true labels none does (the committed frames)."""
    root = _judge_set(tmp_path)
    plot = str(tmp_path / "s.png")
    honest = json.loads(runner.invoke(app, ["eval", str(root), "--json", "--plot", plot]).output)["rolls"]
    assert honest["read_valid"] >= 1 and honest["read_valid_settled_wrong"] == 0
    for label in (root / "labels").glob("*.json"):
        doc = json.loads(label.read_text(encoding="utf-8"))
        for die in doc["dice"]:
            if die.get("face"):
                die["face"] = die["face"] % 6 + 1
        label.write_text(json.dumps(doc), encoding="utf-8")
    moved = json.loads(runner.invoke(app, ["eval", str(root), "--json", "--plot", plot]).output)["rolls"]
    assert moved["read_valid"] == honest["read_valid"]
    assert moved["read_valid_settled_wrong"] == moved["read_valid"] == len(moved["settled_wrong_images"])
    text = runner.invoke(app, ["eval", str(root), "--plot", plot]).output
    assert f"rolls read valid that settle wrong (faces not the labels'): {moved['read_valid']} of" in text


def test_calibrated_needs_a_synthetic_set_and_goes_without_the_other_modes(tmp_path: Path) -> None:
    plot = str(tmp_path / "e.png")
    photos = runner.invoke(app, ["eval", str(FIXTURES), "--calibrated", "--plot", plot])
    assert photos.exit_code == 2 and "needs a synthetic set" in photos.output
    root = _judge_set(tmp_path)
    both = runner.invoke(app, ["eval", str(root), "--calibrated", "--verdicts", "--plot", plot])
    assert both.exit_code == 2 and "always read with the scene's calibration" in both.output


def test_verdicts_read_the_dice_called_cocked_as_the_reader_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`throwbox lab eval --verdicts` hands the reader's face model for cocked dice (`pips_cocked`) to every
    scene's second looks, as `Reader.read` uses it, and the same reader for the closer look: the figures are
    the shipped reader's."""
    import lab.judge_eval.evaluate as evaluate

    given: list[tuple[object, object]] = []
    original = evaluate.record_scene

    def recording(*args: object, **kwargs: object) -> object:
        given.append((kwargs.get("read_cocked"), kwargs.get("read_turned")))
        return original(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(evaluate, "record_scene", recording)
    root = _as_synth_set(FIXTURES / "cocked_chips", tmp_path / "cocked-set")
    result = runner.invoke(
        app, ["eval", str(root), "--verdicts", "--json", "--plot", str(tmp_path / "c.png")]
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output)["models"]["pips_cocked"] == "pips_facenet_2026nov"
    assert len(given) == 3
    for read_cocked, read_turned in given:
        assert read_cocked is not None and read_cocked.model.spec.name == "pips_cocked"  # type: ignore[attr-defined]
        assert read_turned.keywords == {"turned": True}  # type: ignore[attr-defined]
        assert read_turned.func is read_cocked  # type: ignore[attr-defined]


def test_label_overrides_change_the_figures_by_the_corrected_labels_only(tmp_path: Path) -> None:
    plain = _eval(tmp_path, "--limit", "1")
    # The first photo's first die is labelled 6; call it a 1: a die read right by the labels is now wrong.
    fix = tmp_path / "fix.json"
    fix.write_text(json.dumps([{"image": "IMG_20191208_111328.jpg", "die": 1, "labelled": 6, "face": 1}]))
    fixed = _eval(tmp_path, "--limit", "1", "--label-overrides", str(fix))
    assert fixed["label_overrides"] == [
        {"image": "IMG_20191208_111328.jpg", "die": 1, "labelled": 6, "face": 1, "why": ""}
    ]
    key = "confusion_gt_rows_read_cols_1_to_6_and_uncertain"
    before, after = plain[key], fixed[key]
    assert isinstance(before, list) and isinstance(after, list)
    assert sum(map(sum, before)) == sum(map(sum, after))  # the same dice, one moved from row 6 to row 1
    assert sum(before[5]) - 1 == sum(after[5]) and sum(before[0]) + 1 == sum(after[0])
    wrong = fix.with_name("wrong.json")
    wrong.write_text(json.dumps([{"image": "IMG_20191208_111328.jpg", "die": 1, "labelled": 5, "face": 1}]))
    refused = runner.invoke(
        app, ["eval", str(FIXTURES), "--label-overrides", str(wrong), "--plot", str(tmp_path / "e.png")]
    )
    assert refused.exit_code == 2 and "labelled 6, not 5" in refused.output
    verdicts = runner.invoke(
        app,
        [
            "eval",
            str(FIXTURES),
            "--verdicts",
            "--label-overrides",
            str(fix),
            "--plot",
            str(tmp_path / "v.png"),
        ],
    )
    assert verdicts.exit_code == 2 and "--label-overrides is for the reader's figures" in verdicts.output
