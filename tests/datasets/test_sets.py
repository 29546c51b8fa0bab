"""The named data sets (datasets/sets.py) and `throwbox lab synth-set`: a set made by its name is the set its
recorded `throwbox lab synth` command makes, scene for scene, and bad names are refused with the known
ones."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
from typer.testing import CliRunner

from api.cli import app as throwbox
from datasets.sets import NAMED_SETS, named_set
from lab.cli import app

runner = CliRunner()


def test_every_named_set_has_a_valid_recipe_and_its_own_folder() -> None:
    folders = set()
    for name, s in NAMED_SETS.items():
        assert s.name == name and s.group in ("synth", "judge", "risk") and s.scenes > 0 and s.used_for
        cfg = s.config()  # raises on a mix or a resolution the generator cannot make
        assert cfg.seed == s.seed and abs(sum(cfg.mix.values()) - 1.0) < 1e-9
        folders.add(s.folder(Path("/r")))
    assert len(folders) == len(NAMED_SETS)
    # the held-out sets the README reads, with their recorded seeds (docs/synthetic-data.md)
    assert (named_set("val-v1").seed, named_set("val-v1").scenes) == (2, 500)
    assert (named_set("mix-v2").seed, named_set("mix-v2").scenes) == (3, 2000)
    with pytest.raises(KeyError, match="known: val-v1, mix-v2"):
        named_set("val-v2")


@pytest.mark.parametrize("name", ["cleartrain-s9401", "mix-v2", "translucent-s55200"])
def test_a_set_made_by_name_is_the_set_its_command_makes(tmp_path: Path, name: str) -> None:
    """Scene for scene, byte for byte: `synth-set NAME --scenes 1` and the first scene of the `throwbox lab
    synth` command it prints (mix, sizes, oblique share and see-through included)."""
    by_name = runner.invoke(
        app, ["synth-set", name, "--root", str(tmp_path / "a"), "--scenes", "1", "--workers", "1"]
    )
    assert by_name.exit_code == 0, by_name.output
    assert "wrote 1 scenes" in by_name.output
    argv = shlex.split(named_set(name).command(tmp_path / "b", 1))
    assert argv[:3] == ["throwbox", "lab", "synth"] and argv[argv.index("--scenes") + 1] == "1"
    by_command = runner.invoke(throwbox, [*argv[1:], "--workers", "1"])
    assert by_command.exit_code == 0, by_command.output
    # the first scene only: into NAME-first1, never the whole set's folder
    a, b = named_set(name).folder(tmp_path / "a", 1), named_set(name).folder(tmp_path / "b", 1)
    assert a.name == f"{name}-first1" and not named_set(name).folder(tmp_path / "a").exists()
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file() and p.name != "manifest.json")
    assert files and files == sorted(
        p.relative_to(b) for p in b.rglob("*") if p.is_file() and p.name != "manifest.json"
    )
    for f in files:
        assert (a / f).read_bytes() == (b / f).read_bytes(), f
    ma, mb = (json.loads((d / "manifest.json").read_text()) for d in (a, b))
    for key in ("seed", "scenes", "n_dice", "mix", "resolutions", "oblique_fraction"):
        assert ma[key] == mb[key], key


def test_synth_set_lists_and_refuses(tmp_path: Path) -> None:
    listed = runner.invoke(app, ["synth-set", "--list", "--root", str(tmp_path)])
    assert listed.exit_code == 0
    for name in NAMED_SETS:
        assert f"{name} (not made;" in listed.output
    assert f"throwbox lab synth {tmp_path}/synth/val-v1 --scenes 500 --seed 2" in listed.output
    unknown = runner.invoke(app, ["synth-set", "val-v2", "--root", str(tmp_path)])
    assert unknown.exit_code == 2 and "no data set named 'val-v2'" in unknown.output
    nothing = runner.invoke(app, ["synth-set", "--root", str(tmp_path)])
    assert nothing.exit_code == 2 and "name one or more sets" in nothing.output
    assert not any(tmp_path.iterdir())  # nothing written by a refusal


def test_synth_set_leaves_a_whole_set_alone_and_refuses_a_folder_of_another(tmp_path: Path) -> None:
    val = named_set("val-v1")
    labels = val.folder(tmp_path) / "labels"
    labels.mkdir(parents=True)
    for k in range(val.scenes):  # as if made whole
        (labels / f"s0002-{k:06d}.json").write_text("{}")
    listed = runner.invoke(app, ["synth-set", "--list", "--root", str(tmp_path)])
    assert "val-v1 (made, 500 of 500 scenes;" in listed.output and "mix-v2 (not made;" in listed.output
    again = runner.invoke(app, ["synth-set", "val-v1", "--root", str(tmp_path)])
    assert again.exit_code == 0 and "already made, 500 scenes" in again.output and "--force" in again.output
    assert len(list(labels.iterdir())) == val.scenes  # nothing rewritten
    # mix-v2's folder holding another set (val-v1's manifest): refused before val-v1's first scene is made
    other = named_set("mix-v2").folder(tmp_path)
    other.mkdir(parents=True)
    (other / "manifest.json").write_text(json.dumps({"seed": 2, "n_dice": 10}))
    both = runner.invoke(app, ["synth-set", "cleartrain-s9400", "mix-v2", "--root", str(tmp_path)])
    assert both.exit_code == 2 and "seed=2" in both.output and "NAMES / --root" in both.output
    assert not named_set("cleartrain-s9400").folder(tmp_path).exists()


def test_the_data_root_is_relative_unless_the_environment_names_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from datasets.sets import SYNTH_DATA_ENV, synth_data_root

    monkeypatch.delenv(SYNTH_DATA_ENV, raising=False)
    assert synth_data_root() == Path("data") and not synth_data_root().is_absolute()
    assert named_set("val-v1").folder() == Path("data/synth/val-v1")
    monkeypatch.setenv(SYNTH_DATA_ENV, str(tmp_path))
    assert named_set("mix-v2").folder() == tmp_path / "synth" / "mix-v2"
    listed = runner.invoke(app, ["synth-set", "--list"], env={SYNTH_DATA_ENV: str(tmp_path / "e")})
    assert f"throwbox lab synth {tmp_path}/e/synth/val-v1 " in listed.output


def test_issue_55s_sets_are_as_large_as_it_asks_and_a_wide_die_style_needs_the_wide_looks() -> None:
    from datasets.synth.generator import ConfigError, GeneratorConfig

    risk = {name: s for name, s in NAMED_SETS.items() if s.group == "risk"}
    # Ten dice a scene, a few hidden: home at least 10,000 dice, each away look at least 5,000.
    assert risk["home-s55000"].scenes * 10 >= 10_000
    assert all(risk[n].scenes * 10 >= 5_000 for n in ("wide-s55100", "translucent-s55200"))
    assert len({s.seed for s in risk.values()}) == len(risk)
    assert "--die-style wide-smoke-white" in risk["translucent-s55200"].command()
    with pytest.raises(ConfigError, match="no usual dice style named 'wide-smoke-white'"):
        GeneratorConfig(seed=1, die_style="wide-smoke-white")
    with pytest.raises(ConfigError, match="no wide dice style named 'casino-red'"):
        GeneratorConfig(seed=1, style="wide", die_style="casino-red")
