"""The demo table (`throwbox serve --demo`): its camera, the shipped throw clips and whole rendered rounds
played at a human pace, and its croupier, who plays the dealer over REST.

The demo table `demo` (hrd10) plays the synthetic throw clips shipped in `api/demo_clips/` (made by
`throwbox synth`, see docs/live.md, The demo); before each throw that finds no round waiting for dice, the
croupier opens a round, places the demo wagers and calls no more bets. Every `DEMO_ROUND_EVERY` throws a
whole rendered round from `api/demo_rounds/` is played (first roll, the dealer's move, wrong or right in
turn, and the Extra Roll, with an Extra Roll wager), so the dealer's-move check and the Extra Roll are seen
live too.
The service's own loop (`api.live_service`) and a table worker's `<demo clips>` tables both play it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from api.schemas.rolls import RollSubmission

if TYPE_CHECKING:
    from vision.table.geometry import TableGeometry

DEMO_TABLE = "demo"
DEMO_CLIPS = Path(__file__).resolve().parent / "demo_clips"
# Simple demo wagers, placed before each round's first throw (strings: money is decimal).
DEMO_WAGERS: tuple[dict[str, Any], ...] = (
    {"seat": 1, "kind": "pip_street", "face": 6, "amount": "5.00"},
    {"seat": 1, "kind": "like_kind", "count": 3, "amount": "5.00"},
    {"seat": 2, "kind": "pip_street", "face": 1, "amount": "10.00"},
    {"seat": 3, "kind": "pip_street", "face": 2, "amount": "5.00"},
    {"seat": 3, "kind": "like_kind", "count": 4, "amount": "5.00"},
)
DEMO_SOURCE = "<demo clips>"  # the demo table's camera: the shipped clips with the croupier (not `demo`)
DEMO_GAP_S = 3.0  # pause between demo throws (scene time), so a person can follow them on the dashboard
# Whole rounds (`throwbox synth-round`: first roll, the dealer's move, the Extra Roll) played now and then
# between the throw clips, with an Extra Roll wager, so the dashboard shows the move checked and the Extra
# Roll settled; the moves alternate between the wrong box and the right one.
DEMO_ROUNDS = Path(__file__).resolve().parent / "demo_rounds"
DEMO_ROUND_EVERY = 4  # throw clips between two rounds
DEMO_ROUND_MOVES = ("wrong_box", "correct")
DEMO_EXTRA_ROLL_WAGER: dict[str, Any] = {"seat": 1, "kind": "extra_roll", "amount": "5.00"}


def clip_geometry(clip: str) -> tuple[TableGeometry | None, str | None]:
    """The geometry of a demo clip: the camera the generator rendered it with (its `video.json`).

    This is the demo's stand-in for a table calibration (exact, as no real calibration is); its id names
    the clip. A clip without `video.json` is read uncalibrated.
    """
    from calibration.layout import ThrowBoxLayout
    from calibration.table import camera_from_dict
    from vision.table.geometry import TableGeometry

    meta = Path(clip).parent / "video.json"
    rnd = Path(clip).parent / "round.json"
    if meta.is_file():
        doc = json.loads(meta.read_text(encoding="utf-8"))
        camera = camera_from_dict(doc["final"]["camera"])
        return TableGeometry(camera=camera, layout=ThrowBoxLayout()), f"demo-clip:{doc['video_id']}"
    if rnd.is_file():  # a whole round (`throwbox synth-round`): one camera for all its clips
        doc = json.loads(rnd.read_text(encoding="utf-8"))
        camera = camera_from_dict(doc["first_roll"]["final"]["camera"])
        return TableGeometry(camera=camera, layout=ThrowBoxLayout()), f"demo-round:{doc['round_id']}"
    return None, None


def round_playlist(folder: Path, move: str) -> list[Path]:
    """The clips of a rendered round in playing order: the first roll, the dealer's `move`, the Extra Roll."""
    doc = json.loads((folder / "round.json").read_text(encoding="utf-8"))
    return [
        folder / doc["first_roll"]["clip"],
        folder / doc["moves"][move]["clip"],
        folder / doc["extra_roll"]["clip"],
    ]


