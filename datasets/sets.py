"""The named synthetic data sets the shipped models were trained on, and the held-out sets the README reads.

Every figure in the README and every model card names its data by a folder under the data root (`data/` in
the working directory, or `$THROWBOX_SYNTH_DATA`; not in the repository: it is made by the generator, and a
new machine starts without it). Each folder was made by one
`throwbox lab synth` command, recorded where it was first used (the cards, docs/synthetic-data.md); they are
gathered here so that `throwbox lab synth-set NAME...` makes any of them again in one step, and `throwbox
synth-set --list` prints each one's `throwbox lab synth` command. A set made again from its recipe has the
throws and labels its command makes today (a seed and an index fix every scene, whatever the number of
workers); its images may differ a little at shadow edges on some processors. Two recorded exceptions
(docs/synthetic-data.md, the relabel): 10 of train-v1's 2,000 scenes were made by an older generator and
come out otherwise, and the shipped models were trained on train-v1's and train-s600's labels from before
the relabel (5 dice differ).

Only the sets a shipped model was trained on, the held-out val-v1, mix-v2, wide-s14000 and usual-s14000,
and issue 55's risk sets (group "risk": home, two away looks, and a tuning set apart from them) are listed.
The tuning and fresh sets of the rules in docs/history/ (and the README figures quoted from them) are
one-off: each is read once or tuned on, and its command is written beside it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from datasets.synth.generator import GeneratorConfig

# Where every recorded command writes (the docs' `data/...` paths): `data/` in the working directory (the
# repository's, ignored by git) unless $THROWBOX_SYNTH_DATA names another; `synth-set --root` overrides both.
SYNTH_DATA_ENV = "THROWBOX_SYNTH_DATA"
DEFAULT_ROOT = Path("data")


def synth_data_root() -> Path:
    """The root of the named sets: $THROWBOX_SYNTH_DATA, else `data/` in the working directory."""
    return Path(os.environ.get(SYNTH_DATA_ENV) or DEFAULT_ROOT)


# The resolution mixes the recorded commands use.
R50 = "1280x960:0.5,960x720:0.25,640x480:0.25"
R60 = "1280x960:0.6,960x720:0.2,640x480:0.2"
R40 = "1280x960:0.4,960x720:0.3,640x480:0.3"
MIX_V2 = (
    "normal=0.34,cocked=0.13,wedged=0.08,stacked=0.13,off_table=0.13,cluster=0.07,layout=0.06,extra_roll=0.06"
)


@dataclass(frozen=True)
class NamedSet:
    """One data set's recorded `throwbox lab synth` command, and what it is for."""

    name: str
    # The folder under the root: "synth" (the reader's), "judge" (the judgement stage's) or "risk" (issue 55's
    # risk and coverage sets).
    group: str
    scenes: int
    seed: int
    mix: str = "normal=1"
    resolutions: str = ""  # "": 1280x960 only, the command's default
    oblique: float = 0.25  # the command's default
    see_through: float = 0.0
    used_for: str = ""
    style: str = "usual"  # the generator's `--style` (issue 48)
    die_style: str | None = None  # the generator's `--die-style`: every die in this style

    def folder(self, root: Path | None = None, scenes: int | None = None) -> Path:
        """Where the set goes under `root` (default `synth_data_root()`); only its first `scenes` (fewer
        than all) go to NAME-firstN."""
        partial = scenes is not None and scenes < self.scenes
        base = root if root is not None else synth_data_root()
        return base / self.group / (f"{self.name}-first{scenes}" if partial else self.name)

    def made_scenes(self, root: Path | None = None) -> int:
        """How many scenes of it lie in its folder (labels written), 0 where there is none."""
        labels = self.folder(root) / "labels"
        return len(list(labels.glob("*.json"))) if labels.is_dir() else 0

    def config(self) -> GeneratorConfig:
        """The generator's configuration, as `throwbox lab synth` builds it from the command."""
        # Imported here: the generator loads OpenCV and the renderer, which `throwbox --help` does not need.
        from datasets.synth.generator import GeneratorConfig, parse_mix, parse_resolutions

        return GeneratorConfig(
            seed=self.seed,
            mix=parse_mix(self.mix),
            resolutions=parse_resolutions(self.resolutions or "1280x960"),
            oblique_fraction=self.oblique,
            see_through=self.see_through,
            style=self.style,
            die_style=self.die_style,
        )

    def command(self, root: Path | None = None, scenes: int | None = None) -> str:
        """The equivalent `throwbox lab synth` command line (of its first `scenes` only, where given)."""
        n = self.scenes if scenes is None else scenes
        parts = [f"throwbox lab synth {self.folder(root, scenes)} --scenes {n} --seed {self.seed}"]
        if self.mix != "normal=1":
            parts.append(f"--mix {self.mix}")
        if self.resolutions:
            parts.append(f"--resolutions {self.resolutions}")
        if self.oblique != 0.25:
            parts.append(f"--oblique {self.oblique:g}")
        if self.see_through:
            parts.append(f"--see-through {self.see_through:g}")
        if self.style != "usual":
            parts.append(f"--style {self.style}")
        if self.die_style is not None:
            parts.append(f"--die-style {self.die_style}")
        return " ".join(parts)


