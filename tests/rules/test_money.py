"""rules.money.pay_cents: stake times exact odds, whole cents, never a float."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction

import pytest

from rules.money import pay_cents


@pytest.mark.parametrize(
    ("amount", "odds", "half_up", "expected"),
    [
        ("5.00", Fraction(3, 5), False, "3.00"),  # "3 to 5" pays 0.6 per unit (593.5(b))
        ("5.00", Fraction(1, 2), False, "2.50"),  # "1 to 2" pays 0.5
        ("2.00", Fraction(5, 2), False, "5.00"),  # "2.5 to 1" (631b.7)
        ("0.05", Fraction(7, 3), False, "0.11"),  # 0.11666..: the fraction of a cent is dropped
        ("0.05", Fraction(7, 3), True, "0.12"),  # ... or rounded half up
        ("0.03", Fraction(1, 2), True, "0.02"),  # exactly half a cent rounds up
        ("1.00", Fraction(1_000_000), False, "1000000.00"),  # large, still exact
    ],
)
def test_pay_cents(amount: str, odds: Fraction, half_up: bool, expected: str) -> None:
    paid = pay_cents(Decimal(amount), odds, half_up=half_up)
    assert paid == Decimal(expected) and str(paid) == expected
