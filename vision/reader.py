"""Frame in, `Roll` out: detect -> die states -> read faces -> judge -> classify the roll (the reader's one
entry point). The die-state model runs before the faces so that each die is read once, by the face model its
state calls for (vision/state/probe.py::read_by_state).

Vision knows nothing of the game: the Pip Street winner and Like Kind count of the faces read are the rules
engine's, added at the api edge (`api.read_document`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

import numpy as np
from numpy.typing import NDArray

from calibration.images import to_gray
from calibration.marks import TableMark
from calibration.table import TableCalibration
from vision.detect.centernet import DetectorConfig
from vision.detect.detector import DieDetector
from vision.judge.exposure import exposure_findings, measure_exposure, smoothed
from vision.judge.validity import ValidityConfig, judge
from vision.onnx_session import (
    DEFAULT_PROVIDERS,
    MANIFEST_PATH,
    OnnxModel,
    SessionFactory,
    load_manifest,
    load_model,
)
from vision.pips.classical import PipCountConfig
from vision.pips.classifier import (
    PLANE_LOOK_SPAN,
    SECOND_LOOK_BELOW,
    SECOND_LOOK_MIRROR,
    SECOND_MODEL_ACCEPT,
    SECOND_MODEL_WEIGHT,
    FaceReader,
)
from vision.pips.crops import crop_die
from vision.pips.enrolled import EnrolledModel, Enrollment
from vision.state.model import DieStateClassifier
from vision.state.probe import probe_wedged, read_looked
from vision.table.geometry import TableGeometry
from vision.table.markers import marker_shift_px, markers_in_view, set_markers_aside
from vision.table.marks import MARK_MIN_SCORE, changed_marks, find_table_marks, set_marks_aside
from vision.table.no_die import NoDieFilter, set_struck_aside
from vision.types import (
    DieCandidate,
    FaceReading,
    Finding,
    FindingReason,
    Frame,
    ImageArray,
    Roll,
    SetAside,
    Sifted,
    Verdict,
)


@dataclass(frozen=True)
class ReaderConfig:
    """Settings of every stage."""

    detector: DetectorConfig = field(default_factory=DetectorConfig)
    pips: PipCountConfig = field(default_factory=PipCountConfig)
    validity: ValidityConfig = field(default_factory=ValidityConfig)
    # The face stage's second look at dice under this top probability (vision/pips/classifier.py); None: off.
    second_look_below: float | None = SECOND_LOOK_BELOW
    # ...and whether it reads the four turns mirrored too (`FaceReader.second_look_mirror`).
    second_look_mirror: bool = SECOND_LOOK_MIRROR
    # The look at the top face of a die still unsure, cut from the die-top plane of a calibrated table, this
    # many die edges across (`FaceReader.plane_look_span`, issue 48); None: off.
    plane_look_span: float | None = PLANE_LOOK_SPAN
    # On a photo read without a table, a coarse look's big die replaces the small boxes inside it only where
    # the face model reads the big box at least as surely, less this margin, as it reads those boxes on
    # average: a big die reads surely and its pips, taken for dice, do not; small dice read surely and the
    # cluster they make does not (`Reader._big_die_reads_better`). None: the geometry alone decides. Why 0.1:
    # small dice in large photos found far more often, big dice as before
    # (docs/history/judge-config.md#readerconfigbig_die_face_margin).
    big_die_face_margin: float | None = 0.1
    # Every die read in the eight turns and mirror images of its crop (`FaceReader.turns_check`, issue 55);
    # the judge heeds it only with `ValidityConfig.require_turns_agree`. Off until judged.
    turns_check: bool = False
    # ...only for dice read less surely than this (`FaceReader.turns_below`; None: every die).
    turns_below: float | None = None
    # A face model's calibration in the manifest (`ModelSpec.temperature`, `sure_bar`) is used: its
    # temperature, and its sure bar in place of `ValidityConfig.min_confidence`. False: neither (the lab's
    # reads of an uncalibrated reader, and of a reader with the bar at 0, `throwbox lab risk`).
    manifest_calibration: bool = True
    # A second face model trained apart (`pips_peer`), read on every die when the manifest lists it; the judge
    # heeds it only with `ValidityConfig.require_peer_agree` (issue 55). False: never loaded.
    peer_check: bool = True


@dataclass(frozen=True)
class TableLook:
    """A frame as its table's calibration sees it, before the dice are read (`Reader._table_look`)."""

    sifted: Sifted  # the detections and weak peaks, those that are part of the table set aside
    geometry: TableGeometry | None  # None when there is none, or the camera moved since calibration
    findings: tuple[Finding, ...] = ()  # of the frame itself: the camera moved
    unsure_set_aside: tuple[SetAside, ...] = ()  # set aside where a see-through die may lie


