"""Verdict figures on labelled synthetic scenes: `throwbox lab eval DATASET --verdicts` (issue 5).

Per scene the models run once (detector, faces and die states; or, with `oracle_boxes`, the die states on
the ground-truth boxes with the true faces, which measures the judgement stage alone), and are kept; the
judge then runs on them for any `JudgeConfig`, so the threshold sweep costs no model time.

Figures: a confusion matrix of verdicts (truth valid / invalid / void by read valid / invalid / void /
no_decision); recall per invalidity kind (die on die, also where the die beneath is in view; die off the
table, also where the throw box is wholly in view; void; and cocked dice found with their value by the
rule); on valid rolls the rate called invalid or void and the rate of `no_decision`.
The table's calibration is the scene's camera over the generator's throw box (`ThrowBoxLayout()`: the
ground-truth format does not record the layout; the generator uses the default one).

This module reads ground truth (`datasets.format`), which the reader itself never does.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from calibration.camera import Camera
from calibration.layout import ThrowBoxLayout
from datasets.format import SCENARIOS, SceneTruth, read_scene
from models.die_state_truth import die_states_of
from vision.judge.config import JudgeConfig
from vision.judge.exposure import (
    FRAME_SMOOTHED,
    exposure_findings,
    measure_exposure,
    smoothed,
    smoothed_note,
    smoothing_sigma,
)
from vision.judge.validity import Judgement, ValidityConfig, judge
from vision.state.model import COCKED, STATE_LABELS, UNDER, DieState, DieStateClassifier
from vision.state.probe import look_again
from vision.table.geometry import TableGeometry
from vision.types import DieCandidate, DieReading, FaceReading, Finding, FindingReason, FrameExposure, Verdict

TRUTH_VERDICTS: tuple[str, ...] = ("valid", "invalid", "void")
READ_VERDICTS: tuple[str, ...] = ("valid", "invalid", "void", "no_decision")
MIN_VISIBLE = 0.25  # oracle boxes: dice hidden more than this are left out, as a detector would miss them
MATCH_IOU = 0.3  # a read die and a true die are the same die (boxes of tilted dice differ more than flat)
WEAK_FLOOR = 0.1  # the lowest detector peak kept for the judge's sweep of `weak_peak_score`
# Cameras tilted more than this from straight down are "oblique" in `score_by_camera`. The generator's
# top-down cameras lean a few degrees at most, its oblique ones 15-40 (datasets/synth/randomise.py); a table
# would mount its camera straight above the throw box. Kept equal, on purpose, to the judge's default
# `JudgeConfig.max_cocked_camera_tilt_deg` (the same line, drawn for the rule), but not tied to a config
# being tried: the split stays comparable across runs.
OBLIQUE_TILT_DEG = 10.0
DetectWithWeak = Callable[[np.ndarray[Any, Any]], tuple[tuple[DieCandidate, ...], tuple[DieCandidate, ...]]]


@dataclass(frozen=True)
class TrueDie:
    """What the evaluation needs of one true die: its box, face by the rules, state index."""

    box_xyxy: tuple[float, float, float, float]
    face: int | None
    state: int


@dataclass(frozen=True)
class SceneRecord:
    """One scene's model outputs (kept so the judge can be rerun) and its truth."""

    scene_id: str
    truth_verdict: str
    truth_reasons: tuple[str, ...]
    expected_dice: int
    candidates: tuple[DieCandidate, ...]
    readings: tuple[FaceReading, ...]
    states: tuple[DieState, ...]
    geometry: TableGeometry
    true_dice: tuple[TrueDie, ...]
    # The detector's peaks from `WEAK_FLOOR` up to its threshold (none with oracle boxes), so that
    # `JudgeConfig.weak_peak_score` can be swept without running the detector again.
    weak_peaks: tuple[DieCandidate, ...] = ()
    # The camera shake the generator blurred the frame with (px; 0: a still frame), from the label's
    # `render.degradation.motion_px`; None where the label does not say.
    motion_blur_px: int | None = None
    # Every present die's face by the rules, in die order (`SceneTruth.faces`; None for a die with no face),
    # whether or not it can be seen: what a roll read valid must show to be settled right. () where unknown.
    true_faces: tuple[int | None, ...] = ()
    # The generator's scenario (`datasets.format.SCENARIOS`: "normal", "cocked", "stacked", ...);
    # "" where unknown.
    scenario: str = ""
    # The frame's exposure (vision/judge/exposure.py), measured once so its bars can be swept; None: not
    # measured (no frame finding of it).
    exposure: FrameExposure | None = None
    # The blur (sigma, px) the models read the frame through, by `record_scene`'s judge config (None: the
    # frame as it came): the `frame_smoothed` note says what was done, whatever config judges the record.
    smoothed_px: float | None = None

    def judged(self, config: ValidityConfig) -> Judgement:
        """The judge on this scene's kept model outputs, with `config`."""
        return judge(
            self.candidates,
            self.readings,
            expected_dice=self.expected_dice,
            config=config,
            states=self.states,
            geometry=self.geometry,
            weak_peaks=self.weak_peaks,
            frame_findings=self._frame_findings(config),
        )

    def _frame_findings(self, config: ValidityConfig) -> tuple[Finding, ...]:
        """The frame's exposure findings by `config`'s bars, with the note of the smoothing done when the
        record was made (not the one `config` would do)."""
        if self.exposure is None:
            return ()
        unfit = tuple(f for f in exposure_findings(self.exposure, config.judge) if f.reason != FRAME_SMOOTHED)
        if self.smoothed_px is None:
            return unfit
        return (*unfit, smoothed_note(self.exposure, self.smoothed_px))


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Intersection over union of two xyxy boxes."""
    ix = max(0.0, min(a[2], b[2]) - max(a[0], b[0]))
    iy = max(0.0, min(a[3], b[3]) - max(a[1], b[1]))
    inter = ix * iy
    union = (a[2] - a[0]) * (a[3] - a[1]) + (b[2] - b[0]) * (b[3] - b[1]) - inter
    return inter / union if union > 0 else 0.0


def one_hot(face: int, p: float = 0.999) -> tuple[float, ...]:
    """A face probability row sure of `face` (the oracle's reading)."""
    row = [(1.0 - p) / 5.0] * 6
    row[face - 1] = p
    return tuple(row)


def true_dice_of(scene: SceneTruth) -> tuple[TrueDie, ...]:
    """The scene's dice that can be seen, with their state by the rules."""
    states = die_states_of(scene)
    return tuple(
        TrueDie(box_xyxy=d.box_xyxy, face=d.face, state=states[i])
        for i, d in enumerate(scene.dice)
        if d.in_image and d.visible_fraction >= MIN_VISIBLE
    )


def record_scene(
    scene: SceneTruth,
    image: np.ndarray[Any, Any],
    *,
    detect: DetectWithWeak | None,
    read_faces: Callable[
        [np.ndarray[Any, Any], tuple[DieCandidate, ...], TableGeometry], tuple[FaceReading, ...]
    ]
    | None,
    die_state: DieStateClassifier,
    judge_config: JudgeConfig | None = None,
    read_turned: Callable[
        [np.ndarray[Any, Any], tuple[DieCandidate, ...], TableGeometry], tuple[FaceReading, ...]
    ]
    | None = None,
    read_cocked: Callable[
        [np.ndarray[Any, Any], tuple[DieCandidate, ...], TableGeometry], tuple[FaceReading, ...]
    ]
    | None = None,
) -> SceneRecord:
    """Run the models on one scene (the detector and face reader, or the oracle when they are None).

    `detect` gives the candidates and the weak peaks (`DieDetector.detect_with_weak`, at `WEAK_FLOOR`).
    `judge_config`: with the detector, its second look for a wedged die runs as the reader runs it
    (vision/state/probe.py); the oracle's true boxes need none. `read_turned` (the face reader with every
    die turned, `FaceReader(..., turned=True)`): the closer look at each die called cocked, as the reader
    takes it (`reread_cocked`); the oracle's true faces need none. `read_cocked` (the face reader of the
    manifest's `pips_cocked` model, `Reader.cocked_faces`): the dice called cocked read by it (the others by
    `read_faces`), as the reader does.
    """
    if (detect is None) != (read_faces is None):
        raise ValueError("record_scene: give both the detector and the face reader, or neither (the oracle)")
    truth = true_dice_of(scene)
    geometry = TableGeometry(camera=scene.camera, layout=ThrowBoxLayout())
    # A grainy frame is read smoothed, as the reader reads it (by `judge_config`'s bar, else the shipped one).
    grain_config = judge_config or JudgeConfig()
    exposure = measure_exposure(image)  # with its grain: a sweep of the grain bars reads it
    smoothed_px = smoothing_sigma(exposure, grain_config)
    image = smoothed(image, exposure, grain_config)
    weak: tuple[DieCandidate, ...] = ()
    if detect is None or read_faces is None:
        order = sorted(range(len(truth)), key=lambda i: truth[i].box_xyxy[0] + truth[i].box_xyxy[2])
        seen = [d for d in scene.dice if d.in_image and d.visible_fraction >= MIN_VISIBLE]
        candidates = tuple(
            DieCandidate(box_xyxy=truth[i].box_xyxy, top_quad=seen[i].top_quad, score=1.0) for i in order
        )
        readings = tuple(
            FaceReading(face_probs=one_hot(truth[i].face or seen[i].face_geometric), pip_count=None)
            for i in order
        )
    else:
        candidates, weak = detect(image)
    states = die_state(image, candidates)
    # The oracle's boxes and faces need nothing more read; the detector's boxes have their faces read here.
    if read_faces is not None and judge_config is None:
        readings = read_faces(image, candidates, geometry)
    elif read_faces is not None and judge_config is not None:
        # As the reader does (vision/reader.py): the second look for a wedged die, then every face read once.
        faces_of, turned_of, cocked_of = read_faces, read_turned, read_cocked  # bound: mypy does not narrow
        candidates, states, readings = look_again(
            image,
            candidates,
            states,
            expected_dice=scene.expected_dice,
            classifier=die_state,
            config=judge_config,
            read_faces=lambda cs: faces_of(image, cs, geometry),
            read_turned=None if turned_of is None else lambda cs: turned_of(image, cs, geometry),
            read_cocked=None if cocked_of is None else lambda cs: cocked_of(image, cs, geometry),
        )
    return SceneRecord(
        scene_id=scene.scene_id,
        truth_verdict=scene.verdict,
        truth_reasons=scene.reasons,
        expected_dice=scene.expected_dice,
        candidates=candidates,
        readings=readings,
        states=states,
        geometry=geometry,
        true_dice=truth,
        weak_peaks=weak,
        motion_blur_px=scene.motion_blur_px,
        true_faces=scene.faces,
        scenario=scene.scenario,
        exposure=exposure,
        smoothed_px=smoothed_px,
    )


def _pct(num: int, den: int) -> float | None:
    return round(100.0 * num / den, 2) if den else None


def score(records: Iterable[SceneRecord], config: ValidityConfig) -> dict[str, Any]:
    """Judge every record with `config` and compute the verdict figures."""
    confusion = {t: dict.fromkeys(READ_VERDICTS, 0) for t in TRUTH_VERDICTS}
    kinds = {k: [0, 0] for k in ("die_on_die", "die_off_table", "void")}  # [found, total]
    # Issue 5 defines a die off the table by a short count "with the throw box fully visible": where the
    # camera does not see the whole box, a die not found may lie in the unseen part, and the judge leaves
    # the roll to a person (count_mismatch). Those rolls stay in `die_off_table`; this counts the others.
    off_in_view = [0, 0]
    # A die on a die hides the one beneath it more often than not (the count is then short, which the
    # judge reports as die_off_table): so also count such rolls called invalid for any reason.
    on_die_invalid = 0
    # A die beneath a die that hardly shows is missed (left out of the oracle's boxes under `MIN_VISIBLE`, as
    # the detector misses it): the count is short, and the judge says a die left the table or lies hidden
    # under another (die_off_table, invalid either way, 675a.4(b)). This counts the rolls where the die
    # beneath shows (the truth's `under` die is among the dice in view), where the sight of two dice can tell.
    on_die_beneath_seen = [0, 0]
    cocked_total = cocked_found = cocked_value_right = cocked_flagged = 0
    valid_total = valid_rethrow = valid_nd = 0
    read_valid = read_valid_wrong = wrong_dice = 0
    settled_wrong: list[str] = []
    settled_known = True
    wrong_scenes: list[str] = []
    wrong_detail: list[dict[str, Any]] = []
    reasons_on_valid: Counter[str] = Counter()
    for rec in records:
        j = rec.judged(config)
        read = j.verdict.value
        confusion[rec.truth_verdict][read] += 1
        codes = {f.reason for f in j.findings if f.verdict is j.verdict}
        if "stacked" in rec.truth_reasons:
            kinds["die_on_die"][1] += 1
            on_die = int(j.verdict is Verdict.INVALID and FindingReason.DIE_ON_DIE in codes)
            kinds["die_on_die"][0] += on_die
            on_die_invalid += int(j.verdict is Verdict.INVALID)
            if any(td.state == UNDER for td in rec.true_dice):
                on_die_beneath_seen[1] += 1
                on_die_beneath_seen[0] += on_die
        if "off_table" in rec.truth_reasons or "missing" in rec.truth_reasons:
            called = int(j.verdict is Verdict.INVALID and FindingReason.DIE_OFF_TABLE in codes)
            kinds["die_off_table"][1] += 1
            kinds["die_off_table"][0] += called
            if rec.geometry.box_in_view():
                off_in_view[1] += 1
                off_in_view[0] += called
        if rec.truth_verdict == "void":
            kinds["void"][1] += 1
            kinds["void"][0] += int(j.verdict is Verdict.VOID)
        if j.verdict is Verdict.VALID:
            # A roll read valid settles bets: each of its dice must be a true die with that face (a die
            # with no face by the rules, a detection on no die or a wrong face is a wrong settlement).
            wrong = [w for k, d in enumerate(j.dice) if (w := _wrong_die(rec, k, d)) is not None]
            read_valid += 1
            read_valid_wrong += int(bool(wrong))
            wrong_dice += len(wrong)
            wrong_detail += wrong
            if wrong:
                wrong_scenes.append(rec.scene_id)
            settled_known &= bool(rec.true_faces)
            if _settled_wrong(rec, j):
                settled_wrong.append(rec.scene_id)
        if rec.truth_verdict == "valid":
            valid_total += 1
            valid_rethrow += int(j.verdict in (Verdict.INVALID, Verdict.VOID))
            valid_nd += int(j.verdict is Verdict.NO_DECISION)
            if j.verdict is not Verdict.VALID:
                reasons_on_valid.update({f.reason for f in j.findings if f.verdict is j.verdict})
        total_c, found_c, right_c, flagged_c = _cocked_counts(rec, j)
        cocked_total += total_c
        cocked_found += found_c
        cocked_value_right += right_c
        cocked_flagged += flagged_c
    total = sum(sum(row.values()) for row in confusion.values())
    right = sum(confusion[t][t] for t in TRUTH_VERDICTS)
    return {
        "scenes": total,
        "verdict_accuracy_pct": _pct(right, total),
        "confusion_truth_rows_read_cols": confusion,
        "recall_pct": {k: _pct(v[0], v[1]) for k, v in kinds.items()}
        | {
            "die_on_die_invalid_any_reason": _pct(on_die_invalid, kinds["die_on_die"][1]),
            "die_on_die_beneath_in_view": _pct(on_die_beneath_seen[0], on_die_beneath_seen[1]),
            "die_off_table_box_in_view": _pct(off_in_view[0], off_in_view[1]),
            "cocked_read_by_rule": _pct(cocked_found, cocked_total),
            "cocked_flagged": _pct(cocked_flagged, cocked_total),
        },
        "support": {k: v[1] for k, v in kinds.items()}
        | {
            "die_on_die_beneath_in_view": on_die_beneath_seen[1],
            "die_off_table_box_in_view": off_in_view[1],
            "cocked_dice": cocked_total,
        },
        "cocked_value_right_pct": _pct(cocked_value_right, cocked_found),
        # Cocked dice read by rule with another value than the truth's (each would settle a wrong roll).
        "cocked_read_by_rule_wrong": cocked_found - cocked_value_right,
        "cocked_value_wrong_pct": _pct(cocked_found - cocked_value_right, cocked_found),
        "valid_rolls": valid_total,
        "valid_called_invalid_or_void_pct": _pct(valid_rethrow, valid_total),
        "valid_no_decision_pct": _pct(valid_nd, valid_total),
        "reasons_on_valid_rolls": dict(reasons_on_valid.most_common()),
        "rolls_read_valid": read_valid,
        "rolls_read_valid_with_a_wrong_die": read_valid_wrong,
        "wrong_dice_in_rolls_read_valid": wrong_dice,
        "scenes_read_valid_with_a_wrong_die": wrong_scenes,
        "wrong_dice_in_rolls_read_valid_detail": wrong_detail,
        # What the wagers are settled on: None when a record does not carry its true faces.
        "rolls_read_valid_settled_wrong": len(settled_wrong) if settled_known else None,
        "scenes_read_valid_settled_wrong": settled_wrong if settled_known else None,
    }


def _cocked_counts(rec: SceneRecord, j: Judgement) -> tuple[int, int, int, int]:
    """One record's cocked dice: how many, how many read by rule, of those with the true value, and how many
    flagged cocked at all."""
    total = found = right = flagged = 0
    # Cocked dice read by the rule (one side resting), matched to the read dice by their boxes: the die
    # must be the subject of a `cocked_read_by_rule` finding (a cocked call too close to call, which
    # keeps its face but sends the roll to a person, is not a reading; before commit e87b580 it was
    # counted).
    by_rule = {k - 1 for f in j.findings if f.reason == FindingReason.COCKED_READ_BY_RULE for k in f.die_ids}
    for td in rec.true_dice:
        if td.state != COCKED:
            continue
        total += 1
        best, best_iou, best_k = None, MATCH_IOU, -1
        for k, die in enumerate(j.dice):
            iou = box_iou(td.box_xyxy, die.candidate.box_xyxy)
            if iou >= best_iou:
                best, best_iou, best_k = die, iou, k
        # Flagged: the read die holding it is marked cocked, read by rule or not (the die-state model's
        # part; issue 48's ">= 98 % flagged").
        flagged += int(best is not None and best.cocked)
        if best is not None and best.cocked and best.face is not None and best_k in by_rule:
            found += 1
            right += int(best.face == td.face)
    return total, found, right, flagged


def _settled_wrong(rec: SceneRecord, j: Judgement) -> bool:
    """True when a roll read valid would settle the wagers wrong: the roll was not valid, or its faces read
    differ from the true faces as a multiset (every High Roll Dice wager - Pip Street's winner, Like Kind's
    match count, Millionaire Row, the Extra Roll's non-matching dice - is settled on how many dice show
    each face, not on which die shows it).

    A different count from `rolls_read_valid_with_a_wrong_die`, which goes die by die: it also counts a
    roll whose faces are right but whose die boxes do not match the true ones (IoU < `MATCH_IOU`) or swap
    two faces between dice, and it does not count a roll that was not valid but whose dice are right.
    """
    if rec.truth_verdict != "valid":
        return True
    if not rec.true_faces:
        return False
    # a die with no face (read or true) is 0, which matches no real face: in a valid roll every die has one
    read = sorted(d.face if d.face is not None else 0 for d in j.dice)
    return read != sorted(f if f is not None else 0 for f in rec.true_faces)


def _wrong_die(rec: SceneRecord, index: int, die: DieReading) -> dict[str, Any] | None:
    """None when a die of a roll read valid is read right: a true die (IoU >= MATCH_IOU with the
    best-matching one) with the same face; else what went wrong, for a person to look at.

    A die with no face by the rules is never read right. True dice under `MIN_VISIBLE` are not in
    `rec.true_dice`, so a die read on one of those counts as unmatched (a slight overcount).
    """
    box = die.candidate.box_xyxy
    best = max(rec.true_dice, key=lambda t: box_iou(t.box_xyxy, box), default=None)
    iou = 0.0 if best is None else box_iou(best.box_xyxy, box)
    if best is not None and iou >= MATCH_IOU and best.face is not None and best.face == die.face:
        return None
    matched = best is not None and iou >= MATCH_IOU
    return {
        "scene_id": rec.scene_id,
        "die": index + 1,
        "read_face": die.face,
        "face_p": round(max(die.face_probs), 3),
        "state_called": die.state,
        "true_face": best.face if matched and best is not None else None,
        "true_state": STATE_LABELS[best.state] if matched and best is not None else None,
        "iou": round(iou, 2),
    }


def camera_kind_of(camera: Camera) -> str:
    """ "top_down" or "oblique" (leaning more than `OBLIQUE_TILT_DEG` from straight down)."""
    return "oblique" if camera.pose.tilt_deg > OBLIQUE_TILT_DEG else "top_down"


def frame_kind_of(motion_blur_px: int | None) -> str:
    """ "motion_blur" for a frame the generator blurred with camera shake (more than 1 px), "still" for one
    it did not, "unknown" where the label does not say."""
    if motion_blur_px is None:
        return "unknown"
    return "motion_blur" if motion_blur_px > 1 else "still"


def camera_kind(rec: SceneRecord) -> str:
    """`camera_kind_of` the scene's true camera."""
    return camera_kind_of(rec.geometry.camera)


def frame_kind(rec: SceneRecord) -> str:
    """`frame_kind_of` the scene's camera shake."""
    return frame_kind_of(rec.motion_blur_px)


def _score_groups(
    records: Sequence[SceneRecord],
    config: ValidityConfig,
    group: Callable[[SceneRecord], str],
    order: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """`score` for each group of `order` that holds a record (`group(record)` names a record's group)."""
    members: dict[str, list[SceneRecord]] = {}
    for rec in records:
        members.setdefault(group(rec), []).append(rec)
    return {key: score(members[key], config) for key in order if key in members}


def score_by_camera_and_frame(
    records: Sequence[SceneRecord], config: ValidityConfig
) -> dict[str, dict[str, Any]]:
    """`score` for each camera kind and frame kind ("top_down/still", "oblique/motion_blur", ...)."""
    order = [f"{k}/{f}" for k in ("top_down", "oblique") for f in ("still", "motion_blur", "unknown")]
    return _score_groups(records, config, lambda r: f"{camera_kind(r)}/{frame_kind(r)}", order)


def score_by_camera(records: Sequence[SceneRecord], config: ValidityConfig) -> dict[str, dict[str, Any]]:
    """`score` for the scenes of each camera kind (top-down, as a table mounts it, and oblique)."""
    return _score_groups(records, config, camera_kind, ("top_down", "oblique"))


def score_by_scenario(records: Sequence[SceneRecord], config: ValidityConfig) -> dict[str, dict[str, Any]]:
    """`score` for the scenes of each scenario the generator drew (normal throws, a die cocked on chips, dice
    in a cluster, ...), in `SCENARIOS` order, then any other name ("unknown" where a record has none): where
    the good rolls left to a person or sent back come from."""
    names = {r.scenario or "unknown" for r in records}
    order = [*SCENARIOS, *sorted(names - set(SCENARIOS))]
    return _score_groups(records, config, lambda r: r.scenario or "unknown", order)


SWEEPS: dict[str, tuple[float, ...]] = {
    "min_state_confidence": (0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99),
    "min_rethrow_confidence": (0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99),
    "overlap_stacked": (0.2, 0.3, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 1.0),
    "cocked_wedged_margin": (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.8),
    "max_readable_tilt_deg": (30.0, 35.0, 38.0, 40.0, 42.0, 44.0, 46.0, 50.0, 90.0),
    "stacked_max_centre_mm": (0.0, 6.0, 8.0, 10.0, 12.0, 14.0, 16.0, 20.0),
    "stack_partner_overlap": (0.0, 0.1, 0.2, 0.3, 0.45, 0.6, 0.8),
    "max_die_size_ratio": (1.2, 1.3, 1.4, 1.5, 1.7, 2.0, 3.0),
    # 0.35 is the detector's own threshold: no weak peak, the short count alone decides (the old rule).
    "weak_peak_score": (0.1, 0.15, 0.2, 0.25, 0.3, 0.35),
    # 99: in effect off (no box is 99 times the frame's typical die).
    "short_count_max_box_ratio": (1.2, 1.3, 1.4, 1.5, 1.7, 2.0, 99.0),
    # 1.0: nothing is set aside (a six-state model never says no_die).
    "min_no_die": (0.3, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1.0),
    # The bar a cocked die's face must clear to be read by rule (675a.4(c)): below it a person reads it.
    # 0.9 is the reader's bar for any die, in effect no extra bar.
    "min_cocked_face_confidence": (0.9, 0.93, 0.95, 0.97, 0.98, 0.99, 0.995),
}
# The reader's own certainty bar for any die's face (`ValidityConfig.min_confidence`, 0.90: under it the die
# is uncertain and the roll `no_decision`, `face_uncertain`), swept the same way on the kept readings. The
# face stage's second look (dice under 0.90 read again turned) ran when the records were made and is not
# redone: the sweep moves the bar alone.
VALIDITY_SWEEPS: dict[str, tuple[float, ...]] = {
    "min_confidence": (0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98),
}


def swept_config(base: ValidityConfig, name: str, value: float) -> ValidityConfig:
    """`base` with one swept threshold set: a `VALIDITY_SWEEPS` one on the config itself, else its judge's."""
    change: dict[str, Any] = {name: value}
    if name in VALIDITY_SWEEPS:
        return replace(base, **change)
    return replace(base, judge=replace(base.judge, **change))


def sweep_default(name: str) -> float | None:
    """The shipped value of a swept threshold (None for one off by default)."""
    value: float | None = getattr(ValidityConfig() if name in VALIDITY_SWEEPS else JudgeConfig(), name)
    return value


def sweep(records: Sequence[SceneRecord], base: ValidityConfig) -> dict[str, list[dict[str, Any]]]:
    """The figures for each value of each swept threshold (the others at `base`)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for name, values in (SWEEPS | VALIDITY_SWEEPS).items():
        rows = []
        for v in values:
            s = score(records, swept_config(base, name, v))
            rows.append(
                {
                    name: v,
                    "valid_called_invalid_or_void_pct": s["valid_called_invalid_or_void_pct"],
                    "valid_no_decision_pct": s["valid_no_decision_pct"],
                    **{f"recall_{k}_pct": r for k, r in s["recall_pct"].items()},
                    # Wrong settlements: rolls read valid holding a wrongly read die, per 100 read valid.
                    "rolls_read_valid_with_a_wrong_die": s["rolls_read_valid_with_a_wrong_die"],
                    "read_valid_wrong_pct": _pct(
                        s["rolls_read_valid_with_a_wrong_die"], s["rolls_read_valid"]
                    ),
                    "rolls_read_valid": s["rolls_read_valid"],
                    "rolls_read_valid_settled_wrong": s["rolls_read_valid_settled_wrong"],
                    "cocked_read_by_rule_wrong": s["cocked_read_by_rule_wrong"],
                    "cocked_value_wrong_pct": s["cocked_value_wrong_pct"],
                }
            )
        out[name] = rows
    return out


def plot_confusion(summary: dict[str, Any], path: Path, title: str) -> None:
    """The verdict confusion matrix as a picture."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    conf = summary["confusion_truth_rows_read_cols"]
    mat = np.array([[conf[t][r] for r in READ_VERDICTS] for t in TRUTH_VERDICTS])
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    ax.imshow(np.log1p(mat), cmap="Blues")
    ax.set_xticks(range(len(READ_VERDICTS)), list(READ_VERDICTS))
    ax.set_yticks(range(len(TRUTH_VERDICTS)), list(TRUTH_VERDICTS))
    ax.set_xlabel("read verdict")
    ax.set_ylabel("true verdict")
    for (i, k), v in np.ndenumerate(mat):
        ax.text(k, i, str(v), ha="center", va="center", color="black" if v < mat.max() / 3 else "white")
    r = summary["recall_pct"]
    ax.set_title(
        f"{title}\nrecall: on-die {r['die_on_die']}%  off-table {r['die_off_table']}%  void {r['void']}%  "
        f"cocked {r['cocked_read_by_rule']}%",
        fontsize=9,
    )
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def plot_sweep(curves: dict[str, list[dict[str, Any]]], path: Path, title: str) -> None:
    """One panel per swept threshold: error rates on valid rolls and recall per kind against it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    n_rows = (len(curves) + 1) // 2
    fig, axes = plt.subplots(n_rows, 2, figsize=(11.0, 4.0 * n_rows), squeeze=False)
    for ax, (name, rows) in zip(axes.flat, curves.items(), strict=False):
        xs = [row[name] for row in rows]
        for key, style, label in (
            ("valid_called_invalid_or_void_pct", "r-o", "valid called invalid or void"),
            ("valid_no_decision_pct", "y-o", "valid no decision"),
            ("recall_die_on_die_pct", "b--", "recall die on die"),
            ("recall_die_off_table_pct", "g--", "recall die off table"),
            ("recall_void_pct", "m--", "recall void"),
            ("recall_cocked_read_by_rule_pct", "c--", "recall cocked read by rule"),
            ("read_valid_wrong_pct", "k-s", "wrong settlements (of read valid)"),
            ("cocked_value_wrong_pct", "k:^", "cocked value wrong (of read by rule)"),
        ):
            ys = [np.nan if row[key] is None else row[key] for row in rows]
            ax.plot(xs, ys, style, label=label, markersize=3)
        default = sweep_default(name)
        if default is not None:  # an option that is off by default has no default value to mark
            ax.axvline(default, color="grey", lw=0.8)
        ax.set_yscale("symlog", linthresh=1.0)
        ax.set_ylim(bottom=0.0)  # every figure is a percentage: no negative axis below the zero lines
        ax.set_xlabel(f"{name} (grey: default)")
        ax.set_ylabel("%")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(curves) :]:
        ax.set_visible(False)  # an odd number of thresholds leaves the last panel empty
    axes.flat[0].legend(fontsize=7, loc="center left")
    fig.suptitle(title, fontsize=10)
    fig.tight_layout(rect=(0.0, 0.0, 1.0, 0.985))  # room for the title above the first row
    fig.savefig(path, dpi=100)
    plt.close(fig)


def load_scenes(root: Path, *, limit: int = 0, skip: int = 0) -> list[SceneTruth]:
    """The labelled scenes of a synthetic set, sorted by id: after the first `skip`, the first `limit`."""
    paths = sorted((root / "labels").glob("*.json"))[skip:]
    if limit:
        paths = paths[:limit]
    return [read_scene(p) for p in paths]


def load_image(root: Path, scene: SceneTruth) -> np.ndarray[Any, Any]:
    """A scene's image as BGR uint8."""
    img = cv2.imread(str(root / scene.image), cv2.IMREAD_COLOR)
    if img is None:
        raise ValueError(f"cannot read {root / scene.image}")
    return np.asarray(img, np.uint8)
