"""Property-based requests over the whole OpenAPI document (schemathesis, every check, as `--checks all`),
through a real uvicorn server, under the key of each role in turn: admin, surveillance, dealer, reader and
worker.

What must hold, whatever is sent and whoever sends it: no 5xx (but the documented 503s); every status is one
the document names for the operation (401 and 403 included) and its body fits the documented schema, every
timestamp with its zone (ST108); data the schema accepts is accepted and data it refuses is refused; a
request without its key gets 401; a 405 names the path's methods in `Allow`.

One reading, said here: a request the schema accepts may still break a rule of the game (a seat outside
1..5, a stake of no cents). The rules engine refuses it with 422 and every problem by clause; that is the
service answering, not the schema lying, so it counts as accepted (`positive_data_acceptance_or_rules`).
So does a rule between two fields that JSON Schema cannot state, named one by one in `CROSS_FIELD_REFUSALS`
(a dice set's out-of-play time must follow its in-play time), and a refusal of what an uploaded file holds,
which no schema states either, named by its words in `CONTENT_REFUSALS` (an enrollment's archive that is not
a zip, or too few labelled dice).

Bounded: `MAX_EXAMPLES` per operation and role; derandomized, so a failure reproduces. The admin's run goes
again on PostgreSQL when THROWBOX_TEST_POSTGRES_URL is set.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import positive_data_acceptance

from api.main import create_app
from tests.api.conftest import Service, running_service

MAX_EXAMPLES = 6
ROLES = ("admin", "surveillance", "dealer", "reader", "worker")
# The only operations where a 503 is a documented answer, not a failure: not ready; the reader's models
# cannot be loaded (no weights in a fresh clone) or it is busy.
MAY_BE_UNAVAILABLE = {("GET", "/readyz"), ("POST", "/v1/reads")}


def _rules_refusal(response: Any) -> bool:
    """A 422 whose body is the rules engine's: problems, each naming its clause."""
    try:
        detail = response.json()["detail"]
    except (ValueError, KeyError, TypeError):
        return False
    problems = detail.get("problems") if isinstance(detail, dict) else detail  # rounds; /v1/settle
    return (
        isinstance(problems, list)
        and bool(problems)
        and all(isinstance(p, dict) and isinstance(p.get("clause"), str) for p in problems)
    )


# (method, path template, the 422's exact detail): refusals of a rule between two fields of a valid body.
CROSS_FIELD_REFUSALS = {
    ("POST", "/v1/tables/{table_id}/dice-sets", "out_of_play_at must follow in_play_at"),
}


# (method, path template): how the 422's detail begins where it refuses what an upload holds.
CONTENT_REFUSALS = {
    ("POST", "/v1/tables/{table_id}/enrollment"): (
        "the archive is not a zip file",
        "the photos source needs a zip archive",
        "the frames source needs a zip archive",
        "the confirmed source takes no archive",
        "too few labelled dice",
    ),
}


def _content_refusal(response: Any, case: Any) -> bool:
    try:
        detail = response.json()["detail"]
    except (ValueError, KeyError, TypeError):
        return False
    starts = CONTENT_REFUSALS.get((case.method.upper(), case.path), ())
    return isinstance(detail, str) and detail.startswith(starts)


def _cross_field_refusal(response: Any, case: Any) -> bool:
    try:
        detail = response.json()["detail"]
    except (ValueError, KeyError, TypeError):
        return False
    return isinstance(detail, str) and (case.method.upper(), case.path, detail) in CROSS_FIELD_REFUSALS


def positive_data_acceptance_or_rules(ctx: Any, response: Any, case: Any) -> bool | None:
    """schemathesis's positive_data_acceptance, where the rules engine's refusal (422, by clause) of a
    well-formed request, or a named cross-field or content refusal, is an answer (see the module doc)."""
    if response.status_code == 422 and (
        _rules_refusal(response) or _cross_field_refusal(response, case) or _content_refusal(response, case)
    ):
        return None
    result: bool | None = positive_data_acceptance(ctx, response, case)
    return result


def _seed(svc: Service) -> None:
    # Some state to hit: a table with an open round, so ids like "T" and 1 lead somewhere.
    svc.ok("POST", "/v1/tables", "admin", 201, json={"id": "T", "game": "hrd10"})
    svc.ok("POST", "/v1/tables/T/rounds", "dealer", 201)


@pytest.fixture(scope="module")
def live(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with running_service("sqlite", tmp_path_factory.mktemp("fuzz") / "data") as svc:
        _seed(svc)
        yield svc


@pytest.fixture(scope="module")
def live_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Service]:
    with running_service("postgres", tmp_path_factory.mktemp("fuzz-pg") / "data") as svc:
        _seed(svc)
        yield svc


# The document of the app as built (building it touches no database); requests go to the live server.
schema = schemathesis.openapi.from_dict(create_app().openapi())
FUZZ = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same examples every run: a failure here reproduces
    database=None,
)


def _key_ids(svc: Service) -> set[int]:
    """The ids of the keys the tests use, which the fuzzer must not revoke from under them."""
    return {key["id"] for key in svc.ok("GET", "/v1/keys", "admin") if key["name"].startswith("test-")}


