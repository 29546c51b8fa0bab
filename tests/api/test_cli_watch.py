"""`throwbox watch`: at-rest frames saved per throw, clear errors, exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest
from typer.testing import CliRunner

from api.cli import app
from vision.demo_scene import Action, DemoScene, Empty, Handling, Intruder, SceneConfig, Throw, demo_plan

runner = CliRunner()


def test_watch_saves_one_at_rest_frame_per_throw(tmp_path: Path) -> None:
    scene = DemoScene(SceneConfig(width_px=320, height_px=240, die_edge_px=12, seed=11))
    video = tmp_path / "table.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter.fourcc(*"MJPG"), 30.0, (320, 240))
    for image in scene.render((*demo_plan(2), Empty(0.5))):
        writer.write(image)
    writer.release()
    out = tmp_path / "out"
    result = runner.invoke(app, ["watch", str(video), "--out", str(out), "--json", "--table", "T9"])
    assert result.exit_code == 0, result.output
    lines = [json.loads(line) for line in result.output.splitlines()]
    reads = [d for d in lines if d.get("event") == "AtRest"]
    assert [d["throw_index"] for d in reads] == [0, 1]
    for doc, throw in zip(reads, scene.throws, strict=True):
        assert throw.rest_frame <= doc["seq"] < throw.end_frame
        assert doc["frame_id"].startswith("T9-")
        saved = cv2.imread(doc["saved"])
        assert saved is not None and saved.shape == (240, 320, 3)
    assert sorted(p.name for p in out.glob("at_rest_*.png")) == sorted(Path(d["saved"]).name for d in reads)
    logged = [json.loads(line) for line in (out / "events.jsonl").read_text().splitlines()]
    assert [d["event"] for d in logged] == [d["event"] for d in lines[:-1]]
    assert lines[-1] == {"frames": len(scene.frames), "throws_read": 2}


def test_watch_stops_after_seconds_of_scene_time(tmp_path: Path) -> None:
    scene = DemoScene(SceneConfig(width_px=160, height_px=120, die_edge_px=8, seed=1))
    video = tmp_path / "t.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter.fourcc(*"MJPG"), 30.0, (160, 120))
    for image in scene.render((Empty(2.0),)):
        writer.write(image)
    writer.release()
    result = runner.invoke(app, ["watch", str(video), "--seconds", "1", "--json"])
    assert result.exit_code == 0, result.output
    assert json.loads(result.output.splitlines()[-1])["frames"] == 31  # frames at 0 .. 1.0 s


def test_watch_refuses_a_source_that_does_not_exist(tmp_path: Path) -> None:
    result = runner.invoke(app, ["watch", str(tmp_path / "missing.mp4")])
    assert result.exit_code == 2
    assert "not a camera index, a stream URL" in result.output


def test_watch_refuses_an_unreadable_video(tmp_path: Path) -> None:
    bogus = tmp_path / "bogus.mp4"
    bogus.write_bytes(np.arange(4096, dtype=np.uint8).tobytes())
    result = runner.invoke(app, ["watch", str(bogus)])
    assert result.exit_code == 2
    assert "cannot open" in result.output


def test_watch_with_an_outline_and_an_empty_box_picture(tmp_path: Path) -> None:
    scene = DemoScene(SceneConfig(width_px=320, height_px=240, die_edge_px=12, seed=12))
    video = tmp_path / "table.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter.fourcc(*"MJPG"), 30.0, (320, 240))
    images = list(scene.render((Empty(0.3), Throw(hold_s=0.8))))
    for image in images:
        writer.write(image)
    writer.release()
    cv2.imwrite(str(tmp_path / "empty.png"), images[0])
    args = [
        "watch",
        str(video),
        "--roi",
        "1,1;318,1;318,238;1,238",
        "--empty-box",
        str(tmp_path / "empty.png"),
    ]
    result = runner.invoke(app, [*args, "--json"])
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in result.output.splitlines()]
    assert [d.get("event") for d in docs].count("AtRest") == 1
    assert not any(d.get("previous") == "learning" for d in docs)  # the picture replaced learning


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (["--roi", "1,1;5,5"], "at least 3"),  # two points do not make an outline
        (["--roi", "a,b;c,d;e,f"], "numbers expected"),  # not numbers
        (["--empty-box", "missing.png"], "not a readable image"),  # no such picture
    ],
)
def test_watch_refuses_bad_options(tmp_path: Path, option: list[str], message: str) -> None:
    scene = DemoScene(SceneConfig(width_px=160, height_px=120, die_edge_px=8))
    video = tmp_path / "t.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter.fourcc(*"MJPG"), 30.0, (160, 120))
    for image in scene.render((Empty(0.2),)):
        writer.write(image)
    writer.release()
    result = runner.invoke(app, ["watch", str(video), *option])
    assert result.exit_code == 2
    assert message in result.output


def _calibrate_demo_table(folder: Path, frame: np.ndarray) -> None:
    """A table calibration of the demo box from four hand-given corners (dealer's side at the bottom)."""
    from calibration.camera import CameraIntrinsics
    from calibration.layout import ThrowBoxLayout
    from calibration.store import save_table
    from calibration.table import calibrate_table

    h, w = frame.shape[:2]
    cal = calibrate_table(
        frame,
        table_id="T1",
        intrinsics=CameraIntrinsics.from_fov(width_px=w, height_px=h, hfov_deg=60.0),
        intrinsics_rms_px=0.3,
        layout=ThrowBoxLayout(),  # 600 x 450 mm: the demo box's 4:3
        corners_px=[[1, h - 2], [w - 2, h - 2], [w - 2, 1], [1, 1]],
    )
    save_table(cal, folder)


def test_watch_inside_a_calibrated_throw_box(tmp_path: Path) -> None:
    scene = DemoScene(SceneConfig(width_px=320, height_px=240, die_edge_px=12, seed=13))
    images = list(
        scene.render((Empty(0.5), Throw(hold_s=0.8), Handling(Intruder.HAND, Action.MOVE, 1.2), Empty(0.5)))
    )
    video = tmp_path / "table.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter.fourcc(*"MJPG"), 30.0, (320, 240))
    for image in images:
        writer.write(image)
    writer.release()
    _calibrate_demo_table(tmp_path / "cal", images[0])
    result = runner.invoke(app, ["watch", str(video), "--calibration", str(tmp_path / "cal"), "--json"])
    assert result.exit_code == 0, result.output
    docs = [json.loads(line) for line in result.output.splitlines()]
    reads = [d for d in docs if d.get("event") == "AtRest"]
    assert len(reads) == 1
    throw = scene.throws[0]
    assert throw.rest_frame <= reads[0]["seq"] < throw.end_frame
    assert any(d.get("event") == "SettledWithoutThrow" and d["intruder_seen"] for d in docs)

    # The calibration is for 320x240: a 160x120 feed is refused, and --roi cannot be given as well.
    small = tmp_path / "small.avi"
    writer = cv2.VideoWriter(str(small), cv2.VideoWriter.fourcc(*"MJPG"), 30.0, (160, 120))
    for image in images[:5]:
        writer.write(cv2.resize(image, (160, 120)))
    writer.release()
    refused = runner.invoke(app, ["watch", str(small), "--calibration", str(tmp_path / "cal")])
    assert refused.exit_code == 2 and "calibrated at 320x240" in refused.output
    both = runner.invoke(
        app, ["watch", str(video), "--calibration", str(tmp_path / "cal"), "--roi", "1,1;9,1;9,9"]
    )
    assert both.exit_code == 2 and "not both" in both.output
    missing = runner.invoke(
        app, ["watch", str(video), "--calibration", str(tmp_path / "cal"), "--table", "T2"]
    )
    assert missing.exit_code == 2 and "T2" in missing.output
