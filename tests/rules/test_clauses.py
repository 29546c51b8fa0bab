"""The clause-id parser of rules/clauses.py: paragraph marks in regulation texts, citations in test names
and in free text (table-driven, on excerpts written like the texts in ../shared/regs)."""

from __future__ import annotations

import pytest

from rules.clauses import cited_in_test_name, cited_in_text, subsection_ids

EXCERPT = """Findings
(1) Under 4 Pa.C.S. § 13A03(b), the temporary regulations are exempt.
Annex A
593.1. High Roll Dice table. 593.2. Wagers. § 593.1. High Roll Dice table; physical characteristics.
(a) High Roll Dice shall be played at a table.
(b) The layout shall be approved in accordance with § 601a.10(a) (relating to approval) and contain:
(1) The name or logo of the certificate holder.
(2) At each betting position:
(i) For the Like Kind Boulevard Wagers, seven circles.
(ii) For the Millionaire Row Wagers, two circles.
(c) The table must have a device, in accordance with subsections (b) and (c).
§ 593.5. Payout odds.
(a) Pip Street Two 6 to 1 One/ace 3 to 1 (b) The certificate holder shall pay out Like Kind.
Section 675a.4 - Procedure for completion of each round of play
(h) When the dice come to rest from a valid throw.
§ 675a.6. High Roll Dice variation.
(h) After the roll, the dealer shall call out.
(i) The dealer shall collect any losing wagers.
(j) The certificate holder shall pay out.
§ 617b.3. Lightning Roulette.
(g) The possible payouts are as follows:
(i) 499 to 1.
(ii) 399 to 1.
"""


def test_subsection_ids_of_an_excerpt() -> None:
    assert subsection_ids(EXCERPT) == (
        "593.1",  # the preamble's "(1)" before the first section is not a paragraph of one
        "593.1(a)",
        "593.1(b)",  # "§ 601a.10(a) (relating" is a reference, not a mark
        "593.1(b)(1)",
        "593.1(b)(2)",
        "593.1(b)(2)(i)",
        "593.1(b)(2)(ii)",
        "593.1(c)",  # "subsections (b) and (c)" are references
        "593.5",
        "593.5(a)",
        "593.5(b)",  # a mark in the middle of a line, after a payout table
        "675a.4",  # the Pennsylvania Code's "Section ... - " heading
        "675a.4(h)",
        "675a.6",
        "675a.6(h)",
        "675a.6(i)",  # after (h), "(i)" is the next letter
        "675a.6(j)",
        "617b.3",
        "617b.3(g)",
        "617b.3(g)(i)",  # after (g), "(i)" is a roman numeral under it
        "617b.3(g)(ii)",
    )


@pytest.mark.parametrize(
    ("name", "ids"),
    [
        ("test_593_4_f_2_ii_with_extra_roll", ("593.4(f)(2)(ii)",)),
        ("test_593_5_regulation_table_ten_dice", ("593.5",)),  # a whole section
        ("test_675a_4_c_a_cocked_die", ("675a.4(c)",)),  # "a" after (c) is a word, not a subsection
        ("test_593_4_h_675a_4_h_no_double_pay", ("593.4(h)", "675a.4(h)")),  # two citations
        ("test_617b_3_g_i_payout", ("617b.3(g)(i)",)),  # a roman numeral straight under a letter
        ("test_633b_15_f_3_nine_ten_or_eleven", ("633b.15(f)(3)",)),
        ("test_675a_6_i_six_dice", ("675a.6(i)",)),  # "i" right after a section is a letter
        ("test_405_names_every_method", ()),  # an HTTP status, not a chapter of ours
        ("test_payout_rounding", ()),
    ],
)
def test_cited_in_test_name(name: str, ids: tuple[str, ...]) -> None:
    assert cited_in_test_name(name) == ids


def test_cited_in_text_finds_each_clause_once_in_order() -> None:
    text = "Pays by 593.4(f)(2)(ii) then 675a.6(d)(2); see 593.5, 593.4(f)(2)(ii) again and § 601a.2."
    assert cited_in_text(text) == ("593.4(f)(2)(ii)", "675a.6(d)(2)", "593.5")
