"""A side-by-side judge of a candidate model against the shipped one, by a rule written before the read.

The same code reads each set twice, once with the shipped manifest and once with a candidate manifest (the
shipped one with one model slot pointing at the candidate's ONNX), then benches both one after the other,
and applies the rule: each `--check` compares one figure of one set (higher or lower is better), and the
candidate's one-thread p50 may be at most `--max-bench-ratio` times the shipped one's. It replaces the
judge scripts the reports used to carry (reports/reader/*/judge.sh, verdict.py, rule.py): paths are
arguments, and a set's path may name `$THROWBOX_DATA_ROOT` (the data root, e.g. ../shared/datasets).

    python -m lab.judge --slot pips --candidate RUN/pips_lite6_2026dec.onnx --out reports/reader/f6 \\
        --set 'nellbyler=$THROWBOX_DATA_ROOT/real/d6-topdown-nellbyler,split=test,overrides=FIX.json' \\
        --check nellbyler:face_accuracy_pct.final_of_gt_dice:up --check nellbyler:faces_wrong:down

`--verdict-only` applies the rule to the JSONs already in `--out` and prints it (no reading, nothing
written): how a report's verdict is checked again from its outputs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DATA_ROOT_VAR = "THROWBOX_DATA_ROOT"
THROWBOX = "import sys; from api.cli import main; sys.argv=['throwbox']+sys.argv[1:]; main()"


class JudgeError(ValueError):
    """A judge's arguments or inputs are wrong (the message says which)."""


@dataclass(frozen=True)
class EvalSet:
    """One set the judge reads twice: its name (the JSONs' stem), folder and `lab eval` options."""

    name: str
    path: Path
    split: str | None = None
    overrides: Path | None = None
    verdicts: bool = False

    def eval_args(self) -> list[str]:
        """The `throwbox lab eval` arguments that read this set (the caller adds the manifest)."""
        args = ["lab", "eval", str(self.path), "--json"]
        if self.split:
            args += ["--split", self.split]
        if self.overrides:
            args += ["--label-overrides", str(self.overrides)]
        if self.verdicts:
            args.append("--verdicts")
        return args


@dataclass(frozen=True)
class Check:
    """One line of the rule: `figure` of set `set_name`, where higher (`up`) or lower is better."""

    set_name: str
    figure: str
    up: bool


@dataclass(frozen=True)
class CheckResult:
    """A check as judged: the shipped and the candidate figure, and whether the candidate passed."""

    label: str
    shipped: float
    candidate: float
    passed: bool


def parse_set(text: str) -> EvalSet:
    """`NAME=PATH[,split=S][,overrides=FILE][,verdicts]`; `$THROWBOX_DATA_ROOT` and `~` are expanded."""
    name, sep, rest = text.partition("=")
    if not sep or not name or not rest:
        raise JudgeError(f"--set must be NAME=PATH[,split=S][,overrides=FILE][,verdicts], got {text!r}")
    path_text, *options = rest.split(",")
    fields: dict[str, Any] = {}
    for option in options:
        key, _, value = option.partition("=")
        if key == "verdicts" and not value:
            fields["verdicts"] = True
        elif key == "split" and value:
            fields["split"] = value
        elif key == "overrides" and value:
            fields["overrides"] = Path(expand(value))
        else:
            raise JudgeError(f"--set {name}: unknown option {option!r} (split=, overrides=, verdicts)")
    return EvalSet(name=name, path=Path(expand(path_text)), **fields)


def expand(text: str) -> str:
    """A path with `$THROWBOX_*` variables and `~` expanded; a variable left unset is an error, not a path."""
    out = os.path.expanduser(os.path.expandvars(text))
    if "$" in out:
        raise JudgeError(f"{text!r}: set the variable it names (e.g. {DATA_ROOT_VAR}=../shared/datasets)")
    return out


def parse_check(text: str) -> Check:
    """`SET:FIGURE:up|down`, FIGURE a dotted key of the eval JSON or one of `DERIVED`."""
    parts = text.split(":")
    if len(parts) != 3 or parts[2] not in ("up", "down") or not parts[0] or not parts[1]:
        raise JudgeError(f"--check must be SET:FIGURE:up|down, got {text!r}")
    return Check(set_name=parts[0], figure=parts[1], up=parts[2] == "up")


def faces_wrong(doc: dict[str, Any]) -> float:
    """Faces given against the label: the face confusion's off-diagonal among faces 1..6."""
    conf = doc["confusion_gt_rows_read_cols_1_to_6_and_uncertain"]
    return float(sum(sum(row[:6]) for row in conf) - sum(conf[i][i] for i in range(6)))


def faces_left(doc: dict[str, Any]) -> float:
    """Labelled dice left to a person: not found, or found and left unsure."""
    conf = doc["confusion_gt_rows_read_cols_1_to_6_and_uncertain"]
    return float(int(doc["gt_dice"]) - sum(sum(row[:6]) for row in conf))


