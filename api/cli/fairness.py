"""`throwbox fairness --table ID [--since ...]`: the dice fairness tests of a table (issue 49), printed, and
a PNG of observed against expected per face and per outcome with exact 95 % intervals.

Reads the service's database directly (as `throwbox audit verify` does). matplotlib is imported inside
the command: it is an optional extra of the service.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import typer


def _when(text: str | None, name: str) -> datetime | None:
    if text is None:
        return None
    try:
        at = datetime.fromisoformat(text)
    except ValueError as exc:
        raise typer.BadParameter(f"not an ISO-8601 time: {text!r}", param_hint=name) from exc
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def write_png(document: dict[str, Any], path: Path) -> None:
    """Observed against expected (with the exact 95 % intervals) per face, per outcome, one panel each."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("Faces, over the set (every die read)", document["faces"]),
        ("Pip Street winner (first rolls)", document["pip_street"]),
        ("Like Kind count (first rolls)", document["like_kind"]),
    ]
    fig, axes = plt.subplots(1, len(panels), figsize=(15, 4.8), dpi=100)
    for ax, (title, rows) in zip(axes, panels, strict=True):
        x = list(range(len(rows)))
        observed = [r["observed_p"] for r in rows]
        low = [r["observed_p"] - r["low"] for r in rows]
        high = [r["high"] - r["observed_p"] for r in rows]
        ax.bar(x, observed, color="#4c8cbf", label="observed")
        ax.errorbar(
            x, observed, yerr=[low, high], fmt="none", ecolor="#222222", capsize=4, label="95 % interval"
        )
        ax.scatter(
            x, [r["expected_p"] for r in rows], marker="_", s=600, color="#d0402b", zorder=3, label="expected"
        )
        ax.set_xticks(x, [r["label"] for r in rows])
        ax.set_title(f"{title}\nn = {rows[0]['trials'] if rows else 0}", fontsize=10)
        ax.set_ylabel("probability")
        ax.set_ylim(bottom=0)
    axes[0].legend(loc="lower right", fontsize=8)
    name = document["dice_set"]["name"] if document["dice_set"] else "no dice set"
    fig.suptitle(
        f"table {document['table_id']} ({document['game']}), dice set {name}: {document['rolls']} valid rolls"
    )
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)


def _echo_alarms(alerts: list[dict[str, Any]], sequential: list[dict[str, Any]]) -> None:
    """First, what alarmed: the open `dice_bias_suspected` alerts, the alerts raised in the window, and the
    dice set's charts that alarmed. A chart restarts at 0 after its alarm, so its statistic now says
    nothing of it: without this the alarm and its open alert would vanish from the output."""
    still_open = [a for a in alerts if a["open"]]
    typer.echo(f"open dice_bias_suspected alerts: {len(still_open) or 'none'}")
    for a in still_open:
        typer.echo(f"  alert {a['id']}  {a['created_at']}  {a['chart']}: {a['message']}")
    closed = [a for a in alerts if not a["open"] and a["in_window"]]
    if closed:
        typer.echo(f"acknowledged dice_bias_suspected alerts raised in the window: {len(closed)}")
        for a in closed:
            typer.echo(f"  alert {a['id']}  {a['created_at']}  {a['chart']}: {a['message']}")
    alarmed = [s for s in sequential if s["alarms"]]
    typer.echo(f"charts that alarmed with this dice set: {len(alarmed) or 'none'}")
    open_ids = {a["id"] for a in still_open}
    for s in sorted(alarmed, key=lambda s: (-s["alarms"], s["chart"])):
        held = f", open alert {s['open_alert']}" if s["open_alert"] in open_ids else ""
        typer.echo(f"  {s['chart']:<20} alarms {s['alarms']}{held}")


def _charts_to_show(sequential: list[dict[str, Any]], *, nearest: int) -> list[dict[str, Any]]:
    """Every chart that alarmed, then the `nearest` others nearest their threshold."""
    alarmed = sorted((s for s in sequential if s["alarms"]), key=lambda s: (-s["alarms"], s["chart"]))
    others = sorted(
        (s for s in sequential if not s["alarms"]), key=lambda s: -s["statistic_llr"] / s["threshold_llr"]
    )
    return alarmed + others[:nearest]


