"""The `throwbox` command line.

Each sub-command lives in its own module under `api/cli/` and registers itself through a
`register(app)` function listed in `_COMMAND_MODULES`. Heavy imports (OpenCV, onnxruntime,
pybullet, torch) happen inside the command bodies, so `throwbox --help` stays fast.
"""

from __future__ import annotations

import importlib

import typer

app = typer.Typer(
    name="throwbox",
    help="Computer-vision dice reader and rules engine for High Roll Dice.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

# One line per command module; each module defines `register(app: typer.Typer) -> None`.
_COMMAND_MODULES: tuple[str, ...] = (
    "api.cli.serve",
    "api.cli.calibrate",
    "api.cli.keys",
    "api.cli.audit",
    "api.cli.loadtest",
    "api.cli.synth",
    "api.cli.math",
    "api.cli.settle",
    "api.cli.read",
    "api.cli.eval",
    "api.cli.bench",
    "api.cli.stress",
    "api.cli.watch",
    "api.cli.settle_bench",
    "api.cli.live_bench",
    "api.cli.dashboard_shot",
    "api.cli.round_clips",
    "models.cli",
)


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)


_register_all()


def main() -> None:
    """Entry point of the `throwbox` console script."""
    app()
