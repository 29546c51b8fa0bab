"""The time-budgeted training loop shared by the training scripts (`models/train_*.py`).

Each script trains for a wall-clock budget (`--minutes`) rather than a number of epochs, so a run fits
this machine's time whatever the data size: warm-up, then a cosine learning rate over the budget, a rich
progress bar with a smoothed loss, and the script's own loss function for one batch (`step_loss`).
torch is imported inside `train_for`, so this module (and `lr_at`) imports without the `train` extra.
"""

from __future__ import annotations

import copy
import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")

# Training crops that rebuild the batch norms when a run starts from a committed ONNX export
# (`--init FILE.onnx` of train_pips and train_die_state; models/from_onnx.py).
CALIBRATION_CROPS = 512


def require_torch() -> None:
    """Exit with the install command when torch (the `train` extra) is missing, not with a traceback."""
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise SystemExit(
            "training needs torch, which the runtime install leaves out: pip install -e '.[train]' "
            "(torch 2.13.0 CPU and onnx)"
        )


def lr_at(base_lr: float, *, step: int, frac: float, warmup_steps: int) -> float:
    """Learning rate at `step` with `frac` of the budget gone: linear warm-up times a cosine, plus a floor."""
    warmup = min(1.0, step / warmup_steps) if warmup_steps > 0 else 1.0
    return base_lr * (warmup * 0.5 * (1.0 + math.cos(math.pi * frac)) + 0.01)


@dataclass(frozen=True)
class TrainRun:
    """What a training loop did: optimiser steps taken and when it started (time.monotonic)."""

    steps: int
    started_s: float


def train_for(
    *,
    model: Any,
    opt: Any,
    base_lr: float,
    minutes: float,
    label: str,
    step_loss: Callable[[], tuple[Any, str]],
    warmup_steps: int = 50,
    clip_grad_norm: float | None = None,
    checkpoint: Path | None = None,
    checkpoint_every: int | None = None,
) -> TrainRun:
    """Train `model` with `opt` until `minutes` of wall time have passed.

    `step_loss()` draws one batch and returns its loss tensor and a short note for the progress bar
    (e.g. a loss term, "" for none). With `checkpoint_every`, every that many steps the state is saved to
    `checkpoint` and a progress line printed (for runs watched through a log file).
    """
    import torch
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn

    budget_s = minutes * 60
    start = time.monotonic()
    step = 0
    ema: float | None = None
    with Progress(
        TextColumn(label),
        BarColumn(),
        TextColumn("{task.fields[info]}"),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
    ) as progress:
        task = progress.add_task("train", total=budget_s, info="")
        while (elapsed := time.monotonic() - start) < budget_s:
            lr = lr_at(base_lr, step=step, frac=elapsed / budget_s, warmup_steps=warmup_steps)
            for group in opt.param_groups:
                group["lr"] = lr
            model.train()
            loss, note = step_loss()
            opt.zero_grad()
            loss.backward()
            if clip_grad_norm is not None:
                torch.nn.utils.clip_grad_norm_(model.parameters(), clip_grad_norm)
            opt.step()
            step += 1
            value = float(loss.detach())
            ema = value if ema is None else 0.98 * ema + 0.02 * value
            info = f"step {step} loss {ema:.3f}" + (f" ({note})" if note else "")
            progress.update(task, completed=min(budget_s, time.monotonic() - start), info=info)
            if checkpoint is not None and checkpoint_every and step % checkpoint_every == 0:
                print(f"step {step} loss {ema:.3f} lr {lr:.5f} {time.monotonic() - start:.0f}s", flush=True)
                torch.save(model.state_dict(), checkpoint)
    return TrainRun(steps=step, started_s=start)


def worker_seed(seed: int, worker: int) -> int:
    """The seed of data worker `worker` (0, 1, ...) of a run seeded `seed`: none of them the run's own."""
    return seed + 7919 * (worker + 1)


