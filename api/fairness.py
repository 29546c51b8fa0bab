"""Dice fairness monitoring (issue 49): the watch over each table's dice set, its alerts and its report.

The statistics are `rules.fairness` (pure); this module keeps their state in the database and raises the
`dice_bias_suspected` alert.

- `record_roll` is the single call the roll path makes for every valid roll it applies: it feeds the
  sequential tests (one CUSUM per face, per die when the set is watched by position, and per outcome) of
  the dice set in play, and raises an alert, with its evidence, when one of them crosses its threshold.
- A table with no dice set registered is watched too: its rolls go to a set named `unregistered`, opened
  at the first of them; registering a set (`register_set`) closes the one in play, so swapping the dice
  resets the watch.
- After an alarm the chart restarts at 0 (the renewal the false-alarm rate is computed for); while the
  alert is open (not acknowledged), the same chart alarming again adds no second alert, only a count.
- `report` computes the tests on demand over any window from the stored rolls: observed against expected
  per face, per die and per outcome with exact intervals, and chi-square goodness of fit (scipy.stats).
"""

from __future__ import annotations

import logging
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
from sqlalchemy import select
from sqlalchemy.orm import Session

from api.alerts import raise_alert
from api.db.models import Alert, DiceSet, GameTable, Roll
from api.db.session import Database
from api.metrics import Metrics
from rules import fairness as fx
from rules.hrd.dice import FACES

log = logging.getLogger(__name__)

ALERT_KIND = "dice_bias_suspected"
UNREGISTERED = "unregistered"
GAME_DICE = {"hrd10": 10, "hrd6": 6}
# Links to at most this many rolls of the window go into an alert (the newest); the window query has all.
MAX_ROLL_LINKS = 50


def warm_up(database: Database) -> None:
    """Design the charts of every table's dice set in play (1.5-3.5 s of sparse solves each, once per
    process), so that no roll waits for it: the service runs this in a background thread at start."""
    wanted = set()
    try:
        with database.read_session() as session:
            for table_id, game in session.execute(select(GameTable.id, GameTable.game)).all():
                if game in GAME_DICE:
                    in_play = current_set(session, table_id)
                    wanted.add((GAME_DICE[game], in_play is not None and in_play.per_position))
    except Exception:  # the database went away (the service stopping): the first roll designs them
        log.warning(
            "fairness: the charts were not designed ahead; the first roll of a table will", exc_info=True
        )
        return
    for dice, per_position in sorted(wanted):
        fx.watch_design(dice=dice, per_position=per_position)


def now_utc() -> datetime:
    """Timezone-aware now."""
    return datetime.now(UTC)


def _aware(at: datetime) -> datetime:
    """SQLite hands datetimes back naive: they were written in UTC."""
    return at if at.tzinfo is not None else at.replace(tzinfo=UTC)


def dice_of(game: str) -> int:
    """Dice per first roll of a game."""
    return GAME_DICE[game]


def design_of(dice_set: DiceSet, *, dice: int) -> fx.WatchDesign:
    """The charts watching a dice set."""
    return fx.watch_design(dice=dice, per_position=dice_set.per_position)


def fresh_state(design: fx.WatchDesign) -> dict[str, Any]:
    """The watch of a set nobody has rolled yet."""
    n = len(design.charts)
    return {
        "rolls": 0,
        "first_rolls": 0,
        "cusum": [0] * n,
        "window": [None] * n,  # per chart: where it last left 0 (roll seq, id, time) and its hits/trials
        "alarms": [0] * n,
        "open_alert": [None] * n,
    }


def current_set(session: Session, table_id: str, *, lock: bool = False) -> DiceSet | None:
    """The dice set in play at a table (the newest not taken out of play)."""
    query = select(DiceSet).where(DiceSet.table_id == table_id, DiceSet.out_of_play_at.is_(None))
    if lock:
        query = query.with_for_update()
    return session.scalars(query.order_by(DiceSet.id.desc())).first()


def register_set(
    session: Session,
    *,
    table: GameTable,
    name: str,
    per_position: bool,
    actor: str,
    in_play_at: datetime | None = None,
    out_of_play_at: datetime | None = None,
) -> DiceSet:
    """Put a dice set in play: the set in play goes out of play when this one comes in (a fresh watch)."""
    start = in_play_at or now_utc()
    previous = current_set(session, table.id, lock=True)
    if previous is not None:
        previous.out_of_play_at = max(start, _aware(previous.in_play_at))
    design = fx.watch_design(dice=dice_of(table.game), per_position=per_position)
    row = DiceSet(
        table_id=table.id,
        name=name,
        per_position=per_position,
        in_play_at=start,
        out_of_play_at=out_of_play_at,
        state=fresh_state(design),
        registered_by=actor,
    )
    session.add(row)
    session.flush()
    return row


