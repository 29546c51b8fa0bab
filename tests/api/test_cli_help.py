"""`throwbox --help` lists the operator's commands and the `lab` group; the lab's commands are under
`throwbox lab`; without the lab or an extra, a command says what to install instead of a traceback."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import api.cli
from api.cli import app, missing_extra_message

ROOT = Path(__file__).resolve().parents[2]
OPERATOR = {
    "serve",
    "read",
    "calibrate",
    "watch",
    "keys",
    "audit",
    "db",
    "math",
    "settle",
    "fairness",
    "worker",
    "train",
    "enroll",
    "models",
}
LAB = {
    "eval",
    "bench",
    "stress",
    "synth",
    "synth-set",
    "synth-bench",
    "synth-sheet",
    "synth-relabel",
    "synth-check",
    "synth-round",
    "settle-bench",
    "live-bench",
    "dashboard-screenshot",
    "console-screenshot",
    "loadtest",
    "fuzz",
    "risk",
    "risk-pool",
    "risk-plot",
    "risk-bar",
    "calibrate-faces",
    "learn-bench",
}
runner = CliRunner()


def listed(output: str) -> set[str]:
    """The command names of a --help page (the first word of each row of its Commands box)."""
    box = output.split("Commands")[1]
    return set(re.findall(r"^│ ([a-z][a-z-]*) ", box, flags=re.MULTILINE))


def test_the_help_lists_the_operators_commands_and_the_lab_group() -> None:
    result = runner.invoke(app, ["--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert listed(result.output) == OPERATOR | {"lab"}


def test_the_labs_commands_are_under_throwbox_lab() -> None:
    result = runner.invoke(app, ["lab", "--help"], env={"COLUMNS": "200"})
    assert result.exit_code == 0
    assert listed(result.output) == LAB
    for old in ("eval", "synth", "bench"):  # no longer at the top level
        assert runner.invoke(app, [old, "--help"]).exit_code == 2
    assert "--verdicts" in runner.invoke(app, ["lab", "eval", "--help"], env={"COLUMNS": "200"}).output


def test_without_the_lab_throwbox_works_and_lab_says_what_to_install() -> None:
    code = "import sys; sys.modules['lab.cli'] = None; sys.argv = ['throwbox', *sys.argv[1:]]; "
    code += "from api.cli import main; main()"
    run = [sys.executable, "-c", code]
    helped = subprocess.run([*run, "--help"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert helped.returncode == 0 and "serve" in helped.stdout and "throwbox[lab]" in helped.stdout
    lab = subprocess.run([*run, "lab", "eval", "x"], capture_output=True, text=True, cwd=ROOT, check=False)
    assert lab.returncode == 2
    assert "the lab cannot be loaded here" in lab.stderr and "pip install 'throwbox[lab]'" in lab.stderr


@pytest.mark.parametrize(
    ("missing", "extra"),
    [("pybullet", "synth"), ("matplotlib.pyplot", "lab"), ("torch", "train"), ("onnx", "train")],
)
def test_a_missing_extra_is_named(missing: str, extra: str) -> None:
    message = missing_extra_message(ModuleNotFoundError(f"No module named '{missing}'", name=missing))
    assert message is not None and f"pip install 'throwbox[{extra}]'" in message
    assert missing.split(".")[0] in message


def test_a_module_no_extra_brings_is_a_real_error() -> None:
    assert missing_extra_message(ModuleNotFoundError("No module named 'cv2'", name="cv2")) is None
    assert missing_extra_message(ModuleNotFoundError("no name")) is None


def test_main_turns_a_missing_extra_into_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    needs = typer.Typer()

    @needs.command()
    def plot() -> None:
        import matplotlib  # noqa: F401 (None in sys.modules: as if not installed)

    @needs.command()
    def other() -> None:
        import a_module_of_nobody  # type: ignore[import-not-found]  # noqa: F401

    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setattr(api.cli, "app", needs)
    monkeypatch.setattr(sys, "argv", ["throwbox", "plot"])
    with pytest.raises(SystemExit) as stopped:
        api.cli.main()
    assert stopped.value.code == 2
    assert "pip install 'throwbox[lab]'" in capsys.readouterr().err
    monkeypatch.setattr(sys, "argv", ["throwbox", "other"])
    with pytest.raises(ModuleNotFoundError, match="a_module_of_nobody"):
        api.cli.main()
