"""`throwbox lab calibrate-faces --tune SET... [--judge NAME=SET...]`: fit the face model's temperature and
sure bar on tuning sets (lab/calibrate.py), report calibration error before and after on every set, and
write a manifest that carries them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from models.data import LabelledImage
    from vision.pips.classifier import FaceReader


def face_probs(
    reader: FaceReader, items: list[LabelledImage]
) -> tuple[NDArray[np.float32], NDArray[np.int64]]:
    """The face model's probabilities (one look, no second look) on each labelled die's own box, and the
    labels; top-face labels are widened to the whole die as `throwbox lab eval` widens them."""
    import numpy as np

    from vision.image import load_image
    from vision.pips.crops import crop_die

    probs, faces = [], []
    for item in items:
        boxes = item.boxes_xyxy.copy()
        if item.box_kind == "top":
            centre, half = (boxes[:, :2] + boxes[:, 2:]) / 2, (boxes[:, 2:] - boxes[:, :2]) * 0.6
            boxes = np.concatenate([centre - half, centre + half], axis=1)
        if len(boxes) == 0:
            continue
        image = load_image(item.path)
        probs.append(reader.probabilities([crop_die(image, b) for b in boxes]))
        faces.append(item.faces.astype(np.int64))
    if not probs:
        return np.zeros((0, 6), np.float32), np.zeros(0, np.int64)
    return np.concatenate(probs), np.concatenate(faces)


def _relocated(manifest: dict[str, Any], *, source: Path, target: Path) -> dict[str, Any]:
    """The manifest's weight files named relative to the folder `target` will be written to."""
    out: dict[str, Any] = json.loads(json.dumps(manifest))
    for entry in out["models"].values():
        weight = (source.parent / entry["file"]).resolve()
        entry["file"] = os.path.relpath(weight, target.resolve().parent)
    return out


