"""Property-based requests over the whole OpenAPI document (schemathesis, every check, as `--checks all`),
through a real uvicorn server, under the key of each role that may call each route: admin, dealer, reader,
surveillance and worker. Who may call a route is asked of the service itself (`callers`: a role whose key is
refused with "role ... may not do this" may not), so every operation is fuzzed past the role check by every
role that passes it.

What must hold, whatever is sent: no 5xx (but the documented 503s); every status is one the document names
for the operation and its body fits the documented schema, every timestamp with its zone; data the schema
accepts is accepted and data it refuses is refused; a request without its key gets 401; a 405 names the
path's methods in `Allow`. The deliberate exceptions, each with its reason, are `EXCEPTIONS`, here and only
here: the suite (tests/api/test_schemathesis.py, a bounded number of examples) and the longer run
(`python -m lab.api_fuzz`, a JSON report under reports/service/, docs/status.md) both go by it.

    python -m lab.api_fuzz --examples 40 --out reports/service/api-fuzz-2026-12-07.json
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROLES = ("admin", "surveillance", "dealer", "reader", "worker")
ALL = "*"  # an exception that holds on every operation


@dataclass(frozen=True)
class Exemption:
    """A deliberate exception to the checks: an answer that is right though a check would call it wrong."""

    method: str  # "POST", or ALL
    path: str  # the path template, or ALL
    status: int
    detail_starts: tuple[
        str, ...
    ]  # how the body's `detail` begins; () for any body (503s: `detail`/`checks`)
    reason: str
    rules_engine: bool = False  # the body is the rules engine's refusal: problems, each naming its clause


# The one list of deliberate exceptions. A 503 is excused from "not a server error", the others from "data
# the schema accepts is accepted": each is a rule JSON Schema cannot state (docs/service.md, What JSON Schema
# cannot say), so a request the schema accepts may still break it.
EXCEPTIONS: tuple[Exemption, ...] = (
    Exemption("GET", "/readyz", 503, (), "Not ready (a check failing) is an answer, documented as 503."),
    Exemption(
        "POST", "/v1/reads", 503, (), "The reader's models cannot be loaded (no weights) or it is busy."
    ),
    Exemption(
        ALL,
        ALL,
        422,
        (),
        "The rules engine refuses a well-formed request that breaks a rule of the game, by clause: limits "
        "that depend on the table's game or the round's state (a seat, a stake of no cents, ten dice or six, "
        "the phase), and a paytable for another game than the stored table's.",
        rules_engine=True,
    ),
    Exemption(
        "POST",
        "/v1/tables/{table_id}/dice-sets",
        422,
        ("out_of_play_at must follow in_play_at",),
        "Time ordering between two fields of the body.",
    ),
    Exemption(
        "POST",
        "/v1/alerts",
        422,
        ("round ",),
        "`round_id` must be a round of `table_id`: a rule between two fields and the stored rounds.",
    ),
    Exemption(
        "POST",
        "/v1/tables/{table_id}/enrollment",
        415,
        ("the 'archive' part must be a zip archive", "the 'archive' part is declared"),
        "The archive's bytes decide its type (the one upload rule): random bytes are no zip.",
    ),
    Exemption(
        "POST",
        "/v1/tables/{table_id}/enrollment",
        422,
        (
            "the 'archive' part: a corrupt zip",
            "the photos source needs a zip archive",
            "the frames source needs a zip archive",
            "the confirmed source takes no archive",
            "too few labelled dice",
            "the archive",
        ),
        "What an archive holds (files laid out by face, enough dice, a source that takes one): no schema "
        "says.",
    ),
    Exemption(
        "POST",
        "/v1/reads",
        415,
        ("the 'image' part must be", "the 'image' part is declared"),
        "The image's bytes decide its type (the one upload rule): random bytes are no image.",
    ),
    Exemption(
        "POST",
        "/v1/reads",
        422,
        ("the 'image' part: ",),
        "A file with an image's magic number and a corrupt body: no schema says what pixels hold.",
    ),
    Exemption(
        "POST",
        "/v1/evidence",
        415,
        ("the body must be", "the body is declared"),
        "The frame's bytes decide its type (the one upload rule): random bytes are no image.",
    ),
    Exemption(
        "POST",
        "/v1/evidence",
        422,
        ("the body: ",),
        "A frame with an image's magic number and a corrupt header.",
    ),
)


def _detail(response: Any) -> Any:
    try:
        return response.json().get("detail")
    except (ValueError, AttributeError):
        return None


def _is_rules_refusal(detail: Any) -> bool:
    """The rules engine's 422 body: problems, each naming its clause (rounds: a dict; /v1/settle: a list)."""
    problems = detail.get("problems") if isinstance(detail, dict) else detail
    return (
        isinstance(problems, list)
        and bool(problems)
        and all(isinstance(p, dict) and isinstance(p.get("clause"), str) for p in problems)
    )


