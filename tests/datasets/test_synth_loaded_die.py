"""The synthetic generator's loaded die (issue 49): rejection sampling over the physics shows the stated
face weights on that die, and a bias of 0 leaves every throw as the fair generator makes it."""

from __future__ import annotations

import pytest

from datasets.synth.generator import ConfigError, GeneratorConfig, parse_loaded_die, simulate_scene
from datasets.synth.truth import physical_truth


def faces_of(cfg: GeneratorConfig, index: int) -> list[int | None]:
    outcome = simulate_scene(cfg, index)
    return [
        physical_truth(p, c, cfg.layout).face
        for p, c in zip(outcome.result.poses, outcome.result.contacts, strict=True)
    ]


def test_a_die_loaded_fully_on_six_always_shows_six_and_the_others_still_roll() -> None:
    cfg = GeneratorConfig(seed=3, n_dice=6, loaded_die=parse_loaded_die("2:6:0.8333333333"))
    rolls = [faces_of(cfg, i) for i in range(4)]
    shown = [r[1] for r in rolls if r[1] is not None]
    assert len(shown) >= 3 and set(shown) == {6}
    others = {f for r in rolls for f in r[2:] if f is not None}
    assert len(others) >= 3  # the other dice are not held on one face


def test_no_bias_changes_no_throw() -> None:
    fair = GeneratorConfig(seed=5)
    unloaded = GeneratorConfig(seed=5, loaded_die=(0, 6, 0.0))
    assert [faces_of(fair, i) for i in range(3)] == [faces_of(unloaded, i) for i in range(3)]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1:6", "DIE:FACE:BIAS"),  # a part missing
        ("11:6:0.05", "a loaded die is a die 0..9"),  # die 11 of ten
        ("1:7:0.05", "a face 1..6"),  # no face 7
        ("1:6:0.9", "a bias"),  # more than certain
    ],
)
def test_bad_loaded_die_is_refused(text: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        GeneratorConfig(seed=0, loaded_die=parse_loaded_die(text))
