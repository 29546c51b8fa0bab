"""The product's answers stay byte-identical across restructurings (issue 46): reads, math, settle."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.golden.outputs import GOLDEN, collect, fixture_photos


@pytest.fixture(scope="module")
def outputs() -> dict[str, Any]:
    return collect()


def golden() -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(GOLDEN.read_text())
    return loaded


def test_every_fixture_photo_is_in_the_golden_reads() -> None:
    read = golden()["read --json"]
    assert [doc["image"] for doc in read["reads"]] == fixture_photos()


@pytest.mark.parametrize("command", sorted(golden()))
def test_output_is_unchanged(outputs: dict[str, Any], command: str) -> None:
    assert outputs[command] == golden()[command]