def _plot(curves: dict[str, dict[str, Any]], path: Path, temperature: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(curves), figsize=(4.2 * len(curves), 4.2), squeeze=False)
    for ax, (name, sets) in zip(axes[0], curves.items(), strict=True):
        ax.plot([0, 1], [0, 1], color="grey", lw=0.8)
        for when, rows in (("before", sets["before"]), (f"T={temperature:g}", sets["after"])):
            ax.plot([r["confidence"] for r in rows], [r["accuracy"] for r in rows], marker="o", label=when)
        ax.set_title(
            f"{name}\nECE {sets['ece_before']:.4f} -> {sets['ece_after']:.4f} ({sets['dice']} dice)",
            fontsize=9,
        )
        ax.set_xlabel("confidence (mean of bin)")
        ax.set_ylabel("accuracy")
        ax.set_xlim(0.3, 1.0)
        ax.set_ylim(0.3, 1.0)
        ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def register(app: typer.Typer) -> None:
    @app.command("calibrate-faces")
    def calibrate_faces(
        tune: list[str] = typer.Option(
            ..., "--tune", help="Tuning sets (PATH or PATH:SPLIT), never a judging set."
        ),
        judge: list[str] = typer.Option(
            [], "--judge", help="Sets to report calibration error on: NAME=PATH[:SPLIT]."
        ),
        manifest: Path | None = typer.Option(
            None, "--manifest", help="The manifest whose face model is calibrated."
        ),
        model: str = typer.Option(
            "pips", "--model", help="Which face model of the manifest (pips, or pips_peer: a second model)."
        ),
        out_manifest: Path | None = typer.Option(
            None,
            "--out-manifest",
            help="Write a manifest with the temperature and sure bar (not the shipped one).",
        ),
        report: Path = typer.Option(
            Path("reports/reader/calibration"), "--report", help="Folder of the report."
        ),
        target_per_1000: float = typer.Option(
            1.0,
            "--target-per-1000",
            min=0.0,
            help="The sure bar: the lowest at which the tuning set's sure dice are wrong at most this often.",
        ),
        limit: int = typer.Option(0, "--limit", min=0, help="At most this many images of each set."),
    ) -> None:
        """Fit one temperature for the face model on the tuning sets, choose its sure bar, report ECE home and
        away (reliability plot), and optionally write a manifest carrying both."""
        from lab.calibrate import at_temperature, calibrate, ece, reliability
        from models.data import DatasetError, load_dataset
        from vision.onnx_session import MANIFEST_PATH, ModelError, load_model
        from vision.pips.classifier import FaceReader

        source = manifest or MANIFEST_PATH

        def load(text: str) -> list[LabelledImage]:
            path, _, split = text.partition(":")
            try:
                items = load_dataset(Path(path), split=split or "test")
            except DatasetError as exc:
                typer.echo(f"throwbox lab calibrate-faces: {exc}", err=True)
                raise typer.Exit(2) from exc
            return items[:limit] if limit else items

        tuning = [item for text in tune for item in load(text)]
        judged = {}
        for text in judge:
            name, sep, where = text.partition("=")
            if not sep:
                typer.echo(f"throwbox lab calibrate-faces: --judge wants NAME=PATH, got {text!r}", err=True)
                raise typer.Exit(2)
            judged[name] = load(where)
        try:
            reader = FaceReader(load_model(model, manifest_path=source), second_look_below=None)
        except ModelError as exc:
            typer.echo(f"throwbox lab calibrate-faces: cannot load the face model: {exc}", err=True)
            raise typer.Exit(2) from exc
        probs, faces = face_probs(reader, tuning)
        if len(faces) == 0:
            typer.echo("throwbox lab calibrate-faces: the tuning sets hold no labelled dice", err=True)
            raise typer.Exit(2)
        fitted = calibrate(probs, faces, target_per_1000=target_per_1000)
        t = fitted.temperature
        curves: dict[str, dict[str, Any]] = {}
        read = {"tuning": (probs, faces)} | {n: face_probs(reader, items) for n, items in judged.items()}
        for name, (p, f) in read.items():
            after = at_temperature(p, t)
            curves[name] = {
                "dice": len(f),
                "ece_before": round(ece(p, f), 5),
                "ece_after": round(ece(after, f), 5),
                "right_pct": round(100.0 * float((p.argmax(axis=1) + 1 == f).mean()), 3) if len(f) else None,
                "before": reliability(p, f),
                "after": reliability(after, f),
            }
        report.mkdir(parents=True, exist_ok=True)
        doc = {
            "manifest": os.path.relpath(source),
            "model": model,
            "tune": tune,
            "judge": judge,
            "target_per_1000": target_per_1000,
            "fitted": fitted.__dict__,
            "sets": curves,
            "ece": "15 equal-width bins of the top probability, the face model alone on the labelled boxes",
        }
        (report / "calibration.json").write_text(json.dumps(doc, indent=1), encoding="utf-8")
        _plot(curves, report / "reliability.png", t)
        if out_manifest is not None:
            raw = json.loads(source.read_text(encoding="utf-8"))
            moved = _relocated(raw, source=source, target=out_manifest)
            moved["models"][model]["temperature"] = t
            moved["models"][model]["sure_bar"] = fitted.sure_bar
            out_manifest.parent.mkdir(parents=True, exist_ok=True)
            out_manifest.write_text(json.dumps(moved, indent=2) + "\n", encoding="utf-8")
        typer.echo(
            f"temperature {t:g}, sure bar {fitted.sure_bar:g} on {fitted.tuning_dice} tuning dice "
            f"(ECE {fitted.ece_before:.4f} -> {fitted.ece_after:.4f})"
        )
        for name, c in curves.items():
            typer.echo(
                f"  {name}: {c['dice']} dice, right {c['right_pct']}%, "
                f"ECE {c['ece_before']} -> {c['ece_after']}"
            )
        typer.echo(f"  report: {report / 'calibration.json'}, {report / 'reliability.png'}")
        if out_manifest is not None:
            typer.echo(f"  manifest: {out_manifest}")
