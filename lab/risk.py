"""Risk and coverage (issue 55): wrong faces per 1,000 given against the share of dice given, as the sure bar
moves, and the same per roll (rolls read valid that settle wrong per 1,000 rolls read valid).

Each image is read once, with the reader's sure bar (`ValidityConfig.min_confidence`) at 0, into one
`DieRecord` per detected die and one `RollRecord` per image; every bar is then a filter over those records,
never a new read. A die is given a face at bar `t` when the reader, bar aside, gives it one and its
confidence reaches `t` (and, for a variant, each second opinion it names agrees). A detection matched to no
labelled die (`truth` None) that is given a face counts as a face given wrong. A roll is read valid at `t`
when the reader called it valid with the bar at 0 and every die of it is given a face at `t`; it settles
wrong when the rules engine's classification of the faces read (Pip Street winner, Like Kind count:
`rules.hrd.dice`) is not that of the labels. Intervals: Wilson score, 95 %.

The records are exact for the reader's own bar: only the judge's `min_confidence` reads the face
probability (vision/judge/validity.py), so a die's fate at `t` is the reader's at `min_confidence = t`,
save where a judge rule looks at the face a low-confidence die was given (a cocked die read by rule):
then the read at the bar itself is the truth, which `tests/lab/test_risk.py` checks on real photos.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from rules.hrd.dice import face_counts, winner_of_counts
from vision.judge.phantom import PhantomConfig
from vision.pips.classifier import TURNS_BELOW

Z_95 = 1.959963984540054
# The bars swept: the whole range coarsely, then ever closer to 1 where a calibrated model's sure dice lie.
BARS: tuple[float, ...] = (
    0.0, 0.3, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999,
    0.9995, 0.9999, 0.99999,
)  # fmt: skip
# The second opinions a variant may ask for, by name (`DieRecord` fields they read). "turns_unsure": the
# turns heeded only for dice under `vision.pips.classifier.TURNS_BELOW`, as a reader with `turns_below` reads.
# "peer": a second face model trained apart (`pips_peer`) reads the same face; "peer_sure": ...and is at
# least as sure as the bar (the bar moves both models' bars together, as a reader whose `pips` and `pips_peer`
# carry the same `sure_bar` reads).
# "apart": no other box covers more than `PhantomConfig.max_overlap` of the die's box.
OPINIONS: tuple[str, ...] = ("turns", "turns_unsure", "pips", "whole_die", "peer", "peer_sure", "apart")
MAX_OVERLAP = PhantomConfig().max_overlap


@dataclass(frozen=True)
class DieRecord:
    """One detected die as read with the sure bar at 0: what any bar needs to decide it."""

    image: str
    # The labelled face of the die it matched; None: a box where there is no die; 0: a die the labels do not
    # score (a rendered die under 30 % visible, or with no face by the rules): left out of every count.
    truth: int | None
    face: int | None  # the face the reader gives, bar aside; None: withheld for another reason
    confidence: float  # the face model's top probability (after any second look and calibration)
    turns_agree: bool | None = None  # the eight turns and mirror images read the same face; None: not read
    pip_count: int | None = None  # the classical pip count (vision/pips/classical.py); None: no opinion
    whole_die: bool | None = None  # the phantom check's call (vision/judge/phantom.py); None: not made
    peer_face: int | None = None  # the second face model's most probable face; None: no second model read
    peer_confidence: float | None = None  # ...and its probability (at its own temperature)
    overlap: float | None = None  # the largest share of its box another box covers; None: not measured


@dataclass(frozen=True)
class RollRecord:
    """One image: its labelled faces and how the reader read it with the sure bar at 0."""

    image: str
    labelled_faces: tuple[int, ...]
    valid: bool  # the reader's verdict with the bar at 0 was valid
    dice: tuple[int, ...]  # indexes into the set's die records of the dice of this roll


def passes(record: DieRecord, *, bar: float, opinions: Sequence[str] = ()) -> bool:
    """Is the die given a face at `bar`, with each of `opinions` asked to agree?"""
    if record.face is None or record.confidence < bar:
        return False
    for opinion in opinions:
        if opinion == "turns" and record.turns_agree is False:
            return False
        if opinion == "turns_unsure" and record.turns_agree is False and record.confidence < TURNS_BELOW:
            return False
        if opinion == "pips" and record.pip_count != record.face:
            return False
        if opinion == "whole_die" and record.whole_die is False:
            return False
        if opinion == "apart" and record.overlap is not None and record.overlap > MAX_OVERLAP:
            return False
        if opinion in ("peer", "peer_sure") and record.peer_face is not None:
            if record.peer_face != record.face:
                return False
            if opinion == "peer_sure" and (record.peer_confidence or 0.0) < bar:
                return False
    return True


def settles_as(faces: Sequence[int]) -> tuple[int, int] | None:
    """The rules engine's classification a roll is settled on: (Pip Street winner, Like Kind count)."""
    if not faces:
        return None
    counts = face_counts(faces)
    return winner_of_counts(counts), max(counts)


