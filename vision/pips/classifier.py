"""The face stage: learned probabilities for faces 1..6 plus the classical pip count for every die.

A second look: a die the classifier is unsure of (top probability below `second_look_below`) is read again
turned by 90, 180 and 270 degrees (exact turns of the crop: no resampling; with `second_look_mirror`, the
four turns mirrored too), and its probabilities become the normalised geometric mean of the readings. A
die's face does not change when it turns, but the small net's errors do. The bar, 0.90 (the reader's own
certainty bar, `ValidityConfig.min_confidence`), was chosen with `python -m models.second_look` on tuning
images (table in docs/history/model-pips_facenet.md): with the face models of 22:29Z and 23:32Z it left no
sure die wrong and made the most dice sure. Dice the classifier is sure of cost nothing more; each unsure die
costs three more crops through the face model (seven with the mirror images).

A second model: when the manifest lists `pips_second` (a wider net, `models/pips_wide/`, about six times the
small net's time per crop), the unsure dice also go through it once, and their probabilities become the
weighted geometric mean of the small net's merged looks and the wide net's reading (`second_weight` on
the wide net; 1.0 = the wide net alone, and the small net's turned looks are then skipped). With
`second_accept`, that merged reading stands only where its top probability reaches the bar; the other unsure
dice keep the small net's turned looks (so the turned looks are always read).

Under an oblique camera: with a table calibration whose camera leans at least `rectify_min_tilt_deg` from
straight down, each die is cut from the plane of its top face seen square-on from above (`crop_die_top`:
the die's felt position from its box, the top face's plane one die edge above the felt, `rectify_span` die
edges across) instead of from its box in the frame. The top face comes out square and the side faces, which
an oblique camera shows with their own pips, are pushed to the crop's edge. Both the classifier and the pip
count read that crop. A photo read without a calibration, or a camera nearly straight above, is cut from
its box as before.

A look at the top face (issue 48, off: `plane_look_span` None): with a table calibration, a die still unsure
after the second look is read once more from a tighter crop of its top face alone, cut from the die-top plane
seen square-on (`crops_die_top`, `plane_look_span` die edges across, under any camera), turned as the second
look turns it, and its probabilities become the weighted geometric mean of that reading (weight
`plane_look_weight`; 1.0: it alone) and the one before. What it
buys on tuning scenes is measured by `python -m lab.plane_look` (docs/reader.md, "A look at the top face").

Calibration (issue 55): a face model listed with a `temperature` in the manifest has its probabilities
softened (T > 1) or sharpened as softmax(log p / T), the temperature fitted on a tuning set by
`throwbox lab calibrate-faces` (lab/calibrate.py), so that its top probability means what it says.

The turns' opinion (issue 55, off: `turns_check` False): every die (with `turns_below`, every die whose top
probability is under it: a die read surer costs nothing more) is read in the eight turns and mirror images
of its crop in one batched call; `FaceReading.turns_agree` says whether all eight read the face the
reading gives (None where not looked at). A die's face does not change when its crop turns; a model that
reads it two ways does not know it (the judge's `ValidityConfig.require_turns_agree` then leaves it to a
person).

A second face model trained apart (issue 55, `pips_peer` in the manifest, read only when listed): every die's
crop goes through it once more, in one batched call, at its own calibration's temperature;
`FaceReading.peer_face` and `peer_confidence` carry its reading, which the judge heeds with
`ValidityConfig.require_peer_agree`. Two nets of different shapes and training rarely make the same mistake
surely; where they disagree, the die goes to a person.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
from numpy.typing import NDArray

from vision.onnx_session import OnnxModel
from vision.pips.classical import PipCountConfig, count_pips, steady_count
from vision.pips.crops import crop_die, crops_die_top, crops_to_tensor, scaled_box
from vision.types import DieCandidate, FaceReading, ImageArray

if TYPE_CHECKING:
    from vision.table.geometry import TableGeometry

SECOND_LOOK_BELOW = 0.90
# The wide net's share of an unsure die's log-probabilities; 1.0 = it alone. Not chosen on data yet: no wide
# model is registered (models/pips_wide/README.md).
SECOND_MODEL_WEIGHT = 1.0
# The accept bar for that reading (`FaceReader.second_accept`); None = always taken. A wide model registered
# as `pips_second` is read with these two values: set them to the ones its tries were judged with.
SECOND_MODEL_ACCEPT: float | None = None
# Crops cut from the die-top plane under a camera leaning at least this far from straight down (degrees);
# None: always from the box. RECTIFY_SPAN: the crop's side in die edges. Chosen on tuning sets, judged on
# fresh ones (docs/reader.md, "Under an oblique camera";
# docs/history/judge-config.md#rectify_min_tilt_deg-and-rectify_span).
RECTIFY_MIN_TILT_DEG: float | None = 10.0
RECTIFY_SPAN = 1.6
# The second look also reads the mirror image of each of the four turns (eight looks, the square's whole
# symmetry group): every d6 face mirrored is the same face turned, so the face cannot change, and the net's
# errors on a mirrored crop are its own. Off until judged (docs/history/reader.md, "Eight looks").
SECOND_LOOK_MIRROR = False
# The look at the top face (the module's docstring): the crop's side in die edges; None: off. Off until a
# span is chosen on tuning scenes and judged on fresh ones (docs/reader.md, "A look at the top face").
PLANE_LOOK_SPAN: float | None = None
PLANE_LOOK_WEIGHT = 0.5  # the top-face reading's share of the merged log-probabilities; 1.0: it alone
# The turns' opinion looks only at dice read less surely than this (the module's docstring). Why 0.9999: the
# eight looks of every die cost the face model seven more crops a die, about 1.8 times a frame's time on the
# shared machine (`throwbox lab bench --candidate`); the calibrated model reads most dice surer than this.
TURNS_BELOW = 0.9999


class FaceModel(Protocol):
    """What the face reader runs: an `OnnxModel`, or one read through a table's enrollment
    (`vision.pips.enrolled.EnrolledModel`)."""

    def run(self, batch: NDArray[np.float32]) -> list[NDArray[np.float32]]: ...


def _normalised(mean_log: NDArray[np.float32]) -> NDArray[np.float32]:
    """Mean log-probabilities (n, 6) -> probabilities summing to 1 per row."""
    merged = np.exp(mean_log - mean_log.max(axis=1, keepdims=True))
    return np.asarray(merged / merged.sum(axis=1, keepdims=True), np.float32)


class FaceReader:
    """Read the top face of each candidate: the ONNX classifier and the pip counter, which counts from the
    image alone (only where its count disagrees with the classifier is it recounted, `steady_count`)."""

    def __init__(
        self,
        model: FaceModel,
        pip_config: PipCountConfig | None = None,
        *,
        second_look_below: float | None = SECOND_LOOK_BELOW,
        second_model: OnnxModel | None = None,
        second_weight: float = SECOND_MODEL_WEIGHT,
        second_accept: float | None = SECOND_MODEL_ACCEPT,
        rectify_min_tilt_deg: float | None = RECTIFY_MIN_TILT_DEG,
        rectify_span: float = RECTIFY_SPAN,
        second_look_mirror: bool = SECOND_LOOK_MIRROR,
        plane_look_span: float | None = PLANE_LOOK_SPAN,
        plane_look_weight: float = PLANE_LOOK_WEIGHT,
        temperature: float = 1.0,
        turns_check: bool = False,
        turns_below: float | None = None,
        peer_model: FaceModel | None = None,
        peer_temperature: float = 1.0,
    ) -> None:
        if not temperature > 0 or not peer_temperature > 0:
            raise ValueError(f"temperatures must be positive, got {temperature} and {peer_temperature}")
        if rectify_span <= 0:
            raise ValueError(f"rectify_span must be positive, got {rectify_span}")
        if plane_look_span is not None and not plane_look_span > 0:
            raise ValueError(f"plane_look_span must be positive or None, got {plane_look_span}")
        if not 0.0 < plane_look_weight <= 1.0:
            raise ValueError(f"plane_look_weight must be in (0, 1], got {plane_look_weight}")
        if not 0.0 <= second_weight <= 1.0:
            raise ValueError(f"second_weight must be in [0, 1], got {second_weight}")
        if second_accept is not None and not 0.0 < second_accept <= 1.0:
            raise ValueError(f"second_accept must be in (0, 1] or None, got {second_accept}")
        self.model = model
        self.pip_config = pip_config or PipCountConfig()
        self.second_look_below = second_look_below
        self.second_model = second_model
        self.second_weight = second_weight
        self.second_accept = second_accept
        self.rectify_min_tilt_deg = rectify_min_tilt_deg
        self.rectify_span = rectify_span
        self.second_look_mirror = second_look_mirror
        self.plane_look_span = plane_look_span
        self.plane_look_weight = plane_look_weight
        self.temperature = temperature
        self.turns_check = turns_check
        self.turns_below = turns_below
        self.peer_model = peer_model
        self.peer_temperature = peer_temperature

    def _probs(
        self, batch: NDArray[np.float32], model: FaceModel | None = None, temperature: float = 1.0
    ) -> NDArray[np.float32]:
        """(N, 6) probabilities of `model` (the face model itself when None, at its own temperature)."""
        (probs,) = (model or self.model).run(batch)[:1]
        if probs.shape != (len(batch), 6):
            raise ValueError(f"face model returned {probs.shape}, expected ({len(batch)}, 6)")
        out = np.asarray(probs / np.maximum(probs.sum(axis=1, keepdims=True), 1e-9), np.float32)
        if model is None:
            temperature = self.temperature
        if temperature != 1.0:  # a calibrated face model (the module's docstring)
            out = _normalised(np.asarray(np.log(np.maximum(out, 1e-12)) / temperature, np.float32))
        return out

    def peer_probs(self, batch: NDArray[np.float32]) -> NDArray[np.float32] | None:
        """(N, 6) the second face model's probabilities of a crop batch at its temperature; None: none."""
        if self.peer_model is None or len(batch) == 0:
            return None
        return self._probs(batch, self.peer_model, self.peer_temperature)

    def turns_agree(self, crops: list[ImageArray], faces: NDArray[np.int64]) -> NDArray[np.bool_]:
        """Per crop: do its eight turns and mirror images (one batched call) all read `faces` (1..6)?"""
        batch = crops_to_tensor(crops)
        mirrored = np.flip(batch, axis=3)
        views = [np.rot90(batch, k, axes=(2, 3)) for k in (0, 1, 2, 3)]
        views += [np.rot90(mirrored, k, axes=(2, 3)) for k in (0, 1, 2, 3)]
        looks = self._probs(np.ascontiguousarray(np.concatenate(views))).reshape(8, len(crops), 6)
        return np.asarray((looks.argmax(axis=2) + 1 == faces[None, :]).all(axis=0), np.bool_)

    def probabilities(
        self, crops: list[ImageArray], *, turned: bool = False, batch: NDArray[np.float32] | None = None
    ) -> NDArray[np.float32]:
        """(N, 6) face probabilities of die crops cut by `crop_die`, unsure dice looked at again turned;
        with `turned`, every die is (the judge's closer look at a cocked die, vision/state/probe.py). "Turned"
        is the second look as this reader is set: the four turns, eight with `second_look_mirror`, and with a
        registered wide model (`second_model`) that model's reading merged in, or alone at weight 1.0.
        `batch`: the crops already made a tensor (`crops_to_tensor`), not made again."""
        batch = crops_to_tensor(crops) if batch is None else batch
        probs = self._probs(batch)
        if turned:
            unsure = np.arange(len(batch))
        elif self.second_look_below is None:
            return probs
        else:
            unsure = np.flatnonzero(probs.max(axis=1) < self.second_look_below)
        if unsure.size == 0:
            return probs
        w = self.second_weight if self.second_model is not None else 0.0
        accept = self.second_accept if w > 0.0 else None
        mean_log = np.zeros((unsure.size, 6), np.float32)  # float32: without a second model, as before
        turned_log = None
        if w < 1.0 or accept is not None:
            views = [np.rot90(batch[unsure], k, axes=(2, 3)) for k in (1, 2, 3)]
            if self.second_look_mirror:
                mirrored = np.flip(batch[unsure], axis=3)
                views += [np.rot90(mirrored, k, axes=(2, 3)) for k in (0, 1, 2, 3)]
            stacked = np.concatenate(views)
            more = self._probs(np.ascontiguousarray(stacked)).reshape(len(views), unsure.size, 6)
            looks = np.concatenate([probs[unsure][None], more])  # (4 or 8, n_unsure, 6)
            turned_log = np.log(np.maximum(looks, 1e-6)).mean(axis=0)
            if w < 1.0:
                mean_log += (1.0 - w) * turned_log
        if w > 0.0:
            wide = self._probs(np.ascontiguousarray(batch[unsure]), self.second_model)
            mean_log += w * np.log(np.maximum(wide, 1e-6))
        merged = _normalised(mean_log)
        if accept is not None and turned_log is not None:
            # The wide net's say stands only where the merged reading is at least `second_accept` sure;
            # elsewhere the die keeps the small net's turned looks alone (as without a second model).
            keep = merged.max(axis=1) >= accept
            merged = np.where(keep[:, None], merged, _normalised(turned_log))
        probs[unsure] = merged
        return probs

    def rectifies(self, geometry: TableGeometry | None) -> bool:
        """Are dice under this table's camera cut from their top face's plane (`crop_die_top`)?"""
        return (
            geometry is not None
            and self.rectify_min_tilt_deg is not None
            and geometry.camera.pose.tilt_deg >= self.rectify_min_tilt_deg
        )

    def cutter(
        self, image_bgr: ImageArray, geometry: TableGeometry | None = None
    ) -> Callable[[Sequence[DieCandidate], float], list[ImageArray]]:
        """`cut(candidates, scale)`: their crops, each side scaled by `scale` (the pip count's recount)."""
        if geometry is None or not self.rectifies(geometry):
            return lambda cands, scale: [crop_die(image_bgr, scaled_box(c.box_xyxy, scale)) for c in cands]
        camera, edge = geometry.camera, geometry.layout.die_edge_mm
        span = edge * self.rectify_span

        def cut_top(cands: Sequence[DieCandidate], scale: float) -> list[ImageArray]:
            centres = geometry.centres_mm([c.box_xyxy for c in cands])
            return crops_die_top(image_bgr, camera, centres, z_mm=edge, side_mm=span * scale)

        return cut_top

    def plane_look(
        self,
        image_bgr: ImageArray,
        candidates: Sequence[DieCandidate],
        geometry: TableGeometry | None,
        probs: NDArray[np.float32],
    ) -> NDArray[np.float32]:
        """`probs` with every die still under `second_look_below` read again from its top face alone, cut
        from the die-top plane `plane_look_span` die edges across and turned (the module's docstring): the
        geometric mean of that reading and the one before, weighted `plane_look_weight` on the new one.
        Unchanged without a calibration, with the look off, or where no die is unsure."""
        if geometry is None or self.plane_look_span is None or self.second_look_below is None:
            return probs
        unsure = np.flatnonzero(probs.max(axis=1) < self.second_look_below)
        if unsure.size == 0:
            return probs
        edge = geometry.layout.die_edge_mm
        centres = geometry.centres_mm([candidates[int(i)].box_xyxy for i in unsure])
        tops = crops_die_top(
            image_bgr, geometry.camera, centres, z_mm=edge, side_mm=edge * self.plane_look_span
        )
        again = self.probabilities(tops, turned=True)
        before = np.log(np.maximum(probs[unsure], 1e-6))
        out = probs.copy()
        w = self.plane_look_weight
        mean_log = (1.0 - w) * before + w * np.log(np.maximum(again, 1e-6))
        out[unsure] = _normalised(np.asarray(mean_log, np.float32))
        return out

    def __call__(
        self,
        image_bgr: ImageArray,
        candidates: tuple[DieCandidate, ...],
        geometry: TableGeometry | None = None,
        *,
        turned: bool = False,
    ) -> tuple[FaceReading, ...]:
        """One `FaceReading` per candidate, in the same order; `geometry` (a table calibration) cuts the
        crops from the die-top plane under an oblique camera (`rectifies`); `turned`: every die read with the
        second look's turned crops, however sure its first reading (`probabilities`)."""
        if not candidates:
            return ()
        cut = self.cutter(image_bgr, geometry)
        crops = cut(candidates, 1.0)
        batch = crops_to_tensor(crops)  # once, for the face model and the second model
        probs = self.probabilities(crops, turned=turned, batch=batch)
        if not turned:
            probs = self.plane_look(image_bgr, candidates, geometry, probs)
        agree: list[bool | None] = [None] * len(crops)
        looked = np.arange(len(crops))
        if self.turns_below is not None:
            looked = np.flatnonzero(probs.max(axis=1) < self.turns_below)
        if self.turns_check and looked.size:
            said = self.turns_agree([crops[int(i)] for i in looked], probs[looked].argmax(axis=1) + 1)
            for i, a in zip(looked, said, strict=True):
                agree[int(i)] = bool(a)
        peer = self.peer_probs(batch)
        readings = []
        for k, (row, crop, cand, turns) in enumerate(zip(probs, crops, candidates, agree, strict=True)):

            def recount(scale: float, c: DieCandidate = cand) -> int | None:
                return count_pips(cut((c,), scale)[0], config=self.pip_config)

            count = steady_count(
                count_pips(crop, config=self.pip_config),
                int(np.argmax(row)) + 1,
                recount,
                self.pip_config.recount_scales,
            )
            readings.append(
                FaceReading(
                    face_probs=tuple(float(p) for p in row),
                    pip_count=count,
                    turns_agree=turns,
                    peer_face=None if peer is None else int(np.argmax(peer[k])) + 1,
                    peer_confidence=None if peer is None else float(peer[k].max()),
                )
            )
        return tuple(readings)