def record_roll(
    session: Session, *, roll: Roll, actor: str, webhook_urls: list[str], metrics: Metrics
) -> list[Alert]:
    """Feed a valid, applied roll to the watch of the table's dice set; the alerts it raised."""
    table = session.get(GameTable, roll.table_id)
    if table is None or table.game not in GAME_DICE or not roll.faces:
        return []
    dice = dice_of(table.game)
    dice_set = current_set(session, table.id, lock=True)
    if dice_set is None:
        dice_set = register_set(session, table=table, name=UNREGISTERED, per_position=False, actor=actor)
    design = design_of(dice_set, dice=dice)
    first = len(roll.faces) == dice
    faces = np.asarray(roll.faces, dtype=np.int64)
    steps = fx.increments(design, faces, first_roll=first)
    state = dict(dice_set.state) if dice_set.state else fresh_state(design)
    before = np.asarray(state["cusum"], dtype=np.int64)
    after, alarmed, crossed = fx.advance_detail(before, steps, fx.thresholds(design))
    seq = int(state["rolls"]) + 1
    at = _aware(roll.created_at or now_utc()).isoformat()
    windows: list[dict[str, Any] | None] = list(state["window"])
    hits = (steps > 0).sum(axis=-1)
    trials = (steps != 0).sum(axis=-1)
    raised: list[Alert] = []
    alarms = list(state["alarms"])
    open_alert = list(state["open_alert"])
    for i, chart in enumerate(design.charts):
        if trials[i] == 0:
            continue
        window = windows[i]
        if window is None:
            window = {"from_seq": seq, "from_roll_id": roll.id, "from_at": at, "hits": 0, "trials": 0}
        window = {
            **window,
            "hits": window["hits"] + int(hits[i]),
            "trials": window["trials"] + int(trials[i]),
        }
        if alarmed[i]:
            alarms[i] += 1
            still_open = open_alert[i] is not None and _is_open(session, open_alert[i])
            if not still_open:
                alert = _raise(
                    session,
                    dice_set=dice_set,
                    chart=chart,
                    window={**window, "to_seq": seq, "to_roll_id": roll.id, "to_at": at},
                    value_llr=int(crossed[i]) * chart.unit_llr,
                    actor=actor,
                    webhook_urls=webhook_urls,
                    metrics=metrics,
                )
                open_alert[i] = alert.id
                raised.append(alert)
            window = None
        elif after[i] == 0:
            window = None
        windows[i] = window
    dice_set.state = {
        "rolls": seq,
        "first_rolls": int(state["first_rolls"]) + int(first),
        "cusum": [int(x) for x in after],
        "window": windows,
        "alarms": alarms,
        "open_alert": open_alert,
    }
    return raised


def _is_open(session: Session, alert_id: int) -> bool:
    row = session.get(Alert, alert_id)
    return row is not None and row.acknowledged_at is None


def _raise(
    session: Session,
    *,
    dice_set: DiceSet,
    chart: fx.Chart,
    window: dict[str, Any],
    value_llr: float,
    actor: str,
    webhook_urls: list[str],
    metrics: Metrics,
) -> Alert:
    """The `dice_bias_suspected` alert of one chart, with its evidence."""
    ids = session.scalars(
        select(Roll.id)
        .where(
            Roll.table_id == dice_set.table_id,
            Roll.verdict == "valid",
            Roll.applied.is_(True),
            Roll.created_at >= datetime.fromisoformat(window["from_at"]),
        )
        .order_by(Roll.created_at.desc())
        .limit(MAX_ROLL_LINKS)
    ).all()
    what = chart.name
    observed = window["hits"] / window["trials"] if window["trials"] else 0.0
    message = (
        f"dice set {dice_set.name!r}: {what} came up {observed:.1%} over the last {window['trials']} "
        f"observations against {chart.p0:.1%} expected (CUSUM {value_llr:.2f} >= {chart.threshold_llr:.2f})"
    )
    data = {
        "dice_set_id": dice_set.id,
        "dice_set": dice_set.name,
        "chart": what,
        "family": chart.family,
        "position": None if chart.position is None else chart.position + 1,
        "faces": list(chart.faces),
        "counts": list(chart.counts),
        "statistic": {
            "test": "bernoulli_cusum",
            "value_llr": value_llr,
            "threshold_llr": chart.threshold_llr,
            "p0": chart.p0,
            "p1": chart.p1,
        },
        "window": window,
        "observed_p": observed,
        "expected_p": chart.p0,
        "roll_links": [f"/v1/rolls/{rid}" for rid in ids],
        "report_link": f"/v1/tables/{dice_set.table_id}/fairness?dice_set_id={dice_set.id}"
        f"&since={window['from_at']}",
    }
    return raise_alert(
        session,
        kind=ALERT_KIND,
        message=message,
        actor=actor,
        table_id=dice_set.table_id,
        round_id=None,
        data=data,
        webhook_urls=webhook_urls,
        metrics=metrics,
    )