def _unsure(sifted: Sifted, sure: float) -> tuple[SetAside, ...]:
    """Set aside though not surely the empty box there (under `sure`, or no look kept)."""
    return tuple(
        a for a in sifted.set_aside + sifted.peaks_set_aside if a.likeness is None or a.likeness < sure
    )


class Reader:
    """The loaded models and settings; `read(frame)` is thread-compatible (no state changes per call)."""

    def __init__(
        self,
        *,
        threads: int = 1,
        config: ReaderConfig | None = None,
        manifest_path: Path = MANIFEST_PATH,
        providers: tuple[str, ...] = DEFAULT_PROVIDERS,
        session_factory: SessionFactory | None = None,
    ) -> None:
        self.config = config or ReaderConfig()
        start = time.perf_counter()

        def load(name: str) -> OnnxModel:
            return load_model(
                name,
                manifest_path=manifest_path,
                threads=threads,
                providers=providers,
                session_factory=session_factory,
            )

        det_model, pip_model = load("detector"), load("pips")
        listed = load_manifest(manifest_path)
        pips_spec = listed["pips"]
        temperature = 1.0
        if self.config.manifest_calibration:
            temperature = pips_spec.temperature or 1.0
            if pips_spec.sure_bar is not None:  # the bar judged with the calibrated model (issue 55)
                validity = replace(self.config.validity, min_confidence=pips_spec.sure_bar)
                self.config = replace(self.config, validity=validity)
        # The die-state model (vision.judge) is used when the manifest lists it; without it the judge
        # checks count and certainty only (see vision.judge.validity), and `models` does not name it.
        self.die_state = DieStateClassifier(load("die_state")) if "die_state" in listed else None
        # The wide face model for the second look at unsure dice (vision.pips.classifier), when listed.
        second_model = load("pips_second") if "pips_second" in listed else None
        # A second face model trained apart, read on every die (vision.pips.classifier), when listed; its
        # calibration's sure bar is its bar in the judge unless the config names one.
        peer_model = load("pips_peer") if "pips_peer" in listed and self.config.peer_check else None
        if peer_model is not None and self.config.manifest_calibration:
            peer_bar = peer_model.spec.sure_bar
            if peer_bar is not None and self.config.validity.peer_min_confidence is None:
                validity = replace(self.config.validity, peer_min_confidence=peer_bar)
                self.config = replace(self.config, validity=validity)
        # The face model for dice the die-state model calls cocked (vision/state/probe.py), when listed; it
        # needs the die-state model to know which dice those are, and is not loaded without it.
        cocked_model = load("pips_cocked") if "pips_cocked" in listed and self.die_state is not None else None
        self.load_ms = (time.perf_counter() - start) * 1000

        def face_reader(
            model: OnnxModel, second: OnnxModel | None, temp: float = 1.0, peer: OnnxModel | None = None
        ) -> FaceReader:
            spec = None if second is None else second.spec
            weight = SECOND_MODEL_WEIGHT if spec is None or spec.second_weight is None else spec.second_weight
            accept = SECOND_MODEL_ACCEPT if spec is None or spec.second_accept is None else spec.second_accept
            return FaceReader(
                model,
                self.config.pips,
                second_look_below=self.config.second_look_below,
                second_model=second,
                second_look_mirror=self.config.second_look_mirror,
                plane_look_span=self.config.plane_look_span,
                second_weight=weight,
                second_accept=accept,
                temperature=temp,
                turns_check=self.config.turns_check,
                turns_below=self.config.turns_below,
                peer_model=peer,
                # The second model's temperature even with `manifest_calibration` off: the lab sweeps its
                # bar with the first's (lab/risk_read.py) and needs its probabilities as calibrated.
                peer_temperature=1.0 if peer is None else (peer.spec.temperature or 1.0),
            )

        # The second model helps the face model it was judged beside: the dice the die-state model calls
        # cocked keep their own model's turned looks (vision/state/probe.py).
        self.faces = face_reader(pip_model, second_model, temperature, peer_model)
        self.cocked_faces = None if cocked_model is None else face_reader(cocked_model, None)
        check = None if self.config.big_die_face_margin is None else self._big_die_reads_better
        self.detector = DieDetector(det_model, self.config.detector, big_die_check=check)
        # The loaded models by manifest name (their `run_ms` tells a benchmark the models' share of a read),
        # and their tags, which every read reports.
        self.onnx_models: dict[str, OnnxModel] = {"detector": det_model, "pips": pip_model}
        if second_model is not None:
            self.onnx_models["pips_second"] = second_model
        if peer_model is not None:
            self.onnx_models["pips_peer"] = peer_model
        if self.die_state is not None:
            self.onnx_models["die_state"] = self.die_state.model
        if cocked_model is not None:
            self.onnx_models["pips_cocked"] = cocked_model
        self.models = {name: model.spec.tag for name, model in self.onnx_models.items()}
        # A table's no-die filter (vision/table/no_die.py: boxes like those its people struck out), set by
        # `with_no_die`; None: every table's reader starts without one.
        self.no_die_filter: NoDieFilter | None = None

    def with_no_die(self, no_die: NoDieFilter) -> Reader:
        """This reader with a table's no-die filter: where a frame has more boxes than the game's dice, the
        boxes it calls no die are set aside first (never more than the surplus); its reads name it in
        `models["no_die"]`."""
        other = copy.copy(self)
        other.no_die_filter = no_die
        other.models = {**self.models, "no_die": f"table:{no_die.table_id}:{no_die.checksum[:8]}"}
        return other

    def enrolled(self, enrollment: Enrollment) -> Reader:
        """This reader with its face model read through a table's enrollment (vision/pips/enrolled.py):
        the same loaded models, the `pips` reading corrected; its reads name the enrollment in `models`.
        An `EnrollmentError` when the enrollment was fitted on another face model."""
        model = EnrolledModel(self.onnx_models["pips"], enrollment)
        other = copy.copy(self)
        other.faces = copy.copy(self.faces)
        other.faces.model = model
        # The second face model (`pips_peer`) is not asked at an enrolled table: the table's own correction,
        # stored only once it proved itself on the table's confirmed dice (vision/pips/enroll/validation.py),
        # reads dice the shipped pair does not know; the pair's agreement would keep them from it.
        other.faces.peer_model = None
        other.models = {**{k: v for k, v in self.models.items() if k != "pips_peer"}, "pips": model.tag}
        return other

    def _big_die_reads_better(
        self, image: ImageArray, coarse_box: NDArray[np.float32], inside: NDArray[np.float32]
    ) -> bool:
        """Does the face model read the coarse box at least as surely (less `big_die_face_margin`) as it
        reads the small boxes inside it, on average? (`ReaderConfig.big_die_face_margin`)"""
        crops = [crop_die(image, coarse_box)] + [crop_die(image, box) for box in inside]
        sure = self.faces.probabilities(crops).max(axis=1)
        margin = self.config.big_die_face_margin or 0.0
        return float(sure[0]) + margin >= float(sure[1:].mean())

    @property
    def cocked_reader(self) -> FaceReader:
        """The face reader for dice the die-state model calls cocked: the `pips_cocked` model's where the
        manifest lists one, else the reader's own."""
        return self.faces if self.cocked_faces is None else self.cocked_faces

    @property
    def weak_score(self) -> float:
        """The lowest detector peak the judge heeds (`JudgeConfig.weak_peak_score`, at most the threshold)."""
        return min(self.config.validity.judge.weak_peak_score, self.detector.config.score_threshold)

    def table_marks_of(
        self, calibration: TableCalibration, empty_frames: Sequence[ImageArray]
    ) -> tuple[TableMark, ...]:
        """What this reader's detector takes for dice on a table's empty-box frames, and its corner markers'
        and printed layout boxes' looks (vision/table/marks.py; what `calibrate table` stores)."""
        return find_table_marks(
            self.detector,
            empty_frames,
            weak_score=min(MARK_MIN_SCORE, self.detector.config.score_threshold),
            marker_corners_px=calibration.reference_corners_px,
            layout_boxes_px=calibration.layout_boxes_px(),
        )

    def _table_look(
        self,
        image: ImageArray,
        candidates: tuple[DieCandidate, ...],
        weak_peaks: tuple[DieCandidate, ...],
        geometry: TableGeometry | None,
    ) -> TableLook:
        """What a table's calibration says of a frame before its dice are read: the detections that are part
        of the table (corner markers, table marks) set aside, and whether the camera is still where it was
        calibrated (vision/table/markers.py, vision/table/marks.py)."""
        judge_config = self.config.validity.judge
        sifted = Sifted(candidates, weak_peaks)
        if geometry is None:
            return TableLook(sifted, None)
        gray = to_gray(image, name="frame")  # every look below compares grey: converted once per read
        if geometry.markers is not None and geometry.marker_corners_px:
            # The table's corner markers stay on the felt and the detector takes them for dice.
            seen = markers_in_view(
                gray, markers=geometry.markers, reference_corners_px=geometry.marker_corners_px
            )
            sifted = set_markers_aside(candidates, weak_peaks, seen=seen, image=gray, marks=geometry.marks)
            shift = marker_shift_px(seen, geometry.marker_corners_px)
            bar = judge_config.max_marker_shift_px
            if bar is not None and shift is not None and shift > bar:
                # The calibration no longer fits this camera: read the frame as a photo, for a person.
                finding = Finding(
                    verdict=Verdict.NO_DECISION,
                    reason=FindingReason.CAMERA_MOVED,
                    die_ids=(),
                    detail=f"the corner markers lie {shift:.1f} px from where the table was calibrated "
                    f"(limit {bar:g} px): the camera moved, so the roll is read from the image alone; "
                    "calibrate the table again (throwbox calibrate check / table)",
                )
                return TableLook(sifted, None, (finding,), _unsure(sifted, judge_config.sure_mark_likeness))
        if geometry.marks:
            # Print on the felt the detector took for dice when the box was empty (vision/table/marks.py).
            on_marks = set_marks_aside(
                sifted.candidates,
                sifted.weak_peaks,
                image=gray,
                marks=geometry.marks,
                min_likeness=judge_config.min_mark_likeness,
            )
            sifted = Sifted(
                on_marks.candidates,
                on_marks.weak_peaks,
                sifted.set_aside + on_marks.set_aside,
                sifted.peaks_set_aside + on_marks.peaks_set_aside,
            )
        sure = judge_config.sure_mark_likeness
        # Print or a marker that changed with no die found over it: a missed die may lie there.
        unsure = _unsure(sifted, sure)
        changed = changed_marks(
            gray,
            geometry.marks,
            sifted.candidates,
            sure=sure,
            known=sifted.set_aside + sifted.peaks_set_aside,
        )
        return TableLook(sifted, geometry, (), unsure + changed)

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll:
        """Read one frame into a `Roll` with its verdict, reasons and per-stage timings.

        `geometry` (a table calibration's camera and throw box) lets the judge place dice on the table; its
        corner markers and table marks are set aside, and a camera moved since calibration (by the markers)
        makes the roll read from the image alone, `no_decision` (camera_moved) unless that shows a rethrow.
        Either of `expected_dice` and `geometry` says the frame is a table's, with table-sized dice: the
        detector's coarse looks for a die filling the frame run only on a photo read without both. With the
        grain bars of `JudgeConfig` set, every model reads a grainy frame smoothed (vision/judge/exposure.py);
        the caller's frame itself is not changed (its annotated evidence is the frame as it came).
        """
        t0 = time.perf_counter()
        # The frame's exposure and grain first (vision/judge/exposure.py): a frame grainier than
        # `JudgeConfig.smooth_noise_above` is read smoothed (both grain bars are off by default), and the
        # Roll carries both measures (for the live loop's camera alerts). Timed with the detector
        # (`timing_ms["detect"]`).
        judge_config = self.config.validity.judge
        exposure = measure_exposure(frame.image)
        image = smoothed(frame.image, exposure, judge_config)
        # The detector's peaks under its threshold tell a short count from a die it was unsure of (judge).
        coarse = expected_dice is None and geometry is None
        candidates, weak_peaks = self.detector.detect_with_weak(
            image, weak_score=self.weak_score, coarse=coarse
        )
        table = self._table_look(image, candidates, weak_peaks, geometry)
        if self.no_die_filter is not None and expected_dice is not None:
            kept, struck = set_struck_aside(image, table.sifted.candidates, self.no_die_filter, expected_dice)
            sifted = replace(table.sifted, candidates=kept, set_aside=table.sifted.set_aside + struck)
            table = replace(table, sifted=sifted)
        candidates, weak_peaks, geometry = table.sifted.candidates, table.sifted.weak_peaks, table.geometry
        t1 = time.perf_counter()

        def read_faces(cs: tuple[DieCandidate, ...]) -> tuple[FaceReading, ...]:
            return self.faces(image, cs, geometry)

        states = None
        if self.die_state is None:
            t2 = time.perf_counter()
            readings = read_faces(candidates)
        else:
            states = self.die_state(image, candidates)
            # A die wedged beside a chip stack whose box slid onto the stack (vision/state/probe.py).
            candidates, states = probe_wedged(
                image,
                candidates,
                states,
                expected_dice=expected_dice,
                classifier=self.die_state,
                config=judge_config,
            )
            t2 = time.perf_counter()
            # Every face read once, a die called cocked by the face model for cocked dice where one is listed
            # (the same two steps as `look_again`, which `throwbox eval --verdicts` calls).
            readings = read_looked(
                candidates,
                states,
                config=judge_config,
                read_faces=read_faces,
                read_turned=lambda cs: self.cocked_reader(image, cs, geometry, turned=True),
                read_cocked=(
                    None if self.cocked_faces is None else lambda cs: self.cocked_reader(image, cs, geometry)
                ),
            )
        t3 = time.perf_counter()
        verdict = judge(
            candidates,
            readings,
            expected_dice=expected_dice,
            config=self.config.validity,
            states=states,
            geometry=geometry,
            weak_peaks=weak_peaks,
            unsure_set_aside=table.unsure_set_aside,
            # A frame washed out, too dark or smoothed first (vision/judge/exposure.py), then what the
            # table saw.
            frame_findings=(*exposure_findings(exposure, judge_config), *table.findings),
        )
        faces = tuple(d.face for d in verdict.dice if d.face is not None)
        t4 = time.perf_counter()
        return Roll(
            dice=verdict.dice,
            verdict=verdict.verdict,
            reasons=verdict.reasons,
            expected_dice=expected_dice,
            faces=faces,
            frame_id=frame.frame_id,
            table_id=frame.table_id,
            models=dict(self.models),
            timing_ms={
                "detect": (t1 - t0) * 1000,
                "faces": (t3 - t2) * 1000,
                "judge": ((t2 - t1) + (t4 - t3)) * 1000,
                "total": (t4 - t0) * 1000,
            },
            findings=verdict.findings,
            set_aside=table.sifted.set_aside + verdict.set_aside,
            exposure=exposure,
        )