def _risk(
    name: str,
    scenes: int,
    seed: int,
    used_for: str,
    *,
    see_through: float = 0.0,
    style: str = "usual",
    die_style: str | None = None,
) -> NamedSet:
    """Issue 55's risk sets: clearbig's recipe (docs/history/faces-wrong-rate.md) on seeds no set used."""
    return NamedSet(
        name, "risk", scenes, seed, "normal=0.8,cluster=0.2", R40, oblique=0.4, see_through=see_through,
        used_for=used_for, style=style, die_style=die_style,
    )  # fmt: skip


def _clear(seed: int, strength: float) -> NamedSet:
    return NamedSet(
        f"cleartrain-s{seed}",
        "synth",
        500,
        seed,
        "normal=0.8,cluster=0.2",
        R40,
        oblique=0.4,
        see_through=strength,
        used_for="face stages 18-18c (clear casino dice; models/pips_facenet/README.md)",
    )


NAMED_SETS: dict[str, NamedSet] = {
    s.name: s
    for s in (
        # Held out: read by the README's figures, trained on by nothing.
        NamedSet("val-v1", "synth", 500, 2, resolutions=R50, used_for="held out: the reader's figures"),
        NamedSet("mix-v2", "synth", 2000, 3, MIX_V2, R60, used_for="held out: the judge's figures"),
        # Held out (issue 48): the wide style's looks and, with the same seed (the same throws and cameras),
        # the usual looks, to read side by side; never trained or tuned on.
        NamedSet(
            "wide-s14000",
            "judge",
            2000,
            14000,
            MIX_V2,
            R60,
            style="wide",
            used_for="held out: the judge's figures on the wide style's looks",
        ),
        NamedSet(
            "usual-s14000",
            "judge",
            2000,
            14000,
            MIX_V2,
            R60,
            used_for="held out: wide-s14000's throws and cameras with the usual looks",
        ),
        # Issue 55 (docs/risk.md): home, >= 10,000 usual dice; away, >= 5,000 dice of each look no
        # training set uses (the wide style; the wide palette's smoke-grey translucent dice with every
        # hidden face's pips showing through at full strength, where training saw 0.2-0.65 of the usual
        # palette's); and a tuning set for the calibration and the bars, apart from every judging set.
        _risk("home-s55000", 1020, 55000, "held out: issue 55's home set", see_through=0.5),
        _risk("wide-s55100", 520, 55100, "held out: issue 55's away set, the wide style", style="wide"),
        _risk(
            "translucent-s55200",
            520,
            55200,
            "held out: issue 55's away set, translucent dice showing every hidden pip",
            style="wide",
            die_style="wide-smoke-white",
            see_through=1.0,
        ),
        _risk("tune-s55900", 300, 55900, "issue 55's tuning set: calibration and bars", see_through=0.5),
        # Training sets of the shipped models and the stages they were trained from.
        NamedSet("train-v1", "synth", 2000, 1, resolutions=R50, used_for="detector and face models"),
        NamedSet(
            "layout-s800",
            "synth",
            300,
            800,
            "normal=0.2,cluster=0.1,layout=0.35,extra_roll=0.35",
            used_for="detector and die-state models (layout and Extra Roll scenes)",
        ),
        NamedSet(
            "facetrain-s3300",
            "synth",
            1200,
            3300,
            "normal=0.8,cluster=0.2",
            R40,
            oblique=0.6,
            used_for="face stages 16-18c (oblique cameras)",
        ),
        _clear(9400, 0.2),
        _clear(9401, 0.35),
        _clear(9402, 0.5),
        _clear(9403, 0.65),
        NamedSet(
            "cocktrain-s10400",
            "synth",
            1000,
            10400,
            "normal=0.15,cocked=0.85",
            R60,
            used_for="face stage 18c (dice cocked on chips)",
        ),
        NamedSet(
            "cocktrain-s10401",
            "synth",
            1000,
            10401,
            "normal=0.15,cocked=0.85",
            R60,
            see_through=0.4,
            used_for="face stage 18c (clear dice cocked on chips)",
        ),
        NamedSet(
            "train-s600",
            "judge",
            2000,
            600,
            "normal=0.25,cluster=0.05,cocked=0.2,wedged=0.15,stacked=0.2,off_table=0.15",
            R50,
            used_for="die-state model; face stages 14a-18c",
        ),
        NamedSet(
            "propped-s1600",
            "judge",
            600,
            1600,
            "propped=0.7,normal=0.3",
            R50,
            used_for="face stages 14a-18c (dice propped against a die)",
        ),
    )
}


def named_set(name: str) -> NamedSet:
    """The set of that name; a `KeyError` naming the known ones otherwise."""
    try:
        return NAMED_SETS[name]
    except KeyError:
        raise KeyError(f"no data set named {name!r}; known: {', '.join(NAMED_SETS)}") from None