def register(app: typer.Typer) -> None:
    """Attach the `fairness` command."""

    @app.command()
    def fairness(
        table: str = typer.Option(..., "--table", help="The table id."),
        since: str | None = typer.Option(None, "--since", help="ISO-8601 time: count rolls from then."),
        until: str | None = typer.Option(None, "--until", help="ISO-8601 time: count rolls before then."),
        dice_set: int | None = typer.Option(
            None, "--dice-set", help="A dice set id; default the one in play."
        ),
        png: Path | None = typer.Option(
            None, "--png", help="Where the chart goes; default fairness-TABLE.png."
        ),
    ) -> None:
        """The dice fairness tests of a table: chi-square over the window, the sequential watch, a PNG."""
        from api import fairness as fair
        from api.cli.database import open_database
        from api.db.models import DiceSet, GameTable
        from api.settings import Settings

        start, end = _when(since, "--since"), _when(until, "--until")
        database = open_database(Settings())
        try:
            with database.read_session() as session:
                row = session.get(GameTable, table)
                if row is None or row.game not in fair.GAME_DICE:
                    typer.echo(f"error: no dice table {table!r}", err=True)
                    raise typer.Exit(2)
                chosen = (
                    session.get(DiceSet, dice_set)
                    if dice_set is not None
                    else fair.current_set(session, table)
                )
                if dice_set is not None and (chosen is None or chosen.table_id != table):
                    typer.echo(f"error: no dice set {dice_set} at table {table!r}", err=True)
                    raise typer.Exit(2)
                document = fair.report(session, table=row, dice_set=chosen, since=start, until=end).as_dict()
                alerts = fair.bias_alerts(session, table_id=table, since=start, until=end)
        finally:
            database.dispose()
        name = document["dice_set"]["name"] if document["dice_set"] else "(none registered)"
        typer.echo(
            f"table {table} ({document['game']}), dice set {name}, window {document['since'] or 'start'} .. "
            f"{document['until'] or 'now'}: {document['rolls']} valid rolls, "
            f"{document['first_rolls']} first rolls"
        )
        _echo_alarms(alerts, document["sequential"])
        typer.echo("chi-square goodness of fit (scipy.stats.chisquare):")
        for t in document["chi_square"]:
            typer.echo(
                f"  {t['what']:<24} chi2 = {t['statistic']:9.2f}  dof {t['dof']}  "
                f"p = {t['p_value']:.4g}  n = {t['trials']}"
            )
        typer.echo("observed against expected (exact 95 % interval):")
        for title, rows in (
            ("face", document["faces"]),
            ("pip street", document["pip_street"]),
            ("like kind", document["like_kind"]),
        ):
            for r in rows:
                typer.echo(
                    f"  {title:<10} {r['label']:>3}  {r['observed_p']:.4f} [{r['low']:.4f}, {r['high']:.4f}]"
                    f"  expected {r['expected_p']:.4f}  p = {r['p_value']:.3g}"
                )
        mr = document["millionaire_row"]
        typer.echo(
            f"  millionaire row: {mr['hits']} of {mr['trials']} first rolls, "
            f"expected p = {mr['expected_p']:.3g}"
        )
        if document["sequential"]:
            typer.echo(
                "sequential watch (Bernoulli CUSUM, log-likelihood ratio against its threshold; the charts "
                "that alarmed, then those nearest their threshold):"
            )
            for s in _charts_to_show(document["sequential"], nearest=10):
                typer.echo(
                    f"  {s['chart']:<20} {s['statistic_llr']:6.2f} / {s['threshold_llr']:.2f}  "
                    f"alarms {s['alarms']}"
                )
        d = document["design"]
        typer.echo(
            f"design: face bias +{d['face_bias']:.0%} points, outcomes x{d['outcome_ratio']}, "
            f"expected false alarms "
            f"{d['false_alarms_per_month']:.3f} per table per month at {d['rolls_per_month']} rolls a month"
        )
        out = png if png is not None else Path(f"fairness-{table}.png")
        write_png(document, out)
        typer.echo(f"wrote {out}")
