"""Round clips (datasets.synth.round_clips): a whole round rendered, its truth consistent with the rules."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import pytest

from calibration.camera import Camera, CameraIntrinsics, CameraPose
from calibration.layout import ThrowBoxLayout
from datasets.format import scene_from_dict
from datasets.synth.generator import GeneratorConfig
from datasets.synth.render import SceneRenderer
from datasets.synth.round_clips import (
    MOVES,
    ROUND_FORMAT,
    SKIN_BGR,
    draw_hand,
    hand_at,
    hand_path,
    make_round,
    plan_round,
)
from datasets.synth.scenarios import winning_face

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "round_clips" / "r0840-000000"


def frames_in(path: Path) -> list[np.ndarray]:
    cap = cv2.VideoCapture(str(path))
    out = []
    while True:
        ok, image = cap.read()
        if not ok:
            break
        out.append(image)
    cap.release()
    return out


def check_round(folder: Path, doc: dict[str, Any], size_wh: tuple[int, int]) -> None:
    """Everything round.json says agrees with the rules of the move and with the clips."""
    assert doc["format"] == ROUND_FORMAT
    first = doc["first_roll"]
    faces = first["faces"]
    n = doc["expected_dice"]
    assert len(faces) == n and first["winner"] == winning_face(faces)
    assert first["match_count"] == faces.count(first["winner"]) >= 2
    assert 0 < first["release_frame"] < first["at_rest_frame"] < first["frames"]
    final = scene_from_dict(first["final"])
    assert list(final.faces) == faces and all(d.layout_box is None for d in final.dice)
    winners = [i for i, f in enumerate(faces) if f == first["winner"]]
    for kind in MOVES:
        move = doc["moves"][kind]
        lm = move["layout_move"]
        moved, box = lm["moved"], lm["moved_to"]
        assert lm["first_faces"] == faces and lm["winner"] == first["winner"]
        assert lm["error"] == ("none" if kind == "correct" else kind)
        if kind == "missing":
            assert len(moved) == len(winners) - 1 and set(moved) < set(winners)
        elif kind == "extra":
            (other,) = set(moved) - set(winners)
            assert set(winners) < set(moved) and faces[other] != first["winner"]
        else:
            assert moved == winners
        assert (box != first["winner"]) == (kind == "wrong_box")
        after = scene_from_dict(move["final"])
        # Each moved die rests in the box it was put in showing the face it showed; the others stay put.
        assert [d.layout_box for d in after.dice] == [box if i in moved else None for i in range(n)]
        assert list(after.faces) == faces
        assert 0 < move["hand_frames"][0] < move["hand_frames"][1] < move["frames"] - 1
    extra = doc["extra_roll"]
    right = doc["moves"]["correct"]["layout_move"]["moved"]
    assert extra["kept"] == right and extra["thrown"] == [i for i in range(n) if i not in right]
    after = scene_from_dict(extra["final"])
    assert [d.layout_box for d in after.dice] == [first["winner"] if i in right else None for i in range(n)]
    assert extra["thrown_faces"] == [after.dice[i].face for i in extra["thrown"]]
    assert extra["new_matches"] == extra["thrown_faces"].count(first["winner"])
    assert extra["final_count"] == len(right) + extra["new_matches"]
    assert all(after.dice[i].kept for i in right)
    assert 0 < extra["release_frame"] < extra["at_rest_frame"] < extra["frames"]
    clips = {"first.mp4": first, "extra.mp4": extra} | {m["clip"]: m for m in doc["moves"].values()}
    decoded = {name: frames_in(folder / name) for name in clips}
    for name, part in clips.items():
        assert len(decoded[name]) == part["frames"], name
        assert decoded[name][0].shape == (size_wh[1], size_wh[0], 3)

    # One recording cut into pieces: each move starts where the first roll stopped, the Extra Roll where
    # the right move stopped (only sensor noise and the codec differ), not where another clip stopped.
    def gap(a: np.ndarray, b: np.ndarray) -> float:
        return float(np.mean(cv2.absdiff(a, b)))

    last_first = decoded["first.mp4"][-1]
    for kind in MOVES:
        assert gap(last_first, decoded[f"move_{kind}.mp4"][0]) < 4.0
    assert gap(decoded["move_correct.mp4"][-1], decoded["extra.mp4"][0]) < 4.0
    assert gap(decoded["move_wrong_box.mp4"][-1], decoded["extra.mp4"][0]) > gap(
        decoded["move_correct.mp4"][-1], decoded["extra.mp4"][0]
    )


def test_the_committed_round_is_what_its_truth_says() -> None:
    """The fixture of tests/api/test_round_rendered.py: 640x480 clips that agree with round.json."""
    doc = json.loads((FIXTURE / "round.json").read_text(encoding="utf-8"))
    check_round(FIXTURE, doc, (640, 480))
    assert sum(p.stat().st_size for p in FIXTURE.iterdir()) < 2_000_000


def test_a_freshly_rendered_round_follows_the_rules(renderer: SceneRenderer, tmp_path: Path) -> None:
    """A small round (6 dice, 160x120, 10 fps: the same code at a tenth of the cost) made from scratch."""
    cfg = GeneratorConfig(seed=5, n_dice=6, resolutions=((160, 120, 1.0),))
    totals: list[int] = []
    drawn: list[int] = []
    folder = make_round(cfg, 0, renderer, tmp_path, fps=10.0, on_total=totals.append, progress=drawn.append)
    assert folder == tmp_path / "r0005-000000"
    doc = json.loads((folder / "round.json").read_text(encoding="utf-8"))
    assert doc["fps"] == 10.0 and doc["expected_dice"] == 6
    check_round(folder, doc, (160, 120))
    clips = [doc["first_roll"], doc["extra_roll"], *doc["moves"].values()]
    assert totals == [sum(c["frames"] for c in clips)] == [sum(drawn)]


def test_a_round_is_a_function_of_its_seed_and_index() -> None:
    cfg = GeneratorConfig(seed=5, n_dice=6)
    a, b, c = plan_round(cfg, 0), plan_round(cfg, 0), plan_round(cfg, 1)
    assert a.first.poses == b.first.poses and a.extra.poses == b.extra.poses
    assert {k: m.truth for k, m in a.moves.items()} == {k: m.truth for k, m in b.moves.items()}
    assert a.first.poses != c.first.poses


def test_the_hand_moves_at_its_speed_through_every_waypoint() -> None:
    path = hand_path([(0.0, 0.0, 0.0), (90.0, 0.0, 0.0), (90.0, 45.0, 0.0)], fps=30.0, speed_mm_s=900.0)
    assert path[0] == (0.0, 0.0, 0.0) and path[-1] == (90.0, 45.0, 0.0) and (90.0, 0.0, 0.0) in path
    steps = [float(np.linalg.norm(np.subtract(b, a))) for a, b in itertools.pairwise(path)]
    assert len(path) == 3 + 2 + 1 and max(steps) <= 30.0 + 1e-9


@pytest.mark.parametrize(
    ("shaker", "colour"), [(False, SKIN_BGR), (True, (40, 38, 45))], ids=["palm", "shaker"]
)
def test_the_hand_is_drawn_where_the_camera_sees_it(shaker: bool, colour: tuple[int, int, int]) -> None:
    layout = ThrowBoxLayout()
    intr = CameraIntrinsics.from_fov(width_px=320, height_px=240, hfov_deg=50.0)
    pose = CameraPose.look_at(
        eye_mm=(300.0, 225.0, 1100.0), target_mm=(300.0, 225.0, 0.0), up=(0.0, 1.0, 0.0)
    )
    camera = Camera(intr, pose)
    blank = np.zeros((240, 320, 3), np.uint8)
    image = draw_hand(blank, camera, hand_at(300.0, 225.0, 45.0, shaker=shaker))
    x, y = camera.project(np.array([[300.0, 225.0, 45.0]]))[0]
    assert tuple(int(v) for v in image[round(y), round(x)]) == colour
    far = camera.project(np.array([[layout.width_mm - 20.0, layout.depth_mm - 20.0, 0.0]]))[0]
    assert not image[round(far[1]), round(far[0])].any()  # the far corner of the box stays clear
    assert not blank.any()  # drawn on a copy


def test_synth_round_refuses_a_game_it_cannot_make(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from lab.cli import app

    result = CliRunner().invoke(
        app, ["synth-round", str(tmp_path / "out"), "--dice", "7"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 2 and "got 7" in result.output
    assert not (tmp_path / "out").exists()
