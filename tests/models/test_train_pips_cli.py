"""`python -m models.train_pips --help` answers, with or without torch (the help once crashed on a '%')."""

from __future__ import annotations

import subprocess
import sys


def test_train_pips_help_lists_its_options() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "models.train_pips", "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert "--synth-extra" in out.stdout and "--init" in out.stdout
    assert "20 % of nellbyler train photos" in " ".join(out.stdout.split())
