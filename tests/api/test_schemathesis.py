"""Property-based requests over the whole OpenAPI document (schemathesis, every check, as `--checks all`),
through a real uvicorn server, under the key of each role that may call each route (admin, surveillance,
dealer, reader, worker; who may is asked of the service, lab/api_fuzz.py `callers`). The checks, the
deliberate exceptions (`EXCEPTIONS`, one place, a reason each) and the request handling are lab/api_fuzz.py's,
shared with its longer run (`python -m lab.api_fuzz`, docs/status.md).

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

from api.main import create_app
from lab.api_fuzz import EXCEPTIONS, ROLES, Target, callers, excused, exercise, seed
from tests.api.conftest import Service, running_service

MAX_EXAMPLES = 6


def _seed(svc: Service) -> None:
    seed(lambda method, path, role, **kw: svc.call(method, path, role, **kw))


def _target(svc: Service) -> Target:
    return Target(base_url=svc.base_url, keys=svc.keys, client=svc.client)


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


@pytest.fixture(scope="module")
def allowed(live: Service) -> dict[tuple[str, str], tuple[str, ...]]:
    """The roles that may call each operation, as the service answers."""
    return callers(_target(live), schema)


# The document of the app as built (building it touches no database); requests go to the live server.
schema = schemathesis.openapi.from_dict(create_app().openapi())
FUZZ = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,  # the same examples every run: a failure here reproduces
    database=None,
)


@pytest.mark.parametrize("role", ROLES)
@schema.parametrize()
@FUZZ
def test_every_check_under_every_role_that_may_call(
    case: Any, live: Service, allowed: dict[tuple[str, str], tuple[str, ...]], role: str
) -> None:
    if role not in allowed[(case.operation.method.upper(), case.operation.path)]:
        pytest.skip(
            f"the {role} key may not call {case.operation.method.upper()} {case.path} (test_roles.py)"
        )
    exercise(case, _target(live), role)


@schema.parametrize()
@FUZZ
def test_every_check_on_postgres(case: Any, live_postgres: Service) -> None:
    exercise(case, _target(live_postgres), "admin")


def test_every_route_is_fuzzed_by_a_role_past_its_role_check(
    allowed: dict[tuple[str, str], tuple[str, ...]],
) -> None:
    # Each operation is called by some role (the dealer's and reader's routes refuse admin: before issue 57
    # they were fuzzed only up to 403); each role calls some operation.
    assert all(allowed.values()), [op for op, roles in allowed.items() if not roles]
    assert {("POST", "/v1/reads"): ("reader",)}.items() <= allowed.items()
    assert allowed[("POST", "/v1/rounds/{round_id}/wagers")] == ("dealer",)
    assert set(ROLES) == {role for roles in allowed.values() for role in roles}


def test_every_exception_says_why() -> None:
    assert EXCEPTIONS and all(len(e.reason) > 20 for e in EXCEPTIONS)

    # Nothing but the named exceptions excuses an answer: a 500 or an unnamed 415 is not excused.
    class Answer:
        def __init__(self, status_code: int, detail: Any) -> None:
            self.status_code, self._detail = status_code, detail

        def json(self) -> dict[str, Any]:
            return {"detail": self._detail}

    assert (
        excused(method="POST", path="/v1/reads", response=Answer(415, "the 'image' part must be a JPEG"))
        is not None
    )
    assert excused(method="POST", path="/v1/tables", response=Answer(415, "the 'image' part must be")) is None
    assert excused(method="GET", path="/v1/tables", response=Answer(500, "boom")) is None
    clause = {"message": "m", "problems": [{"clause": "593.2(a)", "message": "x", "field": None}]}
    assert excused(method="POST", path="/v1/tables", response=Answer(422, clause)) is not None
    assert (
        excused(method="POST", path="/v1/tables", response=Answer(422, "out_of_play_at must follow")) is None
    )


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
