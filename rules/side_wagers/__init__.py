"""The other wagers of the 2021 rulemaking (58 Pa. Code 617b, 631b, 633b), one module per game.

`lightning_roulette` (617b.3), `majestic_match` (631b.7), `buster_blackjack` (633b.13), `upcard_luck`
(633b.15); each exposes `settle_document(doc)` and `math_report(game, options)` for `rules.games`.
`common` holds what they share (money, odds, wagers, settings); `blackjack` the hand totals and the exact
dealer-play enumeration.
"""