def good_read_exactly(doc: dict[str, Any]) -> float:
    """Truly valid rolls read valid and settled right (every roll read valid that was not valid settles
    wrong, so it is not among them)."""
    conf = doc["confusion_truth_rows_read_cols"]
    not_valid_read_valid = sum(row["valid"] for truth, row in conf.items() if truth != "valid")
    valid_settled_wrong = int(doc["rolls_read_valid_settled_wrong"]) - not_valid_read_valid
    return float(int(conf["valid"]["valid"]) - valid_settled_wrong)


DERIVED: dict[str, Callable[[dict[str, Any]], float]] = {
    "faces_wrong": faces_wrong,
    "faces_left": faces_left,
    "good_read_exactly": good_read_exactly,
}


def figure_of(doc: dict[str, Any], figure: str) -> float:
    """One figure of an eval JSON: a derived one by name, else the value at a dotted key."""
    if figure in DERIVED:
        return DERIVED[figure](doc)
    value: Any = doc
    for key in figure.split("."):
        if not isinstance(value, dict) or key not in value:
            raise JudgeError(f"the eval JSON has no {figure!r} (stopped at {key!r})")
        value = value[key]
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise JudgeError(f"{figure!r} is not a number: {value!r}")
    return float(value)


def load_json(path: Path) -> dict[str, Any]:
    """A JSON document the judge wrote (or a report kept); missing or unreadable is a `JudgeError`."""
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise JudgeError(f"cannot read {path}: {exc}") from exc
    if not isinstance(doc, dict):
        raise JudgeError(f"{path}: not a JSON object")
    return doc


def judge(
    *, folder: Path, checks: Sequence[Check], max_bench_ratio: float, shipped_tag: str, cand_tag: str
) -> tuple[list[CheckResult], bool]:
    """The rule applied to `<set>-<tag>.json` and `bench-<tag>.json` in `folder`: each check's result and
    whether every one passed."""
    results = []
    for check in checks:
        a = figure_of(load_json(folder / f"{check.set_name}-{shipped_tag}.json"), check.figure)
        b = figure_of(load_json(folder / f"{check.set_name}-{cand_tag}.json"), check.figure)
        passed = b >= a if check.up else b <= a
        label = f"{check.set_name}: {check.figure} ({'higher' if check.up else 'lower'} is better)"
        results.append(CheckResult(label=label, shipped=a, candidate=b, passed=passed))
    if max_bench_ratio > 0:
        pa = figure_of(load_json(folder / f"bench-{shipped_tag}.json"), "one_thread.p50_ms")
        pb = figure_of(load_json(folder / f"bench-{cand_tag}.json"), "one_thread.p50_ms")
        label = f"bench one-thread p50 ms (at most {max_bench_ratio:g}x)"
        results.append(CheckResult(label=label, shipped=pa, candidate=pb, passed=pb <= max_bench_ratio * pa))
    return results, all(r.passed for r in results)


def verdict_markdown(results: Sequence[CheckResult], passed: bool) -> str:
    """The rule's table and its one-line verdict, as a report keeps it."""
    lines = ["| check | shipped | candidate | verdict |", "|---|---|---|---|"]
    for r in results:
        lines.append(
            f"| {r.label} | {r.shipped:g} | {r.candidate:g} | {'pass' if r.passed else '**fail**'} |"
        )
    lines.append("")
    lines.append(f"Rule: {'PASSED: register the candidate' if passed else 'FAILED: register nothing'}")
    return "\n".join(lines) + "\n"


def candidate_manifest(
    *,
    shipped: Path,
    slot: str,
    onnx: Path,
    work: Path,
    from_slot: str | None = None,
    fields: dict[str, Any] | None = None,
) -> Path:
    """The shipped manifest with `slot` pointing at the candidate's ONNX, written in `work` beside a copy of
    the ONNX and links to the shipped model folders (the other models shared). A new slot starts as a copy
    of `from_slot` (e.g. `pips_second` from `pips`); `fields` are set on the slot's entry."""
    from vision.onnx_session import sha256_of

    manifest = load_json(shipped)
    models = manifest.get("models", {})
    if from_slot is not None:
        if from_slot not in models:
            raise JudgeError(f"{shipped}: no model slot {from_slot!r} to copy (have {sorted(models)})")
        models[slot] = dict(models[from_slot])
    if slot not in models:
        raise JudgeError(f"{shipped}: no model slot {slot!r} (have {sorted(models)})")
    if not onnx.is_file():
        raise JudgeError(f"no candidate ONNX at {onnx}")
    work.mkdir(parents=True, exist_ok=True)
    for model_dir in shipped.parent.iterdir():
        link = work / model_dir.name
        if model_dir.is_dir() and not link.exists():
            link.symlink_to(model_dir.resolve(), target_is_directory=True)
    shutil.copy2(onnx, work / onnx.name)
    models[slot].update(file=onnx.name, sha256=sha256_of(work / onnx.name), version="candidate")
    models[slot].update(fields or {})
    out = work / "manifest.json"
    out.write_text(json.dumps(manifest, indent=2) + "\n", encoding="utf-8")
    return out


