"""The wide style (issue 48): its looks reach past the usual style's, its throws and cameras are the usual
set's of the same seed, and a tiny wide scene renders."""

from __future__ import annotations

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from datasets.sets import named_set
from datasets.synth.generator import ConfigError, GeneratorConfig, draw_look, scene_rng, simulate_scene
from datasets.synth.randomise import colour_temperature_rgb
from datasets.synth.render import SceneRenderer
from datasets.synth.textures import DIE_STYLES
from datasets.synth.wide import WIDE_DIE_STYLES, WIDE_FELTS
from datasets.synth.writer import DatasetExistsError, generate_dataset

SMALL = ((160, 120, 1.0),)
DRAWS = 300


def _looks(style: str) -> list[dict[str, object]]:
    """The looks of DRAWS scenes of one throw (the look has its own stream per scene index)."""
    cfg = GeneratorConfig(seed=14000, resolutions=SMALL, style=style)
    outcome = simulate_scene(cfg, 0)
    out = []
    by_name = {s.name: s for s in (*DIE_STYLES, *WIDE_DIE_STYLES)}
    for i in range(DRAWS):
        draw = draw_look(cfg, outcome, scene_rng(cfg.seed, i, 1))
        light = draw.lighting
        styles = [by_name[n] for n in draw.look.die_styles]
        out.append(
            {
                "camera": draw.camera,
                "felt": draw.look.felt,
                "dice": {s.name for s in styles},
                "body": {s.body_bgr for s in styles},
                "pip": {s.pip_bgr for s in styles},
                "translucent": {s.translucent for s in styles},
                "tint_min": min(light.colour),
                "blue_over_red": light.colour[2] / light.colour[0],
                "elevation": float(np.degrees(np.arcsin(light.direction[2]))),
                "ambient": light.ambient,
                "diffuse": light.diffuse,
                "gain": draw.degradation.gain,
                "noise": draw.degradation.noise_sigma,
                "jpeg": draw.degradation.jpeg_quality,
                "kind": draw.light_kind,
            }
        )
    return out


def _union(looks: list[dict[str, object]], key: str) -> set[object]:
    out: set[object] = set()
    for look in looks:
        value = look[key]
        assert isinstance(value, set)
        out |= value
    return out


def _range(looks: list[dict[str, object]], key: str) -> tuple[float, float]:
    values = [float(look[key]) for look in looks]  # type: ignore[arg-type]
    return min(values), max(values)


def test_the_wide_style_draws_beyond_the_usual_looks() -> None:
    usual, wide = _looks("usual"), _looks("wide")
    # The same cameras: only the looks differ between the two styles of one seed.
    assert all(u["camera"] == w["camera"] for u, w in zip(usual, wide, strict=True))
    # Dice: none of the usual palette's, more body and pip colours, translucent and opaque both.
    assert not _union(usual, "dice") & _union(wide, "dice")
    assert len(_union(wide, "dice")) == len(WIDE_DIE_STYLES)
    assert len(_union(wide, "body")) > len(_union(usual, "body"))
    assert len(_union(wide, "pip")) > len(_union(usual, "pip"))
    assert _union(wide, "translucent") == {True, False}
    # Felts: none of the usual ones, every wide one drawn.
    assert not {u["felt"] for u in usual} & {w["felt"] for w in wide}
    assert {w["felt"] for w in wide} == {name for name, _, _, _ in WIDE_FELTS}
    # Light: warmer and colder than any usual tint, lower, both brighter and dimmer, hard and soft.
    assert _range(usual, "tint_min")[0] >= 0.85
    assert _range(wide, "tint_min")[0] < 0.6
    u_br, w_br = _range(usual, "blue_over_red"), _range(wide, "blue_over_red")
    assert w_br[0] < u_br[0] and w_br[1] > u_br[1]
    assert _range(wide, "elevation")[0] < 30.0 <= _range(usual, "elevation")[0]
    assert _range(wide, "ambient")[0] < _range(usual, "ambient")[0]
    assert _range(wide, "ambient")[1] > _range(usual, "ambient")[1]
    assert _range(wide, "diffuse")[1] > _range(usual, "diffuse")[1]
    assert {w["kind"] for w in wide} == {"hard", "soft"} and {u["kind"] for u in usual} == {None}
    # Camera: exposure, sensor noise and compression past the usual ranges.
    u_gain, w_gain = _range(usual, "gain"), _range(wide, "gain")
    assert w_gain[0] < u_gain[0] and w_gain[1] > u_gain[1]
    assert _range(wide, "noise")[1] > _range(usual, "noise")[1] + 4
    assert _range(wide, "jpeg")[0] < _range(usual, "jpeg")[0]


