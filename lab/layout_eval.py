"""How well the dealer's-move check (593.4(e), `vision.judge.layout_check`) works through the whole reader, on
labelled synthetic scenes of the move (`throwbox lab synth --mix layout=1,layout_wrong_box=1,...`).

Each scene's label records the first roll and the move (`SceneTruth.layout_move`); what the check must
report is worked out here from that record and 593.4(e) alone (exactly the first roll's winning dice, in
the winner's box), never from the check itself. The reader reads the frame as the live loop does after a
dealer's move: no expected count, the table's calibration (the scene's camera over the default throw box).

What a pit cares about, per move: a right move must raise no `dealer_error` alert (a false accusation),
and ideally no alert at all; a wrong one must raise one (a miss lets a wrong payout stand); the alert should
name exactly the move's problems. A check whose problems are all the reader's doubt (`unreadable`,
`count_unsure`) raises `layout_unverified` instead: a person looks. Both kinds are counted.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from calibration.layout import ThrowBoxLayout
from datasets.format import LayoutMoveTruth, SceneTruth
from vision.judge.exposure import FRAME_EXPOSURE, exposure_failure
from vision.judge.layout_check import check_layout_move, decide_extra_roll
from vision.table.geometry import TableGeometry
from vision.types import Frame, Verdict

if TYPE_CHECKING:
    import numpy as np

    from vision.reader import Reader

ERRORS = ("none", "wrong_box", "missing", "extra")  # the generator's move kinds (LayoutMoveTruth.error)


def expected_problems(move: LayoutMoveTruth) -> dict[str, tuple[int, ...]]:
    """What `check_layout_move` must report for this move (problem code -> the scene's die ids), from the
    record and 593.4(e) alone."""
    moved = tuple(sorted(move.moved))
    if move.error == "none":
        return {}
    if move.error == "wrong_box":  # the dice sit in another box; the winner's box is empty
        return {"wrong_box": moved, "missing_match": ()}
    if move.error == "missing":
        left = tuple(sorted(set(move.right_dice) - set(moved)))
        return {"missing_match": moved, "match_left_behind": left}
    extra = tuple(i for i in moved if move.first_faces[i] != move.winner)
    return {"wrong_face": extra, "extra_dice": moved}


@dataclass(frozen=True)
class MoveOutcome:
    """One scene's move: its kind, the problem codes the check had to name and those it named."""

    scene_id: str
    error: str
    expected: tuple[str, ...]
    named: tuple[str, ...]
    in_winner_box: int
    truly_in_winner_box: int
    accused: bool = False  # a named problem accuses the dealer: `dealer_error` (else `layout_unverified`)

    @property
    def alerted(self) -> bool:
        """The check named a problem: the live loop raises `dealer_error` or `layout_unverified`."""
        return bool(self.named)

    @property
    def exact(self) -> bool:
        """The check named exactly the move's problems (none for a right move)."""
        return set(self.named) == set(self.expected)


def check_scene(reader: Reader, scene: SceneTruth, image: np.ndarray[Any, Any]) -> MoveOutcome | None:
    """Read `image` as the live loop reads the frame after the dealer's move and check the move; None for
    a scene that records no move (its staging failed: a plain throw)."""
    move = scene.layout_move
    if move is None:
        return None
    geometry = TableGeometry(camera=scene.camera, layout=ThrowBoxLayout())
    roll = reader.read(Frame(image=image, frame_id=scene.scene_id), expected_dice=None, geometry=geometry)
    check = check_layout_move(
        dice=roll.dice, winner=move.winner, match_count=move.match_count, dice_on_table=scene.expected_dice
    )
    named, accused = tuple(p.reason for p in check.problems), check.dealer_error
    if exposure_failure(roll.findings):
        # As the live loop: a frame washed out or too dark checks no move (`layout_unverified`, none accused).
        named, accused = (FRAME_EXPOSURE,), False
    return MoveOutcome(
        scene_id=scene.scene_id,
        error=move.error,
        expected=tuple(expected_problems(move)),
        named=named,
        in_winner_box=check.in_winner_box,
        truly_in_winner_box=sum(1 for d in scene.dice if d.layout_box == move.winner),
        accused=accused,
    )


def _pct(num: int, den: int) -> float | None:
    return round(100.0 * num / den, 2) if den else None


def score_moves(outcomes: Iterable[MoveOutcome]) -> dict[str, Any]:
    """The figures: per move kind the alerts raised and the exact reports; over all, false alarms on right
    moves and wrong moves let through, with the scenes of each for a person to look at."""
    rows = list(outcomes)
    by_kind: dict[str, dict[str, Any]] = {}
    for kind in ERRORS:
        of = [o for o in rows if o.error == kind]
        if not of:
            continue
        alerts = sum(o.alerted for o in of)
        accused = sum(o.accused for o in of)
        exact = sum(o.exact for o in of)
        by_kind[kind] = {
            "moves": len(of),
            "alerts": alerts,
            "alert_pct": _pct(alerts, len(of)),
            "dealer_errors": accused,
            "dealer_error_pct": _pct(accused, len(of)),
            "exact": exact,
            "exact_pct": _pct(exact, len(of)),
            "winner_box_count_right": sum(o.in_winner_box == o.truly_in_winner_box for o in of),
        }
    right = [o for o in rows if o.error == "none"]
    wrong = [o for o in rows if o.error != "none"]
    false_alarms = [o for o in right if o.alerted]
    let_through = [o for o in wrong if not o.alerted]
    named: dict[str, int] = {}
    for o in false_alarms:
        for code in o.named:
            named[code] = named.get(code, 0) + 1
    accused_right = [o for o in right if o.accused]
    return {
        "moves": len(rows),
        "by_kind": by_kind,
        # dealer_error alone: a right move accused, a wrong move accused (the rest of the alerts ask a look)
        "right_moves_dealer_error": len(accused_right),
        "right_moves_dealer_error_pct": _pct(len(accused_right), len(right)),
        "wrong_moves_dealer_error": sum(o.accused for o in wrong),
        "wrong_moves_dealer_error_pct": _pct(sum(o.accused for o in wrong), len(wrong)),
        "scenes_right_move_dealer_error": [o.scene_id for o in accused_right],
        # any alert (dealer_error or layout_unverified)
        "right_moves_alerted": len(false_alarms),
        "right_moves_alerted_pct": _pct(len(false_alarms), len(right)),
        "right_move_false_alarm_codes": named,
        "wrong_moves_not_alerted": len(let_through),
        "wrong_moves_alerted_pct": _pct(len(wrong) - len(let_through), len(wrong)),
        "exact_pct": _pct(sum(o.exact for o in rows), len(rows)),
        "scenes_right_move_alerted": [o.scene_id for o in false_alarms],
        "scenes_wrong_move_not_alerted": [o.scene_id for o in let_through],
    }


KIND_LABELS = {
    "none": "right move",
    "wrong_box": "wrong box",
    "missing": "winner left behind",
    "extra": "die added",
}


def plot_moves(summary: dict[str, Any], path: Path, title: str) -> None:
    """Per move kind, one bar split into the moves that raised a `dealer_error`, those that only asked a
    person to look (`layout_unverified`) and those that raised nothing, with counts."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kinds = [k for k in ERRORS if k in summary["by_kind"]]
    rows = [summary["by_kind"][k] for k in kinds]
    parts = (
        ("dealer_error", [r["dealer_errors"] for r in rows], "#c0392b"),
        ("layout_unverified (a person looks)", [r["alerts"] - r["dealer_errors"] for r in rows], "#f0ad4e"),
        ("no alert", [r["moves"] - r["alerts"] for r in rows], "#5cb85c"),
    )
    fig, ax = plt.subplots(figsize=(7.5, 0.7 * len(kinds) + 1.8))
    left = [0] * len(kinds)
    for label, counts, colour in parts:
        ax.barh(range(len(kinds)), counts, left=left, color=colour, label=label)
        for i, (x0, n) in enumerate(zip(left, counts, strict=True)):
            if n:
                ax.text(x0 + n / 2, i, str(n), ha="center", va="center", fontsize=8)
        left = [a + b for a, b in zip(left, counts, strict=True)]
    ax.set_yticks(
        range(len(kinds)), [f"{KIND_LABELS[k]} ({r['moves']})" for k, r in zip(kinds, rows, strict=True)]
    )
    ax.invert_yaxis()
    ax.set_xlabel("moves")
    ax.legend(loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=3, fontsize=8, frameon=False)
    ax.set_title(
        f"{title}\nright moves accused {summary['right_moves_dealer_error_pct']}%, "
        f"wrong moves accused {summary['wrong_moves_dealer_error_pct']}%",
        fontsize=9,
        pad=22,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


@dataclass(frozen=True)
class ExtraRollOutcome:
    """One Extra Roll scene: what the live loop would post and whether that settles it right."""

    scene_id: str
    posted: str  # the verdict posted to the rules engine
    settled_right: bool  # posted valid with the true rethrown faces
    alert: str | None  # "dealer_error" or "layout_unverified" raised with it, if any
    problems: tuple[str, ...] = ()  # the split's problem codes (`split_extra_roll`)


def right_extra_roll(scene: SceneTruth) -> int | None:
    """The winning face when `scene` is a right Extra Roll to score: a valid roll whose kept dice all show
    one face and lie in that face's layout box, and whose other dice lie outside every box; else None."""
    kept = [d for d in scene.dice if d.kept]
    faces = {d.face for d in kept}
    if not kept or scene.verdict != "valid" or len(faces) != 1 or None in faces:
        return None
    winner = next(iter(faces))
    if winner is None or any(d.layout_box != winner for d in kept):
        return None
    if any(d.layout_box is not None for d in scene.dice if not d.kept):
        return None
    return int(winner)


def check_extra_roll_scene(
    reader: Reader, scene: SceneTruth, image: np.ndarray[Any, Any]
) -> ExtraRollOutcome | None:
    """Read `image` as the live loop reads an Extra Roll at rest (the table's dice count, its calibration)
    and decide it as the loop does (`decide_extra_roll`); None for a scene that is no right Extra Roll
    (`right_extra_roll`)."""
    winner = right_extra_roll(scene)
    if winner is None:
        return None
    kept = sum(1 for d in scene.dice if d.kept)
    geometry = TableGeometry(camera=scene.camera, layout=ThrowBoxLayout())
    roll = reader.read(
        Frame(image=image, frame_id=scene.scene_id), expected_dice=scene.expected_dice, geometry=geometry
    )
    decision = decide_extra_roll(roll, winner=winner, kept=kept, expected_dice=scene.expected_dice)
    truth = sorted(d.face or 0 for d in scene.dice if not d.kept)
    right = decision.verdict is Verdict.VALID and sorted(decision.split.thrown_faces) == truth
    return ExtraRollOutcome(
        scene_id=scene.scene_id,
        posted=decision.verdict.value,
        settled_right=right,
        alert=decision.alert,
        problems=tuple(p.reason for p in decision.split.problems),
    )


def score_extra_rolls(outcomes: Iterable[ExtraRollOutcome]) -> dict[str, Any]:
    """Right Extra Rolls: settled right, settled wrong, left to a person (`no_decision`), sent back (posted
    `invalid` or `void`: a rethrow of a right roll); the alerts raised (every one false)."""
    rows = list(outcomes)
    wrong = [o for o in rows if o.posted == "valid" and not o.settled_right]
    left = [o for o in rows if o.posted == "no_decision"]
    back = [o for o in rows if o.posted in ("invalid", "void")]
    alerts: dict[str, int] = {}
    for o in rows:
        if o.alert is not None:
            alerts[o.alert] = alerts.get(o.alert, 0) + 1
    return {
        "extra_rolls": len(rows),
        "settled_right": sum(o.settled_right for o in rows),
        "settled_right_pct": _pct(sum(o.settled_right for o in rows), len(rows)),
        "settled_wrong": len(wrong),
        "left_to_a_person": len(left),
        "left_to_a_person_pct": _pct(len(left), len(rows)),
        "sent_back": len(back),
        "sent_back_pct": _pct(len(back), len(rows)),
        "posted_verdicts": {v: sum(o.posted == v for o in rows) for v in sorted({o.posted for o in rows})},
        "alerts": alerts,
        "scenes_settled_wrong": [o.scene_id for o in wrong],
        "scenes_sent_back": [o.scene_id for o in back],
        "dealer_errors": [
            {"scene_id": o.scene_id, "problems": list(o.problems)} for o in rows if o.alert == "dealer_error"
        ],
    }
