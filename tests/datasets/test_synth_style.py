"""One dice style for a whole set (`throwbox lab synth --die-style`) and a style held out of training
(`models.data.load_synth(styles_out=...)`, `throwbox train faces --leave-out-style`): issue 47's enrollment
figure on a style the face model never saw."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from datasets.synth.generator import ConfigError, GeneratorConfig
from datasets.synth.writer import DatasetExistsError, generate_dataset
from models.data import load_synth

SMALL = ((320, 240, 1.0),)


def test_unknown_style_is_refused() -> None:
    with pytest.raises(ConfigError, match="casino-blue"):  # the known ones are named
        GeneratorConfig(seed=1, die_style="casino-purple")


def test_style_changes_the_dice_only_and_is_held_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("THROWBOX_RENDERER", "tiny")  # as test_see_through: a renderer of its own
    plain = GeneratorConfig(seed=9701, resolutions=SMALL, oblique_fraction=0.0)
    blue = GeneratorConfig(seed=9701, resolutions=SMALL, oblique_fraction=0.0, die_style="casino-blue")
    generate_dataset(tmp_path / "plain", plain, scenes=2, workers=1)
    generate_dataset(tmp_path / "blue", blue, scenes=2, workers=1)
    for name in ("s9701-000000.json", "s9701-000001.json"):
        a = json.loads((tmp_path / "plain" / "labels" / name).read_text())
        b = json.loads((tmp_path / "blue" / "labels" / name).read_text())
        assert b["render"].pop("die_style") == "casino-blue"
        assert {d.pop("style") for d in b["dice"]} == {"casino-blue"}
        assert "casino-blue" not in {d.pop("style") for d in a["dice"]}  # seed 9701 draws no blue die
        assert a == b  # the same throws, camera, light and degradations
    assert json.loads((tmp_path / "blue" / "manifest.json").read_text())["die_style"] == "casino-blue"
    with pytest.raises(DatasetExistsError, match="style"):
        generate_dataset(tmp_path / "plain", blue, scenes=1, workers=1)

    assert len(load_synth(tmp_path / "blue")) == 2
    assert load_synth(tmp_path / "blue", styles_out=("casino-blue",)) == []
    assert len(load_synth(tmp_path / "plain", styles_out=("casino-blue",))) == 2


def test_unknown_felt_is_refused() -> None:
    with pytest.raises(ConfigError, match="wide-green-pinstripe"):  # the style's felts are named
        GeneratorConfig(seed=1, style="wide", felt="baize-green")
    with pytest.raises(ConfigError, match="no usual felt"):  # a wide felt is not one of the usual style's
        GeneratorConfig(seed=1, felt="wide-green-pinstripe")


def test_one_felt_changes_the_felt_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A table has one felt (issue 56's one-table learn-bench): `felt` puts every scene on it, and leaves the
    throws, cameras, dice and light as the same seed draws them."""
    monkeypatch.setenv("THROWBOX_RENDERER", "tiny")
    kw: dict[str, object] = {"seed": 9702, "resolutions": SMALL, "oblique_fraction": 0.0, "style": "wide"}
    drawn = GeneratorConfig(**kw)  # type: ignore[arg-type]
    one = GeneratorConfig(**kw, felt="wide-green-pinstripe")  # type: ignore[arg-type]
    generate_dataset(tmp_path / "drawn", drawn, scenes=3, workers=1)
    generate_dataset(tmp_path / "one", one, scenes=3, workers=1)
    felts = []
    for i in range(3):
        a = json.loads((tmp_path / "drawn" / "labels" / f"s9702-00000{i}.json").read_text())
        b = json.loads((tmp_path / "one" / "labels" / f"s9702-00000{i}.json").read_text())
        felts.append(a["render"].pop("felt"))
        assert b["render"].pop("felt") == "wide-green-pinstripe"
        assert a == b
    assert felts != ["wide-green-pinstripe"] * 3  # the seed draws other felts
    assert json.loads((tmp_path / "one" / "manifest.json").read_text())["felt"] == "wide-green-pinstripe"
    with pytest.raises(DatasetExistsError, match="felt"):
        generate_dataset(tmp_path / "drawn", one, scenes=1, workers=1)
