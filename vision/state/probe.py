"""A second look for a wedged die within a box the die-state model calls no die (675a.4(c): void).

A die wedged between two chip stacks is often not boxed on its own: the detector's box slides onto the stack
beside it, the die-state model rightly calls that box no die, and the count needs it, so the judge keeps it
and leaves the roll to a person (`object_unclear`) though the die that makes it void is in plain view. Where
the count needs such a detection (fewer than the game's dice are left once every detection with
`JudgeConfig.min_no_die` of no die is taken out), the model is asked again at crop centres on a grid
`wedged_probe_step` typical dice apart within the box (a context crop depends only on its centre and the
frame's typical die). A centre where it gives at least `wedged_probe_min` of a die wedged on more than one
side replaces the detection by a die of the frame's typical size there, with that state (marked `probed`),
and the judge calls the roll void, naming the second look. Two boxes either side of one wedged die (each on
a chip stack) find it once: a centre within half a die of one already found leaves its box as it was.
Nothing else is replaced: this can only turn a detection kept as "no die" into a wedged die, so no roll is
read valid by it.

With `JudgeConfig.wedged_probe_oversized`, the same look is also taken in a detection
the model itself calls wedged whose box is over `max_die_size_ratio` times the frame's typical die: such a
box takes in the chip stack beside the die, and the judge's size guard (for chip stacks taken for dice) would
leave the roll to a person; the look finds where on it the wedged die lies.

A face model for the dice called cocked (`read_cocked`, the manifest's optional `pips_cocked`): each die the
die-state model calls cocked (one side resting or more) has its face read by that model, with its own
second look and pip count, and the judge reads it by rule from that reading (675a.4(c)). Where the manifest
lists none, nothing changes. (Why: a face model trained for clear casino dice reads a cocked die's face less
well than the one whose cocked reads were judged; docs/history/reader.md, "Face stage 18c for every die but
those called cocked".)

Run by the reader (it needs the frame) after the die-state stage, and by `throwbox eval --verdicts` the same
way (`vision.judge.evaluate.record_scene`); the faces are read after it (`read_by_state`, each die once, by
the face model its state calls for), so a die found so is read from its own box and the evidence shows what
that box holds, not the chip stack's reading (the roll is void whatever the face: no verdict depends on it).
Until 2026-12-03 every die was read by the main face model before the die-state stage, and the dice called
cocked, and those found by this look, read again: the same readings, a face model call more.

A closer look at a cocked die (`reread_cocked`, with `JudgeConfig.cocked_turned_looks`; docs/history/judge.md,
"A closer look at a cocked die" and "A cocked die far off the camera's axis"): each die the
die-state model calls cocked (one side resting or more) has its face read again from its crop turned by 0,
90, 180 and 270 degrees, the face stage's second look, however sure its first reading was; its probabilities
become the normalised geometric mean of the four. A die's face does not change when its crop turns, but the
small net's errors do, and a side face it took for the top at p 0.98 from one crop is read less surely from
the others: a wrong face read by rule settles a wrong roll. But the turns also agree, and grow surer, on a
side face that an off-axis camera sees squarely (the judge's `max_cocked_tilt_plus_view_deg` was built for it;
both are off, refused on fresh sets).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace

import numpy as np

from vision.judge.config import JudgeConfig
from vision.judge.size import MIN_DICE_FOR_MEDIAN
from vision.state.model import COCKED, WEDGED, DieState, DieStateClassifier, reference_die_px
from vision.types import DieCandidate, FaceReading, ImageArray


def grid_centres(box_xyxy: Sequence[float], step_px: float) -> list[tuple[float, float]]:
    """Points `step_px` apart over the box, corners included (its centre alone when it is smaller)."""
    x0, y0, x1, y1 = (float(v) for v in box_xyxy)
    xs = np.arange(x0, x1 + 1e-6, step_px) if x1 - x0 >= step_px else np.array([(x0 + x1) / 2.0])
    ys = np.arange(y0, y1 + 1e-6, step_px) if y1 - y0 >= step_px else np.array([(y0 + y1) / 2.0])
    return [(float(x), float(y)) for x in xs for y in ys]


def _oversized_wedged(
    candidates: Sequence[DieCandidate], states: Sequence[DieState], ref: float, config: JudgeConfig
) -> list[int]:
    """Detections called wedged (over one side resting) whose box is too big for one die
    (`max_die_size_ratio`; the judge's size guard takes the median of at least 3 boxes, so this does too)."""
    if len(candidates) < MIN_DICE_FOR_MEDIAN:
        return []
    out = []
    for i, (c, st) in enumerate(zip(candidates, states, strict=True)):
        x0, y0, x1, y1 = c.box_xyxy
        wedged = st.kind == "cocked" and st.probs[WEDGED] > st.probs[COCKED]
        if wedged and max(x1 - x0, y1 - y0) > config.max_die_size_ratio * ref:
            out.append(i)
    return out


def probe_wedged(
    image_bgr: ImageArray,
    candidates: tuple[DieCandidate, ...],
    states: tuple[DieState, ...],
    *,
    expected_dice: int | None,
    classifier: DieStateClassifier,
    config: JudgeConfig,
) -> tuple[tuple[DieCandidate, ...], tuple[DieState, ...]]:
    """The candidates and states with each needed no-die detection (and, with `wedged_probe_oversized`,
    each box called wedged but too big for one die) that holds a wedged die replaced by that die."""
    bar = config.wedged_probe_min
    if bar is None or expected_dice is None or not candidates:
        return candidates, states
    if len(states) != len(candidates):
        raise ValueError(f"{len(candidates)} candidates but {len(states)} die states")
    no_die = [i for i, st in enumerate(states) if st.p("no_die") >= config.min_no_die]
    needed = no_die if len(candidates) - len(no_die) < expected_dice else []
    ref = reference_die_px([c.box_xyxy for c in candidates])
    oversized = _oversized_wedged(candidates, states, ref, config) if config.wedged_probe_oversized else []
    if not needed and not oversized:
        return candidates, states
    out_c, out_s = list(candidates), list(states)
    found: list[tuple[float, float]] = []
    for i in needed + oversized:
        centres = grid_centres(candidates[i].box_xyxy, config.wedged_probe_step * ref)
        looks = classifier.at_centres(image_bgr, centres, ref_px=ref)
        best = max(range(len(looks)), key=lambda k: looks[k].probs[WEDGED])
        x, y = centres[best]
        if looks[best].probs[WEDGED] < bar or any(np.hypot(x - u, y - v) < ref / 2.0 for u, v in found):
            continue  # no wedged die here, or the one already found from another box (one die, once)
        found.append((x, y))
        h = ref / 2.0
        out_c[i] = DieCandidate(
            box_xyxy=(x - h, y - h, x + h, y + h),
            top_quad=((x - h, y - h), (x + h, y - h), (x + h, y + h), (x - h, y + h)),
            score=candidates[i].score,
        )
        out_s[i] = replace(looks[best], probed=True)
    return tuple(out_c), tuple(out_s)


def _read_again(
    which: Sequence[int],
    candidates: tuple[DieCandidate, ...],
    readings: tuple[FaceReading, ...],
    read: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]],
) -> tuple[FaceReading, ...]:
    """The readings with those of the dice at `which` (0-based) read again by `read`, in one call."""
    if not which:
        return readings
    again = dict(zip(which, read(tuple(candidates[i] for i in which)), strict=True))
    return tuple(again.get(i, r) for i, r in enumerate(readings))


