"""Throw videos: the frames of a throw from release to rest at a fixed frame rate, for the settle detector.

Each video is a normal throw (or an Extra Roll throw with the kept dice in their layout box when the mix
asks for extra rolls), simulated with poses sampled at `fps`, each sample rendered with one camera and look,
followed by `tail_s` seconds of the dice at rest. Layout of `videos/<video_id>/`:

    throw.mp4         the frames as an MP4 (OpenCV's mp4v codec)
    frames/f0000.jpg  the same frames as JPEG, one per sample
    video.json        {"format": "throwbox-video/1", "fps", "frames": [{"file", "t_s", "max_speed_mm_s",
                       "max_spin_rad_s", "moving"}], "at_rest_frame", "settled", "final": <scene document>}

`at_rest_frame` is the first frame from which every die stays below issue 3's rest thresholds (2 mm/s,
0.05 rad/s) to the end; `final` is the ground truth of the last frame (datasets.format).
"""

from __future__ import annotations

import itertools
import json
import multiprocessing as mp
from dataclasses import replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from datasets.format import scene_to_dict
from datasets.synth.dice import FACES
from datasets.synth.generator import GeneratorConfig, build_truth, draw_look, scene_rng
from datasets.synth.physics import REST_ANG_RAD_S, REST_LIN_MM_S, DiePose, PhysicsWorld, simulate
from datasets.synth.randomise import degrade, encode_jpeg
from datasets.synth.render import SceneRenderer
from datasets.synth.scenarios import ScenarioOutcome, flat_die, layout_slots, throw_starts

VIDEO_FORMAT = "throwbox-video/1"
VIDEO_INDEX_OFFSET = 1_000_000  # videos draw from their own streams, never those of the still scenes
_STATE: dict[str, Any] = {}


def _angle_between(q1: tuple[float, ...], q2: tuple[float, ...]) -> float:
    d = abs(float(np.dot(np.asarray(q1), np.asarray(q2))))
    return float(2.0 * np.arccos(min(1.0, d)))


def motion(frames: list[tuple[DiePose, ...]], fps: float) -> list[tuple[float, float]]:
    """Per frame, the largest die speed (mm/s) and spin (rad/s) since the previous frame (0 for the first)."""
    out = [(0.0, 0.0)]
    for prev, cur in itertools.pairwise(frames):
        lin = max(
            float(np.linalg.norm(np.subtract(a.position_mm, b.position_mm))) * fps
            for a, b in zip(prev, cur, strict=True)
        )
        ang = max(_angle_between(a.quat_xyzw, b.quat_xyzw) * fps for a, b in zip(prev, cur, strict=True))
        out.append((lin, ang))
    return out


def throw_outcome(
    cfg: GeneratorConfig, index: int, fps: float
) -> tuple[ScenarioOutcome, list[tuple[float, tuple[DiePose, ...]]]]:
    """Simulate the throw of video `index`, sampled at `fps`."""
    rng = scene_rng(cfg.seed, VIDEO_INDEX_OFFSET + index, 0)
    layout = cfg.layout
    n = cfg.n_dice
    world = PhysicsWorld(layout)
    extra = rng.random() < cfg.mix.get("extra_roll", 0.0)
    kept_starts: tuple[Any, ...] = ()
    if extra:
        face = int(rng.choice(FACES))
        k = int(rng.integers(2, min(6, n - 1) + 1))
        kept_starts = tuple(
            flat_die(rng, x, y, layout.die_edge_mm, face=face, yaw_sd=0.06)
            for x, y in layout_slots(layout, face, k, layout.die_edge_mm + 2.5)
        )
    starts = kept_starts + throw_starts(rng, layout, n - len(kept_starts))
    result = simulate(world, starts, sample_fps=fps)
    kept = (True,) * len(kept_starts) + (False,) * (n - len(kept_starts))
    scenario = "extra_roll" if extra else "normal"
    outcome = ScenarioOutcome(scenario, world, replace(result, trajectory=()), n, kept, note="video")
    return outcome, list(result.trajectory)