def reseeded(source: T, seed: int) -> T:
    """A shallow copy of a sampler (its data shared, not copied) with a generator of its own in `rng`."""
    import numpy as np

    other = copy.copy(source)
    other.rng = np.random.default_rng(seed)  # type: ignore[attr-defined]
    return other


class Prefetch:
    """Batches made in worker processes ahead of the training step (`--data-workers`).

    `draw(source)` makes one batch (picklable arrays) from a sampler `source`, which draws from its `rng`.
    With no workers the trainer draws its own batches from `source` between steps, as every script did
    before (and repeatably by its seed). With workers, worker k calls `draw` over and over on a copy of
    `source` reseeded by `worker_seed(seed, k)` and queues the results, at most `depth` ahead of the trainer.
    Workers are forked (they share the loaded training images, read once), so `draw` and `source` need no
    pickling; they use no torch. Hand-written on multiprocessing: torch's DataLoader wants a Dataset of
    indexed items, where these samplers draw endless random crops from a generator of their own.
    """

    def __init__(
        self, draw: Callable[[Any], Any], source: Any, *, workers: int, seed: int, depth: int = 2
    ) -> None:
        import multiprocessing

        if workers < 0:
            raise ValueError(f"workers must be 0 or more, got {workers}")
        self.inline = workers == 0
        self._draw, self._source = draw, source
        self._workers: list[Any] = []
        self._queue: Any = None
        if self.inline:
            return
        ctx = multiprocessing.get_context("fork")
        self._queue = ctx.Queue(maxsize=depth * workers)
        self._workers = [
            ctx.Process(
                target=_prefetch_worker,
                args=(draw, reseeded(source, worker_seed(seed, k)), self._queue),
                daemon=True,
            )
            for k in range(workers)
        ]
        for worker in self._workers:
            worker.start()

    def next(self, timeout_s: float = 600.0) -> Any:
        """The next batch: drawn here without workers, else made by any worker; a RuntimeError if every worker
        has died, or none has made a batch in `timeout_s`."""
        import queue

        if self.inline:
            return self._draw(self._source)
        waited = 0.0
        while True:
            try:
                return self._queue.get(timeout=1.0)
            except queue.Empty:
                if not any(w.is_alive() for w in self._workers):
                    raise RuntimeError("every data worker has stopped (see its traceback above)") from None
                waited += 1.0
                if waited >= timeout_s:
                    raise RuntimeError(f"no batch from the data workers in {timeout_s:g} s") from None

    def close(self) -> None:
        """Stop the workers."""
        for worker in self._workers:
            worker.terminate()
        for worker in self._workers:
            worker.join(timeout=5.0)
        if self._queue is not None:
            self._queue.close()

    def __enter__(self) -> Prefetch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _prefetch_worker(draw: Callable[[Any], Any], source: Any, out: Any) -> None:
    import faulthandler

    faulthandler.enable()  # a worker that crashes in C says where
    while True:
        out.put(draw(source))


def export_onnx(
    model: Any,
    path: Path,
    *,
    example_shape: tuple[int, ...],
    input_name: str,
    output_name: str,
    dynamic_axes: dict[str, dict[int, str]],
    extra_output_names: tuple[str, ...] | list[str] = (),
) -> None:
    """Export `model` in eval mode with torch's legacy (TorchScript) exporter, opset 17 (`extra_output_names`:
    the names of the model's further outputs, after `output_name`).

    The legacy exporter folds each batch norm into the convolution before it (models/from_onnx.py undoes
    that to train on from a committed file); every training script exports through here.
    """
    import torch

    model.eval()
    torch.onnx.export(
        model,
        (torch.zeros(*example_shape),),
        str(path),
        dynamo=False,
        opset_version=17,
        input_names=[input_name],
        output_names=[output_name, *extra_output_names],
        dynamic_axes=dynamic_axes,
    )
