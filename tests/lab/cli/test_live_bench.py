"""`throwbox lab live-bench`'s sizing figure: the camera time the loop went through, from the frames seen."""

from __future__ import annotations

import pytest

from lab.cli.live_bench import _scene_seconds


def test_scene_seconds_adds_each_played_clip_and_one_frame() -> None:
    where = {
        # clip a played twice (two start times), 3 frames at 0.5 s apart each time: 1.0 s + one frame.
        "f1": ("a", 10.0, 10.0),
        "f2": ("a", 10.0, 10.5),
        "f3": ("a", 10.0, 11.0),
        "f4": ("a", 20.0, 20.0),
        "f5": ("a", 20.0, 20.5),
        "f6": ("a", 20.0, 21.0),
        # clip b: 2 frames 0.1 s apart.
        "f7": ("b", 30.0, 30.0),
        "f8": ("b", 30.0, 30.1),
    }
    assert _scene_seconds(where) == pytest.approx(1.5 + 1.5 + 0.2)
    assert _scene_seconds({}) == 0.0
