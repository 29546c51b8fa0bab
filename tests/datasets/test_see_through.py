"""See-through dice (`throwbox synth --see-through`): translucent dice show their other faces' pips."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from datasets.synth.generator import ConfigError, GeneratorConfig
from datasets.synth.textures import _PIPS, DIE_STYLES, FACE_TEX_PX, face_texture, ghost_pips
from datasets.synth.writer import DatasetExistsError, generate_dataset

SMALL = ((320, 240, 1.0),)
RED = next(s for s in DIE_STYLES if s.name == "casino-red")
IVORY = next(s for s in DIE_STYLES if s.name == "ivory-black")


def test_the_opposite_face_shows_through_mirrored() -> None:
    # Face 2's pips sit at (0.27, 0.27) and (0.73, 0.73); face 5 is opposite it. Seen through face 2, the
    # ghosts lie where face 5's pips project: a five has a pip at every corner and one in the middle, so the
    # ghost is strong at the two corners face 2 leaves bare and at its centre.
    n = FACE_TEX_PX
    alpha = ghost_pips(2, n, 12, strength=0.5)

    def at(a: float, b: float) -> float:
        return float(alpha[round(b * (n - 1)), round(a * (n - 1))])

    assert at(0.73, 0.27) > 0.2 and at(0.27, 0.73) > 0.2 and at(0.5, 0.5) > 0.2
    # Between the pips there is no ghost (face 5 has none there).
    assert at(0.5, 0.27) < 0.05 and at(0.27, 0.5) < 0.05
    # No ghost is stronger than asked for.
    assert alpha.max() <= 0.5 + 1e-6


def test_side_faces_show_as_streaks_near_their_edges() -> None:
    # Face 1 is surrounded by 2, 3, 4 and 5: every edge shows ghosts just inside it.
    n = FACE_TEX_PX
    alpha = ghost_pips(1, n, 12, strength=0.5)
    band = max(1, n // 12)
    for edge in (
        alpha[band : 2 * band],
        alpha[-2 * band : -band],
        alpha[:, band : 2 * band],
        alpha[:, -2 * band : -band],
    ):
        assert float(edge.max()) > 0.15


@pytest.mark.parametrize("face", [1, 2, 3, 4, 5, 6])
def test_see_through_changes_only_translucent_dice(face: int) -> None:
    assert np.array_equal(face_texture(RED, face), face_texture(RED, face, see_through=0.0))
    assert np.array_equal(face_texture(IVORY, face), face_texture(IVORY, face, see_through=0.6))
    plain, clear = face_texture(RED, face).astype(int), face_texture(RED, face, see_through=0.6).astype(int)
    assert np.abs(plain - clear).max() > 40
    # The face's own pips are drawn over the ghosts, unchanged.
    n = FACE_TEX_PX
    for a, b in _PIPS[face]:
        y, x = round(b * (n - 1)), round(a * (n - 1))
        assert np.array_equal(plain[y, x], clear[y, x])


def test_config_refuses_a_strength_outside_0_to_1() -> None:
    with pytest.raises(ConfigError, match="see_through"):
        GeneratorConfig(seed=1, see_through=1.5)


def test_same_seed_same_throw_with_and_without_see_through(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # TinyRenderer: a client of its own, closed afterwards, so the see-through world's bodies never join the
    # test process's shared EGL world (where they could move the shadows of later renders).
    monkeypatch.setenv("THROWBOX_RENDERER", "tiny")
    plain = GeneratorConfig(seed=9, resolutions=SMALL)
    clear = GeneratorConfig(seed=9, resolutions=SMALL, see_through=0.6)
    generate_dataset(tmp_path / "plain", plain, scenes=1, workers=1)
    generate_dataset(tmp_path / "clear", clear, scenes=1, workers=1)
    a = json.loads((tmp_path / "plain" / "labels" / "s0009-000000.json").read_text())
    b = json.loads((tmp_path / "clear" / "labels" / "s0009-000000.json").read_text())
    assert b["render"].pop("see_through") == 0.6
    assert a == b  # the same dice, camera, light and degradations
    assert json.loads((tmp_path / "clear" / "manifest.json").read_text())["see_through"] == 0.6
    assert "see_through" not in json.loads((tmp_path / "plain" / "manifest.json").read_text())
    # A folder holding the plain set refuses the see-through one.
    with pytest.raises(DatasetExistsError, match="see_through"):
        generate_dataset(tmp_path / "plain", clear, scenes=1, workers=1)