def excused(*, method: str, path: str, response: Any) -> Exemption | None:
    """The deliberate exception `response` to `method path` falls under, if any."""
    for rule in EXCEPTIONS:
        if (
            rule.status != response.status_code
            or rule.method not in (ALL, method)
            or rule.path not in (ALL, path)
        ):
            continue
        detail = _detail(response)
        if rule.rules_engine:
            if _is_rules_refusal(detail):
                return rule
        elif not rule.detail_starts or (isinstance(detail, str) and detail.startswith(rule.detail_starts)):
            return rule
    return None


def positive_data_acceptance_or_excused(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis's positive_data_acceptance, but for the deliberate exceptions (`EXCEPTIONS`)."""
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    if excused(method=case.method.upper(), path=case.path, response=response) is not None:
        return None
    result: bool | None = positive_data_acceptance(ctx, response, case)
    return result


@dataclass(frozen=True)
class Target:
    """A running service: its URL, one key per role, and the ids of the keys the run must not revoke."""

    base_url: str
    keys: dict[str, str]
    client: Any  # httpx.Client

    def headers(self, role: str) -> dict[str, str]:
        """The Authorization header of the role's key."""
        return {"Authorization": f"Bearer {self.keys[role]}"}


def operations(schema: Any) -> Iterator[Any]:
    """Every operation of the document (an operation schemathesis cannot read is an error, not skipped)."""
    from schemathesis.core.result import Ok

    for result in schema.get_all_operations():
        if not isinstance(result, Ok):
            raise RuntimeError(f"schemathesis cannot read an operation of the document: {result.err()}")
        yield result.ok()


def callers(target: Target, schema: Any) -> dict[tuple[str, str], tuple[str, ...]]:
    """The roles that may call each operation, asked of the service: a request with the role's key is
    refused with "role ... may not do this" (403) before anything else when the role may not."""
    out: dict[tuple[str, str], tuple[str, ...]] = {}
    for operation in operations(schema):
        method, path = operation.method.upper(), operation.path
        if not path.startswith("/v1/"):
            out[(method, path)] = ROLES  # health, metrics: no key needed
            continue
        url = target.base_url + path.replace("{", "").replace("}", "")  # any id: the role check comes first
        if path == "/v1/events":
            url += "?follow=false"  # the stream stays open by design
        allowed = []
        for role in ROLES:
            answer = target.client.request(method, url, headers=target.headers(role))
            detail = _detail(answer)
            if not (answer.status_code == 403 and isinstance(detail, str) and detail.startswith("role ")):
                allowed.append(role)
        out[(method, path)] = tuple(allowed)
    return out


def _test_key_ids(target: Target) -> set[int]:
    answer = target.client.get(target.base_url + "/v1/keys", headers=target.headers("admin"))
    return {key["id"] for key in answer.json() if key["name"].startswith(("test-", "fuzz-"))}


def exercise(case: Any, target: Target, role: str, *, always_key: bool = False) -> Any:
    """Send the case with the role's key and run every check on the answer (raises on a failure).

    Where schemathesis sent a credential, it is the role's key; where it left it out (a request without
    Authorization), it stays out and the answer must be 401, unless `always_key` (the long run's positive
    data: every request past the role check)."""
    from schemathesis.checks import not_a_server_error
    from schemathesis.specs.openapi.checks import positive_data_acceptance

    if case.path == "/v1/events":
        # The stream stays open by design; fuzz it in its finite form.
        case.query = {**(case.query or {}), "follow": "false"}
    if case.method.upper() == "DELETE" and case.path == "/v1/keys/{key_id}":
        key_id = (case.path_parameters or {}).get("key_id")
        if key_id in _test_key_ids(target):  # revoke a key made for it instead
            spare = target.client.post(
                target.base_url + "/v1/keys",
                json={"role": "reader", "name": "spare"},
                headers=target.headers("admin"),
            ).json()
            case.path_parameters = {**case.path_parameters, "key_id": spare["id"]}
    if always_key or "Authorization" in (case.headers or {}):
        case.headers = {**case.headers, **target.headers(role)}
    response = case.call(base_url=target.base_url)
    excluded = [positive_data_acceptance]
    rule = excused(method=case.method.upper(), path=case.path, response=response)
    if response.status_code == 503 and rule is not None:
        body = response.json()
        assert body.get("detail") or body.get("checks"), body  # a 503 says why
        excluded.append(not_a_server_error)
    case.validate_response(
        response,
        headers=case.headers,
        excluded_checks=excluded,
        additional_checks=[positive_data_acceptance_or_excused],
    )
    return response


def seed(call: Callable[..., Any]) -> None:
    """Some state to hit: a table "T" with an open round, so ids like "T" and 1 lead somewhere."""
    call("POST", "/v1/tables", "admin", json={"id": "T", "game": "hrd10"})
    call("POST", "/v1/tables/T/rounds", "dealer")


# ---------------------------------------------------------------------------------------------- the run
@dataclass
class Tally:
    """What the run sent and found, per role."""

    requests: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    operations: dict[str, int] = field(default_factory=lambda: dict.fromkeys(ROLES, 0))
    statuses: dict[str, dict[str, int]] = field(default_factory=lambda: {r: {} for r in ROLES})
    excused: dict[str, int] = field(default_factory=dict)
    no_negative_data: list[str] = field(default_factory=list)
    failures: list[dict[str, Any]] = field(default_factory=list)


@contextmanager
def _service(data_dir: Path) -> Iterator[Target]:
    """The app on a free port with a SQLite database under `data_dir`, a key per role, seeded."""
    import httpx
    import uvicorn

    from api.auth import Role, create_key
    from api.main import create_app
    from api.settings import Settings

    app = create_app(Settings(data_dir=data_dir))
    config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="error", lifespan="on")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30.0
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.05)
    port = server.servers[0].sockets[0].getsockname()[1]
    try:
        with app.state.database.session() as session:
            keys = {
                role.value: create_key(session, role=role, name=f"fuzz-{role.value}").secret for role in Role
            }
        with httpx.Client(timeout=60.0) as client:
            target = Target(base_url=f"http://127.0.0.1:{port}", keys=keys, client=client)
            seed(
                lambda method, path, role, **kw: client.request(
                    method, target.base_url + path, headers=target.headers(role), **kw
                )
            )
            yield target
    finally:
        server.should_exit = True
        thread.join(timeout=15)