def wilson(k: int, n: int) -> tuple[float, float] | None:
    """Wilson score 95 % interval of a rate k/n, as (low, high); None when n is 0."""
    if n == 0:
        return None
    p = k / n
    z2 = Z_95 * Z_95
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = Z_95 * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _per_1000(k: int, n: int) -> dict[str, Any]:
    interval = wilson(k, n)
    return {
        "per_1000": None if n == 0 else round(1000.0 * k / n, 3),
        "ci95_per_1000": None if interval is None else [round(1000 * v, 3) for v in interval],
    }


def point(
    dice: Sequence[DieRecord],
    rolls: Sequence[RollRecord],
    *,
    labelled_dice: int,
    bar: float,
    opinions: Sequence[str] = (),
) -> dict[str, Any]:
    """Risk and coverage of a set at one bar (dice the labels do not score, `truth` 0, left out)."""
    gives = [passes(d, bar=bar, opinions=opinions) for d in dice]  # what the reader does
    given = [g and d.truth != 0 for d, g in zip(dice, gives, strict=True)]  # what is scored
    n_given = sum(given)
    wrong = sum(1 for d, g in zip(dice, given, strict=True) if g and d.face != d.truth)
    phantom = sum(1 for d, g in zip(dice, given, strict=True) if g and d.truth is None)
    right = sum(
        1 for d, g in zip(dice, given, strict=True) if g and d.truth is not None and d.face == d.truth
    )
    valid = wrong_rolls = 0
    for roll in rolls:
        if not roll.valid or not all(gives[i] for i in roll.dice):
            continue
        valid += 1
        read = [dice[i].face for i in roll.dice]
        wrong_rolls += int(settles_as([f for f in read if f is not None]) != settles_as(roll.labelled_faces))
    return {
        "bar": bar,
        "given": n_given,
        "given_right": right,
        "given_wrong": wrong,
        "given_on_no_die": phantom,
        "share_given_pct": None
        if labelled_dice == 0
        else round(100.0 * (n_given - phantom) / labelled_dice, 3),
        "wrong": _per_1000(wrong, n_given),
        "rolls_read_valid": valid,
        "rolls_settled_wrong": wrong_rolls,
        "rolls": _per_1000(wrong_rolls, valid),
    }


