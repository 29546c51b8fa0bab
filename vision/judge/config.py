"""`JudgeConfig`: every threshold of the judgement stage in one frozen object.

The defaults were chosen on tuning scenes (`throwbox lab eval DATASET --verdicts` sweeps them) and judged on
others. Each field says what it does and, in one line, why its default; how each came to be, with the values
tried and refused: docs/history/judge-config.md.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class JudgeConfig:
    """Thresholds of the judgement stage (see each field's comment for what it trades)."""

    # A die's state (flat, cocked, wedged, on a die, under a die, off the table) is taken only at this
    # probability or more; below, the roll is `no_decision`. Higher: fewer wrong calls, more rolls for a
    # person. Why 0.5: 0.6 left 10.65 % of good tuning rolls to a person, against 1.39 %
    # (docs/history/judge-config.md#min_state_confidence).
    min_state_confidence: float = 0.50
    # A state call that sends the dice back (on a die, off the table, wedged) needs this probability of its
    # kind; between `min_state_confidence` and this the die is `state_uncertain`. Geometry is not affected.
    # Why 0.7: as few good rolls thrown away as 0.8, more dice on dice found
    # (docs/history/judge-config.md#min_rethrow_confidence).
    min_rethrow_confidence: float = 0.70
    # Cocked and wedged closer than this in probability: which side rests is too close to call
    # (`no_decision`). Why 0.3: below it more good rolls are voided, above it void recall drops
    # (docs/history/judge-config.md#cocked_wedged_margin).
    cocked_wedged_margin: float = 0.30
    # A cocked die tilted more than this is too near 45 degrees to say which face is uppermost
    # (`no_decision`). Why 44: 40 failed its rule on fresh sets
    # (docs/history/judge-config.md#max_readable_tilt_deg).
    max_readable_tilt_deg: float = 44.0
    # A cocked die is read by rule only with its face read at least this surely (else `cocked_unclear`); 0.9 =
    # no bar beyond `ValidityConfig.min_confidence`. Why 0.97: the lowest bar with no wrong value on the
    # tuning sets (docs/history/judge-config.md#min_cocked_face_confidence).
    min_cocked_face_confidence: float = 0.97
    # A cocked die read under `min_cocked_face_confidence` but at least this surely is read by rule all the
    # same when its classical pip count gives the same face. None: off. Why off: shipped and withdrawn, then
    # refused twice on fresh sets; kept for a table that weighs it on its own footage
    # (docs/history/judge-config.md#cocked_face_corroborated).
    cocked_face_corroborated: float | None = None
    # Each die called cocked has its face read again from its crop turned by 0, 90, 180 and 270 degrees
    # (`vision/state/probe.py::reread_cocked`, geometric mean); the bars above apply to that reading. False:
    # read once. Why off: refused twice on fresh sets; kept so those rules' tables can be made again
    # (docs/history/judge-config.md#cocked_turned_looks).
    cocked_turned_looks: bool = False
    # With a calibration, a die cocked on one side is read by rule only where its tilt plus the camera ray's
    # angle from the vertical (`TableGeometry.view_angles_deg`) is at most this; above, `cocked_unclear` (past
    # 45 a side face can face the camera more squarely than the top). None: off. Why off: failed its rule on
    # fresh sets (docs/history/judge-config.md#max_cocked_tilt_plus_view_deg).
    max_cocked_tilt_plus_view_deg: float | None = None
    # With a calibrated camera leaning more than this from straight down, a die cocked on one side is not read
    # by rule (`cocked_unclear`): an oblique camera shows the face toward it, not the uppermost one; 90 turns
    # it off. Why 10: the generator's line between top-down and oblique cameras, not tuned
    # (docs/history/judge-config.md#max_cocked_camera_tilt_deg).
    max_cocked_camera_tilt_deg: float = 10.0
    # Two boxes overlapping by at least this fraction of the smaller one: one die lies on the other. Why 0.45:
    # flat dice side by side overlap at most about 0.17 (docs/history/judge-config.md#overlap_stacked).
    overlap_stacked: float = 0.45
    # With a calibration, two overlapping dice whose felt positions are closer than this lie one on the other
    # (`vision/judge/stacked.py`). Why 12: flat dice side by side are at least one edge, 19 mm, apart
    # (docs/history/judge-config.md#stacked_max_centre_mm).
    stacked_max_centre_mm: float = 12.0
    # ...but only under a calibrated camera leaning at most this; above, felt positions alone leave the
    # overlap `stacked_unclear`. None: any camera. Why 10: an oblique camera's loose boxes place dice too
    # roughly; passed its rule on fresh sets (docs/history/judge-config.md#felt_backing_max_camera_tilt_deg).
    felt_backing_max_camera_tilt_deg: float | None = 10.0
    # With a calibrated camera leaning at most this, two boxes overlapping past `overlap_stacked` with nothing
    # to back a stack and the count full are two dice side by side boxed loosely: `stacked_ruled_out` (valid).
    # None: off. Why 10: passed its rule on fresh sets
    # (docs/history/judge-config.md#unbacked_overlap_max_camera_tilt_deg).
    unbacked_overlap_max_camera_tilt_deg: float | None = 10.0
    # A die-on-die state call needs a die under or over it (`vision/judge/stacked.py`): with the count full, a
    # call whose nearest box overlaps it by less than this is ruled out (valid); from this to
    # `overlap_stacked` it is `stacked_unclear`. Why 0.1: the least overlap of a true stack on the tuning sets
    # was 0.12 (docs/history/judge-config.md#stack_partner_overlap).
    stack_partner_overlap: float = 0.10
    # A "die" whose box's long side is more than this many times the frame's median die sends no dice back
    # (`no_decision`): chip stacks taken for dice are that large, dice hardly ever
    # (docs/history/judge-config.md#max_die_size_ratio).
    max_die_size_ratio: float = 1.4
    # With a calibration, a die read as 1 whose size against the calibration's expected die size is under this
    # share of the frame's median is `object_unclear` (`vision/judge/size.py::small_aces`): a lone pip boxed
    # as a die. 0: off. Why 0.7: 9 of 18,997 right faces on the tuning sets fell under it, the one wrong 1 at
    # 0.64 (docs/history/judge-config.md#min_ace_size_ratio).
    min_ace_size_ratio: float = 0.7
    # With a calibration, a die read as 1 whose box's long side is under this share of a flat die's top-face
    # edge where it lies (`vision/judge/size.py::edge_ratios`) is `object_unclear`: a box on one pip. 0: off.
    # Why 0.8: no true 1 under 0.83 on the tuning sets (docs/history/judge-config.md#min_ace_edge_ratio).
    min_ace_edge_ratio: float = 0.8
    # With stored table marks (`calibration/marks.py`), a detection on a mark is the mark while the frame's
    # correlation with the empty box there is at least this (`vision/table/marks.py`). Why 0.95: between the
    # empty box under light changes and a die on the mark (docs/history/judge-config.md#min_mark_likeness).
    min_mark_likeness: float = 0.95
    # With a short count, a marker or mark set aside where the frame looks less than this like the empty box
    # (or its look was not kept) makes the roll `no_decision` (count_mismatch): a see-through die may lie over
    # it; the same bar watches marks and printed layout boxes with no die found. Why 0.993: midway between the
    # empty box under light changes and a die showing 0.3 over it
    # (docs/history/judge-config.md#sure_mark_likeness).
    sure_mark_likeness: float = 0.993
    # With a marker calibration, past this shift of the corner markers (the second largest of their median
    # corner shifts, `vision.table.markers.marker_shift_px`) the camera moved: the roll is read from the
    # image alone
    # and is `no_decision` (camera_moved) unless it shows a rethrow. None: not checked. Why 3.0: twice
    # `throwbox calibrate check`'s bar, for a die on a sticker and a real camera's shake
    # (docs/history/judge-config.md#max_marker_shift_px).
    max_marker_shift_px: float | None = 3.0
    # A frame with more than `max_clipped_share` of its pixels clipped white, or 99 % of them under grey level
    # `min_bright_level`, is judged by no rule: `no_decision`, `frame_exposure` (`vision/judge/exposure.py`).
    # None: not checked. Why 0.15 and 60: far past every tuning frame
    # (docs/history/judge-config.md#max_clipped_share-and-min_bright_level).
    max_clipped_share: float | None = 0.15
    min_bright_level: float | None = 60.0
    # A frame whose grain (`vision/judge/exposure.py`) is over `smooth_noise_above` is smoothed before the
    # models read it (`frame_smoothed`); over `max_noise_level` it is `frame_exposure`. The measure saturates
    # at 63: a bar lies in (0, 60]. Set, they do not reach `Reader.table_marks_of` nor the oracle-box face
    # figure of `throwbox lab eval`, which read frames as they come. None: off. Why off: refused on held-out
    # photos; kept for a known grainy camera
    # (docs/history/judge-config.md#smooth_noise_above-and-max_noise_level).
    smooth_noise_above: float | None = None
    max_noise_level: float | None = None
    # A short count is a die gone only if no heatmap peak of at least this (under the detector's own
    # threshold) lies inside the box on no found die; else `no_decision` (`vision/judge/count.py`). Why 0.25:
    # fewer good rolls sent back for a little off-table recall on the tuning sets
    # (docs/history/judge-config.md#weak_peak_score).
    weak_peak_score: float = 0.25
    # Nor where a found box may hold two dice: with a short count, a box over this many times the frame's
    # median die (`vision/judge/size.py::size_ratios`) makes the roll `no_decision` (count_mismatch). None:
    # off. Why 1.4: the size rule's own bar; passed its rule on fresh sets
    # (docs/history/judge-config.md#short_count_max_box_ratio).
    short_count_max_box_ratio: float | None = 1.4
    # With more detections than the game's dice, one the die-state model calls `no_die` at least this surely
    # is set aside (`Roll.set_aside`), the surest first and never more than the surplus; one kept though most
    # likely no die makes the roll `object_unclear`. 1.0 sets nothing aside. Why 0.9: the surest of a tie on
    # the tuning sets (docs/history/judge-config.md#min_no_die).
    min_no_die: float = 0.90
    # A second look for a wedged die (`vision/state/probe.py`): where the count needs a detection called no
    # die, the model is asked again on a grid `wedged_probe_step` dice apart in that box, and a point with at
    # least this of a wedged die becomes that die (the roll then void). It can make no roll valid. None: off.
    # Why 0.99: passed its rule on fresh sets
    # (docs/history/judge-config.md#wedged_probe_min-and-wedged_probe_step).
    wedged_probe_min: float | None = 0.99
    wedged_probe_step: float = 0.25
    # The same second look, the count known, also inside a box called wedged that is over `max_die_size_ratio`
    # times the frame's median die (the box takes in a chip stack). Why on: passed its rule on fresh sets
    # (docs/history/judge-config.md#wedged_probe_oversized).
    wedged_probe_oversized: bool = True
    # With a calibration, a die whose centre is this far beyond the throw box's inner walls is off the table
    # (a die inside has its centre at least half an edge inside)
    # (docs/history/judge-config.md#off_table_margin_mm).
    off_table_margin_mm: float = 5.0

    def __post_init__(self) -> None:
        probabilities = (
            "min_state_confidence",
            "min_rethrow_confidence",
            "cocked_wedged_margin",
            "overlap_stacked",
            "stack_partner_overlap",
            "weak_peak_score",
            "min_no_die",
            "min_cocked_face_confidence",
            "min_mark_likeness",
            "sure_mark_likeness",
        )
        for name in probabilities:
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"JudgeConfig.{name} must be in [0, 1], got {value}")
        if self.wedged_probe_min is not None and not 0.0 <= self.wedged_probe_min <= 1.0:
            raise ValueError(
                f"JudgeConfig.wedged_probe_min must be None or in [0, 1], got {self.wedged_probe_min}"
            )
        if not 0.0 < self.wedged_probe_step <= 1.0:
            raise ValueError(f"JudgeConfig.wedged_probe_step must be in (0, 1], got {self.wedged_probe_step}")
        corroborated = self.cocked_face_corroborated
        if corroborated is not None and not 0.0 <= corroborated <= self.min_cocked_face_confidence:
            raise ValueError(
                "JudgeConfig.cocked_face_corroborated must be None or in [0, min_cocked_face_confidence], "
                f"got {corroborated}"
            )
        if not 0.0 < self.max_readable_tilt_deg <= 90.0:
            raise ValueError(
                f"JudgeConfig.max_readable_tilt_deg must be in (0, 90], got {self.max_readable_tilt_deg}"
            )
        if not 0.0 <= self.max_cocked_camera_tilt_deg <= 90.0:
            raise ValueError(
                "JudgeConfig.max_cocked_camera_tilt_deg must be in [0, 90], "
                f"got {self.max_cocked_camera_tilt_deg}"
            )
        for name in (
            "unbacked_overlap_max_camera_tilt_deg",
            "felt_backing_max_camera_tilt_deg",
            "max_cocked_tilt_plus_view_deg",
        ):
            tilt = getattr(self, name)
            if tilt is not None and not 0.0 <= tilt <= 90.0:
                raise ValueError(f"JudgeConfig.{name} must be in [0, 90] or None, got {tilt}")
        if self.stacked_max_centre_mm < 0.0:
            raise ValueError(
                f"JudgeConfig.stacked_max_centre_mm must be >= 0, got {self.stacked_max_centre_mm}"
            )
        if not 0.0 <= self.min_ace_size_ratio < 1.0:
            raise ValueError(
                f"JudgeConfig.min_ace_size_ratio must be in [0, 1), got {self.min_ace_size_ratio}"
            )
        if self.max_clipped_share is not None and not 0.0 < self.max_clipped_share < 1.0:
            raise ValueError(
                f"JudgeConfig.max_clipped_share must be None or in (0, 1), got {self.max_clipped_share}"
            )
        if self.min_bright_level is not None and not 0.0 < self.min_bright_level <= 255.0:
            raise ValueError(
                f"JudgeConfig.min_bright_level must be None or in (0, 255], got {self.min_bright_level}"
            )
        for name in ("smooth_noise_above", "max_noise_level"):
            level = getattr(self, name)
            if level is not None and not 0.0 < level <= 60.0:
                raise ValueError(f"JudgeConfig.{name} must be None or in (0, 60], got {level}")
        smooth, most = self.smooth_noise_above, self.max_noise_level
        if smooth is not None and most is not None and most < smooth:
            raise ValueError(
                f"JudgeConfig.max_noise_level ({most}) must be at least smooth_noise_above ({smooth})"
            )
        if self.max_marker_shift_px is not None and not self.max_marker_shift_px > 0.0:
            raise ValueError(
                f"JudgeConfig.max_marker_shift_px must be None or positive, got {self.max_marker_shift_px}"
            )
        if self.sure_mark_likeness < self.min_mark_likeness:
            raise ValueError(
                "JudgeConfig.sure_mark_likeness must be at least min_mark_likeness "
                f"({self.min_mark_likeness}), got {self.sure_mark_likeness}"
            )
        if not 0.0 <= self.min_ace_edge_ratio < 2.0:
            raise ValueError(
                f"JudgeConfig.min_ace_edge_ratio must be in [0, 2), got {self.min_ace_edge_ratio}"
            )
        ratio = self.short_count_max_box_ratio
        if ratio is not None and ratio <= 1.0:
            raise ValueError(f"JudgeConfig.short_count_max_box_ratio must be None or > 1, got {ratio}")
        if self.max_die_size_ratio <= 1.0:
            raise ValueError(f"JudgeConfig.max_die_size_ratio must be > 1, got {self.max_die_size_ratio}")
        if self.off_table_margin_mm < 0.0:
            raise ValueError(f"JudgeConfig.off_table_margin_mm must be >= 0, got {self.off_table_margin_mm}")
