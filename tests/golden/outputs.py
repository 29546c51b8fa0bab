"""Golden outputs of the product's commands, to show a restructuring changes no answer.

`collect()` runs `throwbox read --json` on every fixture photo (dropping only `timing_ms`, which is a clock
reading) and `throwbox math`/`throwbox settle` on every game, as text and as JSON. `test_golden.py` compares
them with `outputs.json`, written by the code before the restructuring of issue 46:

    .venv/bin/python -m tests.golden.outputs --write    # only when an answer is meant to change
"""

from __future__ import annotations

import argparse
import json
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = Path(__file__).with_name("outputs.json")
SETTLE_DOCS = Path(__file__).with_name("settle")
PHOTO_SUFFIXES = (".jpg", ".jpeg", ".png")
# A fixed terminal so rich lays the tables out the same way on every machine.
ENV = {"COLUMNS": "120", "NO_COLOR": "1", "TERM": "dumb"}


def fixture_photos() -> list[str]:
    """Every photo the tests ship, as paths relative to the repository root (sorted)."""
    return sorted(
        str(p.relative_to(ROOT))
        for p in (ROOT / "tests").rglob("*")
        if p.suffix.lower() in PHOTO_SUFFIXES and "golden" not in p.parts
    )


@contextmanager
def _in_root() -> Iterator[None]:
    before = Path.cwd()
    os.chdir(ROOT)
    try:
        yield
    finally:
        os.chdir(before)


def _run(*args: str) -> dict[str, Any]:
    from api.cli import app

    result = CliRunner().invoke(app, list(args), env=ENV)
    return {"exit_code": result.exit_code, "stdout": result.stdout}


def collect() -> dict[str, Any]:
    """The outputs, keyed by the command line that made each."""
    from rules.games import game_ids

    out: dict[str, Any] = {}
    with _in_root():
        photos = fixture_photos()
        result = _run("read", *photos, "--json")
        reads = [json.loads(line) for line in result["stdout"].splitlines() if line.strip()]
        for doc in reads:
            doc.pop("timing_ms", None)
        out["read --json"] = {"exit_code": result["exit_code"], "reads": reads}
        for game in game_ids():
            out[f"math {game}"] = _run("math", game)
            out[f"math {game} --json"] = _run("math", game, "--json")
        for doc in sorted(SETTLE_DOCS.glob("*.json")):
            rel = str(doc.relative_to(ROOT))
            out[f"settle {rel}"] = _run("settle", rel)
            out[f"settle {rel} --json"] = _run("settle", rel, "--json")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--write", action="store_true", help="write outputs.json from the current code")
    args = parser.parse_args()
    outputs = collect()
    if args.write:
        GOLDEN.write_text(json.dumps(outputs, indent=1, sort_keys=True) + "\n")
        print(f"wrote {GOLDEN} ({len(outputs)} commands)")
    else:
        golden = json.loads(GOLDEN.read_text())
        differ = [k for k in sorted(set(golden) | set(outputs)) if golden.get(k) != outputs.get(k)]
        print("identical" if not differ else "differ: " + ", ".join(differ))


if __name__ == "__main__":
    main()
