"""The learning-rate schedule of the shared training loop (models/loop.py)."""

from __future__ import annotations

import math

import pytest

from models.loop import lr_at


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