class PacedDemoGrabber:
    """The demo source (`vision.capture.DemoGrabber` over throw clips) with a pause between clips.

    Adds `gap_s` of scene time before every clip but the first, so a real-time playback waits there. With
    `rounds_dir` (folders of `throwbox synth-round`, each with its round.json) a whole round is played
    after every `round_every` throw clips: its first roll, a dealer's move (the next of `moves`, in turn)
    and the Extra Roll, one continuous recording (one `ClipStarted`, at the first roll), except that after a
    wrong move the Extra Roll (rendered after the right one) starts with a cut.
    """

    live = False

    def __init__(
        self,
        video_dir: Path,
        *,
        gap_s: float = DEMO_GAP_S,
        loops: int | None = None,
        rounds_dir: Path | None = None,
        round_every: int = DEMO_ROUND_EVERY,
        moves: tuple[str, ...] = DEMO_ROUND_MOVES,
    ) -> None:
        from vision.capture import DemoGrabber, SourceSpecError

        if round_every < 1 or not moves:
            raise ValueError("round_every must be >= 1 and moves must name at least one move")
        self.inner = DemoGrabber(video_dir=video_dir, loops=loops)
        self.description = self.inner.description
        self.gap_s = gap_s
        self.rounds: tuple[Path, ...] = ()
        if rounds_dir is not None:
            self.rounds = tuple(sorted(p.parent for p in rounds_dir.glob("*/round.json")))
            if not self.rounds:
                raise SourceSpecError(f"{rounds_dir}: no rounds (*/round.json from `throwbox synth-round`)")
        self.round_every = round_every
        self.moves = moves
        self.rounds_played = 0
        self._offset_s = 0.0
        self._clips = 0
        self._since_round = 0
        self._last_s = 0.0
        self._held: Any = None
        self._round: Any = None  # the frames of the round being played

    def open(self) -> None:
        """Start from the first clip."""
        self.inner.open()
        self._offset_s = self._last_s = 0.0
        self._clips = self._since_round = self.rounds_played = 0
        self._held = self._round = None

    def _play_round(self, start_s: float) -> Any:
        """The frames of the next round (image, scene time, clip start), starting at `start_s`."""
        from vision.capture import VideoCaptureGrabber

        folder = self.rounds[self.rounds_played % len(self.rounds)]
        move = self.moves[self.rounds_played % len(self.moves)]
        self.rounds_played += 1
        t = start_s
        for n, path in enumerate(round_playlist(folder, move)):
            clip = VideoCaptureGrabber(str(path), live=False)
            clip.open()
            cut = n == 0 or (n == 2 and move != "correct")
            try:
                while (grab := clip.read()) is not None:
                    yield grab.image, t, str(path) if cut else None
                    cut = False
                    t += 1.0 / clip.fps
            finally:
                clip.close()

    def read(self) -> Any:
        """The next frame, its time shifted by the pauses (and rounds) so far."""
        from vision.capture import Grab

        if self._round is not None:
            item = next(self._round, None)
            if item is not None:
                self._last_s = item[1]
                return Grab(image=item[0], media_time_s=item[1], clip_start=item[2])
            self._round = None
        if self._held is not None:  # the clip a round was played before
            grab, self._held = self._held, None
            self._clips += 1
            self._since_round += 1
        else:
            grab = self.inner.read()
            if grab is None:
                return None
            if grab.clip_start is not None:
                if self.rounds and self._clips > 0 and self._since_round >= self.round_every:
                    # A round before this clip: played from here, this clip after it.
                    self._since_round = 0
                    self._held = grab
                    self._round = self._play_round(self._last_s + self.gap_s)
                    return self.read()
                self._clips += 1
                self._since_round += 1
                if self._clips > 1:
                    self._offset_s += self.gap_s
        media = None if grab.media_time_s is None else grab.media_time_s + self._offset_s
        if media is not None and media <= self._last_s:  # after a round: move this clip past its end
            self._offset_s += self._last_s + self.gap_s - media
            media = self._last_s + self.gap_s
        if media is not None:
            self._last_s = media
        return Grab(image=grab.image, media_time_s=media, clip_start=grab.clip_start)

    def close(self) -> None:
        """Stop playing."""
        self.inner.close()
        self._round = self._held = None


class RoundEndedError(RuntimeError):
    """The croupier keyed the waiting round's Extra Roll (the round ended), then could not ready the next."""

    round_ended = True


