"""`throwbox lab bench --detector-sizes 448,512,640 --dataset DIR --split train`: speed against accuracy.

The detector is most of a read's time, and its time grows with its input (the frame scaled so its long side
is `DetectorConfig.input_long_px`). For each size this times the whole reader on the benchmark frames (one
thread, OpenCV too) and scores it on a labelled tuning set, so a smaller input is chosen knowing what it
costs. Use a tuning set (the nellbyler train split, synthetic train-v1), never a test split.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any


def size_study(
    *,
    sizes: list[int],
    dataset: Path,
    split: str,
    limit: int,
    frames: int,
    manifest_path: Path,
) -> list[dict[str, Any]]:
    """One row per detector input size: one-thread latency on the bench frames and the tuning-set figures."""
    import cv2
    import numpy as np

    from lab.cli.bench import bench_frames
    from lab.evaluate import Tally
    from models.data import load_dataset
    from vision.detect.centernet import DetectorConfig
    from vision.image import load_image
    from vision.reader import Reader, ReaderConfig
    from vision.types import Frame

    items = load_dataset(dataset, split=split)
    if limit:
        items = items[:limit]
    images = bench_frames(10)
    labelled = [(it, load_image(it.path)) for it in items]
    opencv_threads = cv2.getNumThreads()
    cv2.setNumThreads(1)
    rows = []
    try:
        for size in sizes:
            config = ReaderConfig(detector=DetectorConfig(input_long_px=size))
            reader = Reader(threads=1, config=config, manifest_path=manifest_path)
            for img in images:  # warm-up
                reader.read(Frame(image=img))
            lat, cpu, detect = [], [], []
            for i in range(frames):
                t, c = time.perf_counter(), time.thread_time()
                roll = reader.read(Frame(image=images[i % len(images)]))
                lat.append((time.perf_counter() - t) * 1000)
                cpu.append((time.thread_time() - c) * 1000)
                detect.append(roll.timing_ms["detect"])
            tally = Tally()
            for it, img in labelled:
                expected = len(it.faces) or None
                roll = reader.read(Frame(image=img, frame_id=it.path.name), expected_dice=expected)
                tally.add_roll(
                    name=it.path.name,
                    gt_xyxy=it.boxes_xyxy,
                    gt_faces=it.faces,
                    roll=roll,
                    box_kind=it.box_kind,
                )
            summary = tally.summary(box_kind=items[0].box_kind)
            rows.append(
                {
                    "input_long_px": size,
                    "one_thread_p50_ms": round(float(np.percentile(lat, 50)), 2),
                    "one_thread_p99_ms": round(float(np.percentile(lat, 99)), 2),
                    "thread_cpu_p50_ms": round(float(np.percentile(cpu, 50)), 2),  # see `throwbox lab bench`
                    "detect_p50_ms": round(float(np.percentile(detect, 50)), 2),
                    "images": summary["images"],
                    "detection": summary["detection"],
                    "face_accuracy_pct": summary["face_accuracy_pct"],
                    "rolls": summary["rolls"],
                }
            )
    finally:
        cv2.setNumThreads(opencv_threads)
    return rows
