"""Wager validation: one problem per broken rule, each naming its clause (table-driven)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given
from hypothesis import settings as hyp_settings
from hypothesis import strategies as st

from rules.games import DocumentRefusedError, settle

ROLL10 = [5, 5, 5, 5, 6, 6, 6, 1, 1, 4]
ROLL6 = [5, 5, 5, 6, 6, 4]


def w(kind: str, amount: Any = "5.00", seat: Any = 1, **spot: Any) -> dict[str, Any]:
    return {"seat": seat, "kind": kind, "amount": amount, **spot}


def problems(doc: dict[str, Any]) -> list[tuple[str, str | None]]:
    with pytest.raises(DocumentRefusedError) as err:
        settle(doc)
    return [(p.clause, p.field) for p in err.value.problems]


CASES = [
    # (id, game, wagers, settings, expected (clause, field) problems)
    (
        "593_2_e_1_like_kind_without_pip_street",
        "hrd10",
        [w("like_kind", count=4)],
        None,
        [("593.2(e)(1)", "wagers[0]")],
    ),
    (
        "675a_6_d_like_kind_without_pip_street",
        "hrd6",
        [w("like_kind", count=4)],
        None,
        [("675a.6(d)", "wagers[0]")],
    ),
    (
        "593_2_e_2_like_kind_not_equal_to_pip_street",
        "hrd10",
        [w("pip_street", face=5), w("like_kind", "10.00", count=4)],
        None,
        [("593.2(e)(2)", "wagers[1].amount")],
    ),
    (
        "593_2_e_3_extra_roll_without_like_kind",
        "hrd10",
        [w("pip_street", face=5), w("extra_roll")],
        None,
        [("593.2(e)(3)", "wagers[1]")],
    ),
    (
        "593_2_e_3_extra_roll_not_equal_to_like_kind",
        "hrd10",
        [w("pip_street", face=5), w("like_kind", count=4), w("extra_roll", "2.00")],
        None,
        [("593.2(e)(3)", "wagers[2].amount")],
    ),
    (
        "593_2_e_3_two_extra_rolls_with_all_circles",
        "hrd10",
        [w("pip_street", face=5), w("like_kind", count=4), w("extra_roll"), w("extra_roll")],
        None,
        [("document", "wagers[3]"), ("593.2(e)(3)", "wagers[3]")],
    ),
    (
        "593_1_b_2_iv_pip_street_wagers_of_unequal_value",
        "hrd10",
        [w("pip_street", face=5), w("pip_street", "6.00", face=2)],
        None,
        [("593.1(b)(2)(iv)", "wagers[1].amount")],
    ),
    (
        "675a_6_b_3_all_wagers_of_equal_value",
        "hrd6",
        [w("pip_street", face=5), w("pip_street", "6.00", face=2)],
        None,
        [("675a.6(b)(3)", "wagers[1].amount")],
    ),
    (
        "593_2_e_4_millionaire_row_over_one_dollar",
        "hrd10",
        [w("millionaire_row", "1.01", count=9)],
        None,
        [("593.2(e)(4)", "wagers[0].amount")],
    ),
    (
        "593_1_b_2_ii_millionaire_row_circle_8",
        "hrd10",
        [w("millionaire_row", "1.00", count=8)],
        None,
        [("593.1(b)(2)(ii)", "wagers[0].count")],
    ),
    (
        "millionaire_row_alone_refused_setting",
        "hrd10",
        [w("millionaire_row", "1.00", count=9)],
        {"millionaire_row_alone": "refused"},
        [("593.2(e)(1)", "wagers[0]")],
    ),
    (
        "675a_6_d_no_millionaire_row_with_six_dice",
        "hrd6",
        [w("pip_street", "1.00", face=5), w("millionaire_row", "1.00", count=9)],
        None,
        [("675a.6(d)", "wagers[1].kind")],
    ),
    (
        "675a_6_d_no_extra_roll_with_six_dice",
        "hrd6",
        [w("pip_street", face=5), w("like_kind", count=3), w("extra_roll")],
        None,
        [("675a.6(d)", "wagers[2].kind")],
    ),
    (
        "593_1_b_2_i_like_kind_circle_9",
        "hrd10",
        [w("pip_street", face=5), w("like_kind", count=9)],
        None,
        [("593.1(b)(2)(i)", "wagers[1].count")],
    ),
    (
        "593_1_b_2_i_no_match_circle_only_with_six_dice",
        "hrd10",
        [w("pip_street", face=5), w("like_kind", count="no_match")],
        None,
        [("593.1(b)(2)(i)", "wagers[1].count")],
    ),
    (
        "675a_6_b_1_like_kind_circle_7",
        "hrd6",
        [w("pip_street", face=5), w("like_kind", count=7)],
        None,
        [("675a.6(b)(1)", "wagers[1].count")],
    ),
    (
        "593_1_b_2_iii_pip_street_face_7",
        "hrd10",
        [w("pip_street", face=7)],
        None,
        [("593.1(b)(2)(iii)", "wagers[0].face")],
    ),
    ("593_1_a_seat_6", "hrd10", [w("pip_street", seat=6, face=5)], None, [("593.1(a)", "wagers[0].seat")]),
    (
        "amount_float_refused",
        "hrd10",
        [w("pip_street", 5.0, face=5)],
        None,
        [("document", "wagers[0].amount")],
    ),
    (
        "amount_fraction_of_a_cent",
        "hrd10",
        [w("pip_street", "5.001", face=5)],
        None,
        [("document", "wagers[0].amount")],
    ),
    ("amount_zero", "hrd10", [w("pip_street", "0", face=5)], None, [("document", "wagers[0].amount")]),
    (
        "amount_not_a_number",
        "hrd10",
        [w("pip_street", "five", face=5)],
        None,
        [("document", "wagers[0].amount")],
    ),
    (
        "duplicate_spot",
        "hrd10",
        [w("pip_street", face=5), w("pip_street", face=5)],
        None,
        [("document", "wagers[1]")],
    ),
    ("unknown_kind", "hrd10", [w("field_bet")], None, [("document", "wagers[0].kind")]),
    (
        "unknown_wager_field",
        "hrd10",
        [dict(w("pip_street", face=5), colour="red")],
        None,
        [("document", "wagers[0].colour")],
    ),
    (
        "one_circle_extra_roll_needs_a_circle",
        "hrd10",
        [w("pip_street", face=5), w("like_kind", count=4), w("extra_roll")],
        {"extra_roll_reach": "one_circle"},
        [("settings", "wagers[2].count")],
    ),
    (
        "one_circle_extra_roll_on_a_circle_without_like_kind",
        "hrd10",
        [w("pip_street", face=5), w("like_kind", count=4), w("extra_roll", count=6)],
        {"extra_roll_reach": "one_circle"},
        [("593.2(e)(3)", "wagers[2].count")],
    ),
    (
        "all_circles_extra_roll_names_no_circle",
        "hrd10",
        [w("pip_street", face=5), w("like_kind", count=4), w("extra_roll", count=4)],
        None,
        [("settings", "wagers[2].count")],
    ),
    (
        "unknown_setting",
        "hrd10",
        [w("pip_street", face=5)],
        {"extra_roll": "x"},
        [("settings", "settings.extra_roll")],
    ),
    (
        "bad_setting_value",
        "hrd10",
        [w("pip_street", face=5)],
        {"extra_roll_reach": "two"},
        [("settings", "settings.extra_roll_reach")],
    ),
]


@pytest.mark.parametrize(
    ("game", "wagers", "settings", "expected"), [pytest.param(*c[1:], id=c[0]) for c in CASES]
)
def test_refused_wagers(
    game: str, wagers: list[dict[str, Any]], settings: dict[str, str] | None, expected: list[tuple[str, str]]
) -> None:
    doc: dict[str, Any] = {"game": game, "wagers": wagers, "rolls": [ROLL10 if game == "hrd10" else ROLL6]}
    if settings is not None:
        doc["settings"] = settings
    if game == "hrd10" and any(x.get("kind") == "extra_roll" for x in wagers):
        doc["rolls"].append([1, 2, 3, 4, 6, 6])  # the six dice that were not 5s, rethrown
    assert problems(doc) == expected


def test_every_problem_is_listed_at_once() -> None:
    doc = {
        "game": "hrd10",
        "wagers": [
            w("like_kind", "5.00", seat=2, count=12),
            w("millionaire_row", "2.00", count=9),
            w("pip_street", face=0),
        ],
        "rolls": [[1, 2, 3]],
        "colour": "blue",
    }
    assert problems(doc) == [
        ("document", "colour"),
        ("593.1(b)(2)(i)", "wagers[0].count"),
        ("593.2(e)(4)", "wagers[1].amount"),
        ("593.1(b)(2)(iii)", "wagers[2].face"),
        ("593.2(e)(1)", "wagers[0]"),
        ("593.3(a)", "rolls[0]"),
    ]


def test_millionaire_row_alone_is_allowed_by_default() -> None:
    answer = settle({"game": "hrd10", "wagers": [w("millionaire_row", "1.00", count=9)], "rolls": [ROLL10]})
    assert answer["settlements"][0]["result"] == "lose"


def test_equal_value_means_equal_amounts_not_equal_strings() -> None:
    answer = settle(
        {
            "game": "hrd10",
            "wagers": [w("pip_street", "5", face=5), w("like_kind", "5.00", count=4)],
            "rolls": [ROLL10],
        }
    )
    assert [s["win"] for s in answer["settlements"]] == ["20.00", "5.00"]


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"game": "hrd10", "wagers": [], "rolls": []}, [("document", "rolls")]),  # no roll
        ({"game": "hrd10", "wagers": {}, "rolls": [ROLL10]}, [("document", "wagers")]),  # wagers not a list
        (
            {"game": "hrd10", "wagers": [w("pip_street", face=5)], "rolls": [ROLL10, [1, 2, 3, 4, 5, 6]]},
            [("593.4(g)", "rolls[1]")],
        ),  # a second roll without an Extra Roll wager
        ({"game": "hrd6", "wagers": [], "rolls": [ROLL6, [1]]}, [("675a.6(d)", "rolls[1]")]),
        (
            {
                "game": "hrd10",
                "wagers": [w("pip_street", face=5), w("like_kind", count=5), w("extra_roll")],
                "rolls": [ROLL10],
            },
            [("593.4(g)", "rolls")],
        ),  # the Extra Roll is missing
        (
            {"game": "hrd10", "wagers": [], "rolls": [[1, 2, 3, 4, 5, 6, 1, 2, 3, "4"]]},
            [("document", "rolls[0][9]")],
        ),
        ({"game": "hrd12", "wagers": [], "rolls": [ROLL10]}, [("document", "game")]),
    ],
)
def test_refused_rolls_and_documents(doc: dict[str, Any], expected: list[tuple[str, str]]) -> None:
    assert problems(doc) == expected


JSONISH = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**40), 10**40)
    | st.text(max_size=8)
    | st.decimals(allow_nan=True),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)
FIELDS = st.fixed_dictionaries(
    {},
    optional={
        "seat": st.integers(-1, 7) | JSONISH,
        "kind": st.sampled_from(["pip_street", "like_kind", "extra_roll", "millionaire_row"]) | JSONISH,
        "amount": st.sampled_from(["5.00", "1.00", "0.01", "1e30", "-1", "NaN"]) | JSONISH,
        "face": st.integers(0, 7) | JSONISH,
        "count": st.integers(0, 11) | st.just("no_match") | JSONISH,
    },
)


@hyp_settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    game=st.sampled_from(["hrd10", "hrd6"]),
    wagers=st.lists(FIELDS, max_size=5) | JSONISH,
    rolls=st.lists(st.lists(st.integers(0, 7), min_size=0, max_size=11), max_size=3) | JSONISH,
    extra=st.dictionaries(st.sampled_from(["settings", "paytable", "x"]), JSONISH, max_size=2),
)
def test_any_document_is_settled_or_refused_never_crashes(
    game: str, wagers: Any, rolls: Any, extra: dict[str, Any]
) -> None:
    doc = {"game": game, "wagers": wagers, "rolls": rolls, **extra}
    try:
        answer = settle(doc)
    except DocumentRefusedError as exc:
        assert exc.problems  # every refusal says why
        assert all(p.clause and p.message for p in exc.problems)
    else:
        assert len(answer["settlements"]) == len(wagers)
