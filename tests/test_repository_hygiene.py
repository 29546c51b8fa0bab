"""The repository is runnable by anyone (issue 58): no tracked code, script or doc names a working folder of
the machine it was written on by its absolute path (the data root, a worktree, a temporary folder), so every
command it gives works from a fresh clone with `$THROWBOX_*` variables or relative paths.

JSON outputs under reports/ may keep the paths they were made on: they are records, not instructions.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

# An absolute path into a working folder: /work/..., /tmp/..., /home/..., /root/..., /Users/..., /mnt/...,
# /scratch/..., /var/tmp/..., not preceded by anything that would make it part of a longer path or a URL.
WORKING_FOLDER = re.compile(r"(?<![A-Za-z0-9_.~/$:-])/(?:work|tmp|home|root|Users|mnt|scratch|var/tmp)/")
RECORDS = re.compile(r"^reports/.*\.jsonl?$")


def tracked_files() -> list[str]:
    """The files git tracks in this checkout (the test skips where there is no git checkout)."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: the tracked files are unknown")
    done = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True, text=True)
    return [name for name in done.stdout.split("\0") if name]


def working_folder_hits(text: str) -> list[tuple[int, str]]:
    """(line number, line) of each line naming a working folder by its absolute path."""
    return [(n, line.strip()) for n, line in enumerate(text.splitlines(), 1) if WORKING_FOLDER.search(line)]


@pytest.mark.parametrize(
    ("line", "hit"),
    [
        ("PY=/work/main/.venv/bin/python", True),  # a worktree
        ("R=/work/shared/datasets/real", True),  # the data root
        ("cd /work/wt-i58b && make", True),
        ("throwbox lab synth /tmp/fx --scenes 48", True),  # a temporary folder
        ("see /home/alice/runs/x.onnx", True),
        ("`/var/tmp/run/` kept", True),
        ("R=$THROWBOX_DATA_ROOT/real", False),  # a variable: anyone's
        ("throwbox lab synth $TMPDIR/fx", False),
        ("data/synth/train-v1 and reports/reader/x.json", False),  # relative to the checkout
        ("https://example.org/work/tmp/page", False),  # part of a URL
        ("mktemp -d -t throwbox-ci-pg.XXXXXX", False),
        ("vision/tmp/x.py", False),  # a relative path that has tmp in it
    ],
)
def test_the_pattern_finds_working_folders_and_nothing_else(line: str, hit: bool) -> None:
    assert bool(working_folder_hits(line)) is hit


def test_no_tracked_code_script_or_doc_names_a_working_folder_by_its_absolute_path() -> None:
    hits = []
    for name in tracked_files():
        if RECORDS.match(name) or name == "tests/test_repository_hygiene.py":  # this file's examples above
            continue
        path = ROOT / name
        if not path.is_file():
            continue
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue  # images, weights, videos: not text
        hits += [f"{name}:{n}: {line[:160]}" for n, line in working_folder_hits(text)]
    assert not hits, (
        f"{len(hits)} lines name a working folder of some machine (use $THROWBOX_DATA_ROOT, data/..., "
        "$TMPDIR or a relative path; docs/history/README.md says which):\n" + "\n".join(hits[:40])
    )
