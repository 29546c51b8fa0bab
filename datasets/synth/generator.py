"""One synthetic scene from (seed, index): scenario physics, camera, look, render, degrade, ground truth.

`generate_scene` is a pure function of its configuration and index (given the renderer), which is what makes
a data set identical whatever the number of worker processes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from calibration.camera import Camera
from calibration.layout import ThrowBoxLayout
from datasets.format import FORMAT_VERSION, SCENARIOS, SceneTruth
from datasets.synth.physics import ChipStack
from datasets.synth.randomise import (
    CHIP_COLOURS,
    Degradation,
    degrade,
    encode_jpeg,
    sample_camera,
    sample_degradation,
    sample_die_styles,
    sample_lighting,
    sample_wide_chip_colour,
    sample_wide_degradation,
    sample_wide_die_styles,
    sample_wide_lighting,
)
from datasets.synth.render import Lighting, RenderOutput, SceneLook, SceneRenderer
from datasets.synth.scenarios import SCENARIO_FUNCS, ScenarioOutcome
from datasets.synth.textures import DIE_STYLES
from datasets.synth.truth import image_truth, physical_truth, scene_verdict
from datasets.synth.wide import STYLES

# 0.2.0 (2026-11-30): a die propped on an edge or corner contact rests on its lower side
# (`datasets.synth.dice.resting_side`), and a body lying on a die gives it no resting side.
GENERATOR_VERSION = "throwbox-synth 0.2.0"
DEFAULT_RESOLUTIONS: tuple[tuple[int, int, float], ...] = ((1280, 960, 1.0),)


class ConfigError(ValueError):
    """The generator was asked for something it cannot make (unknown scenario, bad mix, bad size)."""


def parse_mix(text: str) -> dict[str, float]:
    """`normal=0.7,cocked=0.1,...` -> normalised weights; unknown or unimplemented names are an error."""
    mix: dict[str, float] = {}
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        name, sep, value = part.partition("=")
        name = name.strip()
        if not sep:
            raise ConfigError(f"mix entry {part!r} must look like name=weight")
        if name not in SCENARIOS:
            raise ConfigError(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
        if name not in SCENARIO_FUNCS:
            raise ConfigError(f"scenario {name!r} is not implemented yet")
        try:
            weight = float(value)
        except ValueError as exc:
            raise ConfigError(f"weight of {name!r} is not a number: {value!r}") from exc
        if weight < 0 or not np.isfinite(weight):
            raise ConfigError(f"weight of {name!r} must be a finite number >= 0, got {weight}")
        mix[name] = mix.get(name, 0.0) + weight
    total = sum(mix.values())
    if total <= 0:
        raise ConfigError("the mix needs at least one scenario with a positive weight")
    return {k: v / total for k, v in mix.items()}


def parse_resolutions(text: str) -> tuple[tuple[int, int, float], ...]:
    """`1280x960:0.5,640x480:0.5` (weights optional) -> ((w, h, weight), ...)."""
    out: list[tuple[int, int, float]] = []
    for part in text.split(","):
        part = part.strip()
        if not part:
            continue
        size, _, weight = part.partition(":")
        try:
            w_text, h_text = size.lower().split("x")
            w, h = int(w_text), int(h_text)
            wt = float(weight) if weight else 1.0
        except ValueError as exc:
            raise ConfigError(f"resolution {part!r} must look like WIDTHxHEIGHT[:weight]") from exc
        if not (32 <= w <= 8192 and 32 <= h <= 8192) or wt <= 0:
            raise ConfigError(f"resolution {part!r} out of range (32..8192 px, weight > 0)")
        out.append((w, h, wt))
    if not out:
        raise ConfigError("no resolution given")
    return tuple(out)


@dataclass(frozen=True)
class GeneratorConfig:
    """What a data set is made of; together with the index it fixes every scene."""

    seed: int
    n_dice: int = 10
    mix: dict[str, float] = field(default_factory=lambda: {"normal": 1.0})
    resolutions: tuple[tuple[int, int, float], ...] = DEFAULT_RESOLUTIONS
    oblique_fraction: float = 0.25
    layout: ThrowBoxLayout = field(default_factory=ThrowBoxLayout)
    # How strongly translucent dice show the pips of their other faces through the body (0: not at all, as
    # every set before 2026-12-02; `datasets.synth.textures.ghost_pips`). Only the dice's textures change:
    # a set made with it shows the same throws, cameras and light as the same seed made without it.
    see_through: float = 0.0
    # A loaded die (issue 49): (die index 0-based, face, bias), the face at 1/6 + bias on that die and the
    # other five sharing the rest; None: fair dice, the throws of every set before it. See `simulate_scene`.
    loaded_die: tuple[int, int, float] | None = None
    # How the scenes look (issue 48): "usual", the looks every training set was drawn from, or "wide", dice,
    # felts, light and camera noise beyond them (`datasets.synth.wide`, `randomise.sample_wide_*`). The
    # same seed gives the same throws and cameras in both styles.
    style: str = "usual"
    # One dice style for every die (a name of `datasets.synth.textures.DIE_STYLES`, or with the wide style
    # of `datasets.synth.wide.WIDE_DIE_STYLES`: issue 55's translucent away set), e.g. a style held out
    # of training (issue 47's enrollment figure); None: styles drawn as before. The styles are still drawn,
    # so a set made with it shows the same throws, cameras and light as the same seed made without it.
    die_style: str | None = None
    # One felt for every scene (a name of `SceneRenderer.felt_names(style)`): a table has one felt, as it
    # has one set of dice (issue 56's one-table learn-bench). None: a felt drawn per scene, as before; it is
    # still drawn, so the same seed gives the same throws, cameras and light with or without it.
    felt: str | None = None

    def __post_init__(self) -> None:
        if self.style not in STYLES:
            raise ConfigError(f"style must be one of {', '.join(STYLES)}, got {self.style!r}")
        if self.n_dice not in (6, 10):
            raise ConfigError(f"High Roll Dice uses 10 dice (6 in the variation), got {self.n_dice}")
        for name in self.mix:
            if name not in SCENARIO_FUNCS:
                raise ConfigError(f"scenario {name!r} is not implemented")
        if not self.resolutions:
            raise ConfigError("no resolution given")
        if not 0.0 <= self.see_through <= 1.0:
            raise ConfigError(f"see_through must lie in 0..1, got {self.see_through}")
        if self.die_style is not None:
            from datasets.synth.wide import WIDE_DIE_STYLES

            palette = DIE_STYLES if self.style == "usual" else WIDE_DIE_STYLES
            if self.die_style not in {s.name for s in palette}:
                names = ", ".join(s.name for s in palette)
                raise ConfigError(f"no {self.style} dice style named {self.die_style!r}; known: {names}")
        if self.felt is not None:
            from datasets.synth.render import SceneRenderer

            felts = SceneRenderer.felt_names(self.style)
            if self.felt not in felts:
                raise ConfigError(f"no {self.style} felt named {self.felt!r}; known: {', '.join(felts)}")
        if self.loaded_die is not None:
            die, face, bias = self.loaded_die
            if not 0 <= die < self.n_dice or face not in range(1, 7) or not -1 / 6 <= bias <= 5 / 6:
                raise ConfigError(
                    f"a loaded die is a die 0..{self.n_dice - 1}, a face 1..6, a bias -1/6..5/6"
                )


@dataclass(frozen=True)
class GeneratedScene:
    """A scene ready to write: JPEG bytes, the ground truth (image path relative to the data set)."""

    jpeg: bytes
    truth: SceneTruth


def scene_rng(seed: int, index: int, stream: int = 0) -> np.random.Generator:
    """The random stream of one scene (independent of every other scene)."""
    return np.random.default_rng([seed, index, stream])


def pick_scenario(cfg: GeneratorConfig, rng: np.random.Generator) -> str:
    """Draw a scenario name from the mix."""
    names = sorted(cfg.mix)
    probs = np.array([cfg.mix[n] for n in names], dtype=np.float64)
    return str(rng.choice(names, p=probs / probs.sum()))


def parse_loaded_die(text: str) -> tuple[int, int, float]:
    """'DIE:FACE:BIAS' (die 1-based, e.g. '1:6:0.05') -> `GeneratorConfig.loaded_die` (die 0-based)."""
    try:
        die, face, bias = text.split(":")
        return int(die) - 1, int(face), float(bias)
    except ValueError as exc:
        raise ConfigError(f"a loaded die is DIE:FACE:BIAS, e.g. 1:6:0.05; got {text!r}") from exc


# Throws tried per scene before a loaded die's face is given up on (a bias of 5/6 needs about 6).
MAX_LOADED_ATTEMPTS = 200


def simulate_scene(cfg: GeneratorConfig, index: int) -> ScenarioOutcome:
    """The physics of scene `index` (no rendering).

    With a loaded die, the throw is drawn again (a new stream per attempt) until an acceptance draw keeps
    it, with probability weight(face) / max weight for the face the loaded die came to rest on: rejection
    sampling over the physics, so the loaded die shows its faces with exactly the stated weights (the
    physics' own faces being fair) while the dice still roll, bounce and cock as any other throw. A die
    that shows no face (cocked, off the table) keeps its throw.
    """
    rng = scene_rng(cfg.seed, index, 0)
    name = pick_scenario(cfg, rng)
    outcome = SCENARIO_FUNCS[name](rng, cfg.layout, cfg.n_dice)
    if cfg.loaded_die is None:
        return outcome
    die, face, bias = cfg.loaded_die
    weights = np.full(6, (1 - (1 / 6 + bias)) / 5)
    weights[face - 1] = 1 / 6 + bias
    accept = weights / weights.max()
    draws = scene_rng(cfg.seed, index, 3)
    for attempt in range(MAX_LOADED_ATTEMPTS):
        if die >= len(outcome.result.poses):
            return outcome
        shown = physical_truth(outcome.result.poses[die], outcome.result.contacts[die], cfg.layout).face
        if shown is None or draws.random() < accept[shown - 1]:
            return outcome
        rng = np.random.default_rng([cfg.seed, index, 0, attempt + 1])
        outcome = SCENARIO_FUNCS[name](rng, cfg.layout, cfg.n_dice)
    raise ConfigError(
        f"scene {index}: the loaded die showed no accepted face in {MAX_LOADED_ATTEMPTS} throws"
    )


@dataclass(frozen=True)
class SceneLookDraw:
    """Everything drawn for how a scene looks: camera, dice styles, felt, light, chips, degradations."""

    camera: Camera
    look: SceneLook
    lighting: Lighting
    chips: tuple[ChipStack, ...]
    degradation: Degradation
    # The wide style's light, as drawn: colour temperature (K) and "hard" or "soft"; None in the usual style.
    light_kelvin: float | None = None
    light_kind: str | None = None


def draw_look(cfg: GeneratorConfig, outcome: ScenarioOutcome, rng: np.random.Generator) -> SceneLookDraw:
    """Draw the camera and the appearance of a scene (its own random stream: it never moves a die)."""
    sizes = cfg.resolutions
    weights = np.array([s[2] for s in sizes], dtype=np.float64)
    w, h, _ = sizes[int(rng.choice(len(sizes), p=weights / weights.sum()))]
    camera = sample_camera(
        rng, cfg.layout, width_px=w, height_px=h, oblique=bool(rng.random() < cfg.oblique_fraction)
    )
    if cfg.style == "wide":
        return _draw_wide_look(outcome, rng, camera, die_style=cfg.die_style, felt=cfg.felt)
    styles = sample_die_styles(rng, len(outcome.result.poses))
    if cfg.die_style is not None:
        styles = (cfg.die_style,) * len(styles)
    felts = SceneRenderer.felt_names()
    drawn_felt = felts[int(rng.integers(len(felts)))]
    look = SceneLook(die_styles=styles, felt=cfg.felt or drawn_felt)
    lighting = sample_lighting(rng)
    chips = tuple(
        ChipStack(c.x_mm, c.y_mm, c.n_chips, CHIP_COLOURS[int(rng.integers(len(CHIP_COLOURS)))])
        for c in outcome.world.chips
    )
    return SceneLookDraw(camera, look, lighting, chips, sample_degradation(rng))


def _draw_wide_look(
    outcome: ScenarioOutcome,
    rng: np.random.Generator,
    camera: Camera,
    *,
    die_style: str | None = None,
    felt: str | None = None,
) -> SceneLookDraw:
    """The wide style's look after the camera (drawn as the usual style draws it; `die_style` for every die
    and `felt` in place of those drawn, which are drawn all the same)."""
    styles = sample_wide_die_styles(rng, len(outcome.result.poses))
    if die_style is not None:
        styles = (die_style,) * len(styles)
    felts = SceneRenderer.felt_names("wide")
    drawn_felt = felts[int(rng.integers(len(felts)))]
    look = SceneLook(die_styles=styles, felt=felt or drawn_felt)
    lighting, kelvin, kind = sample_wide_lighting(rng)
    chips = tuple(
        ChipStack(c.x_mm, c.y_mm, c.n_chips, sample_wide_chip_colour(rng)) for c in outcome.world.chips
    )
    return SceneLookDraw(camera, look, lighting, chips, sample_wide_degradation(rng), kelvin, kind)


def build_truth(
    cfg: GeneratorConfig,
    outcome: ScenarioOutcome,
    draw: SceneLookDraw,
    out: RenderOutput,
    *,
    index: int,
    scene_id: str,
    image: str,
) -> SceneTruth:
    """The ground truth of a rendered final state."""
    camera = draw.camera
    phys = [
        physical_truth(p, c, cfg.layout)
        for p, c in zip(outcome.result.poses, outcome.result.contacts, strict=True)
    ]
    dice = tuple(
        image_truth(
            die_id=i,
            pose=pose,
            phys=ph,
            camera=camera,
            seg=out.seg,
            seg_id=out.die_ids[i],
            edge_mm=outcome.world.die_edge_mm,
            kept=outcome.kept[i],
            style=draw.look.die_styles[i],
        )
        for i, (pose, ph) in enumerate(zip(outcome.result.poses, phys, strict=True))
    )
    verdict, reasons = scene_verdict(phys, expected=outcome.expected_dice, missing=outcome.missing)
    hom = camera.plane_homography()
    lighting = draw.lighting
    render_info = {
        "renderer": out.renderer,
        "width_px": camera.intrinsics.width_px,
        "height_px": camera.intrinsics.height_px,
        "settled": outcome.result.settled,
        "sim_time_s": round(outcome.result.sim_time_s, 4),
        "felt": draw.look.felt,
        "lighting": {
            "direction": list(lighting.direction),
            "ambient": lighting.ambient,
            "diffuse": lighting.diffuse,
            "specular": lighting.specular,
            "shadow": lighting.shadow,
        },
        "degradation": draw.degradation.as_dict(),
        "note": outcome.note,
    }
    if cfg.see_through > 0:
        render_info["see_through"] = cfg.see_through
    if cfg.style != "usual":
        render_info["style"] = cfg.style
        render_info["light"] = {
            "colour": list(lighting.colour),
            "kelvin": draw.light_kelvin,
            "kind": draw.light_kind,
        }
    if cfg.die_style is not None:
        render_info["die_style"] = cfg.die_style
    return SceneTruth(
        scene_id=scene_id,
        image=image,
        scenario=outcome.scenario,
        verdict=verdict,
        reasons=reasons,
        expected_dice=outcome.expected_dice,
        dice=dice,
        camera=camera,
        homography_px_from_mm=tuple((float(r[0]), float(r[1]), float(r[2])) for r in hom),
        seed=cfg.seed,
        index=index,
        generator=GENERATOR_VERSION,
        render=render_info,
        format=FORMAT_VERSION,
        layout_move=outcome.layout_move,
    )


def generate_scene(cfg: GeneratorConfig, index: int, renderer: SceneRenderer) -> GeneratedScene:
    """Make scene `index`: physics, camera, look, render, degradations, ground truth."""
    outcome = simulate_scene(cfg, index)
    rng = scene_rng(cfg.seed, index, 1)  # the look has its own stream: changing it never moves a die
    draw = draw_look(cfg, outcome, rng)
    out = renderer.render(
        draw.camera, dice=outcome.result.poses, chips=draw.chips, look=draw.look, lighting=draw.lighting
    )
    image = degrade(out.image, draw.degradation, rng)
    scene_id = f"s{cfg.seed:04d}-{index:06d}"
    truth = build_truth(
        cfg, outcome, draw, out, index=index, scene_id=scene_id, image=f"images/{scene_id}.jpg"
    )
    return GeneratedScene(encode_jpeg(image, draw.degradation.jpeg_quality), truth)