def bias_alerts(
    session: Session, *, table_id: str, since: datetime | None = None, until: datetime | None = None
) -> list[dict[str, Any]]:
    """The table's `dice_bias_suspected` alerts a report must show whatever its charts say now (a chart
    restarts at 0 after its alarm): every one still open, and every one raised in the window; open first,
    then newest first."""
    rows = session.scalars(
        select(Alert)
        .where(Alert.kind == ALERT_KIND, Alert.table_id == table_id)
        .order_by(Alert.acknowledged_at.is_not(None), Alert.id.desc())
    ).all()
    out = []
    for row in rows:
        at = _aware(row.created_at)
        in_window = (since is None or at >= since) and (until is None or at < until)
        if row.acknowledged_at is not None and not in_window:
            continue
        data = row.data or {}
        out.append(
            {
                "id": row.id,
                "created_at": at.isoformat(),
                "open": row.acknowledged_at is None,
                "in_window": in_window,
                "chart": data.get("chart"),
                "dice_set": data.get("dice_set"),
                "message": row.message,
            }
        )
    return out


# ------------------------------------------------------------------------------------------------ report
@dataclass(frozen=True)
class Report:
    """The fairness tests of one table's dice over a window (the JSON of `GET .../fairness`)."""

    table_id: str
    game: str
    dice_set: dict[str, Any] | None
    since: str | None
    until: str | None
    rolls: int
    first_rolls: int
    faces: list[dict[str, Any]]
    positions: list[list[dict[str, Any]]]
    pip_street: list[dict[str, Any]]
    like_kind: list[dict[str, Any]]
    millionaire_row: dict[str, Any]
    chi_square: list[dict[str, Any]]
    sequential: list[dict[str, Any]]
    design: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON-able form."""
        return asdict(self)


def _prop(p: fx.Proportion) -> dict[str, Any]:
    return {
        "label": p.label,
        "hits": p.hits,
        "trials": p.trials,
        "observed_p": p.observed_p,
        "expected_p": p.expected_p,
        "low": p.low,
        "high": p.high,
        "p_value": p.p_value,
    }


def report(
    session: Session,
    *,
    table: GameTable,
    dice_set: DiceSet | None,
    since: datetime | None = None,
    until: datetime | None = None,
) -> Report:
    """The tests over the valid rolls of `dice_set` (the set in play if None; all the table's rolls if the
    table never had one) between `since` and `until`."""
    dice = dice_of(table.game)
    start = since
    end = until
    if dice_set is not None:
        start = max(start, _aware(dice_set.in_play_at)) if start else _aware(dice_set.in_play_at)
        if dice_set.out_of_play_at is not None:
            out = _aware(dice_set.out_of_play_at)
            end = min(end, out) if end else out
    query = select(Roll.faces).where(
        Roll.table_id == table.id, Roll.verdict == "valid", Roll.applied.is_(True)
    )
    if start is not None:
        query = query.where(Roll.created_at >= start)
    if end is not None:
        query = query.where(Roll.created_at < end)
    all_faces = [list(f) for f in session.scalars(query.order_by(Roll.created_at))]
    firsts = np.asarray([f for f in all_faces if len(f) == dice], dtype=np.int64).reshape(-1, dice)
    flat = np.asarray([x for f in all_faces for x in f], dtype=np.int64)
    face_counts = [int((flat == face).sum()) for face in FACES]
    n_dice = int(flat.size)
    faces = [
        _prop(fx.proportion(str(face), hits=face_counts[face - 1], trials=n_dice, expected_p=1 / 6))
        for face in FACES
    ]
    tests = [
        fx.chi_square(
            "faces, over the set",
            observed=face_counts,
            expected_p=[1 / 6] * 6,
            labels=[str(f) for f in FACES],
        )
    ]
    per_position = dice_set is not None and dice_set.per_position
    positions: list[list[dict[str, Any]]] = []
    n_first = int(firsts.shape[0])
    if per_position:
        positions, by_die = _per_position(firsts, dice=dice)
        tests += by_die
    winner, match = fx.classify_rolls(firsts)
    cats = fx.outcome_categories(dice)
    pip = [c for c in cats if c.kind == "pip_street"]
    kind = [c for c in cats if c.kind == "like_kind"]
    pip_counts = [int((winner == c.faces[0]).sum()) for c in pip]
    kind_counts = [int(np.isin(match, c.counts).sum()) for c in kind]
    pip_street = [
        _prop(fx.proportion(c.label, hits=k, trials=n_first, expected_p=c.p0))
        for c, k in zip(pip, pip_counts, strict=True)
    ]
    like_kind = [
        _prop(fx.proportion(c.label, hits=k, trials=n_first, expected_p=c.p0))
        for c, k in zip(kind, kind_counts, strict=True)
    ]
    if n_first:
        tests.append(
            fx.chi_square(
                "Pip Street winner",
                observed=pip_counts,
                expected_p=[c.p0 for c in pip],
                labels=[c.label for c in pip],
            )
        )
        tests.append(
            fx.chi_square(
                "Like Kind count",
                observed=kind_counts,
                expected_p=[c.p0 for c in kind],
                labels=[c.label for c in kind],
            )
        )
    mr_p = fx.millionaire_row_p(dice)
    mr_hits = int(np.isin(match, fx.MILLIONAIRE_ROW_COUNTS).sum())
    millionaire = (
        _prop(fx.proportion("9 or 10 of a kind", hits=mr_hits, trials=n_first, expected_p=mr_p))
        if mr_p > 0
        else {"label": "none with six dice", "hits": 0, "trials": n_first, "expected_p": 0.0}
    )
    design = fx.watch_design(dice=dice, per_position=per_position)
    sequential = _sequential(dice_set, design)
    return Report(
        table_id=table.id,
        game=table.game,
        dice_set=None if dice_set is None else set_document(dice_set),
        since=start.isoformat() if start else None,
        until=end.isoformat() if end else None,
        rolls=len(all_faces),
        first_rolls=n_first,
        faces=faces,
        positions=positions,
        pip_street=pip_street,
        like_kind=like_kind,
        millionaire_row=millionaire,
        chi_square=[asdict(t) for t in tests],
        sequential=sequential,
        design={
            "face_bias": design.face_bias,
            "outcome_ratio": design.outcome_ratio,
            "rolls_per_month": design.rolls_per_month,
            "false_alarms_per_month": design.false_alarms_per_month,
        },
    )


def _per_position(firsts: np.ndarray, *, dice: int) -> tuple[list[list[dict[str, Any]]], list[fx.ChiSquare]]:
    """Each die position's faces over the first rolls (a set marked per position), and a chi-square each."""
    n_first = int(firsts.shape[0])
    positions: list[list[dict[str, Any]]] = []
    tests = []
    for die in range(dice):
        counts = [int((firsts[:, die] == face).sum()) for face in FACES]
        positions.append(
            [
                _prop(fx.proportion(str(f), hits=counts[f - 1], trials=n_first, expected_p=1 / 6))
                for f in FACES
            ]
        )
        tests.append(
            fx.chi_square(
                f"die {die + 1}", observed=counts, expected_p=[1 / 6] * 6, labels=[str(f) for f in FACES]
            )
        )
    return positions, tests


