"""`python -m models.train_pips --help` answers, with or without torch (the help once crashed on a '%'); a
real train set can be left out of training (issue 55), chosen in plain python, tested without torch."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from models.data import LabelledImage
from models.train_pips import build_parser, real_train_items


def test_train_pips_help_lists_its_options() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "models.train_pips", "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "--synth-extra" in out.stdout and "--init" in out.stdout
    assert "20 % of nellbyler train photos" in " ".join(out.stdout.split())


def _photos(n: int, tag: str) -> list[LabelledImage]:
    return [
        LabelledImage(
            path=Path(f"{tag}-{k}.jpg"),
            boxes_xyxy=np.zeros((1, 4), np.float32),
            faces=np.ones(1, np.int64),
        )
        for k in range(n)
    ]


@pytest.mark.parametrize(
    ("leave_out", "hold_back", "repeat", "nell", "webcam"),
    [
        ((), False, 1, 10, 5),  # both sets whole
        ((), False, 3, 30, 5),  # nellbyler drawn three times as often
        (("matteop65",), False, 1, 10, 0),  # a model that never saw matteop65: all of it can be judged
        (("nellbyler",), False, 3, 0, 5),  # ...or never nellbyler (its repeat then repeats nothing)
        (("nellbyler", "matteop65"), False, 1, 0, 0),
        (("matteop65",), True, 1, 8, 0),  # 20 % of nellbyler held back for tuning, matteop65 left out
    ],
)
def test_a_real_set_can_be_left_out_of_training(
    leave_out: tuple[str, ...], hold_back: bool, repeat: int, nell: int, webcam: int
) -> None:
    items, said = real_train_items(
        _photos(10, "nell"), _photos(5, "cam"), hold_back=hold_back, real_repeat=repeat, leave_out=leave_out
    )
    assert sum(str(i.path).startswith("nell") for i in items) == nell
    assert sum(str(i.path).startswith("cam") for i in items) == webcam
    for name in leave_out:
        assert "left out: all" in said and name in said


def test_an_unknown_set_to_leave_out_is_refused() -> None:
    with pytest.raises(ValueError, match="no real set mnist"):
        real_train_items([], [], leave_out=("mnist",))
    out = subprocess.run(
        [sys.executable, "-m", "models.train_pips", "--leave-out", "mnist"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 2 and "invalid choice: 'mnist'" in out.stderr
    args = build_parser().parse_args(["--leave-out", "matteop65", "--leave-out", "nellbyler"])
    assert args.leave_out == ["matteop65", "nellbyler"]
