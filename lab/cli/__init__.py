"""`throwbox lab ...`: the lab's commands (evaluations, benchmarks, stress runs, the synthetic generator).

Each command module registers itself through a `register(app)` function listed in `_COMMAND_MODULES`, as
the operator's commands do in `api/cli`. Heavy imports (OpenCV, onnxruntime, pybullet, matplotlib) happen
inside the command bodies, so `throwbox --help` stays fast and works without the lab's extras; a command
that needs a missing one says which extra installs it (`api.cli.main`).
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="lab",
    help="The lab: evaluations, benchmarks, stress runs and the synthetic throw-box generator.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One line per command module; each module defines `register(app: typer.Typer) -> None`.
_COMMAND_MODULES: tuple[str, ...] = (
    "lab.cli.loadtest",
    "lab.cli.synth",
    "lab.cli.eval",
    "lab.cli.risk",
    "lab.cli.calibrate",
    "lab.cli.bench",
    "lab.cli.stress",
    "lab.cli.settle_bench",
    "lab.cli.live_bench",
    "lab.cli.dashboard_shot",
    "lab.cli.console_shot",
    "lab.cli.round_clips",
    "lab.fuzz",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register_all()
