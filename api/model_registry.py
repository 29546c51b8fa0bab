"""Which models are in use (issue 55, item 7): the manifest changed by a command, never by hand.

`use` takes a candidate manifest (written by a training run, or by `throwbox lab calibrate-faces`), checks
each weight file it names against the SHA-256 it states (a file that differs is refused, nothing changes),
keeps the manifest in use in `manifest.history/` beside it and writes the new one, the candidate's files
named relative to the manifest's folder. `rollback` puts the last kept manifest back (the one it replaces
is kept in `manifest.history/rolled-back/`). `status` checks every entry's file as the reader will.

Exceptions::

    RegistryError       a candidate or manifest that cannot be read, a model it lacks, a file that
                        differs from its SHA-256, or no kept manifest to roll back to
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from vision.onnx_session import ModelError, load_manifest, sha256_of

HISTORY = "manifest.history"


class RegistryError(Exception):
    """A manifest change refused: why, in words."""


@dataclass(frozen=True)
class EntryStatus:
    """One model of a manifest and whether its weight file is the one the manifest names."""

    name: str
    file: str
    version: str
    sha256: str
    state: str  # "ok", "missing" or "differs" (its SHA-256 is not the manifest's)
    temperature: float | None = None
    sure_bar: float | None = None


@dataclass(frozen=True)
class Change:
    """What `use` or `rollback` did: each model whose weights changed (old, new SHA-256) and the kept file."""

    changed: dict[str, tuple[str | None, str | None]]
    kept: Path
    manifest: Path


def _read(path: Path) -> dict[str, Any]:
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
        load_manifest(path)  # the same checks as the reader's
    except (OSError, json.JSONDecodeError, ModelError) as exc:
        raise RegistryError(f"cannot read the manifest {path}: {exc}") from exc
    out: dict[str, Any] = raw
    return out


def status(manifest: Path) -> list[EntryStatus]:
    """Every model of `manifest`, its weight file checked against its SHA-256."""
    try:
        specs = load_manifest(manifest)
    except ModelError as exc:
        raise RegistryError(str(exc)) from exc
    out = []
    for name, spec in sorted(specs.items()):
        path = manifest.parent / spec.file
        state = "missing" if not path.is_file() else ("ok" if sha256_of(path) == spec.sha256 else "differs")
        out.append(
            EntryStatus(name, spec.file, spec.version, spec.sha256, state, spec.temperature, spec.sure_bar)
        )
    return out


def history(manifest: Path) -> list[Path]:
    """The kept manifests, oldest first."""
    folder = manifest.parent / HISTORY
    return sorted(folder.glob("*.json")) if folder.is_dir() else []


def _keep(manifest: Path, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    kept = folder / f"manifest-{stamp}.json"
    kept.write_bytes(manifest.read_bytes())
    return kept


def _write(path: Path, data: bytes) -> None:
    """Write a manifest whole or not at all (a reader never sees half of one)."""
    part = path.with_suffix(".json.part")
    part.write_bytes(data)
    os.replace(part, path)


def _shas(raw: dict[str, Any]) -> dict[str, str]:
    return {name: str(entry["sha256"]).lower() for name, entry in raw["models"].items()}


def use(manifest: Path, candidate: Path, *, names: Sequence[str] = ()) -> Change:
    """Put the candidate's models (all, or `names`) in use in `manifest`, each file checked by SHA-256."""
    current, offered = _read(manifest), _read(candidate)
    chosen = list(names) or sorted(offered["models"])
    missing = [n for n in chosen if n not in offered["models"]]
    if missing:
        raise RegistryError(f"{candidate} lists no model {', '.join(missing)}")
    new = json.loads(json.dumps(current))
    for name in chosen:
        entry = dict(offered["models"][name])
        weight = (candidate.parent / entry["file"]).resolve()
        if not weight.is_file():
            raise RegistryError(f"{name}: weight file {weight} not found")
        actual = sha256_of(weight)
        if actual != str(entry["sha256"]).lower():
            raise RegistryError(
                f"{name}: {weight} has SHA-256 {actual}, but {candidate} states {entry['sha256']}: refused"
            )
        entry["file"] = os.path.relpath(weight, manifest.resolve().parent)
        new["models"][name] = entry
    before, after = _shas(current), _shas(new)
    changed = {
        n: (before.get(n), after.get(n))
        for n in sorted(set(before) | set(after))
        if before.get(n) != after.get(n) or current["models"].get(n) != new["models"].get(n)
    }
    kept = _keep(manifest, manifest.parent / HISTORY)
    _write(manifest, (json.dumps(new, indent=2) + "\n").encode("utf-8"))
    return Change(changed=changed, kept=kept, manifest=manifest)


def rollback(manifest: Path) -> Change:
    """Put the last kept manifest back in use; the one it replaces is kept in `rolled-back/`."""
    kept = history(manifest)
    if not kept:
        raise RegistryError(f"no kept manifest to roll back to in {manifest.parent / HISTORY}")
    last = kept[-1]
    previous, current = _read(last), _read(manifest)
    set_aside = _keep(manifest, manifest.parent / HISTORY / "rolled-back")
    before, after = _shas(current), _shas(previous)
    _write(manifest, last.read_bytes())  # byte for byte the manifest that was in use
    last.unlink()
    changed = {
        n: (before.get(n), after.get(n))
        for n in sorted(set(before) | set(after))
        if before.get(n) != after.get(n) or current["models"].get(n) != previous["models"].get(n)
    }
    return Change(changed=changed, kept=set_aside, manifest=manifest)
