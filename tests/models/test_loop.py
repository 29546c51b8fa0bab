"""The learning-rate schedule and the batch prefetch of the shared training loop (models/loop.py)."""

from __future__ import annotations

import itertools
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from models.loop import Prefetch, lr_at, reseeded, worker_seed

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("step", "frac", "warmup", "expected"),
    [
        (0, 0.0, 50, 0.01),  # warm-up starts at the floor
        (25, 0.0, 50, 0.5 + 0.01),  # half-way through warm-up
        (50, 0.0, 50, 1.0 + 0.01),  # full rate once warmed up
        (500, 0.5, 50, 0.5 + 0.01),  # cosine half-way through the budget
        (500, 1.0, 50, 0.01),  # only the floor at the end
        (0, 0.0, 0, 1.0 + 0.01),  # no warm-up
    ],
)
def test_lr_at(step: int, frac: float, warmup: int, expected: float) -> None:
    assert math.isclose(lr_at(1.0, step=step, frac=frac, warmup_steps=warmup), expected, abs_tol=1e-12)


def test_lr_at_scales_with_the_base_rate() -> None:
    assert math.isclose(
        lr_at(3e-3, step=10, frac=0.3, warmup_steps=50), 3e-3 * lr_at(1.0, step=10, frac=0.3, warmup_steps=50)
    )


@pytest.mark.parametrize(
    "script",
    ["models.train_pips", "models.train_detector", "models.train_die_state", "models.distill_detector"],
)
def test_a_training_script_without_torch_exits_with_the_install_command(
    script: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    import importlib
    import importlib.util
    import sys

    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "torch" else real_find_spec(name, *a)
    )
    monkeypatch.setattr(sys, "argv", [script])
    module = importlib.import_module(script)
    with pytest.raises(SystemExit, match=r"pip install -e '\.\[train\]'"):
        module.main()


class _Counting:
    """A sampler whose batch is (the seed of its generator, how many batches it has made)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.made = itertools.count()


def _count(source: _Counting) -> tuple[int, int]:
    return int(source.rng.bit_generator.seed_seq.entropy), next(source.made)  # type: ignore[attr-defined]


def test_prefetch_hands_on_the_batches_each_worker_makes_in_its_order() -> None:
    with Prefetch(_count, _Counting(5), workers=2, seed=5) as batches:
        assert not batches.inline
        got = [batches.next() for _ in range(40)]
    seeds = (worker_seed(5, 0), worker_seed(5, 1))
    by_worker = {k: [n for w, n in got if w == k] for k in seeds}
    assert set(w for w, _ in got) <= set(seeds) and sum(len(v) for v in by_worker.values()) == 40
    for made in by_worker.values():  # each worker's batches in the order it made them, none lost between
        assert made == list(range(len(made)))
    assert all(not w.is_alive() for w in batches._workers)  # closed on leaving the block


def test_prefetch_without_workers_leaves_the_drawing_to_the_trainer() -> None:
    source = _Counting(5)
    with Prefetch(_count, source, workers=0, seed=5) as batches:
        assert batches.inline and batches._workers == []
        # The trainer's own sampler, drawn here in turn: a run without workers draws as before.
        assert [batches.next() for _ in range(3)] == [(5, 0), (5, 1), (5, 2)]
    with pytest.raises(ValueError, match="workers must be 0 or more"):
        Prefetch(_count, source, workers=-1, seed=5)


def test_a_reseeded_sampler_shares_its_data_and_draws_apart() -> None:
    source = _Counting(5)
    other = reseeded(source, worker_seed(5, 0))
    assert other is not source and other.made is source.made  # the data shared, not copied
    assert other.rng.integers(1 << 30) != source.rng.integers(1 << 30)
    assert len({5, worker_seed(5, 0), worker_seed(5, 1)}) == 3


def _failing(source: _Counting) -> int:
    raise RuntimeError("a crop could not be cut")


def test_prefetch_says_so_when_every_worker_has_died() -> None:
    with (
        Prefetch(_failing, _Counting(5), workers=1, seed=5) as batches,
        pytest.raises(RuntimeError, match="every data worker"),
    ):
        batches.next(timeout_s=60.0)


@pytest.mark.parametrize("script", ["models.train_detector", "models.train_pips"])
def test_a_training_run_with_a_data_worker_exports_a_model(tmp_path: Path, script: str) -> None:
    """`--data-workers 1` end to end: a few steps on crops cut in a worker process, the ONNX exported, the
    manifest left alone (needs torch and the real photo sets; run by hand where they are)."""
    pytest.importorskip("torch", reason="training only: pip install -e '.[train]'")
    from models.data import SHARED_REAL

    if not (SHARED_REAL / "d6-topdown-nellbyler").is_dir():
        pytest.skip(f"needs the real photo sets in {SHARED_REAL}")
    manifest = (REPO / "models" / "manifest.json").read_text(encoding="utf-8")
    run = [sys.executable, "-m", script, "--minutes", "0.1", "--threads", "1", "--data-workers", "1"]
    out = subprocess.run(
        [*run, "--batch", "8", "--no-register", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=600,
        cwd=REPO,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "done:" in out.stdout and list(tmp_path.glob("*.onnx")), out.stdout[-2000:]
    assert (REPO / "models" / "manifest.json").read_text(encoding="utf-8") == manifest
    bad = subprocess.run(
        [sys.executable, "-m", script, "--minutes", "0.01", "--data-workers", "-1", "--no-register"],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=REPO,
    )
    assert bad.returncode == 2 and "--data-workers must be 0 or more" in bad.stderr
