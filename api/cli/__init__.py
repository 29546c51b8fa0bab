"""The `throwbox` command line: the operator's commands, and the lab's under `throwbox lab`.

Each sub-command lives in its own module under `api/cli/` and registers itself through a
`register(app)` function listed in `_COMMAND_MODULES`. Heavy imports (OpenCV, onnxruntime,
pybullet, torch) happen inside the command bodies, so `throwbox --help` stays fast.

The lab's commands (evaluations, benchmarks, stress runs, the synthetic generator) live in `lab/cli/`
and are added as one sub-group, `throwbox lab ...`: the only import of `lab` in `api`
(docs/architecture.md). The packages only the lab or training need are extras (`_EXTRAS`); a command that
needs a missing one stops with a message naming the extra to install instead of a traceback.
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
    "api.cli.db",
    "api.cli.math",
    "api.cli.settle",
    "api.cli.read",
    "api.cli.watch",
    "api.cli.fairness",
    "api.cli.worker",
    "api.cli.enroll",
    "api.cli.models",
    "models.cli",
)

# The packages `pip install throwbox` leaves out, and the extra that brings each (pyproject.toml).
_EXTRAS: dict[str, str] = {"pybullet": "synth", "matplotlib": "lab", "torch": "train", "onnx": "train"}

LAB_HELP = "The lab: evaluations, benchmarks, stress runs and the synthetic throw-box generator."


def _register_all() -> None:
    for name in _COMMAND_MODULES:
        importlib.import_module(name).register(app)
    _register_lab()


def _register_lab() -> None:
    """Add `throwbox lab ...`; where the lab cannot be loaded, a `lab` that says why and what to install."""
    help_text = LAB_HELP
    try:
        from lab.cli import app as lab_app
    except ModuleNotFoundError as exc:
        reason = f"the lab cannot be loaded here ({exc}); install it with: pip install 'throwbox[lab]'"
        # "\\[" is a bracket in the help's rich markup.
        help_text = f"{LAB_HELP} Unavailable here: pip install 'throwbox\\[lab]'."
        lab_app = typer.Typer(name="lab", add_completion=False)

        @lab_app.callback(invoke_without_command=True, context_settings={"ignore_unknown_options": True})
        def unavailable(args: list[str] = typer.Argument(None, hidden=True)) -> None:
            typer.echo(f"throwbox lab: {reason}", err=True)
            raise typer.Exit(2)

    app.add_typer(lab_app, name="lab", help=help_text)


def missing_extra_message(exc: ModuleNotFoundError) -> str | None:
    """What to install for a package an extra brings (None: not one of theirs, a real error)."""
    top = (exc.name or "").split(".")[0]
    extra = _EXTRAS.get(top)
    if extra is None:
        return None
    return (
        f"throwbox: this command needs {top}, which the [{extra}] extra installs: "
        f"pip install 'throwbox[{extra}]'"
    )


_register_all()


def main() -> None:
    """Entry point of the `throwbox` console script."""
    try:
        app()
    except ModuleNotFoundError as exc:
        message = missing_extra_message(exc)
        if message is None:
            raise
        typer.echo(message, err=True)
        raise SystemExit(2) from None
