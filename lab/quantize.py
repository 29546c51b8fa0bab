"""Int8 copies of the reader's ONNX models (onnxruntime static quantization) and a check that they read alike.

    .venv/bin/python -m lab.quantize [--models detector,die_state,pips] [--synth data/synth/train-v1]
    .venv/bin/python -m lab.quantize --check --synth data/synth/train-v1 [--synth-from 1500]
    .venv/bin/python -m lab.quantize --models detector,die_state --register

Why: most of a read is the three models (`throwbox lab bench` stage times), and this machine's CPU has int8
dot-product instructions (AVX-512 VNNI) that onnxruntime uses for quantized convolutions.

How: `onnxruntime.quantization.quantize_static`, the runtime's own tool (not hand-written): QDQ format,
per-channel int8 weights, uint8 activations, MinMax ranges. The ranges come from what the float reader
feeds each model on calibration images: the first `--calib-real` nellbyler **train** photos and the first
`--calib-synth` synthetic train-v1 scenes (both already training data; never tuning or test images). The
quantization needs the `onnx` package (the `train` and `dev` extras); reading an int8 model needs only
onnxruntime.

The int8 file is written beside the float one as `<stem>.int8.onnx`. `--register` points the manifest entry
at it and keeps `quantized_from` (the float file and its SHA-256): the float model stays the source, and
quantizing again always starts from it (checked against that SHA-256).

`--check` reads tuning images with the float models and with each int8 copy in turn (then all together)
and prints a table: detection recall/precision, the learned face's accuracy, dice left uncertain, dice
given a wrong face, exact rolls, how many reads equal the float reader's, and the median read time.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray
from rich.progress import track

from lab.evaluate import Tally
from models.data import SHARED_REAL, LabelledImage, load_nellbyler, load_synth
from models.export import register
from vision.onnx_session import (
    MANIFEST_PATH,
    ChecksumMismatchError,
    InferenceBackend,
    ManifestError,
    ModelFileError,
    onnxruntime_session,
    sha256_of,
)
from vision.reader import Reader
from vision.types import Frame, Roll

MODEL_NAMES = ("detector", "die_state", "pips")
QUANTIZED_FROM = "quantized_from"
# Calibration batches kept in memory at once before their ranges are merged (onnxruntime's
# CalibMaxIntermediateOutputs): the detector's activations on a 640x480 input are tens of MB per image.
CALIB_CHUNK = 8


def _raw_manifest(manifest_path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(manifest_path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(f"model manifest {manifest_path} is unreadable: {exc}") from exc
    if not isinstance(raw, dict) or not isinstance(raw.get("models"), dict):
        raise ManifestError(f"model manifest {manifest_path} must be an object with a 'models' object")
    return raw


def float_source(name: str, manifest_path: Path = MANIFEST_PATH) -> Path:
    """The float model behind manifest entry `name` (its `quantized_from` when it runs an int8 copy).

    Raises ManifestError when `name` is not listed, ModelFileError when the file is missing and
    ChecksumMismatchError when its SHA-256 is not the one recorded.
    """
    models = _raw_manifest(manifest_path)["models"]
    if name not in models:
        raise ManifestError(f"model {name!r} is not in {manifest_path}")
    entry = models[name].get(QUANTIZED_FROM) or models[name]
    path = manifest_path.parent / str(entry["file"])
    if not path.is_file():
        raise ModelFileError(f"float model for {name!r} not found: {path}")
    actual = sha256_of(path)
    if actual != str(entry["sha256"]).lower():
        raise ChecksumMismatchError(
            path=path, expected=str(entry["sha256"]), actual=actual, manifest=manifest_path
        )
    return path


def int8_path(float_path: Path) -> Path:
    """Where the int8 copy of a float model is written: `<stem>.int8.onnx` beside it."""
    return float_path.with_name(f"{float_path.stem}.int8.onnx")


class _Recording:
    """An onnxruntime session that keeps a copy of every input it is given."""

    def __init__(self, session: InferenceBackend, sink: list[NDArray[np.float32]]) -> None:
        self._session = session
        self._sink = sink

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]:
        for value in input_feed.values():
            self._sink.append(np.array(value, dtype=np.float32, copy=True))
        return self._session.run(output_names, input_feed)

    def get_inputs(self) -> list[Any]:
        return self._session.get_inputs()


def record_inputs(images: Sequence[Path], *, manifest_path: Path) -> dict[str, list[NDArray[np.float32]]]:
    """What the reader (float models) feeds each model on the image files `images`, keyed by model name."""

    def frames() -> Iterator[Frame]:
        for path in track(images, description="calibration reads", transient=True):
            image = cv2.imread(str(path), cv2.IMREAD_COLOR)
            if image is None:
                raise SystemExit(f"unreadable calibration image {path}")
            yield Frame(image=np.asarray(image, np.uint8), frame_id=path.name)

    return record_frames(frames(), manifest_path=manifest_path)


def record_frames(frames: Iterable[Frame], *, manifest_path: Path) -> dict[str, list[NDArray[np.float32]]]:
    """What the reader (float models) feeds each model on `frames`, keyed by model name."""
    by_file: dict[str, list[NDArray[np.float32]]] = defaultdict(list)

    def factory(path: Path, threads: int, providers: tuple[str, ...]) -> InferenceBackend:
        return _Recording(onnxruntime_session(path, threads, providers), by_file[path.resolve().as_posix()])

    with tempfile.TemporaryDirectory() as tmp:
        reader = Reader(
            threads=0,
            manifest_path=_variant_manifest(manifest_path, Path(tmp), int8=()),
            session_factory=factory,
        )
    for frame in frames:
        reader.read(frame)
    out: dict[str, list[NDArray[np.float32]]] = {}
    for name in MODEL_NAMES:
        key = float_source(name, manifest_path).resolve().as_posix()
        if key in by_file:
            out[name] = by_file[key]
    return out


def time_models(names: Sequence[str], *, manifest_path: Path, repeats: int = 300) -> list[dict[str, Any]]:
    """Each model alone, float against its int8 copy, on one thread, on what it is fed for one benchmark
    frame (`throwbox lab bench`'s 1280x960 frame with 10 dice); runs alternate, so both see the same load."""
    from lab.bench_frames import bench_frames

    inputs = record_frames([Frame(image=bench_frames(1)[0], frame_id="bench")], manifest_path=manifest_path)
    rows = []
    for name in names:
        src = float_source(name, manifest_path)
        sessions = {"float": onnxruntime_session(src, 1, ("CPUExecutionProvider",))}
        sessions["int8"] = onnxruntime_session(int8_path(src), 1, ("CPUExecutionProvider",))
        times: dict[str, list[float]] = {k: [] for k in sessions}
        for i in track(range(repeats), description=f"timing {name}", transient=True):
            for kind, session in sessions.items():
                feed = {str(session.get_inputs()[0].name): inputs[name][0]}
                start = time.perf_counter()
                session.run(None, feed)
                if i >= 20:  # warm-up runs are not counted
                    times[kind].append(time.perf_counter() - start)
        p50 = {k: 1000 * float(np.median(v)) for k, v in times.items()}
        rows.append(
            {
                "model": name,
                "input": "x".join(str(v) for v in inputs[name][0].shape),
                "float_p50_ms": round(p50["float"], 2),
                "int8_p50_ms": round(p50["int8"], 2),
                "int8_over_float": round(p50["int8"] / p50["float"], 3),
            }
        )
    return rows


def last_layer(model_path: Path) -> str:
    """The name of the model's last Conv or Gemm node (its output layer)."""
    import onnx

    layers = [
        n.name for n in onnx.load(str(model_path)).graph.node if n.op_type in ("Conv", "Gemm", "MatMul")
    ]
    if not layers:
        raise ValueError(f"{model_path} has no Conv/Gemm/MatMul layer")
    return str(layers[-1])


def quantize_file(
    src: Path, dst: Path, batches: Sequence[NDArray[np.float32]], *, keep_last_float: bool = True
) -> None:
    """Static int8 quantization of `src` into `dst`, ranges from `batches` (the model's own inputs).

    `keep_last_float` leaves the output layer in float: it is one small layer, and its outputs (the
    detector's peak scores and box sizes, the face logits) are the numbers thresholds are set on.
    """
    from onnxruntime.quantization import (
        CalibrationDataReader,
        CalibrationMethod,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    if not batches:
        raise ValueError(f"no calibration inputs for {src}")
    input_name = str(onnxruntime_session(src, 1, ("CPUExecutionProvider",)).get_inputs()[0].name)
    exclude = [last_layer(src)] if keep_last_float else []

    class Feed(CalibrationDataReader):  # type: ignore[misc]  # onnxruntime ships no type hints
        def __init__(self) -> None:
            self._it: Iterator[NDArray[np.float32]] = iter(batches)

        def get_next(self) -> dict[str, NDArray[np.float32]] | None:
            batch = next(self._it, None)
            return None if batch is None else {input_name: batch}

    # onnxruntime merges the ranges every `chunk` batches and then empties its buffer; when the batches end
    # exactly on a merge it finds the buffer empty and raises "No data is collected" (onnxruntime 1.32), so
    # the chunk is chosen not to divide the number of batches.
    chunk = CALIB_CHUNK
    while chunk <= len(batches) and len(batches) % chunk == 0:
        chunk += 1
    with tempfile.TemporaryDirectory() as tmp:
        prepared = Path(tmp) / "prepared.onnx"
        # Shape inference and graph clean-up first, as onnxruntime's quantization guide asks; the symbolic
        # pass cannot size the detector's resize outputs, the ONNX one can.
        quant_pre_process(str(src), str(prepared), skip_symbolic_shape=True)
        quantize_static(
            str(prepared),
            str(dst),
            Feed(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
            calibrate_method=CalibrationMethod.MinMax,
            nodes_to_exclude=exclude,
            extra_options={"CalibMaxIntermediateOutputs": chunk},
        )


def calibration_images(real: Path, synth: Path | None, *, n_real: int, n_synth: int) -> list[Path]:
    """The first `n_real` nellbyler train photos and the first `n_synth` synthetic scenes (training data)."""
    paths = [it.path for it in load_nellbyler(real / "d6-topdown-nellbyler", "train")[:n_real]]
    if synth is not None and n_synth:
        paths += [it.path for it in load_synth(synth, limit=n_synth)]
    return paths


def _variant_manifest(manifest_path: Path, folder: Path, *, int8: Sequence[str]) -> Path:
    """A manifest running the int8 copy of the models in `int8` and the float model of the others."""
    raw = _raw_manifest(manifest_path)
    models: dict[str, Any] = {}
    for name, entry in raw["models"].items():
        src = float_source(name, manifest_path)
        path = int8_path(src) if name in int8 else src
        if not path.is_file():
            raise ModelFileError(f"{path} not found: run `python -m lab.quantize --models {name}` first")
        models[name] = {**entry, "file": path.resolve().as_posix(), "sha256": sha256_of(path)}
        models[name].pop(QUANTIZED_FROM, None)
    out = folder / f"manifest-{'-'.join(int8) or 'float'}.json"
    out.write_text(json.dumps({"models": models}, indent=2), encoding="utf-8")
    return out


def _read_all(reader: Reader, items: Sequence[LabelledImage], label: str) -> list[Roll]:
    rolls = []
    for it in track(items, description=label, transient=True):
        image = cv2.imread(str(it.path), cv2.IMREAD_COLOR)
        if image is None:
            raise SystemExit(f"unreadable tuning image {it.path}")
        frame = Frame(image=np.asarray(image, np.uint8), frame_id=it.path.name)
        rolls.append(reader.read(frame, expected_dice=len(it.faces)))
    return rolls


def _same(a: Roll, b: Roll) -> bool:
    return a.verdict == b.verdict and [d.face for d in a.dice] == [d.face for d in b.dice]


def check(
    sets: Mapping[str, Sequence[LabelledImage]], *, names: Sequence[str], manifest_path: Path
) -> list[dict[str, Any]]:
    """Read every set with the float models, each int8 copy alone, and all of them: one row per pair."""
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as tmp:
        variants: list[tuple[str, Sequence[str]]] = [("float", ())] + [(f"int8 {n}", (n,)) for n in names]
        if len(names) > 1:
            variants.append((f"int8 {'+'.join(names)}", tuple(names)))
        for set_name, items in sets.items():
            baseline: list[Roll] = []
            for label, int8 in variants:
                reader = Reader(
                    threads=1, manifest_path=_variant_manifest(manifest_path, Path(tmp), int8=int8)
                )
                start = time.perf_counter()
                rolls = _read_all(reader, items, f"{set_name}: {label}")
                elapsed = time.perf_counter() - start
                baseline = baseline or rolls
                tally = Tally()
                for it, roll in zip(items, rolls, strict=True):
                    tally.add_roll(
                        name=it.path.name, gt_xyxy=it.boxes_xyxy, gt_faces=it.faces, roll=roll, box_kind="die"
                    )
                s = tally.summary(box_kind="die")
                conf = np.asarray(s["confusion_gt_rows_read_cols_1_to_6_and_uncertain"])
                rows.append(
                    {
                        "set": set_name,
                        "models": label,
                        "images": len(items),
                        "recall_pct": s["detection"]["recall_pct"],
                        "precision_pct": s["detection"]["precision_pct"],
                        "learned_face_pct": s["face_accuracy_pct"]["learned_of_matched"],
                        "uncertain_pct": s["face_accuracy_pct"]["uncertain_of_matched"],
                        "given_wrong": int(conf[:, :6].sum() - np.trace(conf[:, :6])),
                        "exact_rolls_pct": s["rolls"]["exact_valid_pct"],
                        "same_as_float_pct": round(
                            100.0
                            * sum(_same(a, b) for a, b in zip(rolls, baseline, strict=True))
                            / len(items),
                            1,
                        ),
                        "read_p50_ms": s["latency_ms"]["p50"],
                        "wall_s": round(elapsed, 1),
                    }
                )
    return rows


def _print_table(rows: Sequence[Mapping[str, Any]]) -> None:
    keys = list(rows[0])
    print("| " + " | ".join(keys) + " |")
    print("|" + "---|" * len(keys))
    for row in rows:
        print("| " + " | ".join(str(row[k]) for k in keys) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", default=",".join(MODEL_NAMES), help="manifest entries to quantize/check")
    parser.add_argument("--real", type=Path, default=SHARED_REAL, help="the real datasets folder")
    parser.add_argument("--synth", type=Path, default=None, help="synthetic train-v1 folder")
    parser.add_argument("--calib-real", type=int, default=48, help="nellbyler train photos for calibration")
    parser.add_argument("--calib-synth", type=int, default=48, help="first synthetic scenes for calibration")
    parser.add_argument(
        "--register", action="store_true", help="point the manifest entries at the int8 copies"
    )
    parser.add_argument("--check", action="store_true", help="compare float and int8 reads on tuning images")
    parser.add_argument("--synth-from", type=int, default=1500, help="first synthetic tuning scene (--check)")
    parser.add_argument("--synth-count", type=int, default=200, help="synthetic tuning scenes (--check)")
    parser.add_argument("--real-count", type=int, default=100, help="nellbyler train photos (--check)")
    parser.add_argument("--manifest", type=Path, default=MANIFEST_PATH)
    parser.add_argument("--time", action="store_true", help="time each model alone, float against int8")
    parser.add_argument(
        "--all-layers", action="store_true", help="quantize the output layer too (default: it stays float)"
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.models.split(",") if n.strip()]
    unknown = sorted(set(names) - set(MODEL_NAMES))
    if unknown:
        raise SystemExit(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODEL_NAMES)}")
    nellbyler = args.real / "d6-topdown-nellbyler"
    if not nellbyler.is_dir():
        raise SystemExit(f"the nellbyler set is needed and not found at {nellbyler} (see README, Licences)")

    if args.time:
        _print_table(time_models(names, manifest_path=args.manifest))
        return
    if args.check:
        sets: dict[str, Sequence[LabelledImage]] = {
            "nellbyler train": load_nellbyler(nellbyler, "train")[: args.real_count]
        }
        if args.synth is not None:
            sets[f"synth {args.synth.name} {args.synth_from}+"] = load_synth(args.synth)[
                args.synth_from : args.synth_from + args.synth_count
            ]
        _print_table(check(sets, names=names, manifest_path=args.manifest))
        return

    images = calibration_images(args.real, args.synth, n_real=args.calib_real, n_synth=args.calib_synth)
    inputs = record_inputs(images, manifest_path=args.manifest)
    specs = _raw_manifest(args.manifest)["models"]
    for name in names:
        src = float_source(name, args.manifest)
        dst = int8_path(src)
        start = time.perf_counter()
        quantize_file(src, dst, inputs.get(name, []), keep_last_float=not args.all_layers)
        print(
            f"{name}: {src.name} ({src.stat().st_size / 1e6:.2f} MB) -> {dst.name}"
            f" ({dst.stat().st_size / 1e6:.2f} MB),"
            f" {len(inputs.get(name, []))} calibration batches from {len(images)} images,"
            f" {time.perf_counter() - start:.1f} s, SHA-256 {sha256_of(dst)}"
        )
        if args.register:
            entry = specs[name]
            register(
                name=name,
                onnx_path=dst,
                input_size_hw=(int(entry["input_size_hw"][0]), int(entry["input_size_hw"][1])),
                labels=tuple(str(x) for x in entry.get("labels", ())),
                manifest_path=args.manifest,
                extra={
                    QUANTIZED_FROM: {
                        "file": src.resolve().relative_to(args.manifest.parent.resolve()).as_posix(),
                        "sha256": sha256_of(src),
                        "version": str(entry.get(QUANTIZED_FROM, entry).get("version", entry["version"])),
                        "method": "onnxruntime quantize_static: QDQ, per-channel int8 weights,"
                        " uint8 activations,"
                        f" MinMax; calibration: {args.calib_real} nellbyler train photos + {args.calib_synth}"
                        " synthetic train-v1 scenes"
                        + ("" if args.all_layers else "; output layer left in float"),
                    }
                },
            )
            print(f"  registered {name} -> {dst.name}")


if __name__ == "__main__":
    main()
