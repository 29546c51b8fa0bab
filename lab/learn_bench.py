"""The table that learns from its people, measured (issue 56, item 4): `throwbox lab learn-bench`.

Rendered scenes of a look the shipped face model never trained on (`throwbox lab synth --style wide`: dice,
felts, light and camera noise beyond its training sets, models/pips_facenet/README.md) are thrown one by
one through the live loop (`api.live.LiveLoop.handle_throw`, the real reader, the real service in this
process on a free port, a fresh SQLite database). A roll the reader leaves to a person (`no_decision`) is
decided at the console (`POST /v1/console/decisions`) by a scripted person answering from the scene's
truth: each die of the read matched to the true die under it gets its true face, a box on no die is struck
out, a die the camera missed is added with its true box and face. Those decisions are the table's
confirmed rolls, and the service refits the table every `learn_every_dice` confirmed dice as it would at a
casino (`api.learning`); the bench waits for a refit to end before the next throw, so the run is the same
every time. A throw is read with the table's stored refit, as the service's live loop reads it
(`api.live_reader.TableReader`).

Per throw it keeps whether a person was needed, and, for a roll the reader decided alone, how many faces it
gave and how many of them were wrong (matched to the truth by box). `summary` gives, at each count of
confirmed rolls asked for, the share of the next `window` throws left to a person and the faces given wrong
per 1,000 in them, each with its 95 % Wilson interval.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

TABLE = "learn"
Z95 = 1.959963984540054


@dataclass(frozen=True)
class Scene:
    """One rendered throw: its image and the truth (each die's box and face)."""

    scene_id: str
    image: Path
    dice: tuple[tuple[tuple[float, float, float, float], int], ...]


@dataclass(frozen=True)
class Played:
    """One throw as the table played it."""

    index: int
    scene_id: str
    confirmed_before: int  # rolls a person had confirmed before this throw
    left_to_person: bool
    verdict: str  # the reader's
    faces_given: int  # by the reader alone (0 when it left the roll to a person)
    faces_wrong: int
    model: str  # the face model it was read with (names the table's refit)
    # Why the reader left it, or called the valid throw invalid or void (its findings' reason codes, e.g.
    # face_uncertain, count_mismatch, die_off_table), and the kinds of its uncertain dice's reasons
    # (`die_reason_kind`); empty for a roll it read valid.
    reasons: tuple[str, ...] = ()
    die_reasons: tuple[str, ...] = ()
    # Boxes the table's no-die filter set aside (vision/table/no_die.py), and how many of them lay on a
    # true die (a die taken out of the count: its box's face is then no one's)
    struck_aside: int = 0
    struck_true_dice: int = 0


# An uncertain die's reason (vision/judge/validity.py::judge_die's words) -> its kind, by how the words begin.
DIE_REASON_KINDS = (
    ("low confidence", "face_unsure"),
    ("classifier reads", "pip_count_veto"),
    ("the turns of the crop", "turns_disagree"),
    ("the pip count (", "pip_count_disagrees"),
    ("the box does not look like a whole die", "not_whole_die"),
    ("another box covers", "boxes_overlap"),
    ("the second face model reads", "peer_disagrees"),
    ("the second face model is unsure", "peer_unsure"),
    ("more than one side resting", "cocked_multi_side"),  # vision/judge/decide.py
    ("the frames of the rest disagree", "rest_frames_disagree"),  # vision/judge/rest_frames.py
)


def die_reason_kind(reason: str) -> str:
    """The kind of an uncertain die's reason ("other" for words not listed in `DIE_REASON_KINDS`)."""
    return next((kind for start, kind in DIE_REASON_KINDS if reason.startswith(start)), "other")


def why_left(doc: dict[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(the reasons of the roll's findings that stop it, sorted and unique: not those that leave it valid,
    like a cocked die read by the rule; its uncertain dice's reason kinds, one per die and reason) of a read
    document."""
    findings = sorted(
        {
            str(f.get("reason"))
            for f in doc.get("findings") or []
            if isinstance(f, dict) and f.get("verdict") != "valid"
        }
    )
    kinds = []
    for die in doc.get("dice") or []:
        if isinstance(die, dict) and die.get("uncertain"):
            kinds += sorted({die_reason_kind(str(r)) for r in die.get("reasons") or []}) or ["other"]
    return tuple(findings), tuple(kinds)


def wilson(k: int, n: int, z: float = Z95) -> tuple[float, float]:
    """The Wilson score interval of k successes in n (0, 1 where n is 0)."""
    if n == 0:
        return 0.0, 1.0
    p = k / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def load_scenes(folder: Path) -> list[Scene]:
    """The scenes of a `throwbox lab synth` folder whose throw is valid (every die on the felt), in order."""
    scenes = []
    for label in sorted((folder / "labels").glob("*.json")):
        doc = json.loads(label.read_text(encoding="utf-8"))
        if doc.get("verdict") != "valid":
            continue
        dice = tuple((tuple(float(v) for v in d["box_xyxy"]), int(d["face"])) for d in doc["dice"])
        scenes.append(Scene(str(doc["scene_id"]), folder / doc["image"], dice))  # type: ignore[arg-type]
    return scenes


def match(read_boxes: Sequence[Sequence[float]], truth_boxes: Sequence[Sequence[float]]) -> list[int | None]:
    """For each read box, the true die whose centre lies inside it and is nearest its centre (each true die
    taken once), or None."""
    taken: set[int] = set()
    out: list[int | None] = []
    for box in read_boxes:
        cx, cy = (box[0] + box[2]) / 2, (box[1] + box[3]) / 2
        best, best_d = None, math.inf
        for j, t in enumerate(truth_boxes):
            tx, ty = (t[0] + t[2]) / 2, (t[1] + t[3]) / 2
            inside = box[0] <= tx <= box[2] and box[1] <= ty <= box[3]
            d = math.hypot(tx - cx, ty - cy)
            if inside and j not in taken and d < best_d:
                best, best_d = j, d
        if best is not None:
            taken.add(best)
        out.append(best)
    return out


def decision(waiting: dict[str, Any], scene: Scene) -> dict[str, Any]:
    """The scripted person's decision of a waiting roll: every die from the truth."""
    dice = sorted(waiting["dice"], key=lambda d: d["index"])
    truth = [box for box, _ in scene.dice]
    matched = match([d["box_xyxy"] for d in dice], truth)
    calls = [{"struck": True} if j is None else {"face": scene.dice[j][1]} for j in matched]
    missed = sorted(set(range(len(truth))) - {j for j in matched if j is not None})
    return {
        "table_id": waiting["table_id"],
        "roll_id": waiting["roll_id"],
        "round_id": waiting["round_id"],
        "call": "valid",
        "dice": calls,
        "added": [{"box_xyxy": list(scene.dice[j][0]), "face": scene.dice[j][1]} for j in missed],
    }


def struck_aside(doc: dict[str, Any], scene: Scene) -> tuple[int, int]:
    """(boxes the table's no-die filter set aside in a read document, those of them on a true die)."""
    boxes = [
        a["box_xyxy"]
        for a in doc.get("set_aside") or []
        if isinstance(a, dict) and a.get("reason") == "table_no_die"
    ]
    on_die = match(boxes, [box for box, _ in scene.dice])
    return len(boxes), sum(j is not None for j in on_die)


def wrong_faces(read_dice: Sequence[dict[str, Any]], scene: Scene) -> tuple[int, int]:
    """(faces given, faces wrong) of a roll the reader decided: each read die against the true die under
    it (a die on no true die is wrong; a true die it missed is not a face given)."""
    matched = match([d["box_xyxy"] for d in read_dice], [box for box, _ in scene.dice])
    given = [(d, j) for d, j in zip(read_dice, matched, strict=True) if d.get("face") is not None]
    wrong = sum(1 for d, j in given if j is None or scene.dice[j][1] != d["face"])
    return len(given), wrong


def summary(played: Sequence[Played], *, at_confirmed: Sequence[int], window: int) -> list[dict[str, Any]]:
    """At each count of confirmed rolls: the next `window` throws' share left to a person and faces given
    wrong per 1,000 (95 % Wilson intervals); absent where the run did not reach it."""
    out = []
    for mark in at_confirmed:
        start = next((i for i, p in enumerate(played) if p.confirmed_before >= mark), None)
        if start is None:
            continue
        part = played[start : start + window]
        left = sum(p.left_to_person for p in part)
        given = sum(p.faces_given for p in part)
        wrong = sum(p.faces_wrong for p in part)
        lo, hi = wilson(left, len(part))
        wlo, whi = wilson(wrong, given)
        reasons: dict[str, int] = {}
        die_reasons: dict[str, int] = {}
        called_because: dict[str, int] = {}
        for p in part:
            for r in p.reasons:
                into = reasons if p.left_to_person else called_because
                into[r] = into.get(r, 0) + 1
            for r in p.die_reasons if p.left_to_person else ():
                die_reasons[r] = die_reasons.get(r, 0) + 1
        out.append(
            {
                "confirmed_rolls": mark,
                "throws": len(part),
                "left_to_person": left,
                "left_share": round(left / len(part), 4),
                "left_share_95": [round(lo, 4), round(hi, 4)],
                "faces_given": given,
                "faces_wrong": wrong,
                "wrong_per_1000": round(1000 * wrong / given, 2) if given else None,
                "wrong_per_1000_95": [round(1000 * wlo, 2), round(1000 * whi, 2)],
                "models": sorted({p.model for p in part}),
                # every scene is a valid throw: one the reader called invalid or void is a wrong call (not
                # left to a person, no face given), counted apart
                "called_invalid_or_void": sum(p.verdict in ("invalid", "void") for p in part),
                # boxes the table's no-die filter set aside, and those on a true die
                "struck_aside": sum(p.struck_aside for p in part),
                "struck_true_dice": sum(p.struck_true_dice for p in part),
                # rolls left, by each reason found in them (a roll may have several), and uncertain dice by
                # the kind of their reasons
                "left_because": dict(sorted(reasons.items(), key=lambda kv: -kv[1])),
                "dice_unsure_because": dict(sorted(die_reasons.items(), key=lambda kv: -kv[1])),
                # the valid throws called invalid or void, by each reason of the call
                "called_because": dict(sorted(called_because.items(), key=lambda kv: -kv[1])),
            }
        )
    return out


class BenchService:
    """The service (its app under uvicorn, in this thread's process, on a free port), keys for every role."""

    def __init__(self, data_dir: Path) -> None:
        import uvicorn

        from api.auth import Role, create_key
        from api.main import create_app
        from api.settings import Settings

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        self.base = f"http://127.0.0.1:{port}"
        self.settings = Settings(data_dir=data_dir, self_url=self.base)
        self.app = create_app(self.settings)
        self.server = uvicorn.Server(
            uvicorn.Config(self.app, host="127.0.0.1", port=port, log_level="warning")
        )
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        while not self.server.started:
            if not self.thread.is_alive():
                raise RuntimeError("the service did not start")
            time.sleep(0.02)
        with self.app.state.database.session() as session:
            self.keys = {r.value: create_key(session, role=r, name=f"bench-{r.value}").secret for r in Role}

    def call(self, method: str, path: str, who: str, body: dict[str, Any] | None = None) -> Any:
        import httpx

        response = httpx.request(
            method,
            self.base + path,
            headers={"Authorization": f"Bearer {self.keys[who]}"},
            json=body,
            timeout=120.0,
        )
        if response.status_code >= 400:
            raise RuntimeError(f"{method} {path}: {response.status_code} {response.text[:300]}")
        return None if response.status_code == 204 else response.json()

    def close(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)


def _ready_round(svc: BenchService, scene: Scene) -> None:
    """A round waiting for dice: the last one's Extra Roll keyed by the dealer from the truth if it waits
    for one (one die), then a round opened and closed to bets."""
    current = svc.call("GET", f"/v1/tables/{TABLE}/rounds/current", "dealer")
    if current is not None and current["phase"] == "awaiting_extra_roll":
        body = {"roll_id": f"x-{scene.scene_id}", "source": "dealer", "verdict": "valid"}
        svc.call("POST", f"/v1/tables/{TABLE}/rolls", "dealer", {**body, "faces": [scene.dice[0][1]]})
        current = svc.call("GET", f"/v1/tables/{TABLE}/rounds/current", "dealer")
    if current is None:
        current = svc.call("POST", f"/v1/tables/{TABLE}/rounds", "dealer")
    if current["phase"] == "betting":
        svc.call("POST", f"/v1/rounds/{current['id']}/no-more-bets", "dealer")


def _wait_refit(svc: BenchService, timeout_s: float = 600.0) -> dict[str, Any]:
    """The table's learning state once no refit of it runs: its thread (`api.learning.after_confirmation`
    names it) joined first, since a refit gathers its dice before its job exists; then its job ended."""
    deadline = time.monotonic() + timeout_s
    for thread in threading.enumerate():
        if thread.name == f"learn-{TABLE}":
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
    while True:
        state: dict[str, Any] = svc.call("GET", f"/v1/tables/{TABLE}/learning", "admin")
        last = state["last_refit"]
        if last is None or last["state"] in ("done", "failed") or time.monotonic() > deadline:
            return state
        time.sleep(0.1)


def play(
    scenes: Sequence[Scene],
    *,
    data_dir: Path,
    every_dice: int,
    max_confirmed: int,
    tail: int = 0,
    log: Callable[[str], None] | None = None,
) -> tuple[list[Played], list[dict[str, Any]]]:
    """Throw the scenes through the live loop until `max_confirmed` rolls were confirmed and `tail` more
    throws (to measure after the last mark); (each throw, each refit's job as it ended)."""
    import cv2

    from api.live import LiveConfig, LiveLoop
    from api.live_reader import TableReader
    from api.live_service import DatabaseRecorder
    from api.metrics import Metrics
    from api.rules_door import RulesClient
    from vision.capture import CapturedFrame
    from vision.reader import Reader
    from vision.settle import AtRest, SettleDetector

    svc = BenchService(data_dir)
    played: list[Played] = []
    refits: list[dict[str, Any]] = []
    try:
        svc.call("POST", "/v1/tables", "admin", {"id": TABLE, "game": "hrd10"})
        svc.call("PUT", f"/v1/tables/{TABLE}/learning", "admin", {"learn_every_dice": every_dice})
        shipped = Reader(threads=1)
        svc.app.state.reader = shipped  # the service's refits fit the same face model the loop reads with
        # the table's reader as the service's live loop has it: through its stored refit, followed
        table_reader = TableReader(shipped, calibration_dir=svc.settings.calibration_dir, table_id=TABLE)
        loop = LiveLoop(
            config=LiveConfig(table_id=TABLE, expected_dice=10),
            items=[],
            detector=SettleDetector(),
            reader=table_reader,
            rules=RulesClient(base_url=svc.base, key=svc.keys["reader"]),
            recorder=DatabaseRecorder(svc.app.state.database, svc.settings, Metrics(), actor="reader:learn"),
        )
        confirmed, last_job, reached = 0, None, None
        for i, scene in enumerate(scenes):
            if confirmed >= max_confirmed:
                reached = i if reached is None else reached
                if i - reached >= tail:
                    break
            _ready_round(svc, scene)
            picture = cv2.imread(str(scene.image), cv2.IMREAD_COLOR)
            captured = CapturedFrame(
                image=np.asarray(picture, np.uint8),
                frame_id=scene.scene_id,
                table_id=TABLE,
                captured_at=datetime.now(UTC),
                seq=i + 1,
                source_id=scene.scene_id,
                monotonic_s=float(i),
            )
            live = loop.handle_throw(
                AtRest(captured, throw_index=i + 1, moving_since_s=0.0, still_since_s=0.5)
            )
            model = str(table_reader.models["pips"])
            aside = struck_aside(_read_doc(svc, live.read_id), scene)
            if live.verdict == "no_decision":
                waiting = svc.call("GET", f"/v1/console/waiting?table_id={TABLE}", "dealer")
                if not waiting or waiting[0]["roll_id"] != live.roll_id:
                    raise RuntimeError(f"{scene.scene_id}: the roll left to a person is not waiting")
                svc.call("POST", "/v1/console/decisions", "dealer", decision(waiting[0], scene))
                confirmed += 1
                why, kinds = why_left(_read_doc(svc, live.read_id))
                played.append(
                    Played(
                        i, scene.scene_id, confirmed - 1, True, live.verdict, 0, 0, model, why, kinds, *aside
                    )
                )
                state = _wait_refit(svc)
                job = state["last_refit"]
                if job is not None and job["job_id"] != last_job:
                    last_job = job["job_id"]
                    refits.append(
                        {
                            "after_confirmed": confirmed,
                            **job,
                            "line": state["line"],
                            "no_die": state.get("no_die"),
                        }
                    )
                    if log is not None:
                        log(f"after {confirmed} confirmed rolls: {state['line']}")
                continue
            read_dice = _read_dice(svc, live.read_id)
            given, wrong = wrong_faces(read_dice, scene) if live.verdict == "valid" else (0, 0)
            # a valid throw called invalid or void is a wrong call: why is kept as for a roll left
            why, kinds = why_left(_read_doc(svc, live.read_id)) if live.verdict != "valid" else ((), ())
            played.append(
                Played(
                    i, scene.scene_id, confirmed, False, live.verdict, given, wrong, model, why, kinds, *aside
                )
            )
        loop.rules.close()
    finally:
        _wait_refit(svc)  # no refit thread left writing to the data folder when it is removed
        svc.close()
    return played, refits


def _read_doc(svc: BenchService, read_id: str | None) -> dict[str, Any]:
    """A stored read's document ({} where there is none)."""
    from api.db.models import Read

    if read_id is None:
        return {}
    with svc.app.state.database.read_session() as session:
        row = session.get(Read, read_id)
        return dict(row.result) if row is not None and isinstance(row.result, dict) else {}


def _read_dice(svc: BenchService, read_id: str | None) -> list[dict[str, Any]]:
    """The dice of a stored read (its document), as the reader gave them."""
    dice = _read_doc(svc, read_id).get("dice")
    return [d for d in dice or [] if isinstance(d, dict) and not d.get("uncertain")]


def document(
    played: Sequence[Played],
    refits: Sequence[dict[str, Any]],
    *,
    at_confirmed: Sequence[int],
    window: int,
    meta: dict[str, Any],
) -> dict[str, Any]:
    """The benchmark's JSON: what was run, the figures at each mark, each refit, each throw."""
    return {
        **meta,
        "throws": len(played),
        "confirmed_rolls": sum(p.left_to_person for p in played),
        "struck_aside": sum(p.struck_aside for p in played),
        "struck_true_dice": sum(p.struck_true_dice for p in played),
        "window": window,
        "at": summary(played, at_confirmed=at_confirmed, window=window),
        "refits": list(refits),
        "played": [asdict(p) for p in played],
    }


WHY_SHOWN = 6  # the reasons drawn in the plot's third panel; the others are one bar, "other reasons"


def _why_bars(ax: Any, marks: Sequence[dict[str, Any]], *, width: float) -> None:
    """At each mark, the share of its window's throws left for each reason (side by side; a roll left for
    two reasons counts in both)."""
    totals: dict[str, int] = {}
    for mark in marks:
        for reason, n in mark.get("left_because", {}).items():
            totals[reason] = totals.get(reason, 0) + n
    shown = sorted(totals, key=lambda r: -totals[r])[:WHY_SHOWN]
    groups = [*shown, "other reasons"] if len(totals) > len(shown) else shown
    if not groups:
        ax.text(0.5, 0.5, "no roll left to a person", ha="center", transform=ax.transAxes)
        return
    bar = width / len(groups)
    for k, reason in enumerate(groups):
        xs, ys = [], []
        for mark in marks:
            why = mark.get("left_because", {})
            n = (
                sum(v for r, v in why.items() if r not in shown)
                if reason == "other reasons"
                else why.get(reason, 0)
            )
            xs.append(mark["confirmed_rolls"] - width / 2 + (k + 0.5) * bar)
            ys.append(100 * n / max(1, mark["throws"]))
        ax.bar(xs, ys, width=bar, label=reason.replace("_", " "))
    ax.set_ylabel("rolls left, by reason, %")
    ax.legend(fontsize=7, ncol=2)


def plot(doc: dict[str, Any], out: Path) -> None:
    """Share of throws left to a person and faces given wrong per 1,000 (rolling over `window` throws)
    against confirmed rolls, with the marks' 95 % intervals."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    played = doc["played"]
    window = int(doc["window"])
    xs, left, wrong = [], [], []
    for k in range(0, max(1, len(played) - window + 1)):
        part = played[k : k + window]
        given = sum(p["faces_given"] for p in part)
        xs.append(part[0]["confirmed_before"])
        left.append(100 * sum(p["left_to_person"] for p in part) / len(part))
        wrong.append(1000 * sum(p["faces_wrong"] for p in part) / given if given else float("nan"))
    fig, (a, b, c) = plt.subplots(3, 1, figsize=(8, 10), sharex=True)
    a.plot(xs, left, color="tab:blue")
    b.plot(xs, wrong, color="tab:red")
    for mark in doc["at"]:
        x = mark["confirmed_rolls"]
        lo, hi = mark["left_share_95"]
        share = 100 * mark["left_share"]
        a.errorbar([x], [share], yerr=[[share - 100 * lo], [100 * hi - share]], fmt="o", color="k", capsize=4)
        if mark["wrong_per_1000"] is not None:
            wlo, whi = mark["wrong_per_1000_95"]
            w = mark["wrong_per_1000"]
            b.errorbar([x], [w], yerr=[[w - wlo], [whi - w]], fmt="o", color="k", capsize=4)
    a.set_ylabel(f"rolls left to a person, % (next {window})")
    b.set_ylabel(f"faces given wrong per 1,000 (next {window})")
    gaps = np.diff(sorted(m["confirmed_rolls"] for m in doc["at"]))
    _why_bars(c, doc["at"], width=0.8 * float(gaps.min()) if gaps.size else 40.0)
    c.set_xlabel("rolls confirmed by a person")
    a.set_title(f"the table learns from its people ({doc['path']} refit)\n{doc['scenes']}", fontsize=10)
    a.grid(alpha=0.3)
    b.grid(alpha=0.3)
    c.grid(alpha=0.3, axis="y")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    plt.close(fig)
