"""The live table: camera -> settle -> reader -> the round logic, with alerts.

One `LiveLoop` per table runs in its own thread:

    capture (vision.capture) -> settle detector (vision.settle) -> on each `AtRest`: read the at-rest frame
    (vision.reader, with the table's calibration when there is one) -> store the read and its annotated
    evidence frame -> hand the roll to the round logic through a `RulesDoor` (api/rules_door.py): in-process
    inside the service (`LocalRules`), over REST from a table worker (`RulesClient`, `POST /v1/tables/{id}/
    rolls`, with retries); idempotent by roll id either way

and, around it:

- camera loss or a frozen feed (`SourceLost`) raises a `camera_lost` alert; fresh frames again
  (`SourceRecovered`) a `camera_recovered` alert. A read that finds the camera moved since calibration (its
  corner markers off their places, vision/reader.py) raises a `camera_moved` alert once, and a later read that
  finds them in place again a `camera_in_place` alert. Likewise a read whose frame is washed out or too dark
  (the reader's `frame_exposure` finding, vision/judge/exposure.py) raises `camera_exposure` once, and a later
  read of a fit frame `camera_exposure_ok`. An at-rest frame grainier than `LiveConfig.grain_alert_above`
  (its sensor noise, vision/judge/exposure.py: a camera turning its gain up in a dim room) raises
  `camera_grainy` once, and a later one under it `camera_grain_ok`; the read is not changed by it, and each
  stored read keeps its frame's grain (`frame_noise_level`). The settle detector is reset on a loss, so no
  roll is read from a stale frame (vision.settle); this loop adds nothing that could.
- after a valid first roll that leaves the round waiting for the Extra Roll, the next frame the box settles
  in after the dealer's hand or stick (`SettledWithoutThrow(intruder_seen=True)`) is read and the dealer's
  move into the layout box is checked (`vision.judge.layout_check`, 593.4(e)); anything wrong is a
  `dealer_error`
  alert with that frame as evidence, or, where the check only doubts what the reader saw (a die in the box
  it cannot read, a box short by no more dice than it missed), a `layout_unverified` alert (a person
  looks). The Extra Roll is then read from the rethrown dice only (593.4(g), (h)): the kept dice in the
  winner's box are not read as thrown dice, and what the judge finds about them alone (e.g. two kept dice
  side by side taken for one on the other) does not decide the rethrow.

The reader measures everything the loop alerts on (the camera's place, the frame's exposure and grain, where
the dice lie: `vision.types.Roll`); the loop looks at no image itself. The Extra Roll's new matches are the
rules engine's own count (`rules.hrd.dice.new_matches`) of the rethrown dice the judge split out.

The roll id is the at-rest frame's id (`<table>-<capture start>-<seq>`), unique across restarts: a roll
handed over again after a time-out, or to a rules engine that saw it already, applies once. The loop learns
the round's phase from the rules engine's answers (`phase`, `round.first_roll`), so it needs nothing beyond
the reader role there.

Where things go is an interface (`LiveRecorder`): the service stores reads, evidence and alerts in its own
database (`api.live_service`); tests record them in memory. A roll the rules engine refused
(`RollRejectedError`) or did not answer (`RulesUnreachableError`, api/rules_door.py) is a `roll_not_posted`
alert, and the loop goes on.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

from api.rules_door import LiveError, RulesDoor, checked_submission
from rules.hrd.dice import new_matches
from vision.capture import CapturedFrame, CaptureEvent, ClipStarted, SourceLost, SourceRecovered
from vision.judge.exposure import exposure_failure
from vision.judge.layout_check import check_layout_move, decide_extra_roll
from vision.settle import AtRest, SettleDetector, SettledWithoutThrow, settle_stream
from vision.table.geometry import TableGeometry
from vision.types import Finding, FindingReason, Frame, Roll, Verdict

log = logging.getLogger("throwbox.live")

MAX_REASONS = 20  # what the rolls endpoint takes


class RollReader(Protocol):
    """What the loop needs of `vision.reader.Reader`."""

    def read(
        self, frame: Frame, *, expected_dice: int | None = None, geometry: TableGeometry | None = None
    ) -> Roll: ...


@dataclass(frozen=True)
class StoredRead:
    """What the recorder kept of a read: its id, and its annotated evidence frame (JPEG) and SHA-256."""

    read_id: str
    evidence_sha256: str | None
    evidence_jpeg: bytes | None = None


class LiveRecorder(Protocol):
    """Where the loop keeps reads, evidence and alerts (the service's database, or memory in tests)."""

    def store_read(
        self, *, table_id: str, frame: CapturedFrame, roll: Roll, extra: dict[str, Any]
    ) -> StoredRead:
        """Keep the read and its annotated frame as evidence."""
        ...

    def alert(self, *, table_id: str, kind: str, message: str, data: dict[str, Any]) -> None:
        """Raise an alert (stored, audited, published as an event)."""
        ...


# ------------------------------------------------------------------------------------------------- loop
@dataclass(frozen=True)
class LiveRead:
    """One throw as the loop handled it (kept for the dashboard, the benchmark and tests)."""

    roll_id: str
    kind: str  # "first_roll" or "extra_roll"
    verdict: str
    faces: tuple[int, ...]
    read_id: str | None
    evidence_sha256: str | None
    answer: dict[str, Any] | None  # the rules engine's answer; None when it refused or was unreachable
    error: str | None
    settle_wait_ms: float  # from the first still frame to the at-rest event (scene time)
    process_ms: float  # from the at-rest event to the rules engine's answer (wall time)
    read_ms: float = 0.0  # of which the reader

    @property
    def rest_to_posted_ms(self) -> float:
        """Latency from the dice coming to rest to the posted result."""
        return self.settle_wait_ms + self.process_ms


@dataclass(frozen=True)
class LiveConfig:
    """One table's loop."""

    table_id: str
    expected_dice: int  # 10 (hrd10) or 6 (hrd6)
    calibration_id: str | None = None
    # An at-rest frame whose grain (its sensor noise's deviation in grey levels) is over this raises
    # `camera_grainy`. 6.0: over every frame the reader's models trained and were tuned on (6,900 rendered
    # tuning frames at most 5.19, the real tuning photos 1.48; `python -m lab.exposure_scan`). What grain
    # costs, on the held-out photos under noise of 16 per channel (a grain of about 11): photos read exactly
    # 66 -> 24 % (nellbyler test) and 68.6 -> 19.77 % (matteop65 valid), `throwbox lab stress`
    # (reports/reader/stress/). None: no grain alerts.
    grain_alert_above: float | None = 6.0

    def __post_init__(self) -> None:
        if self.expected_dice not in (6, 10):
            raise ValueError(f"expected_dice must be 6 or 10, got {self.expected_dice}")
        # The grain measure saturates at 63 (vision/judge/exposure.py): a bar over 60 would never fire.
        if self.grain_alert_above is not None and not 0.0 < self.grain_alert_above <= 60.0:
            raise ValueError(f"grain_alert_above must be None or in (0, 60], got {self.grain_alert_above}")


@dataclass
class _Pending:
    """The round as the last answer left it: waiting for the dealer's move and the Extra Roll."""

    winner: int
    match_count: int
    layout_checked: bool = False


class LiveLoop:
    """Run one table's camera through the settle detector, the reader and the rules engine.

    Args:
        config: the table.
        items: the capture (`vision.capture.Capture`), or any iterable of frames and capture events.
        detector: the settle detector.
        reader: the loaded reader.
        rules: the rules engine's REST client (a reader-role key; a table worker's spooling client).
        recorder: where reads, evidence and alerts go.
        geometry: the table's calibration as the judge needs it (None: uncalibrated; no layout checks).
        geometry_for_clip: for a demo playing recordings, the geometry of each clip (by its path).
        on_clip: called on every `ClipStarted` before its frames (the demo opens a round there); True
            back means the round waiting for an Extra Roll was ended there (the demo's croupier keyed a throw
            the reader left to a person), so the next throw is a first roll again.
        on_read: called with each `LiveRead`.
        upload_evidence: also upload each evidence frame to the rules engine (one that is another service;
            the service's own recorder already stored it where the local engine looks).
    """

    def __init__(
        self,
        *,
        config: LiveConfig,
        items: Iterable[CapturedFrame | CaptureEvent],
        detector: SettleDetector,
        reader: RollReader,
        rules: RulesDoor,
        recorder: LiveRecorder,
        geometry: TableGeometry | None = None,
        geometry_for_clip: Callable[[str], TableGeometry | None] | None = None,
        on_clip: Callable[[str], bool | None] | None = None,
        on_read: Callable[[LiveRead], None] | None = None,
        upload_evidence: bool = False,
    ) -> None:
        self.upload_evidence = upload_evidence
        self.calibration_id = config.calibration_id  # what each read records (a demo clip sets its own)
        self.config = config
        self.items = items
        self.detector = detector
        self.reader = reader
        self.rules = rules
        self.recorder = recorder
        self.geometry = geometry
        self.geometry_for_clip = geometry_for_clip
        self.on_clip = on_clip
        self.on_read = on_read
        self.reads: list[LiveRead] = []
        self.layout_checks: list[dict[str, Any]] = []
        self.camera_ok = True
        self.camera_moved = False  # the last read through the calibration saw the camera moved since
        self.exposure_failed = False  # the last read's frame was washed out or too dark
        self.grainy = False  # the last at-rest frame was grainier than `LiveConfig.grain_alert_above`
        self.frames = 0
        self._pending: _Pending | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.failure: BaseException | None = None

    # ------------------------------------------------------------------------------------- lifecycle
    def start(self) -> None:
        """Run in a daemon thread."""
        self._thread = threading.Thread(
            target=self._guarded, name=f"live-{self.config.table_id}", daemon=True
        )
        self._thread.start()

    def stop(self, timeout_s: float = 10.0) -> None:
        """Ask the loop to end and wait for it."""
        self._stop.set()
        stopper = getattr(self.items, "stop", None)
        if callable(stopper):
            stopper()
        if self._thread is not None:
            self._thread.join(timeout_s)

    def _guarded(self) -> None:
        try:
            self.run()
        except Exception as exc:  # the thread's last word: kept for status, logged, alerted
            self.failure = exc
            log.exception("live loop of table %s stopped", self.config.table_id)
            self._alert("live_loop_stopped", f"the live loop stopped: {exc}", {"error": str(exc)})

    def run(self) -> None:
        """Process the source until it ends or `stop()` is called."""
        for item in settle_stream(self.items, self.detector):
            if self._stop.is_set():
                break
            if isinstance(item, CapturedFrame):
                self.frames += 1
            elif isinstance(item, SourceLost):
                self.camera_ok = False
                self._alert(
                    "camera_lost",
                    f"camera {item.source_id}: {'frozen feed' if item.kind == 'frozen' else 'no frames'}; "
                    "nothing is read until it is back and a new throw is seen",
                    {"source": item.source_id, "loss": item.kind.value},
                )
            elif isinstance(item, SourceRecovered):
                self.camera_ok = True
                self._alert(
                    "camera_recovered",
                    f"camera {item.source_id} is back after {item.outage_s:.1f} s",
                    {"source": item.source_id, "loss": item.kind.value, "outage_s": round(item.outage_s, 3)},
                )
            elif isinstance(item, ClipStarted):
                if self.geometry_for_clip is not None:
                    self.geometry = self.geometry_for_clip(item.clip)
                if self.on_clip is not None:
                    try:
                        if self.on_clip(item.clip):
                            self._pending = None
                    except Exception as exc:  # the demo's croupier failed: say so, keep watching
                        if getattr(exc, "round_ended", False):  # it ended the round before it failed
                            self._pending = None
                        log.exception("table %s: on_clip failed", self.config.table_id)
                        self._alert("round_not_ready", f"no round ready for the next throw: {exc}", {})
            elif isinstance(item, AtRest):
                self.handle_throw(item)
            elif isinstance(item, SettledWithoutThrow) and item.intruder_seen:
                self.handle_dealer_move(item)

    # ------------------------------------------------------------------------------------------ steps
    def _note_camera_position(self, roll: Roll, frame_id: str) -> Finding | None:
        """The read's `camera_moved` finding, if any; a `camera_moved` alert when it first appears, and a
        `camera_in_place` alert when a read through the calibration no longer finds it."""
        moved = next((f for f in roll.findings if f.reason == FindingReason.CAMERA_MOVED), None)
        if moved is not None and not self.camera_moved:
            self._alert(
                "camera_moved",
                f"the camera moved since the table was calibrated ({moved.detail}); every roll is left to a "
                "person until the table is calibrated again and the service restarted (a live loop loads "
                "its calibration when it starts)",
                {"frame_id": frame_id},
            )
        elif moved is None and self.camera_moved and self.geometry is not None:
            self._alert(
                "camera_in_place",
                "the corner markers are where the table was calibrated again",
                {"frame_id": frame_id},
            )
        self.camera_moved = moved is not None
        return moved

    def _note_exposure(self, roll: Roll, frame_id: str) -> Finding | None:
        """The read's `frame_exposure` finding, if any; a `camera_exposure` alert when it first appears, and a
        `camera_exposure_ok` alert when a later read's frame is fit again."""
        failed = exposure_failure(roll.findings)
        if failed is not None and not self.exposure_failed:
            self._alert(
                "camera_exposure",
                f"the camera's picture is unfit to read ({failed.detail}); every roll is left to a person "
                "until the light or the camera's exposure is put right",
                {"frame_id": frame_id},
            )
        elif failed is None and self.exposure_failed:
            self._alert(
                "camera_exposure_ok", "the camera's picture is fit to read again", {"frame_id": frame_id}
            )
        self.exposure_failed = failed is not None
        return failed

    def _note_grain(self, roll: Roll, frame_id: str) -> float | None:
        """The frame's grain as the reader measured it (`Roll.exposure`, grey levels; None when grain alerts
        are off or the roll carries no measure); a `camera_grainy` alert when it first goes over
        `LiveConfig.grain_alert_above`, and `camera_grain_ok` when a later frame is under it."""
        bar = self.config.grain_alert_above
        level = None if roll.exposure is None else roll.exposure.noise_level
        if bar is None or level is None:
            return None
        grainy = level > bar
        if grainy and not self.grainy:
            self._alert(
                "camera_grainy",
                f"the camera's picture is grainy (its noise about {level:.0f} grey levels, over {bar:g}, "
                "grainier than any frame the reader learned from): expect more rolls left to a person and "
                "dice missed; more light or less camera gain would mend it",
                {"frame_id": frame_id, "noise_level": round(level, 2)},
            )
        elif not grainy and self.grainy:
            self._alert(
                "camera_grain_ok",
                f"the camera's picture is clean enough again (noise about {level:.0f} grey levels)",
                {"frame_id": frame_id, "noise_level": round(level, 2)},
            )
        self.grainy = grainy
        return level

    def _alert(self, kind: str, message: str, data: dict[str, Any]) -> None:
        try:
            self.recorder.alert(table_id=self.config.table_id, kind=kind, message=message, data=data)
        except Exception:  # an alert that cannot be stored must not stop the table: log it loudly
            log.exception("could not raise %s alert at table %s: %s", kind, self.config.table_id, message)

    def _extra(self) -> dict[str, Any]:
        return {"calibration_id": self.calibration_id if self.geometry is not None else None}

    def handle_dealer_move(self, event: SettledWithoutThrow) -> None:
        """The box settled after a hand or the stick: while the Extra Roll is due, check the layout box."""
        pending = self._pending
        if pending is None or pending.layout_checked:
            return
        if self.geometry is None:
            pending.layout_checked = True
            log.info("table %s: no calibration, so the layout-box move is not checked", self.config.table_id)
            return
        pending.layout_checked = True
        try:
            roll = self.reader.read(event.frame, expected_dice=None, geometry=self.geometry)
        except Exception as exc:  # as in handle_throw: one unreadable frame must not stop the table
            log.exception("table %s: the reader failed on %s", self.config.table_id, event.frame.frame_id)
            self._alert(
                "read_failed",
                f"the reader failed on {event.frame.frame_id}, so the dealer's move to the layout box is "
                f"not checked (a person must look): {exc}",
                {"frame_id": event.frame.frame_id},
            )
            return
        moved = self._note_camera_position(roll, event.frame.frame_id)
        # No layout box is where the calibration says, or the frame shows nothing surely: nothing to check.
        unfit = self._note_exposure(roll, event.frame.frame_id)
        why = moved or unfit
        if why is not None:
            self.recorder.store_read(
                table_id=self.config.table_id, frame=event.frame, roll=roll, extra=self._extra()
            )
            self._alert(
                "layout_unverified",
                f"the dealer's move could not be checked (a person must look): {why.detail}",
                {"frame_id": event.frame.frame_id},
            )
            return
        check = check_layout_move(
            dice=roll.dice,
            winner=pending.winner,
            match_count=pending.match_count,
            dice_on_table=self.config.expected_dice,
        )
        stored = self.recorder.store_read(
            table_id=self.config.table_id,
            frame=event.frame,
            roll=roll,
            extra={**self._extra(), "layout": check.as_dict()},
        )
        self.layout_checks.append({"frame_id": event.frame.frame_id, **check.as_dict()})
        if not check.ok:
            # A problem that accuses the dealer is a dealer_error; the reader's doubt alone (a die it cannot
            # read, a short box in a frame where it missed dice) only asks a person to look.
            kind, what = (
                ("dealer_error", "the dealer's move to the layout box")
                if check.dealer_error
                else ("layout_unverified", "the dealer's move could not be checked (a person must look)")
            )
            self._alert(
                kind,
                f"{what}: " + "; ".join(p.message for p in check.problems),
                {**check.as_dict(), "read_id": stored.read_id, "evidence_sha256": stored.evidence_sha256},
            )

    def handle_throw(self, event: AtRest) -> LiveRead:
        """Read the at-rest frame and hand the roll to the round logic; returns what happened."""
        started = time.perf_counter()
        frame = event.frame
        pending = self._pending
        roll, read_failed = self._read_throw(frame)
        read_ms = (time.perf_counter() - started) * 1000.0
        # A read that failed saw nothing of the camera: the last read's word on its place, its picture and its
        # grain stands (no `camera_in_place` nor `camera_exposure_ok` from a roll made up for the failure).
        moved = None if read_failed else self._note_camera_position(roll, frame.frame_id)
        unfit = None if read_failed else self._note_exposure(roll, frame.frame_id)
        grain = None if read_failed else self._note_grain(roll, frame.frame_id)
        extra = self._extra()
        if grain is not None:
            extra["frame_noise_level"] = round(grain, 2)
        verdict, reasons, faces = roll.verdict.value, list(roll.reasons), roll.faces
        if pending is not None:
            verdict, reasons, faces = self._extra_roll(roll, pending, moved=moved, unfit=unfit, extra=extra)
        if verdict != Verdict.VALID.value and len(faces) > self.config.expected_dice:
            faces = ()  # more dice than in play: the faces mean nothing; the reasons say what was seen
        stored = self.recorder.store_read(table_id=self.config.table_id, frame=frame, roll=roll, extra=extra)
        answer, error = self._hand_over(
            frame.frame_id, verdict=verdict, faces=faces, reasons=reasons, stored=stored
        )
        self._follow(answer)
        read = LiveRead(
            roll_id=frame.frame_id,
            kind="first_roll" if pending is None else "extra_roll",
            verdict=verdict,
            faces=tuple(faces),
            read_id=stored.read_id,
            evidence_sha256=stored.evidence_sha256,
            answer=answer,
            error=error,
            settle_wait_ms=(event.detected_s - event.still_since_s) * 1000.0,
            process_ms=(time.perf_counter() - started) * 1000.0,
            read_ms=read_ms,
        )
        self.reads.append(read)
        if self.on_read is not None:
            self.on_read(read)
        return read

    def _read_throw(self, frame: CapturedFrame) -> tuple[Roll, bool]:
        """The reader's roll of an at-rest frame, and whether the read failed (then a `no_decision` roll in
        its place, and a `read_failed` alert: one unreadable frame must not stop the table)."""
        try:
            return self.reader.read(
                frame, expected_dice=self.config.expected_dice, geometry=self.geometry
            ), False
        except Exception as exc:  # a person decides this throw
            log.exception("table %s: the reader failed on %s", self.config.table_id, frame.frame_id)
            self._alert(
                "read_failed", f"the reader failed on {frame.frame_id}: {exc}", {"frame_id": frame.frame_id}
            )
            failed = Roll(
                dice=(),
                verdict=Verdict.NO_DECISION,
                reasons=(f"the reader failed: {exc}",),
                expected_dice=self.config.expected_dice,
                faces=(),
                frame_id=frame.frame_id,
                table_id=frame.table_id,
                models={},
                timing_ms={},
            )
            return failed, True

    def _extra_roll(
        self,
        roll: Roll,
        pending: _Pending,
        *,
        moved: Finding | None,
        unfit: Finding | None,
        extra: dict[str, Any],
    ) -> tuple[str, list[str], tuple[int, ...]]:
        """(verdict, reasons, faces) of an Extra Roll frame as posted: only the rethrown dice count
        (593.4(g), (h)); the split and the rules engine's count of its new matches go into `extra`."""
        if self.geometry is None:
            return (
                Verdict.NO_DECISION.value,
                ["no table calibration: the kept dice cannot be told from the rethrown dice"],
                (),
            )
        if moved is not None:  # the layout boxes are not where the calibration says: no split
            return (
                Verdict.NO_DECISION.value,
                [moved.detail, "the kept dice cannot be told from the rethrown dice"],
                (),
            )
        if unfit is not None:  # a frame washed out or too dark: no split, nothing read from it
            return Verdict.NO_DECISION.value, [unfit.detail], ()
        decision = decide_extra_roll(
            roll, winner=pending.winner, kept=pending.match_count, expected_dice=self.config.expected_dice
        )
        split = decision.split
        verdict, reasons = decision.verdict.value, list(decision.reasons)
        extra["extra_roll"] = {
            "kept": split.kept,
            "thrown_faces": list(split.thrown_faces),
            # The rules engine's own count (rules.hrd.dice): vision reads the dice, the game counts them.
            "new_matches": new_matches(winner=pending.winner, rethrown=split.thrown_faces),
            "problems": [p.as_dict() for p in split.problems],
            "kept_dice_findings_set_aside": [f.as_dict() for f in decision.on_kept],
        }
        if decision.alert is not None:
            self._alert(
                decision.alert,
                "the Extra Roll: " + "; ".join(p.message for p in split.problems),
                {"frame_id": roll.frame_id, "problems": extra["extra_roll"]["problems"]},
            )
        # What the Extra Roll counts as (handed to the rules engine), beside the read's own verdict, which
        # still judges every die in the frame: the evidence and the dashboard show both.
        extra["extra_roll"]["verdict"] = verdict
        extra["extra_roll"]["reasons"] = reasons[:MAX_REASONS]
        return verdict, reasons, split.thrown_faces

    def _hand_over(
        self, roll_id: str, *, verdict: str, faces: tuple[int, ...], reasons: list[str], stored: StoredRead
    ) -> tuple[dict[str, Any] | None, str | None]:
        """Hand the roll to the round logic (`self.rules`: in-process or over REST); (its answer, None), or
        (None, why) with a `roll_not_posted` alert when it was refused or not reached."""
        try:
            if self.upload_evidence and stored.evidence_jpeg is not None:
                self.rules.upload_evidence(stored.evidence_jpeg)
            submission = checked_submission(
                {
                    "roll_id": roll_id,
                    "source": "reader",
                    "verdict": verdict,
                    "faces": list(faces),
                    "reasons": reasons[:MAX_REASONS],
                    "evidence_sha256": stored.evidence_sha256,
                }
            )
            return self.rules.post_roll(self.config.table_id, submission), None
        except LiveError as exc:
            self._alert(
                "roll_not_posted",
                f"roll {roll_id} was not taken by the rules engine: {exc}",
                {"roll_id": roll_id, "verdict": verdict, "faces": list(faces), "read_id": stored.read_id},
            )
            return None, str(exc)

    def _follow(self, answer: dict[str, Any] | None) -> None:
        """Track the round from the engine's answer: is the Extra Roll (and the dealer's move) due?"""
        if answer is None:
            return
        first = (answer.get("round") or {}).get("first_roll") or {}
        winner, count = first.get("winner"), first.get("match_count")
        if (
            answer.get("phase") == "awaiting_extra_roll"
            and isinstance(winner, int)
            and isinstance(count, int)
        ):
            if self._pending is None or (self._pending.winner, self._pending.match_count) != (winner, count):
                self._pending = _Pending(winner=winner, match_count=count)
        else:
            self._pending = None