def _called_cocked(candidates: tuple[DieCandidate, ...], states: Sequence[DieState]) -> list[int]:
    """The 0-based indices of the dice the die-state model calls cocked (one side resting or more); the dice
    and their states must match one to one."""
    if len(candidates) != len(states):
        raise ValueError(f"{len(candidates)} dice but {len(states)} die states: they must match")
    return [i for i, st in enumerate(states) if st.kind == "cocked"]


def read_by_state(
    candidates: tuple[DieCandidate, ...],
    states: Sequence[DieState] | None,
    *,
    read_faces: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]],
    read_cocked: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]] | None = None,
) -> tuple[FaceReading, ...]:
    """Every die's face, read once, in die order: each die the die-state model calls cocked (one side resting
    or more) by `read_cocked` (the face stage with the face model for cocked dice), where one is given and
    `states` are known; every other die by `read_faces` (the face stage as the reader calls it). One call
    per reader, none for a reader with no dice to read."""
    cocked = [] if read_cocked is None or states is None else _called_cocked(candidates, states)
    called = set(cocked)
    rest = [i for i in range(len(candidates)) if i not in called]
    readings: dict[int, FaceReading] = {}
    for which, read in ((rest, read_faces), (cocked, read_cocked)):
        if which and read is not None:
            got = read(tuple(candidates[i] for i in which))
            if len(got) != len(which):
                raise ValueError(f"the face stage read {len(got)} dice of {len(which)}")
            readings.update(zip(which, got, strict=True))
    return tuple(readings[i] for i in range(len(candidates)))