def test_colour_temperature_runs_from_warm_to_cold() -> None:
    warm, white, cold = (colour_temperature_rgb(k) for k in (2200, 6600, 9000))
    assert warm[0] == 1.0 and warm[2] < 0.4  # tungsten: red, little blue
    assert min(white) > 0.95  # about white at 6,600 K
    assert cold[2] == 1.0 and cold[0] < 0.85


def test_the_style_is_checked_and_named() -> None:
    with pytest.raises(ConfigError, match="style"):
        GeneratorConfig(seed=1, style="bold")
    wide, usual = named_set("wide-s14000"), named_set("usual-s14000")
    assert wide.config().style == "wide" and usual.config().style == "usual"
    assert wide.command().endswith("--style wide") and "--style" not in usual.command()
    # The twin sets: one seed, one mix, one camera setting; only the looks differ.
    assert (wide.seed, wide.mix, wide.resolutions, wide.oblique) == (
        usual.seed,
        usual.mix,
        usual.resolutions,
        usual.oblique,
    )
    assert "held out" in wide.used_for and "held out" in usual.used_for


def test_a_tiny_wide_scene_renders(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # TinyRenderer: a client of its own, closed afterwards, so the wide world's bodies never join the test
    # process's shared EGL world (where they could move the shadows of later renders).
    monkeypatch.setenv("THROWBOX_RENDERER", "tiny")
    usual = GeneratorConfig(seed=14000, resolutions=SMALL, oblique_fraction=0.0)
    wide = GeneratorConfig(seed=14000, resolutions=SMALL, oblique_fraction=0.0, style="wide")
    generate_dataset(tmp_path / "usual", usual, scenes=1, workers=1)
    generate_dataset(tmp_path / "wide", wide, scenes=1, workers=1)
    a = json.loads((tmp_path / "usual" / "labels" / "s14000-000000.json").read_text())
    b = json.loads((tmp_path / "wide" / "labels" / "s14000-000000.json").read_text())
    assert b["render"]["style"] == "wide" and "style" not in a["render"]
    assert b["render"]["felt"] in SceneRenderer.felt_names("wide")
    assert b["render"]["light"]["kind"] in {"hard", "soft"}
    assert 2200 <= b["render"]["light"]["kelvin"] <= 9000
    assert {d["style"] for d in b["dice"]} <= {s.name for s in WIDE_DIE_STYLES}
    # The same throw and camera: the same dice where they lie, the same verdict.
    assert [d["box_xyxy"] for d in a["dice"]] == [d["box_xyxy"] for d in b["dice"]]
    assert (a["verdict"], a["camera"]) == (b["verdict"], b["camera"])
    img_a = cv2.imread(str(tmp_path / "usual" / a["image"]))
    img_b = cv2.imread(str(tmp_path / "wide" / b["image"]))
    assert img_a.shape == img_b.shape == (120, 160, 3)
    assert np.abs(img_a.astype(int) - img_b.astype(int)).mean() > 10  # another felt, dice and light
    assert json.loads((tmp_path / "wide" / "manifest.json").read_text())["style"] == "wide"
    assert "style" not in json.loads((tmp_path / "usual" / "manifest.json").read_text())
    # A folder holding the usual set refuses the wide one.
    with pytest.raises(DatasetExistsError, match="style"):
        generate_dataset(tmp_path / "usual", wide, scenes=1, workers=1)
