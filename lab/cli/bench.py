"""`throwbox lab bench`: latency per 1280x960 frame with 10 dice (one thread vs all), and model load time."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    from vision.reader import Reader


def bench_frames(n: int, *, seed: int = 0) -> list[Any]:
    """The benchmark frames (`lab.bench_frames`); a missing or unreadable fixture is a usage error."""
    from lab import bench_frames as frames
    from models.data import DatasetError

    try:
        return list(frames.bench_frames(n, seed=seed))
    except DatasetError as exc:
        raise typer.BadParameter(str(exc)) from exc


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, str]:
    """The processor a benchmark ran on: its model name and the widest vector instructions it offers
    (onnxruntime's kernels pick their code by these: the same reader runs at very different speeds on
    machines that differ here, so a latency figure means little without them)."""
    import platform

    model, flags = platform.processor() or platform.machine() or "unknown", set[str]()
    try:
        for line in cpuinfo.read_text(encoding="utf-8", errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                model = value.strip()
            elif key.strip() in ("flags", "Features") and not flags:
                flags = set(value.split())
    except OSError:
        pass  # not Linux: the model name platform gives, the vector level unknown
    levels = (("avx512", "avx512f"), ("avx2", "avx2"), ("neon", "asimd"))
    simd = next((name for name, flag in levels if flag in flags), "other" if flags else "unknown")
    return {"model": model, "simd": simd}


def _outputs_mode(
    *,
    outputs: Path | None,
    check_against: Path | None,
    manifest_path: Path,
    datasets: list[Path],
    split: str,
    limit: int,
) -> None:
    """`--outputs` (write the reference) or `--check-against` (compare with it); see lab.cli.bench_outputs."""
    from lab.cli.bench_outputs import (
        OutputsError,
        compare_outputs,
        dataset_images,
        default_images,
        load_reference,
        read_documents,
    )
    from models.data import DatasetError
    from vision.reader import Reader

    if outputs is not None and check_against is not None:
        raise typer.BadParameter("give --outputs or --check-against, not both")
    reader = Reader(threads=1, manifest_path=manifest_path)
    if outputs is not None:
        names = default_images()
        try:
            for dataset in datasets:
                names += dataset_images(dataset, split=split, limit=limit)
        except DatasetError as exc:
            typer.echo(f"throwbox lab bench: {exc}", err=True)
            raise typer.Exit(2) from exc
        outputs.parent.mkdir(parents=True, exist_ok=True)
        with outputs.open("w", encoding="utf-8") as fh:
            for doc in read_documents(names, reader=reader):
                fh.write(json.dumps(doc) + "\n")
        typer.echo(f"{len(names)} documents written to {outputs}")
    if check_against is None:
        return
    if datasets:
        raise typer.BadParameter("--check-against re-reads the reference's own images: no --dataset")
    try:
        result = compare_outputs(load_reference(check_against), reader=reader)
    except OutputsError as exc:
        typer.echo(f"throwbox lab bench: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(json.dumps(result.as_dict()))
    if result.changed:
        raise typer.Exit(1)


def _sizes_mode(
    detector_sizes: str, *, datasets: list[Path], split: str, limit: int, frames: int, manifest_path: Path
) -> None:
    """`--detector-sizes`: latency and tuning-set accuracy per detector input size (lab.cli.bench_sizes)."""
    from lab.cli.bench_sizes import size_study
    from models.data import DatasetError
    from vision.detect.centernet import SIZE_MULTIPLE

    try:
        sizes = [int(v) for v in detector_sizes.split(",") if v.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"--detector-sizes wants integers like 512,640: {exc}") from exc
    if not sizes or any(v < SIZE_MULTIPLE or v % SIZE_MULTIPLE for v in sizes):
        raise typer.BadParameter(
            f"--detector-sizes: each size must be a positive multiple of {SIZE_MULTIPLE}"
        )
    if len(datasets) != 1:
        raise typer.BadParameter("--detector-sizes scores on exactly one --dataset (a tuning split)")
    if split == "test":
        raise typer.BadParameter(
            "--detector-sizes chooses a setting: score on a tuning split, not --split test"
        )
    try:
        rows = size_study(
            sizes=sizes,
            dataset=datasets[0],
            split=split,
            limit=limit,
            frames=frames,
            manifest_path=manifest_path,
        )
    except DatasetError as exc:
        typer.echo(f"throwbox lab bench: {exc}", err=True)
        raise typer.Exit(2) from exc
    typer.echo(json.dumps({"dataset": str(datasets[0]), "split": split, "sizes": rows}))


def bench(
    frames: int = typer.Option(200, min=10, help="Timed reads per thread setting."),
    as_json: bool = typer.Option(False, "--json", help="Print the figures as one JSON document."),
    manifest: Path | None = typer.Option(
        None,
        exists=True,
        dir_okay=False,
        help="Model manifest (default: models/manifest.json), to pin the weights across runs.",
    ),
    outputs: Path | None = typer.Option(
        None,
        "--outputs",
        dir_okay=False,
        help="Time nothing: write the reader's documents (no timings) for the benchmark frames, the "
        "fixture photos and each --dataset to this JSON-lines file, the reference of --check-against.",
    ),
    check_against: Path | None = typer.Option(
        None,
        "--check-against",
        exists=True,
        dir_okay=False,
        help="Time nothing: re-read the images of a --outputs file and compare (exit 1 if any changed).",
    ),
    datasets: list[Path] = typer.Option(
        [],
        "--dataset",
        exists=True,
        file_okay=False,
        help="With --outputs: a labelled dataset to add; with --detector-sizes: the tuning set.",
    ),
    split: str = typer.Option("test", help="With --dataset: the split to read."),
    limit: int = typer.Option(0, min=0, help="With --dataset: only the first N images (0 = all)."),
    candidate: Path | None = typer.Option(
        None,
        "--candidate",
        exists=True,
        dir_okay=False,
        help="Time this manifest's reader and the shipped one in one run, one thread, in turn "
        "(lab/cli/bench_pair.py).",
    ),
    candidate_opinions: bool = typer.Option(
        False, "--candidate-opinions", help="With --candidate: its reader heeds issue 55's opinions."
    ),
    candidate_heeds: str | None = typer.Option(
        None,
        "--candidate-heeds",
        help="With --candidate: the second opinions its reader heeds, comma-separated "
        "(turns_unsure, whole_die, peer_sure, pips, apart; lab/cli/bench_pair.py).",
    ),
    detector_sizes: str | None = typer.Option(
        None,
        "--detector-sizes",
        help="Comma-separated detector input sizes (long side, px, multiples of 32): time the reader "
        "with each on one thread and score it on the one --dataset (a tuning split, never test).",
    ),
) -> None:
    """Latency p50/p99 per 1280x960 frame with 10 dice, one thread and all threads; model load time."""
    _run_bench(
        frames=frames,
        as_json=as_json,
        manifest=manifest,
        outputs=outputs,
        check_against=check_against,
        datasets=datasets,
        split=split,
        limit=limit,
        detector_sizes=detector_sizes,
        candidate=candidate,
        candidate_opinions=candidate_opinions,
        candidate_heeds=candidate_heeds,
    )


def _run_bench(
    *,
    frames: int,
    as_json: bool,
    manifest: Path | None,
    outputs: Path | None,
    check_against: Path | None,
    datasets: list[Path],
    split: str,
    limit: int,
    detector_sizes: str | None,
    candidate: Path | None = None,
    candidate_opinions: bool = False,
    candidate_heeds: str | None = None,
) -> None:
    """The work of `throwbox lab bench`, its options parsed."""
    import datetime
    import os
    import statistics
    import time

    import cv2

    from vision.onnx_session import MANIFEST_PATH
    from vision.reader import Reader

    manifest_path = manifest or MANIFEST_PATH
    if detector_sizes is not None:
        _sizes_mode(
            detector_sizes,
            datasets=datasets,
            split=split,
            limit=limit,
            frames=frames,
            manifest_path=manifest_path,
        )
        return
    if outputs is not None or check_against is not None:
        _outputs_mode(
            outputs=outputs,
            check_against=check_against,
            manifest_path=manifest_path,
            datasets=datasets,
            split=split,
            limit=limit,
        )
        return

    images = bench_frames(10)
    if candidate is not None:
        from lab.cli.bench_pair import HEEDS, paired

        heeds = tuple(h.strip() for h in (candidate_heeds or "").split(",") if h.strip())
        unknown = sorted(set(heeds) - set(HEEDS))
        if unknown:
            typer.echo(f"throwbox lab bench: unknown --candidate-heeds {unknown}; known: {HEEDS}", err=True)
            raise typer.Exit(2)
        pair = paired(
            images=images,
            frames=frames,
            manifest=manifest_path,
            candidate=candidate,
            opinions=candidate_opinions,
            heeds=heeds,
        )
        pair |= {"cpu": cpu_description(), "load_average_1min": round(os.getloadavg()[0], 2)}
        typer.echo(json.dumps(pair))
        return
    results: dict[str, object] = {
        "frame_wh": [1280, 960],
        "dice_per_frame": 10,
        "cpu_count": os.cpu_count(),
        "cpu": cpu_description(),
        "started_utc": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%MZ"),
        "load_average_1min": round(os.getloadavg()[0], 2),
    }
    loads = []
    for _ in range(5):
        t = time.perf_counter()
        Reader(threads=1, manifest_path=manifest_path)
        loads.append((time.perf_counter() - t) * 1000)
    results["model_load_ms_median"] = round(statistics.median(loads), 1)
    opencv_default_threads = cv2.getNumThreads()
    for label, threads in (("one_thread", 1), ("all_threads", 0)):
        # One thread means OpenCV's too: left at its default it spreads the crops' filters over a
        # second thread that must be woken between model calls (and is busy on a shared machine).
        cv2.setNumThreads(1 if threads == 1 else opencv_default_threads)
        reader = Reader(threads=threads, manifest_path=manifest_path)
        results[label] = _time_reads(reader, images=images, frames=frames, label=label, quiet=as_json)
    cv2.setNumThreads(opencv_default_threads)
    if as_json:
        typer.echo(json.dumps(results))
        return
    cpu_seen = results["cpu"]
    assert isinstance(cpu_seen, dict)
    typer.echo(f"cpu: {cpu_seen['model']} ({cpu_seen['simd']}), {results['cpu_count']} cores")
    typer.echo(f"model load (every model, median of 5): {results['model_load_ms_median']} ms")
    for label in ("one_thread", "all_threads"):
        r = results[label]
        assert isinstance(r, dict)
        typer.echo(
            f"{label:12s} p50 {r['p50_ms']} ms  p99 {r['p99_ms']} ms  mean {r['mean_ms']} ms  "
            f"thread CPU p50 {r['thread_cpu_p50_ms']} ms  "
            f"(dice found per frame: {r['dice_found_per_frame']}; stage p50 {r['stage_p50_ms']}; "
            f"inside the models p50 {r['all_models_p50_ms']} ms {r['model_p50_ms']}, "
            f"outside them {r['outside_models_p50_ms']} ms)"
        )


def _time_reads(
    reader: Reader, *, images: list[Any], frames: int, label: str, quiet: bool
) -> dict[str, object]:
    """`frames` reads by one reader, as the table reads (its game's 10 dice): latency, the calling thread's
    CPU, each stage and each model's share (see `bench`'s docstring for what each figure means)."""
    import time

    import cv2
    import numpy as np
    from rich.progress import track

    from vision.types import Frame

    # Read as the table does, knowing its game (10 dice): the count check runs, and the coarse
    # looks for a die filling the frame (photos read without a table) do not.
    found = [len(reader.read(Frame(image=img), expected_dice=10).dice) for img in images]  # warms up
    lat, cpu = [], []
    stages: dict[str, list[float]] = {}
    # Time inside each model's onnxruntime call per read; the rest of a read is the code around them.
    in_models: dict[str, list[float]] = {name: [] for name in reader.onnx_models}
    for i in track(range(frames), description=f"bench {label}", transient=True, disable=quiet):
        before = {name: m.run_ms for name, m in reader.onnx_models.items()}
        t, c = time.perf_counter(), time.thread_time()
        roll = reader.read(Frame(image=images[i % len(images)]), expected_dice=10)
        lat.append((time.perf_counter() - t) * 1000)
        cpu.append((time.thread_time() - c) * 1000)
        for name, m in reader.onnx_models.items():
            in_models[name].append(m.run_ms - before[name])
        for stage, ms in roll.timing_ms.items():
            stages.setdefault(stage, []).append(ms)
    models_per_read = np.sum([in_models[name] for name in in_models], axis=0)
    arr = np.asarray(lat)
    return {
        "p50_ms": round(float(np.percentile(arr, 50)), 2),
        "p99_ms": round(float(np.percentile(arr, 99)), 2),
        "mean_ms": round(float(arr.mean()), 2),
        # The calling thread's CPU time per read: on one thread, what a read costs without the
        # time it waited for a core that other jobs held (a noisy machine); on all threads, only
        # the calling thread's share.
        "thread_cpu_p50_ms": round(float(np.percentile(cpu, 50)), 2),
        "dice_found_per_frame": found,
        "stage_p50_ms": {k: round(float(np.percentile(v, 50)), 2) for k, v in stages.items()},
        # p50 per read of the time inside each model's onnxruntime call, of all of them together,
        # and of the rest of the read (OpenCV, numpy and Python around the models: latency minus
        # the models' time, read by read).
        "model_p50_ms": {k: round(float(np.percentile(v, 50)), 2) for k, v in in_models.items()},
        "all_models_p50_ms": round(float(np.percentile(models_per_read, 50)), 2),
        "outside_models_p50_ms": round(float(np.percentile(arr - models_per_read, 50)), 2),
        "opencv_threads": cv2.getNumThreads(),
    }


def register(app: typer.Typer) -> None:
    """Attach the `bench` command to the CLI."""
    app.command()(bench)
