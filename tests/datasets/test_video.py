"""Throw videos: frames from release to rest at 30 fps, with the moment of rest and the final truth."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import cv2

from datasets.format import scene_from_dict
from datasets.loaders import load_videos
from datasets.synth.generator import GeneratorConfig
from datasets.synth.render import SceneRenderer
from datasets.synth.video import VIDEO_FORMAT, make_video


def test_throw_video_runs_from_release_to_rest(renderer: SceneRenderer, tmp_path: Path) -> None:
    cfg = GeneratorConfig(seed=4, n_dice=6, resolutions=((160, 120, 1.0),))
    folder = make_video(cfg, 0, renderer, tmp_path)
    doc = json.loads((folder / "video.json").read_text())
    assert doc["format"] == VIDEO_FORMAT and doc["fps"] == 30.0
    frames = doc["frames"]
    times = [f["t_s"] for f in frames]
    assert times == sorted(times) and times[0] == 0.0
    assert all(abs((b - a) - 1 / 30) < 1e-3 for a, b in itertools.pairwise(times))
    # The dice fly first, then come to rest and stay there until the end.
    assert frames[1]["moving"] and frames[1]["max_speed_mm_s"] > 100.0
    rest = doc["at_rest_frame"]
    assert 0 < rest < len(frames) - 10
    assert not any(f["moving"] for f in frames[rest:])
    assert frames[rest - 1]["moving"]
    final = scene_from_dict(doc["final"])
    assert len(final.dice) == 6 and final.image == frames[-1]["file"]
    cap = cv2.VideoCapture(str(folder / "throw.mp4"))
    count = 0
    while cap.read()[0]:
        count += 1
    cap.release()
    assert count == len(frames)
    assert all((folder / f["file"]).is_file() for f in frames)
    (video,) = load_videos(tmp_path)
    assert video.at_rest_frame == rest and video.final == final and video.mp4 is not None
    assert len(video.frames) == len(frames) and video.moving[1] and not video.moving[-1]
