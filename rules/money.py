"""Money shared by every game of the rules engine: a stake times exact odds, in whole cents, as Decimal."""

from __future__ import annotations

import math
from decimal import Decimal
from fractions import Fraction


def pay_cents(amount: Decimal, win_per_unit: Fraction, *, half_up: bool = False) -> Decimal:
    """Net win of `amount` at `win_per_unit` (odds as a fraction), in whole cents.

    A casino pays no fractions of a cent: the remainder is dropped (`half_up=False`) or rounded half up.
    Exact however large: the result is built from its digits, not through a Decimal context.
    """
    cents_exact = Fraction(amount) * win_per_unit * 100
    cents = math.floor(cents_exact + Fraction(1, 2)) if half_up else math.floor(cents_exact)
    sign, digits, _ = Decimal(cents).as_tuple()
    return Decimal((sign, digits, -2))
