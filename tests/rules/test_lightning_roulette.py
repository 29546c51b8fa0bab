"""Lightning Roulette (617b.3): straight wagers, the RNG draw's rules, and the house edge as a function of
the RNG's distribution."""

from __future__ import annotations

import json
from collections.abc import Sequence
from fractions import Fraction
from itertools import combinations, product
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rules import games
from rules.games import DocumentRefusedError, MathOptions
from rules.side_wagers import lightning_roulette as lr

EXAMPLES = Path(lr.__file__).parent / "examples"


def doc(
    spin: object, lucky: Sequence[tuple[object, object]], *wagers: tuple[int, object, str]
) -> dict[str, Any]:
    return {
        "game": "lightning_roulette",
        "wagers": [{"seat": s, "kind": "straight", "number": n, "amount": a} for s, n, a in wagers],
        "lucky_numbers": [{"number": n, "pays": m} for n, m in lucky],
        "spin": spin,
    }


def refused(document: dict[str, Any]) -> list[tuple[str, str | None]]:
    with pytest.raises(DocumentRefusedError) as err:
        games.settle(document)
    return [(p.clause, p.field) for p in err.value.problems]


@pytest.mark.parametrize("pays", lr.PERMITTED_PAYS)
def test_617b_3_e_straight_win_on_a_lucky_number_pays_its_displayed_payout(pays: int) -> None:
    out = games.settle(doc(17, [(17, pays), (3, 49)], (1, 17, "1.00")))
    row = out["settlements"][0]
    assert (row["result"], row["win"], row["odds"], row["lucky"]) == (
        "win",
        f"{pays}.00",
        f"{pays} to 1",
        True,
    )
    assert row["clause"] == "617b.3(e)"


def test_617b_3_f_straight_win_not_on_a_lucky_number_pays_29_to_1() -> None:
    out = games.settle(doc(8, [(17, 499)], (1, 8, "2.00")))
    row = out["settlements"][0]
    assert (row["result"], row["win"], row["odds"], row["clause"]) == ("win", "58.00", "29 to 1", "617b.3(f)")


def test_losing_straight_wagers_lose_even_on_a_lucky_number() -> None:
    out = games.settle(doc(8, [(17, 499)], (1, 17, "2.00"), (2, 9, "3.00")))
    assert [(r["result"], r["win"]) for r in out["settlements"]] == [("lose", "0.00"), ("lose", "0.00")]
    assert out["seats"]["1"]["net"] == "-2.00"


def test_zero_can_be_a_lucky_number_and_win() -> None:
    out = games.settle(doc(0, [(0, 99)], (1, 0, "1.00")))
    assert out["settlements"][0]["win"] == "99.00"


@pytest.mark.parametrize("count", [0, 6, 7])
def test_617b_3_d_one_to_five_lucky_numbers(count: int) -> None:
    lucky = [(n, 49) for n in range(count)]
    assert refused(doc(1, lucky, (1, 1, "1.00"))) == [("617b.3(d)", "lucky_numbers")]


def test_617b_3_d_lucky_numbers_are_different_numbers() -> None:
    assert refused(doc(1, [(5, 49), (5, 99)], (1, 1, "1.00"))) == [("617b.3(d)", "lucky_numbers[1]")]


@pytest.mark.parametrize("pays", [35, 29, 500, 50, 0, "499", 499.0, True])
def test_617b_3_g_payout_must_be_on_the_list(pays: object) -> None:
    assert refused(doc(1, [(5, pays)], (1, 1, "1.00"))) == [("617b.3(g)", "lucky_numbers[0].pays")]


@pytest.mark.parametrize("number", [37, -1, "00", "17", None, 3.0])
def test_617b_3_a_single_zero_wheel_numbers_only(number: object) -> None:
    assert refused(doc(number, [(5, 49)], (1, 1, "1.00"))) == [("617b.3(a)", "spin")]
    assert refused(doc(1, [(number, 49)], (1, 1, "1.00"))) == [("617b.3(a)", "lucky_numbers[0].number")]
    assert refused(doc(1, [(5, 49)], (1, number, "1.00"))) == [("617b.3(a)", "wagers[0].number")]


