"""The OpenAPI document states what the service checks wherever JSON Schema can (issue 57, item 6): a
paytable's shape for its game, the settings' choices, the number of dice of a correction, the enrollment
archive's type. Checked against the document itself, with a JSON Schema validator."""

from __future__ import annotations

from typing import Any

import pytest
from jsonschema_rs import Draft202012Validator

from api.main import create_app
from rules.hrd.paytable import REGULATION_TABLES

DOCUMENT = create_app().openapi()


def _valid(schema: dict[str, Any], instance: Any) -> bool:
    validator = Draft202012Validator({**schema, "components": DOCUMENT["components"]})
    return bool(validator.is_valid(instance))


def _body(method: str, path: str, media: str = "application/json") -> dict[str, Any]:
    schema: dict[str, Any] = DOCUMENT["paths"][path][method]["requestBody"]["content"][media]["schema"]
    return schema


TABLE_IN = {"$ref": "#/components/schemas/TableIn"}
TABLE_UPDATE = {"$ref": "#/components/schemas/TableUpdate"}
CORRECTION = {"$ref": "#/components/schemas/CorrectionIn"}


@pytest.mark.parametrize(
    ("schema", "instance", "valid"),
    [
        (TABLE_IN, {"id": "T", "game": "hrd10"}, True),
        (TABLE_IN, {"id": "T", "game": "hrd10", "paytable": REGULATION_TABLES["hrd10"]}, True),
        (TABLE_IN, {"id": "T", "game": "hrd6", "paytable": REGULATION_TABLES["hrd6"]}, True),
        (TABLE_IN, {"id": "T", "game": "hrd10", "paytable": {}}, False),  # the finding: {} was schema-valid
        (TABLE_IN, {"id": "T", "game": "hrd6", "paytable": REGULATION_TABLES["hrd10"]}, False),  # other game
        (TABLE_IN, {"id": "T", "game": "hrd10", "paytable": {**REGULATION_TABLES["hrd10"], "x": {}}}, False),
        (TABLE_IN, {"id": "T", "game": "hrd10", "settings": {"payout_rounding": "half_up"}}, True),
        (TABLE_IN, {"id": "T", "game": "hrd10", "settings": {"payout_rounding": "up"}}, False),  # no choice
        (TABLE_IN, {"id": "T", "game": "hrd10", "settings": {"colour": "red"}}, False),  # no setting
        (TABLE_UPDATE, {"paytable": {"format": "throwbox-hrd-paytable/1"}}, False),  # sections missing
        (TABLE_UPDATE, {"paytable": None}, True),  # back to the regulation's table
        (CORRECTION, {"reason": "misread", "first_roll": []}, False),  # the finding: [] was schema-valid
        (CORRECTION, {"reason": "misread", "first_roll": [1, 2, 3, 4, 5, 7]}, False),  # no face 7
        (CORRECTION, {"reason": "misread", "first_roll": [1, 2, 3, 4, 5, 6]}, True),
        (CORRECTION, {"reason": "misread", "first_roll": [1] * 10, "extra_roll": []}, False),
    ],
)
def test_the_schema_refuses_what_the_engine_refuses(
    schema: dict[str, Any], instance: Any, valid: bool
) -> None:
    assert _valid(schema, instance) is valid


def test_odds_are_written_as_the_engine_reads_them() -> None:
    table = dict(REGULATION_TABLES["hrd6"])
    schema = {"$ref": "#/components/schemas/TableIn"}
    table["pip_street"] = {**table["pip_street"], "1": "3:1"}
    assert not _valid(schema, {"id": "T", "game": "hrd6", "paytable": table})
    table["pip_street"] = {**table["pip_street"], "1": "1,000 to 1"}
    assert _valid(schema, {"id": "T", "game": "hrd6", "paytable": table})


def test_the_settle_document_states_the_paytable_of_its_game() -> None:
    schema = _body("post", "/v1/settle")
    doc = {"game": "hrd6", "wagers": [], "rolls": [[1, 2, 3, 4, 5, 6]]}
    assert _valid(schema, {**doc, "paytable": REGULATION_TABLES["hrd6"]})
    assert not _valid(schema, {**doc, "paytable": {}})
    assert not _valid(schema, {**doc, "paytable": REGULATION_TABLES["hrd10"]})


def test_the_enrollment_archive_is_a_zip_in_the_document() -> None:
    content = DOCUMENT["paths"]["/v1/tables/{table_id}/enrollment"]["post"]["requestBody"]["content"]
    form = content["multipart/form-data"]
    assert form["encoding"]["archive"]["contentType"] == "application/zip"
    assert form["schema"]["properties"]["archive"]["contentMediaType"] == "application/zip"