def reread_cocked(
    candidates: tuple[DieCandidate, ...],
    states: Sequence[DieState],
    readings: tuple[FaceReading, ...],
    *,
    read_turned: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]],
    config: JudgeConfig,
) -> tuple[FaceReading, ...]:
    """The readings with the face of each die the die-state model calls cocked read again from its turned
    crops (`read_turned`: the face stage on this frame with every die turned, `FaceReader(..., turned=True)`);
    as they were with `JudgeConfig.cocked_turned_looks` off."""
    if len(readings) != len(candidates):
        raise ValueError(f"{len(candidates)} dice but {len(readings)} readings: they must match")
    cocked = _called_cocked(candidates, states)
    if not config.cocked_turned_looks:
        return readings
    return _read_again(cocked, candidates, readings, read_turned)


def read_looked(
    candidates: tuple[DieCandidate, ...],
    states: tuple[DieState, ...],
    *,
    config: JudgeConfig,
    read_faces: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]],
    read_turned: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]] | None = None,
    read_cocked: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]] | None = None,
) -> tuple[FaceReading, ...]:
    """The faces of the dice as the die-state stage left them (after `probe_wedged`): every face read once by
    `read_by_state` (the dice called cocked by `read_cocked` where it is given), then `reread_cocked` (where
    `read_turned` is given)."""
    readings = read_by_state(candidates, states, read_faces=read_faces, read_cocked=read_cocked)
    if read_turned is not None:
        readings = reread_cocked(candidates, states, readings, read_turned=read_turned, config=config)
    return readings


def look_again(
    image_bgr: ImageArray,
    candidates: tuple[DieCandidate, ...],
    states: tuple[DieState, ...],
    *,
    expected_dice: int | None,
    classifier: DieStateClassifier,
    config: JudgeConfig,
    read_faces: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]],
    read_turned: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]] | None = None,
    read_cocked: Callable[[tuple[DieCandidate, ...]], tuple[FaceReading, ...]] | None = None,
) -> tuple[tuple[DieCandidate, ...], tuple[DieState, ...], tuple[FaceReading, ...]]:
    """The dice, their states and their faces as the reader and `throwbox eval --verdicts` take them, between
    the die-state model and the judge: `probe_wedged`, then `read_looked` (every face read once, a die called
    cocked by `read_cocked` where it is given, then the closer look where `read_turned` is given). The
    reader calls the two steps apart, to time the face reading alone."""
    candidates, states = probe_wedged(
        image_bgr, candidates, states, expected_dice=expected_dice, classifier=classifier, config=config
    )
    readings = read_looked(
        candidates,
        states,
        config=config,
        read_faces=read_faces,
        read_turned=read_turned,
        read_cocked=read_cocked,
    )
    return candidates, states, readings