def test_only_straight_wagers_are_settled() -> None:
    bad = doc(1, [(5, 49)], (1, 1, "1.00"))
    bad["wagers"][0]["kind"] = "red"
    assert refused(bad) == [("document", "wagers[0].kind")]


def test_every_problem_is_listed_at_once() -> None:
    bad = doc(40, [(5, 50), (5, 49), (6, 49), (7, 49), (8, 49), (9, 49)], (1, 1, "1.005"))
    assert refused(bad) == [
        ("document", "wagers[0].amount"),
        ("617b.3(d)", "lucky_numbers"),
        ("617b.3(g)", "lucky_numbers[0].pays"),
        ("617b.3(d)", "lucky_numbers[1]"),
        ("617b.3(a)", "spin"),
    ]


def test_example_document_settles() -> None:
    out = games.settle(json.loads((EXAMPLES / "lightning_roulette.json").read_text()))
    assert [r["win"] for r in out["settlements"]] == ["199.00", "0.00", "995.00", "0.00"]


@given(
    spin=st.integers(0, 36),
    lucky=st.lists(
        st.tuples(st.integers(0, 36), st.sampled_from(lr.PERMITTED_PAYS)),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t[0],
    ),
    bets=st.lists(
        st.tuples(st.integers(1, 7), st.integers(0, 36), st.integers(1, 10_000)), min_size=1, max_size=8
    ),
)
@settings(max_examples=120, deadline=None)
def test_settlement_invariants(
    spin: int, lucky: list[tuple[int, int]], bets: list[tuple[int, int, int]]
) -> None:
    """Exactly the wagers on the spin win; at the lucky payout iff the spin is lucky, else 29 to 1."""
    out = games.settle(doc(spin, lucky, *((s, n, f"{c / 100:.2f}") for s, n, c in bets)))
    draw = dict(lucky)
    for (_, number, cents), row in zip(bets, out["settlements"], strict=True):
        if number != spin:
            assert row["result"] == "lose"
            continue
        odds = draw.get(number, 29)
        assert row["result"] == "win"
        assert row["win"] == f"{cents * odds / 100:.2f}"


# ---------------------------------------------------------------- math


def _brute_force_edge(count_probs: dict[int, Fraction], pays_probs: dict[int, Fraction]) -> Fraction:
    """Independent check: enumerate every draw of k lucky numbers (as sets) with every payout vector, and
    every spin, for a straight wager on 0."""
    expected = Fraction(0)
    for k, pk in count_probs.items():
        subsets = list(combinations(range(37), k))
        for subset in subsets:
            for payouts in product(pays_probs.items(), repeat=k):
                p_draw = pk / len(subsets)
                for _, pm in payouts:
                    p_draw *= pm
                displayed = {n: m for n, (m, _) in zip(subset, payouts, strict=True)}
                win = displayed.get(0, 29)
                expected += p_draw * (Fraction(1, 37) * win - Fraction(36, 37))
    return -expected


def test_house_edge_formula_matches_brute_force_enumeration() -> None:
    counts = {1: Fraction(1, 3), 2: Fraction(2, 3)}
    pays = {49: Fraction(3, 4), 499: Fraction(1, 4)}
    report = games.math_report(
        "lightning_roulette",
        MathOptions(
            distribution={
                "lucky_count_weights": {"1": 1, "2": 2},
                "pays_weights": {"49": "0.75", "499": "1/4"},
            }
        ),
    )
    assert Fraction(report.data["distribution"]["house_edge"]) == _brute_force_edge(counts, pays)


