"""High Roll Dice (58 Pa. Code ch. 593; ch. 675a): 10 dice (`hrd10`) and the 6-dice variation (`hrd6`).

Modules, one idea each:

- `dice`: die ranking and roll classification (Pip Street winner, match count, "no match").
- `settings`: the interpretations the regulation texts leave open, as explicit settings.
- `paytable`: payout odds as exact fractions; the regulation's tables and a JSON file format.
- `wagers`: the wager type and wager validation (one `Problem` per broken rule, naming its clause).
- `settlement`: settling roll one and the Extra Roll (the one implementation of the payout rules).
- `round`: the round state machine the service drives (betting -> ... -> complete).
- `math`: exact game math by enumeration over multisets with multinomial weights.
- `document`: the game module behind `throwbox settle`, `POST /v1/settle` and `throwbox math`.

Everything here is pure: no I/O, no web framework.
"""