@dataclass
class DemoCroupier:
    """Plays the dealer of the demo table over REST: before a throw, a round waiting for dice."""

    client: httpx.Client
    table_id: str = DEMO_TABLE
    wagers: tuple[dict[str, Any], ...] = DEMO_WAGERS
    rounds_opened: int = 0
    rolls_keyed: int = 0
    last_round: Path | None = None  # the folder of the whole round played last (its round.json)

    def _ok(self, response: httpx.Response) -> dict[str, Any]:
        if response.status_code >= 400:
            raise RuntimeError(
                f"demo croupier: {response.request.method} {response.request.url.path}: "
                f"{response.status_code} {response.text[:300]}"
            )
        data: dict[str, Any] = response.json()
        return data

    def prepare(self, clip: str = "") -> bool:
        """Make sure a round is waiting for dice: open one, bet, no more bets (when none is).

        Before a whole rendered round (a clip with a round.json beside it) seat 1 also buys the Extra Roll.
        A round still waiting for its Extra Roll when a plain throw clip starts did not settle it: the
        reader left it to a person (`no_decision`) or called for a rethrow the demo has no clip for. As a
        dealer does (docs/service.md), the croupier keys it, here from the round's truth (round.json: the
        rethrown faces), so the table moves on instead of reading every later throw as that round's
        Extra Roll. It keys only a round whose first roll the engine holds as the truth's; otherwise it
        raises (the live loop raises `round_not_ready`) and the round waits for a person. True when it
        keyed one (the live loop then forgets the round it was following); if opening the next round fails
        after that, the error it raises says so (`RoundEndedError`).
        """
        round_dir = Path(clip).parent if clip and (Path(clip).parent / "round.json").is_file() else None
        response = self.client.get(f"/v1/tables/{self.table_id}/rounds/current")
        keyed = False
        if response.status_code != 204 and round_dir is None and self.last_round is not None:
            waiting = self._ok(response)
            if waiting["phase"] == "awaiting_extra_roll":
                self._key_extra_roll(waiting, self.last_round)
                keyed = True
                response = self.client.get(f"/v1/tables/{self.table_id}/rounds/current")
        if round_dir is not None:
            self.last_round = round_dir
        try:
            self._ready(response, extra_roll_wager=round_dir is not None)
        except Exception as exc:
            if keyed:
                raise RoundEndedError(f"keyed the last round's Extra Roll, but no next round: {exc}") from exc
            raise
        return keyed

    def _ready(self, response: httpx.Response, *, extra_roll_wager: bool) -> None:
        """Open a round if `response` (the table's current round) says none is open; bet; no more bets."""
        if response.status_code == 204:  # no open round (a 404 would mean no such table: `_ok` raises)
            current = self._ok(self.client.post(f"/v1/tables/{self.table_id}/rounds"))
            self.rounds_opened += 1
        else:
            current = self._ok(response)
        if current["phase"] == "betting":
            if not current["wagers"]:
                wagers = list(self.wagers)
                if extra_roll_wager:
                    wagers.append(DEMO_EXTRA_ROLL_WAGER)
                self._ok(self.client.post(f"/v1/rounds/{current['id']}/wagers", json={"wagers": wagers}))
            self._ok(self.client.post(f"/v1/rounds/{current['id']}/no-more-bets"))

    def _key_extra_roll(self, current: dict[str, Any], folder: Path) -> None:
        """Key the Extra Roll of `current` by hand (source `dealer`): the rethrown faces in `folder`."""
        truth = json.loads((folder / "round.json").read_text(encoding="utf-8"))
        held = ((current.get("summary") or {}).get("first_roll") or {}).get("faces")
        if held is None or sorted(held) != sorted(truth["first_roll"]["faces"]):
            raise RuntimeError(
                f"round {current['id']} waits for its Extra Roll, but its first roll ({held}) is not the "
                f"demo round's ({truth['first_roll']['faces']}): the croupier cannot key it; a person must"
            )
        self.rolls_keyed += 1
        roll = RollSubmission(
            roll_id=f"demo-keyed-{current['id']}-{self.rolls_keyed}",
            source="dealer",
            verdict="valid",
            faces=list(truth["extra_roll"]["thrown_faces"]),
            round_id=current["id"],
        )
        self._ok(self.client.post(f"/v1/tables/{self.table_id}/rolls", json=roll.wire()))