def test_one_lucky_number_at_49_to_1() -> None:
    """By hand: win 1/37; given a win, lucky with probability 1/37 at 49, else 29: edge (259 - 20)/1369."""
    edge = lr.house_edge(mean_lucky=Fraction(1), mean_pays=Fraction(49))
    assert (
        edge
        == 1 - Fraction(1, 37) * (1 + Fraction(1, 37) * 49 + Fraction(36, 37) * 29)
        == Fraction(239, 1369)
    )


def test_example_distribution_has_the_ordinary_single_zero_edge() -> None:
    dist = json.loads((EXAMPLES / "lightning_roulette_distribution.json").read_text())
    report = games.math_report("lightning_roulette", MathOptions(distribution=dist))
    assert report.data["distribution"]["house_edge"] == "1/37"
    assert report.data["distribution"]["mean_pays"] == "103/1"


@given(
    counts=st.dictionaries(st.integers(1, 5), st.integers(0, 50), min_size=1),
    pays=st.dictionaries(st.sampled_from(lr.PERMITTED_PAYS), st.integers(0, 50), min_size=1),
)
@settings(max_examples=80, deadline=None)
def test_distribution_probabilities_sum_to_one(counts: dict[int, int], pays: dict[int, int]) -> None:
    dist = {
        "lucky_count_weights": {str(k): w for k, w in counts.items()},
        "pays_weights": {str(m): w for m, w in pays.items()},
    }
    if sum(counts.values()) == 0 or sum(pays.values()) == 0:
        with pytest.raises(DocumentRefusedError, match="sum to 0"):
            games.math_report("lightning_roulette", MathOptions(distribution=dist))
        return
    report = games.math_report("lightning_roulette", MathOptions(distribution=dist))
    rows = report.tables[1].rows
    assert sum(Fraction(r[2]) for r in rows) == 1  # every outcome of a straight wager
    data = report.data["distribution"]
    assert sum(Fraction(p) for p in data["lucky_count"].values()) == 1
    assert sum(Fraction(p) for p in data["pays"].values()) == 1


@pytest.mark.parametrize(
    ("dist", "clause", "field"),
    [
        ({"lucky_count_weights": {"6": 1}, "pays_weights": {"49": 1}}, "617b.3(d)", "lucky_count_weights.6"),
        ({"lucky_count_weights": {"0": 1}, "pays_weights": {"49": 1}}, "617b.3(d)", "lucky_count_weights.0"),
        ({"lucky_count_weights": {"1": 1}, "pays_weights": {"35": 1}}, "617b.3(g)", "pays_weights.35"),
        ({"lucky_count_weights": {"1": 0.5}, "pays_weights": {"49": 1}}, "document", "lucky_count_weights.1"),
        ({"lucky_count_weights": {"1": -1}, "pays_weights": {"49": 1}}, "document", "lucky_count_weights.1"),
        ({"lucky_count_weights": {"x": 1}, "pays_weights": {"49": 1}}, "document", "lucky_count_weights.x"),
        ({"pays_weights": {"49": 1}}, "document", "lucky_count_weights"),
        ({"lucky_count_weights": {"1": 1}, "pays_weights": {"49": 1}, "extra": 1}, "document", "extra"),
        ({"format": "v9", "lucky_count_weights": {"1": 1}, "pays_weights": {"49": 1}}, "document", "format"),
    ],
)
def test_bad_distributions_are_refused_by_clause(dist: dict[str, Any], clause: str, field: str) -> None:
    with pytest.raises(DocumentRefusedError) as err:
        games.math_report("lightning_roulette", MathOptions(distribution=dist))
    assert [(p.clause, p.field) for p in err.value.problems] == [(clause, field)]


def test_math_without_distribution_gives_the_grid() -> None:
    report = games.math_report("lightning_roulette")
    assert report.data["grid"]["k=1,m=49"] == "239/1369"
    assert len(report.tables) == 1
    assert "distribution" not in report.data


def test_math_refuses_decks() -> None:
    with pytest.raises(DocumentRefusedError, match="takes no decks"):
        games.math_report("lightning_roulette", MathOptions(decks=6))