def sweep(
    dice: Sequence[DieRecord],
    rolls: Sequence[RollRecord],
    *,
    labelled_dice: int,
    bars: Sequence[float] = BARS,
    opinions: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """`point` at every bar."""
    return [point(dice, rolls, labelled_dice=labelled_dice, bar=b, opinions=opinions) for b in bars]


# The variants a risk report draws: the bar alone, then each second opinion, then all of them.
VARIANTS: dict[str, tuple[str, ...]] = {
    "bar": (),
    "bar+turns": ("turns",),
    "bar+turns_unsure": ("turns_unsure",),
    "bar+pips": ("pips",),
    "bar+whole_die": ("whole_die",),
    "bar+turns+whole_die": ("turns", "whole_die"),
    "bar+turns_unsure+whole_die": ("turns_unsure", "whole_die"),
    "bar+all": ("turns", "pips", "whole_die"),
    "bar+peer": ("peer",),
    "bar+peer_sure": ("peer_sure",),
    "bar+peer_sure+whole_die": ("peer_sure", "whole_die"),
    "bar+peer_sure+turns_unsure+whole_die": ("peer_sure", "turns_unsure", "whole_die"),
    "bar+apart": ("apart",),
    "bar+whole_die+apart": ("whole_die", "apart"),
    "bar+peer_sure+whole_die+apart": ("peer_sure", "whole_die", "apart"),
}


def shipped_variant() -> str:
    """The variant the reader's own defaults read: the second opinions `ValidityConfig()` heeds, by name."""
    from vision.judge.validity import ValidityConfig

    config = ValidityConfig()
    heeds = {
        "turns": config.require_turns_agree,
        "pips": config.require_pip_agree,
        "whole_die": config.require_whole_die,
        "peer_sure": config.require_peer_agree,
        "apart": config.require_apart,
    }
    wanted = {name for name, on in heeds.items() if on}
    return next(name for name, ops in VARIANTS.items() if set(ops) == wanted)


def report(
    dice: Sequence[DieRecord],
    rolls: Sequence[RollRecord],
    *,
    labelled_dice: int,
    shipped_bar: float,
    bars: Sequence[float] = BARS,
) -> dict[str, Any]:
    """A set's risk-coverage curves, one per variant whose opinions were read, and the shipped bar's point.

    `share_given_pct`: the labelled dice given a face (right or wrong) over the labelled dice; a labelled die
    the detector missed is not given, a face given where there is no die is not counted here."""
    turned = any(d.turns_agree is not None for d in dice)
    read = {
        "turns": turned,
        "turns_unsure": turned,
        "pips": True,
        "whole_die": any(d.whole_die is not None for d in dice),
        "peer": any(d.peer_face is not None for d in dice),
        "peer_sure": any(d.peer_face is not None for d in dice),
        "apart": any(d.overlap is not None for d in dice),
    }
    curves = {
        name: {
            "opinions": list(ops),
            "shipped_bar": point(dice, rolls, labelled_dice=labelled_dice, bar=shipped_bar, opinions=ops),
            "curve": sweep(dice, rolls, labelled_dice=labelled_dice, bars=bars, opinions=ops),
        }
        for name, ops in VARIANTS.items()
        if all(read[o] for o in ops)
    }
    return {
        "labelled_dice": labelled_dice,
        "detected_dice": len(dice),
        "detections_on_no_die": sum(1 for d in dice if d.truth is None),
        "detections_on_unscored_dice": sum(1 for d in dice if d.truth == 0),
        "images": len(rolls),
        "interval": "Wilson score, 95 %",
        "shipped_bar": shipped_bar,
        "variants": curves,
    }


def records_json(
    dice: Sequence[DieRecord], rolls: Sequence[RollRecord], *, labelled_dice: int
) -> dict[str, Any]:
    """The records as JSON, so a set read once can be swept again or pooled (`records_from_json`)."""
    return {
        "labelled_dice": labelled_dice,
        "dice": [asdict(d) for d in dice],
        "rolls": [asdict(r) for r in rolls],
    }


def pooled(
    sets: Sequence[tuple[Sequence[DieRecord], Sequence[RollRecord]]],
) -> tuple[list[DieRecord], list[RollRecord]]:
    """Several sets' records as one set (each roll's die indexes moved past the sets before it)."""
    dice: list[DieRecord] = []
    rolls: list[RollRecord] = []
    for set_dice, set_rolls in sets:
        offset = len(dice)
        dice += set_dice
        rolls += [
            RollRecord(r.image, r.labelled_faces, r.valid, tuple(i + offset for i in r.dice))
            for r in set_rolls
        ]
    return dice, rolls


def records_from_json(raw: dict[str, Any]) -> tuple[list[DieRecord], list[RollRecord]]:
    """The inverse of `records_json` (its `labelled_dice` is read apart)."""
    dice = [DieRecord(**d) for d in raw["dice"]]
    rolls = [
        RollRecord(
            image=r["image"],
            labelled_faces=tuple(r["labelled_faces"]),
            valid=bool(r["valid"]),
            dice=tuple(r["dice"]),
        )
        for r in raw["rolls"]
    ]
    return dice, rolls


def plot(
    reports: dict[str, dict[str, Any]],
    path: Path,
    *,
    title: str,
    variant: str = "bar",
    variants: dict[str, str] | None = None,
) -> None:
    """Wrong faces per 1,000 given (95 % band) against the share of dice given, one line per set (or per
    reader: the keys name the lines), the shipped bar marked; and the same per roll beside it. `variants`
    names another variant for some lines (a candidate read with its second opinions)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (faces, rolls) = plt.subplots(1, 2, figsize=(12.0, 4.8))
    for name, rep in reports.items():
        chosen = rep["variants"].get((variants or {}).get(name, variant))
        if chosen is None:
            continue
        line = name if not variants or name not in variants else f"{name} ({variants[name]})"
        _draw(faces, chosen, line, lambda p: p["share_given_pct"], "wrong")
        _draw(rolls, chosen, line, lambda p: p["rolls_read_valid"], "rolls")
    faces.set_xlabel("labelled dice given a face (%)")
    faces.set_ylabel("faces given wrong per 1,000 given")
    rolls.set_xlabel("rolls read valid")
    rolls.set_ylabel("rolls read valid that settle wrong per 1,000")
    for ax in (faces, rolls):
        ax.set_yscale("symlog", linthresh=0.1)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"{title} (bands: Wilson 95 %; dot: the shipped bar)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _draw(
    ax: Any, chosen: dict[str, Any], name: str, x_of: Callable[[dict[str, Any]], Any], key: str
) -> None:
    points = [p for p in chosen["curve"] if p[key]["per_1000"] is not None and x_of(p) is not None]
    if not points:
        return
    xs = [x_of(p) for p in points]
    (line,) = ax.plot(xs, [p[key]["per_1000"] for p in points], marker=".", label=name)
    lo = [p[key]["ci95_per_1000"][0] for p in points]
    hi = [p[key]["ci95_per_1000"][1] for p in points]
    ax.fill_between(xs, lo, hi, alpha=0.15, color=line.get_color())
    shipped = chosen["shipped_bar"]
    if shipped[key]["per_1000"] is not None and x_of(shipped) is not None:
        ax.plot([x_of(shipped)], [shipped[key]["per_1000"]], "o", color=line.get_color())