def _sequential(dice_set: DiceSet | None, design: fx.WatchDesign) -> list[dict[str, Any]]:
    """Where each sequential chart of the set in play stands (statistic and threshold as log-likelihood
    ratios, alarms, an open alert); empty with no set or no state yet."""
    sequential: list[dict[str, Any]] = []
    if dice_set is not None and dice_set.state:
        state = dice_set.state
        for i, chart in enumerate(design.charts):
            sequential.append(
                {
                    "chart": chart.name,
                    "family": chart.family,
                    "statistic_llr": state["cusum"][i] * chart.unit_llr,
                    "threshold_llr": chart.threshold_llr,
                    "alarms": state["alarms"][i],
                    "open_alert": state["open_alert"][i],
                    "window": state["window"][i],
                }
            )
    return sequential


def set_document(row: DiceSet) -> dict[str, Any]:
    """A dice set as the API shows it."""
    state = row.state or {}
    return {
        "id": row.id,
        "table_id": row.table_id,
        "name": row.name,
        "per_position": row.per_position,
        "in_play_at": _aware(row.in_play_at).isoformat(),
        "out_of_play_at": None if row.out_of_play_at is None else _aware(row.out_of_play_at).isoformat(),
        "rolls": int(state.get("rolls", 0)),
        "registered_by": row.registered_by,
    }