def make_video(
    cfg: GeneratorConfig,
    index: int,
    renderer: SceneRenderer,
    out_dir: Path,
    *,
    fps: float = 30.0,
    tail_s: float = 0.5,
) -> Path:
    """Render video `index` into `out_dir/<video_id>/`; returns that folder."""
    outcome, trajectory = throw_outcome(cfg, index, fps)
    rng = scene_rng(cfg.seed, VIDEO_INDEX_OFFSET + index, 1)
    draw = draw_look(cfg, outcome, rng)
    video_id = f"v{cfg.seed:04d}-{index:06d}"
    folder = out_dir / video_id
    (folder / "frames").mkdir(parents=True, exist_ok=True)
    # Frames on a fixed 1/fps grid: the final (resting) pose, recorded when the simulation stopped, is shown
    # from the next grid time on, then held for `tail_s`.
    grid = [(n / fps, poses) for n, (_, poses) in enumerate(trajectory)]
    last_poses = trajectory[-1][1]
    tail = [((len(grid) + k) / fps, last_poses) for k in range(round(tail_s * fps))]
    samples = grid + tail
    speeds = motion([p for _, p in samples], fps)
    still = [lin <= REST_LIN_MM_S and ang <= REST_ANG_RAD_S for lin, ang in speeds]
    at_rest = len(still)
    while at_rest > 0 and still[at_rest - 1]:
        at_rest -= 1
    k = draw.camera.intrinsics
    writer = cv2.VideoWriter(
        str(folder / "throw.mp4"), cv2.VideoWriter.fourcc(*"mp4v"), fps, (k.width_px, k.height_px)
    )
    frames_doc: list[dict[str, Any]] = []
    out = None
    try:
        for n, (t, poses) in enumerate(samples):
            out = renderer.render(
                draw.camera, dice=poses, chips=draw.chips, look=draw.look, lighting=draw.lighting
            )
            image = degrade(out.image, draw.degradation, rng)  # fresh sensor noise every frame
            name = f"frames/f{n:04d}.jpg"
            (folder / name).write_bytes(encode_jpeg(image, draw.degradation.jpeg_quality))
            if writer.isOpened():
                writer.write(image)
            frames_doc.append(
                {
                    "file": name,
                    "t_s": round(t, 4),
                    "max_speed_mm_s": round(speeds[n][0], 3),
                    "max_spin_rad_s": round(speeds[n][1], 4),
                    "moving": not still[n],
                }
            )
    finally:
        writer.release()
    if out is None:
        raise RuntimeError(f"video {video_id}: the throw produced no frames")
    final = build_truth(
        cfg, outcome, draw, out, index=index, scene_id=video_id, image=str(frames_doc[-1]["file"])
    )
    doc = {
        "format": VIDEO_FORMAT,
        "video_id": video_id,
        "fps": fps,
        "mp4": "throw.mp4",
        "frames": frames_doc,
        "at_rest_frame": at_rest,
        "settled": outcome.result.settled,
        "final": scene_to_dict(final),
    }
    (folder / "video.json").write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")
    return folder


def _init(cfg: GeneratorConfig, out: str) -> None:
    _STATE["cfg"], _STATE["out"] = cfg, Path(out)
    _STATE["renderer"] = SceneRenderer(cfg.layout, see_through=cfg.see_through, style=cfg.style)


def _one(index: int) -> str:
    return str(make_video(_STATE["cfg"], index, _STATE["renderer"], _STATE["out"]))


def generate_videos(out_dir: Path, cfg: GeneratorConfig, *, count: int, workers: int = 1) -> int:
    """Write videos 0..count-1 of `cfg` under `out_dir`; returns how many were written."""
    out_dir.mkdir(parents=True, exist_ok=True)
    if workers <= 1 or count <= 1:
        _init(cfg, str(out_dir))
        try:
            return sum(1 for i in range(count) if _one(i))
        finally:
            _STATE.pop("renderer").close()
    with mp.get_context("spawn").Pool(
        min(workers, count), initializer=_init, initargs=(cfg, str(out_dir))
    ) as pool:
        return sum(1 for _ in pool.imap_unordered(_one, range(count)))
