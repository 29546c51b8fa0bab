"""Distil the registered die detector into a cheaper net (`LiteDieDetector`) on CPU; export it to ONNX.

    .venv/bin/python -m models.distill_detector --feature-minutes 10 --minutes 40 \\
        --synth data/synth/train-v1 --synth-limit 800 --out out/det_lite --no-register

Why: the detector takes most of a read's time on one thread (about 11 of 28 ms), mostly in dense 3x3
convolutions at 1/4 to 1/32 of the frame. The student keeps the teacher's stem, lateral convolutions,
`fuse16`, `fuse4` and head (copied) and replaces the rest by depthwise-separable blocks (about 0.4x the
time). Training a detector from scratch on this machine took hours and many stages (the model card); a
student that learns to compute what the teacher computes needs far less, and reads as the teacher was
judged to read, on data the labels do not cover too.

Phase 1 (`--feature-minutes`): every layer copied from the teacher is frozen; each new block learns to give
the teacher's block output from the teacher's block input (mean squared error over the teacher output's
variance, summed over the blocks), so the blocks learn side by side and quickly.
Phase 2 (`--minutes`): the whole student trains on the CenterNet loss against the labels plus the
teacher's output (`--distill-weight`): squared error on the heat, L1 on the log size and offset where
the teacher sees a die centre (heat >= 0.1, weighted by it).

`--init-student PT` continues a student from an earlier run's `last.pt` (its own weights, none copied from
the teacher); with `--feature-minutes 0` phase 1 is skipped. With `--hard-negatives` and `--mine-manifest` (a
manifest naming that student's ONNX file) the crops are cut where the student itself fires with no die.

The data options are train_detector's (the same sampler, crops and augmentation). Needs the `train` extra.
"""

from __future__ import annotations

import argparse
import pickle
import time
from pathlib import Path
from typing import Any

from models.loop import require_torch, train_for
from models.train_detector import (
    MODEL_DIR,
    add_data_arguments,
    detection_loss,
    draw_batch,
    finish_detector,
    load_detector_onnx,
    load_training_data,
)

# Where the teacher's heat is at least this, its size and offset are targets for the student.
TEACHER_CENTRE_HEAT = 0.1


def copy_shared_layers(student: Any, teacher: Any) -> None:
    """Copy the parameters and batch-norm statistics of the layers the student shares with its teacher."""
    shared = tuple(f"{name}." for name in student.SHARED)
    teacher_state = teacher.state_dict()
    state = {k: v.clone() for k, v in teacher_state.items() if k.startswith(shared)}
    missing, unexpected = student.load_state_dict(state, strict=False)
    left = [k for k in missing if k.startswith(shared)]
    if left or unexpected:
        raise ValueError(f"the student's shared layers do not fit the teacher: {left or unexpected}")


def load_student(checkpoint: Path) -> Any:
    """An earlier student's whole checkpoint (`--init-student`); ValueError naming what is wrong with it."""
    import torch

    from models.nets import LiteDieDetector

    if not checkpoint.is_file():
        raise ValueError(f"no student checkpoint at {checkpoint}")
    student = LiteDieDetector()
    try:
        student.load_state_dict(torch.load(checkpoint, weights_only=True))
    except (RuntimeError, pickle.UnpicklingError) as exc:
        raise ValueError(f"{checkpoint} is not a LiteDieDetector checkpoint: {exc}") from exc
    return student


def build_student(teacher: Any) -> Any:
    """A `LiteDieDetector` with the teacher's shared layers, its new blocks as initialised."""
    from models.nets import LiteDieDetector

    student = LiteDieDetector()
    copy_shared_layers(student, teacher)
    return student


class BlockRecorder:
    """Forward hooks on the teacher's replaced blocks: the input and output each saw on the last call."""

    def __init__(self, teacher: Any, names: tuple[str, ...]) -> None:
        self.io: dict[str, tuple[Any, Any]] = {}
        self._handles = [
            teacher.get_submodule(name).register_forward_hook(self._hook(name)) for name in names
        ]

    def _hook(self, name: str) -> Any:
        def hook(_module: Any, inputs: tuple[Any, ...], output: Any) -> None:
            self.io[name] = (inputs[0].detach(), output.detach())

        return hook

    def close(self) -> None:
        for h in self._handles:
            h.remove()


def feature_loss(student: Any, io: dict[str, tuple[Any, Any]]) -> Any:
    """Phase 1: each new block against the teacher's block, on the teacher's input to it."""
    import torch.nn.functional as F  # noqa: N812 (torch's own convention)

    total = 0.0
    for name in student.REPLACED:
        inp, target = io[name]
        pred = student.get_submodule(name)(inp)
        total = total + F.mse_loss(pred, target) / target.var().clamp(min=1e-6)
    return total


