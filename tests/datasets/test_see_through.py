"""See-through dice (`throwbox lab synth --see-through`): translucent dice show their other faces' pips."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from datasets.synth.generator import ConfigError, GeneratorConfig
from datasets.synth.textures import _PIPS, DIE_STYLES, FACE_TEX_PX, face_texture, ghost_pips
from datasets.synth.writer import DatasetExistsError, generate_dataset

SMALL = ((320, 240, 1.0),)
RED = next(s for s in DIE_STYLES if s.name == "casino-red")
IVORY = next(s for s in DIE_STYLES if s.name == "ivory-black")


def test_the_opposite_face_shows_through_mirrored() -> None:
    # Face 3 is opposite face 4. Seen from outside, face 3's pips run from (0.27, 0.27) to (0.73, 0.73); seen
    # through face 4 they are mirrored, so they run along the other diagonal. (A five or a four would look
    # the same either way: a three shows a mirroring error.)
    n = FACE_TEX_PX
    alpha = ghost_pips(4, n, 12, strength=0.5)

    def at(a: float, b: float) -> float:
        return float(alpha[round(b * (n - 1)), round(a * (n - 1))])

    assert at(0.73, 0.27) > 0.2 and at(0.27, 0.73) > 0.2 and at(0.5, 0.5) > 0.2
    assert at(0.27, 0.27) < 0.05 and at(0.73, 0.73) < 0.05
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
    plain = GeneratorConfig(seed=9700, resolutions=SMALL, oblique_fraction=0.0)
    clear = GeneratorConfig(seed=9700, resolutions=SMALL, oblique_fraction=0.0, see_through=0.6)
    generate_dataset(tmp_path / "plain", plain, scenes=1, workers=1)
    generate_dataset(tmp_path / "clear", clear, scenes=1, workers=1)
    a = json.loads((tmp_path / "plain" / "labels" / "s9700-000000.json").read_text())
    b = json.loads((tmp_path / "clear" / "labels" / "s9700-000000.json").read_text())
    assert b["render"].pop("see_through") == 0.6
    assert a == b  # the same dice, camera, light and degradations
    assert json.loads((tmp_path / "clear" / "manifest.json").read_text())["see_through"] == 0.6
    assert "see_through" not in json.loads((tmp_path / "plain" / "manifest.json").read_text())
    # The dice are clear ones, and the images differ on them and nowhere else (16 px round each box for the
    # JPEG's blocks, colour at half resolution).
    assert {d["style"] for d in a["dice"]} <= {"casino-red", "casino-red-light", "casino-red-dark"}
    img_a = cv2.imread(str(tmp_path / "plain" / a["image"])).astype(int)
    img_b = cv2.imread(str(tmp_path / "clear" / b["image"])).astype(int)
    changed = np.abs(img_a - img_b).max(axis=2) > 20
    assert changed.sum() > 20
    inside = np.zeros_like(changed)
    for d in a["dice"]:
        x0, y0, x1, y1 = (round(v) for v in d["box_xyxy"])
        inside[max(0, y0 - 16) : y1 + 16, max(0, x0 - 16) : x1 + 16] = True
    assert not (changed & ~inside).any()
    # A folder holding the plain set refuses the see-through one.
    with pytest.raises(DatasetExistsError, match="see_through"):
        generate_dataset(tmp_path / "plain", clear, scenes=1, workers=1)