def _run_operation(operation: Any, *, target: Target, role: str, examples: int, tally: Tally) -> None:
    """Fuzz one operation under one role, positive and negative data; every failure is tallied."""
    from schemathesis import GenerationMode

    for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
        _run_mode(operation, mode=mode, target=target, role=role, examples=examples, tally=tally)


def _run_mode(operation: Any, *, mode: Any, target: Target, role: str, examples: int, tally: Tally) -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis.errors import Unsatisfiable
    from schemathesis import GenerationMode

    label = f"{operation.method.upper()} {operation.path}"

    @settings(
        max_examples=examples,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    @given(case=operation.as_strategy(generation_mode=mode))
    def one(case: Any) -> None:
        tally.requests[role] += 1
        try:
            response = exercise(case, target, role, always_key=mode is GenerationMode.POSITIVE)
        except Exception as exc:  # a failed check, or no answer: each is tallied, the run goes on
            error = f"{type(exc).__name__}: {exc}"[:2000]
            tally.failures.append({"role": role, "operation": label, "mode": mode.value, "error": error})
            return
        code = f"{mode.value} {response.status_code}"
        tally.statuses[role][code] = tally.statuses[role].get(code, 0) + 1
        rule = excused(method=case.method.upper(), path=case.path, response=response)
        if rule is not None:
            key = f"{rule.method} {rule.path} {rule.status}"
            tally.excused[key] = tally.excused.get(key, 0) + 1

    try:
        one()
    except (
        Unsatisfiable
    ):  # an operation with nothing to send wrong (no parameters, no body): no negative data
        tally.no_negative_data.append(label)


def run(*, examples: int, data_dir: Path) -> dict[str, Any]:
    """Fuzz every operation under every role that may call it; the report as a JSON-ready dict."""
    import schemathesis

    from api.main import create_app

    schema = schemathesis.openapi.from_dict(create_app().openapi())
    tally = Tally()
    started = time.monotonic()
    with _service(data_dir) as target:
        allowed = callers(target, schema)
        for operation in operations(schema):
            for role in allowed[(operation.method.upper(), operation.path)]:
                tally.operations[role] += 1
                _run_operation(operation, target=target, role=role, examples=examples, tally=tally)
    return {
        "command": f"python -m lab.api_fuzz --examples {examples}",
        "made_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "machine": f"{platform.machine()}, {platform.python_version()}",
        "examples_per_operation_and_mode": examples,
        "seconds": round(time.monotonic() - started, 1),
        "callers": {f"{m} {p}": list(roles) for (m, p), roles in sorted(allowed.items())},
        "requests_per_role": tally.requests,
        "operations_per_role": tally.operations,
        "statuses_per_role": tally.statuses,
        "excused": tally.excused,
        "no_negative_data": sorted(set(tally.no_negative_data)),
        "failures": tally.failures,
        "exceptions": [
            {"method": e.method, "path": e.path, "status": e.status, "reason": e.reason} for e in EXCEPTIONS
        ],
    }


def main(argv: list[str] | None = None) -> int:
    """`python -m lab.api_fuzz`: the long run; exit 1 when any check failed."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--examples", type=int, default=40, help="examples per operation, role and mode")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path(f"reports/service/api-fuzz-{datetime.now(UTC).date().isoformat()}.json"),
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="api-fuzz-") as tmp:
        report = run(examples=args.examples, data_dir=Path(tmp) / "data")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    print(
        f"{sum(report['requests_per_role'].values())} requests "
        f"({', '.join(f'{r} {n}' for r, n in report['requests_per_role'].items())}); "
        f"{len(report['failures'])} failures; {report['seconds']} s -> {args.out}"
    )
    return 1 if report["failures"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