def output_distill_loss(student_out: Any, teacher_out: Any, n_pos: Any) -> tuple[Any, Any]:
    """Phase 2: heat by squared error, size and offset by L1 weighted by the teacher's heat at centres."""
    import torch

    t_heat = teacher_out[:, 0]
    heat = ((student_out[:, 0] - t_heat) ** 2).sum() / n_pos
    weight = (t_heat * (t_heat >= TEACHER_CENTRE_HEAT)).unsqueeze(1)
    reg = (torch.abs(student_out[:, 1:5] - teacher_out[:, 1:5]) * weight).sum() / n_pos
    return heat, reg


def main() -> None:
    require_torch()
    import torch

    from models.nets import DieDetector
    from vision.onnx_session import MANIFEST_PATH, load_manifest

    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--teacher",
        type=Path,
        default=None,
        help="the teacher's .onnx (default: the detector models/manifest.json names)",
    )
    parser.add_argument(
        "--init-student",
        type=Path,
        default=None,
        help="continue an earlier run's last.pt; no layer is copied from the teacher",
    )
    parser.add_argument(
        "--feature-minutes", type=float, default=10.0, help="phase 1 wall-time budget (0: skip it)"
    )
    parser.add_argument("--minutes", type=float, default=40.0, help="phase 2 wall-time budget")
    parser.add_argument("--batch", type=int, default=32)
    parser.add_argument("--feature-lr", type=float, default=3e-3)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--distill-weight", type=float, default=1.0)
    parser.add_argument("--seed", type=int, default=0)
    add_data_arguments(parser)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, default=MODEL_DIR)
    parser.add_argument(
        "--no-register", action="store_true", help="export the .onnx but leave models/manifest.json as it is"
    )
    args = parser.parse_args()
    # Checked before the data load and the mining (minutes), so a wrong path fails at once.
    try:
        continued = load_student(args.init_student) if args.init_student is not None else None
    except ValueError as exc:
        parser.error(str(exc))

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    teacher_path = args.teacher or MANIFEST_PATH.parent / load_manifest()["detector"].file
    scenes, false_alarms, sampler = load_training_data(args)

    teacher = DieDetector()
    load_detector_onnx(teacher, teacher_path, scenes, false_alarms, args)
    teacher.eval()
    for p in teacher.parameters():
        p.requires_grad_(False)
    student = continued if continued is not None else build_student(teacher)
    start = f"continues {args.init_student}" if args.init_student else f"copies {', '.join(student.SHARED)}"
    print(f"teacher {teacher_path}; student {start}")
    args.out.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()

    # Phase 1 (the replaced blocks learn the teacher's block outputs) is skipped with --feature-minutes 0,
    # as a continued student (--init-student) needs: no teacher hooks, no empty progress bar.
    phase1_steps = 0
    if args.feature_minutes > 0:
        recorder = BlockRecorder(teacher, student.REPLACED)
        new_params = [p for name in student.REPLACED for p in student.get_submodule(name).parameters()]
        opt = torch.optim.AdamW(new_params, lr=args.feature_lr, weight_decay=1e-4)

        def feature_step() -> tuple[torch.Tensor, str]:
            x, _ = draw_batch(sampler, args.batch)
            with torch.no_grad():
                teacher(x)
            return feature_loss(student, recorder.io), ""

        phase1_steps = train_for(
            model=student,
            opt=opt,
            base_lr=args.feature_lr,
            minutes=args.feature_minutes,
            label="student blocks",
            step_loss=feature_step,
            warmup_steps=50,
            clip_grad_norm=10.0,
        ).steps
        recorder.close()

    opt = torch.optim.AdamW(student.parameters(), lr=args.lr, weight_decay=1e-4)

    def step() -> tuple[torch.Tensor, str]:
        x, t = draw_batch(sampler, args.batch)
        with torch.no_grad():
            teacher_out = teacher(x)
        out = student(x)
        focal, size_l1, off_l1 = detection_loss(out, t)
        n_pos = (t[:, 0] == 1).float().sum().clamp(min=1)
        heat_d, reg_d = output_distill_loss(out, teacher_out, n_pos)
        loss = focal + size_l1 + off_l1 + args.distill_weight * (heat_d + reg_d)
        return loss, f"focal {float(focal.detach()):.2f} distil {float((heat_d + reg_d).detach()):.2f}"

    phase2 = train_for(
        model=student,
        opt=opt,
        base_lr=args.lr,
        minutes=args.minutes,
        label="student",
        step_loss=step,
        warmup_steps=100,
        clip_grad_norm=10.0,
        checkpoint=args.out / "last.pt",
        checkpoint_every=50,
    )

    finish_detector(
        student,
        out=args.out,
        kind="centernet_lite",
        steps=f"{phase1_steps} + {phase2.steps} steps x {args.batch}",
        started_s=started,
        no_register=args.no_register,
    )


if __name__ == "__main__":
    main()
