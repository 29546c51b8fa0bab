"""The generator makes deterministic scenes whose ground truth is consistent with the image and the camera."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from datasets.format import read_scene, scene_from_dict, scene_to_dict
from datasets.loaders import load_synth
from datasets.synth.generator import (
    ConfigError,
    GeneratorConfig,
    generate_scene,
    parse_mix,
    parse_resolutions,
)
from datasets.synth.render import SceneRenderer
from datasets.synth.writer import generate_dataset

SMALL = ((320, 240, 1.0),)


def test_same_seed_same_scene(renderer: SceneRenderer) -> None:
    cfg = GeneratorConfig(seed=5, resolutions=SMALL)
    a = generate_scene(cfg, 3, renderer)
    b = generate_scene(cfg, 3, renderer)
    assert scene_to_dict(a.truth) == scene_to_dict(b.truth)
    c = generate_scene(cfg, 4, renderer)
    assert scene_to_dict(c.truth)["dice"] != scene_to_dict(a.truth)["dice"]


@pytest.mark.parametrize("n_dice", [10, 6])
def test_normal_throw_truth_is_consistent(renderer: SceneRenderer, n_dice: int) -> None:
    cfg = GeneratorConfig(seed=11, n_dice=n_dice, resolutions=SMALL, oblique_fraction=0.0)
    scene = generate_scene(cfg, 0, renderer)
    t = scene.truth
    assert t.expected_dice == n_dice
    assert len(t.dice) == n_dice
    assert t.render["settled"] is True
    # The homography recorded maps the felt plane exactly as the recorded camera projects it.
    pts_mm = np.array([[100.0, 100.0, 0.0], [500.0, 300.0, 0.0]])
    h = np.asarray(t.homography_px_from_mm)
    via_h = (h @ np.c_[pts_mm[:, :2], np.ones(2)].T).T
    via_h = via_h[:, :2] / via_h[:, 2:]
    np.testing.assert_allclose(via_h, t.camera.project(pts_mm), atol=1e-6)
    for d in t.dice:
        if d.off_table:
            continue
        x0, y0, x1, y1 = d.box_xyxy
        assert 0 <= x0 < x1 <= 320 and 0 <= y0 < y1 <= 240
        quad = np.asarray(d.top_quad)
        # The top face lies inside the whole die's box.
        assert (quad[:, 0] >= x0 - 0.5).all() and (quad[:, 0] <= x1 + 0.5).all()
        assert (quad[:, 1] >= y0 - 0.5).all() and (quad[:, 1] <= y1 + 0.5).all()
        if not d.cocked:
            assert d.face == d.face_geometric


def test_tinyrenderer_fallback_renders_the_same_dice(
    renderer: SceneRenderer, tiny_renderer: SceneRenderer
) -> None:
    cfg = GeneratorConfig(seed=2, resolutions=SMALL)
    a = generate_scene(cfg, 0, renderer).truth
    b = generate_scene(cfg, 0, tiny_renderer).truth
    assert b.render["renderer"] == "tiny"
    assert [d.face for d in a.dice] == [d.face for d in b.dice]
    vis_a = np.array([d.visible_fraction for d in a.dice])
    vis_b = np.array([d.visible_fraction for d in b.dice])
    assert np.abs(vis_a - vis_b).max() < 0.25


def test_json_round_trip(renderer: SceneRenderer) -> None:
    t = generate_scene(GeneratorConfig(seed=1, resolutions=SMALL), 0, renderer).truth
    doc = json.loads(json.dumps(scene_to_dict(t)))
    back = scene_from_dict(doc)
    assert scene_to_dict(back) == scene_to_dict(t)


def test_dataset_written_and_loaded(tmp_path: Path) -> None:
    cfg = GeneratorConfig(seed=3, resolutions=SMALL)
    summary = generate_dataset(tmp_path, cfg, scenes=2, workers=1)
    assert summary.scenes == 2
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert manifest["seed"] == 3 and len(manifest["scene_ids"]) == 2
    images = load_synth(tmp_path)
    assert len(images) == 2
    first = images[0]
    assert first.truth is not None
    assert first.load().shape == (240, 320, 3)
    assert read_scene(tmp_path / "labels" / f"{first.truth.scene_id}.json") == first.truth


@pytest.mark.parametrize(
    ("text", "expected", "exception"),
    [
        ("normal=1", {"normal": 1.0}, None),  # one scenario
        ("normal=3,normal=1", {"normal": 1.0}, None),  # repeated names add up, then normalise
        ("bogus=1", None, ConfigError),  # unknown scenario
        ("normal", None, ConfigError),  # no weight
        ("normal=-1", None, ConfigError),  # negative weight
        ("normal=0", None, ConfigError),  # nothing to draw from
        ("normal=x", None, ConfigError),  # not a number
    ],
)
def test_parse_mix(text: str, expected: dict[str, float] | None, exception: type[Exception] | None) -> None:
    if exception is not None:
        with pytest.raises(exception):
            parse_mix(text)
    else:
        assert parse_mix(text) == expected


@pytest.mark.parametrize(
    ("text", "expected", "exception"),
    [
        ("1280x960", ((1280, 960, 1.0),), None),
        ("1280x960:0.5,640x480:0.5", ((1280, 960, 0.5), (640, 480, 0.5)), None),
        ("1280by960", None, ConfigError),  # not WxH
        ("10x10", None, ConfigError),  # too small
        ("", None, ConfigError),  # nothing
    ],
)
def test_parse_resolutions(
    text: str, expected: tuple[tuple[int, int, float], ...] | None, exception: type[Exception] | None
) -> None:
    if exception is not None:
        with pytest.raises(exception):
            parse_resolutions(text)
    else:
        assert parse_resolutions(text) == expected


def test_config_rejects_wrong_dice_count() -> None:
    with pytest.raises(ConfigError, match="10 dice"):
        GeneratorConfig(seed=0, n_dice=7)