def throwbox(args: Sequence[str], *, out: Path) -> None:
    """Run one `throwbox` command with this interpreter, its stdout into `out`; a failure stops the judge."""
    with out.open("w", encoding="utf-8") as fh:
        done = subprocess.run([sys.executable, "-c", THROWBOX, *args], stdout=fh, check=False)
    if done.returncode != 0:
        raise JudgeError(f"throwbox {' '.join(args)} exited {done.returncode} (its output: {out})")


def read_both(*, sets: Sequence[EvalSet], manifests: dict[str, Path], out: Path, bench_frames: int) -> None:
    """Each set read with each manifest (`<set>-<tag>.json`), then the benches one after the other."""
    for tag, manifest in manifests.items():
        for s in sets:
            args = [*s.eval_args(), "--manifest", str(manifest)]
            throwbox(args, out=out / f"{s.name}-{tag}.json")
    if bench_frames > 0:
        for tag, manifest in manifests.items():
            args = ["lab", "bench", "--frames", str(bench_frames), "--json", "--manifest", str(manifest)]
            throwbox(args, out=out / f"bench-{tag}.json")


def parse_field(text: str) -> tuple[str, Any]:
    """`KEY=VALUE`, the value read as JSON where it is JSON (`0.5`, `null`), else kept as text."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise JudgeError(f"--field must be KEY=VALUE, got {text!r}")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


def build_parser() -> argparse.ArgumentParser:
    """The judge's options (see the module docstring)."""
    p = argparse.ArgumentParser(prog="python -m lab.judge", description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="where the JSONs and verdict.md go")
    p.add_argument("--set", dest="sets", action="append", default=[], help="NAME=PATH[,split=S,...]")
    p.add_argument("--check", dest="checks", action="append", default=[], help="SET:FIGURE:up|down")
    p.add_argument("--slot", help="the manifest's model slot the candidate fills (pips, detector, state...)")
    p.add_argument("--candidate", type=Path, help="the candidate's ONNX")
    p.add_argument("--from-slot", help="a new --slot starts as a copy of this one (e.g. pips)")
    p.add_argument("--field", dest="fields", action="append", default=[], help="KEY=VALUE set on the slot")
    p.add_argument("--manifest", type=Path, default=Path("models/manifest.json"), help="the shipped one")
    p.add_argument("--work", type=Path, help="where the candidate manifest is made (default: OUT/candidate)")
    p.add_argument("--bench-frames", type=int, default=200, help="0: no bench, no bench check")
    p.add_argument("--max-bench-ratio", type=float, default=1.2)
    p.add_argument("--shipped-tag", default="shipped", help="the JSONs' suffix for the shipped reads")
    p.add_argument("--cand-tag", default="cand", help="the JSONs' suffix for the candidate's reads")
    p.add_argument("--verdict-only", action="store_true", help="apply the rule to the JSONs in --out")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Read, bench and judge (or only judge); print the verdict and write `verdict.md`; 0 passed, 1 not."""
    args = build_parser().parse_args(argv)
    try:
        checks = [parse_check(c) for c in args.checks]
        if not checks:
            raise JudgeError("give the rule: at least one --check SET:FIGURE:up|down")
        if not args.verdict_only:
            if not args.slot or not args.candidate or not args.sets:
                raise JudgeError("reading needs --slot, --candidate and at least one --set")
            sets = [parse_set(s) for s in args.sets]
            unknown = {c.set_name for c in checks} - {s.name for s in sets}
            if unknown:
                raise JudgeError(f"--check names sets not given by --set: {sorted(unknown)}")
            args.out.mkdir(parents=True, exist_ok=True)
            cand = candidate_manifest(
                shipped=args.manifest,
                slot=args.slot,
                onnx=args.candidate,
                work=args.work or args.out / "candidate",
                from_slot=args.from_slot,
                fields=dict(parse_field(f) for f in args.fields),
            )
            manifests = {args.shipped_tag: args.manifest, args.cand_tag: cand}
            read_both(sets=sets, manifests=manifests, out=args.out, bench_frames=args.bench_frames)
        ratio = args.max_bench_ratio if args.bench_frames > 0 else 0.0
        results, passed = judge(
            folder=args.out,
            checks=checks,
            max_bench_ratio=ratio,
            shipped_tag=args.shipped_tag,
            cand_tag=args.cand_tag,
        )
    except JudgeError as exc:
        print(f"judge: {exc}", file=sys.stderr)
        return 2
    text = verdict_markdown(results, passed)
    if not args.verdict_only:  # a kept report's verdict.md is its record: checking it again writes nothing
        (args.out / "verdict.md").write_text(text, encoding="utf-8")
    print(text, end="")
    return 0 if passed else 1


if __name__ == "__main__":
    raise SystemExit(main())