def exercise(case: Any, svc: Service, role: str) -> None:
    """Send the case with the role's key and run every check on the answer."""
    if case.path == "/v1/events":
        # The stream stays open by design; fuzz it in its finite form.
        case.query = {**(case.query or {}), "follow": "false"}
    if case.method.upper() == "DELETE" and case.path == "/v1/keys/{key_id}":
        key_id = (case.path_parameters or {}).get("key_id")
        if key_id in _key_ids(svc):  # revoke a key made for it instead
            spare = svc.ok("POST", "/v1/keys", "admin", 201, json={"role": "reader", "name": "spare"})
            case.path_parameters = {**case.path_parameters, "key_id": spare["id"]}
    # Where schemathesis sent a credential, it is the role's key; where it left it out on purpose (a
    # request without Authorization), it stays out and the answer must be 401.
    if "Authorization" in (case.headers or {}):
        case.headers = {**case.headers, **svc.headers(role)}
    response = case.call(base_url=svc.base_url)
    excluded = [positive_data_acceptance]
    if response.status_code == 503 and (case.method.upper(), case.path) in MAY_BE_UNAVAILABLE:
        assert response.json()["detail" if case.path != "/readyz" else "checks"]
        excluded.append(not_a_server_error)
    case.validate_response(
        response,
        headers=case.headers,
        excluded_checks=excluded,
        additional_checks=[positive_data_acceptance_or_rules],
    )


@pytest.mark.parametrize("role", ROLES)
@schema.parametrize()
@FUZZ
def test_every_check_under_every_role(case: Any, live: Service, role: str) -> None:
    exercise(case, live, role)


@schema.parametrize()
@FUZZ
def test_every_check_on_postgres(case: Any, live_postgres: Service) -> None:
    exercise(case, live_postgres, "admin")


def test_the_document_names_every_error_with_its_body() -> None:
    # Every operation behind a key says 401 and 403, with the shared error body; none says only
    # FastAPI's HTTPValidationError where the rules engine answers 422 too.
    document = create_app().openapi()
    for path, item in document["paths"].items():
        for method, operation in item.items():
            responses = operation["responses"]
            if path.startswith("/v1/"):
                for code in ("401", "403"):
                    body = responses[code]["content"]["application/json"]["schema"]
                    assert body == {"$ref": "#/components/schemas/ErrorOut"}, (method, path, code)
            for code, answer in responses.items():
                assert answer.get("description"), (method, path, code)
    wagers = document["paths"]["/v1/rounds/{round_id}/wagers"]["post"]["responses"]["422"]
    refs = {s["$ref"] for s in wagers["content"]["application/json"]["schema"]["anyOf"]}
    assert refs == {"#/components/schemas/RulesRefusedOut", "#/components/schemas/ValidationErrorOut"}
    refusal = document["components"]["schemas"]["RulesRefusalOut"]
    assert set(refusal["required"]) == {"message", "problems"}
    revoke = document["paths"]["/v1/keys/{key_id}"]["delete"]["responses"]
    assert {"401", "403", "404", "409"} <= set(revoke)
    reads = document["paths"]["/v1/reads"]["post"]["responses"]
    assert {"400", "401", "403", "413", "415", "422", "503"} <= set(reads)
    # Enums and lengths where the service has them: no empty game, `expect` a number and never null.
    settle = document["paths"]["/v1/settle"]["post"]["requestBody"]["content"]["application/json"]["schema"]
    assert "" not in settle["properties"]["game"]["enum"] and "hrd10" in settle["properties"]["game"]["enum"]
    form = document["components"]["schemas"]["Body_create_read_v1_reads_post"]["properties"]
    assert form["expect"]["type"] == "integer" and "anyOf" not in form["expect"]


def test_405_names_every_method_of_the_path(live: Service) -> None:
    answer = live.call("PUT", "/v1/tables", "admin")
    assert answer.status_code == 405
    assert answer.headers["allow"] == "GET, HEAD, POST"
    assert live.call("DELETE", "/v1/tables/T/rolls", "admin").headers["allow"] == "GET, HEAD, POST"


@pytest.mark.parametrize(
    ("path", "marker"),
    [("/docs", "swagger-ui-bundle.js"), ("/redoc", "redoc.standalone.js")],
)
def test_docs_pages_load_only_local_assets(live: Service, path: str, marker: str) -> None:
    import re

    page = live.client.get(live.base_url + path)
    assert page.status_code == 200 and marker in page.text
    # Every script, style sheet, icon and font the page names is on this service, and it serves it.
    assets = re.findall(r"""(?:src|href|url)\s*[=:(]\s*["']([^"']+)["']""", page.text)
    assert any(marker in url for url in assets), assets
    for url in assets:
        assert url.startswith("/"), f"{path} loads {url} from elsewhere"
        served = live.client.get(live.base_url + url)
        assert served.status_code == 200 and served.content, url
    assert "http://" not in page.text.replace("http://www.w3.org", "") and "https://" not in page.text


def test_docs_assets_come_from_the_installed_package() -> None:
    from api.routes import docs

    names = {p.name for p in Path(docs.ASSETS_DIR).iterdir()}
    assert {"swagger-ui-bundle.js", "swagger-ui.css", "redoc.standalone.js"} <= names
