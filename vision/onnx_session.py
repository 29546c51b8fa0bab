"""The one place that imports onnxruntime: explicit providers, bounded threads, SHA-256 checked at load.

Exceptions::

    ModelError                  base of every error raised while finding or loading a model
    ├── ManifestError           models/manifest.json is missing, unreadable, or lacks the named model
    ├── ModelFileError          the weight file named by the manifest is missing or unreadable
    └── ChecksumMismatchError   the weight file's SHA-256 differs from the manifest's: refused, never run

Every model the reader runs is listed in `models/manifest.json` (file, SHA-256, input size, labels,
version). `load_model(name)` reads the manifest, checks the file's hash and only then builds an
inference session. Tests replace the session with a fake through `session_factory`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

MODELS_DIR = Path(__file__).resolve().parent.parent / "models"
MANIFEST_PATH = MODELS_DIR / "manifest.json"
DEFAULT_PROVIDERS: tuple[str, ...] = ("CPUExecutionProvider",)


class ModelError(Exception):
    """Base of every error raised while finding or loading a model."""


class ManifestError(ModelError):
    """The manifest is missing, malformed, or does not list the model asked for."""


class ModelFileError(ModelError):
    """The weight file named by the manifest is missing or unreadable."""


class ChecksumMismatchError(ModelError):
    """The weight file's SHA-256 differs from the manifest: the model is refused."""

    def __init__(self, *, path: Path, expected: str, actual: str, manifest: Path | None = None) -> None:
        self.path = path
        self.expected = expected
        self.actual = actual
        self.manifest = manifest
        named = "models/manifest.json" if manifest is None or manifest == MANIFEST_PATH else str(manifest)
        super().__init__(
            f"refusing model {path}: SHA-256 is {actual} but {named} expects {expected} "
            "(the file changed since the manifest was written; retrain/export or fix the manifest)"
        )


@dataclass(frozen=True)
class ModelSpec:
    """One manifest entry."""

    name: str
    file: str  # relative to the manifest's folder
    sha256: str
    version: str
    input_size_hw: tuple[int, int]
    labels: tuple[str, ...]
    # A detector's own score threshold, tuned for its weights with `python -m lab.tune_detector`; it
    # replaces `DetectorConfig.score_threshold` wherever the model runs (`vision.detect.DieDetector`).
    # None: the config's.
    score_threshold: float | None = None
    # A detector's own input blur (`DetectorConfig.input_blur_sigma`, px at the net's input), likewise; None:
    # the config's.
    input_blur_sigma: float | None = None
    # A second-look face model's (`pips_second`) share of an unsure die's log-probabilities and its accept
    # bar (`vision.pips.classifier.FaceReader.second_weight` / `second_accept`), the values it was judged
    # with; None: the classifier module's defaults.
    second_weight: float | None = None
    second_accept: float | None = None
    # A face model's calibration (issue 55, `throwbox lab calibrate-faces`): the temperature its
    # probabilities are read at (`FaceReader.temperature`) and the sure bar judged with it, which replaces
    # `ValidityConfig.min_confidence` (`Reader`); None: uncalibrated, the config's bar.
    temperature: float | None = None
    sure_bar: float | None = None

    @property
    def tag(self) -> str:
        """Short identifier reported with every read, e.g. `detect_centernet_2026nov`."""
        return Path(self.file).stem


class InferenceBackend(Protocol):
    """The part of `onnxruntime.InferenceSession` we use; a fake implements it in tests."""

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any]) -> list[Any]: ...

    def get_inputs(self) -> list[Any]: ...


SessionFactory = Callable[[Path, int, tuple[str, ...]], InferenceBackend]


def sha256_of(path: Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_manifest(path: Path = MANIFEST_PATH) -> dict[str, ModelSpec]:
    """Read the manifest into `ModelSpec`s keyed by model name."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ManifestError(f"model manifest not found: {path}") from exc
    except (OSError, json.JSONDecodeError) as exc:
        raise ManifestError(f"model manifest {path} is unreadable: {exc}") from exc
    models = raw.get("models") if isinstance(raw, dict) else None
    if not isinstance(models, dict):
        raise ManifestError(f"model manifest {path} must be an object with a 'models' object")
    specs: dict[str, ModelSpec] = {}
    for name, entry in models.items():
        try:
            specs[name] = ModelSpec(
                name=name,
                file=str(entry["file"]),
                sha256=str(entry["sha256"]).lower(),
                version=str(entry["version"]),
                input_size_hw=(int(entry["input_size_hw"][0]), int(entry["input_size_hw"][1])),
                labels=tuple(str(x) for x in entry.get("labels", ())),
                score_threshold=_threshold(entry.get("score_threshold")),
                input_blur_sigma=_blur_sigma(entry.get("input_blur_sigma")),
                second_weight=_optional_number(
                    entry.get("second_weight"), "second_weight", "[0, 1]", lambda v: 0.0 <= v <= 1.0
                ),
                second_accept=_optional_number(
                    entry.get("second_accept"), "second_accept", "(0, 1]", lambda v: 0.0 < v <= 1.0
                ),
                temperature=_optional_number(
                    entry.get("temperature"), "temperature", "[0.05, 20]", lambda v: 0.05 <= v <= 20.0
                ),
                sure_bar=_optional_number(
                    entry.get("sure_bar"), "sure_bar", "[0, 1]", lambda v: 0.0 <= v <= 1.0
                ),
            )
        except (KeyError, TypeError, ValueError, IndexError) as exc:
            raise ManifestError(f"model manifest entry {name!r} is malformed: {exc!r}") from exc
    return specs


def _threshold(value: object) -> float | None:
    """A manifest entry's `score_threshold`: absent, or a number strictly between 0 and 1."""
    return _optional_number(value, "score_threshold", "(0, 1)", lambda v: 0.0 < v < 1.0)


def _blur_sigma(value: object) -> float | None:
    """A manifest entry's `input_blur_sigma`: absent, or a number in [0, 5] (px at the net's input)."""
    return _optional_number(value, "input_blur_sigma", "[0, 5]", lambda v: 0.0 <= v <= 5.0)


def _optional_number(
    value: object, name: str, interval: str, within: Callable[[float], bool]
) -> float | None:
    """An optional number of a manifest entry: None when absent; a ValueError naming `name` and `interval`
    for anything but a number (not a bool) `within` accepts."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not within(float(value)):
        raise ValueError(f"{name} must be a number in {interval}, got {value!r}")
    return float(value)


def manifest_lists(*names: str, manifest_path: Path = MANIFEST_PATH) -> bool:
    """Whether the manifest can be read and names every one of `names` (no model file is opened)."""
    try:
        specs = load_manifest(manifest_path)
    except ModelError:
        return False
    return all(n in specs for n in names)


def onnxruntime_session(path: Path, threads: int, providers: tuple[str, ...]) -> InferenceBackend:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = 3
    session: InferenceBackend = ort.InferenceSession(
        str(path), sess_options=options, providers=list(providers)
    )
    return session


class OnnxModel:
    """A checked, loaded model: numpy in, numpy out."""

    def __init__(
        self,
        spec: ModelSpec,
        *,
        models_dir: Path = MODELS_DIR,
        threads: int = 1,
        providers: tuple[str, ...] = DEFAULT_PROVIDERS,
        session_factory: SessionFactory | None = None,
        manifest_path: Path | None = None,
    ) -> None:
        """`manifest_path`: the manifest `spec` came from, named if the file's SHA-256 does not match."""
        if threads < 0:
            raise ValueError(f"threads must be >= 0 (0 = onnxruntime's default), got {threads}")
        self.spec = spec
        self.threads, self.providers = threads, providers  # a table's fine-tuned model loads with the same
        path = models_dir / spec.file
        self.path = path
        if not path.is_file():
            raise ModelFileError(f"model file for {spec.name!r} not found: {path}")
        actual = sha256_of(path)
        if actual != spec.sha256:
            raise ChecksumMismatchError(
                path=path, expected=spec.sha256, actual=actual, manifest=manifest_path
            )
        factory = session_factory or onnxruntime_session
        try:
            self._session = factory(path, threads, providers)
        except ModelError:
            raise
        except Exception as exc:  # onnxruntime raises its own untyped errors for a bad graph
            raise ModelFileError(f"model {path} could not be loaded: {exc}") from exc
        inputs = self._session.get_inputs()
        if len(inputs) != 1:
            raise ModelFileError(f"model {path} must have exactly one input, has {len(inputs)}")
        self._input_name: str = str(inputs[0].name)
        # Wall time spent inside the session's run, summed over every call (ms), and the number of calls:
        # what a benchmark subtracts to tell the models' share of a read from the code around them (a
        # diagnostic: reads of one model from several threads at once may lose an addition).
        self.run_ms = 0.0
        self.runs = 0

    def run(self, batch: NDArray[np.float32]) -> list[NDArray[np.float32]]:
        """Run the model on one input tensor; return every output as float32 arrays."""
        feed = {self._input_name: np.ascontiguousarray(batch, dtype=np.float32)}
        start = time.perf_counter()
        outputs = self._session.run(None, feed)
        self.run_ms += (time.perf_counter() - start) * 1000
        self.runs += 1
        return [np.asarray(o, dtype=np.float32) for o in outputs]


def load_model(
    name: str,
    *,
    manifest_path: Path = MANIFEST_PATH,
    threads: int = 1,
    providers: tuple[str, ...] = DEFAULT_PROVIDERS,
    session_factory: SessionFactory | None = None,
) -> OnnxModel:
    """Look `name` up in the manifest, verify its SHA-256 and build its session.

    Raises:
        ManifestError: the manifest is unreadable or lacks `name`.
        ModelFileError: the weight file is missing or not a loadable model.
        ChecksumMismatchError: the file's hash differs from the manifest's.
    """
    specs = load_manifest(manifest_path)
    if name not in specs:
        raise ManifestError(f"model {name!r} is not in {manifest_path}; known: {', '.join(specs) or 'none'}")
    return OnnxModel(
        specs[name],
        models_dir=manifest_path.parent,
        threads=threads,
        providers=providers,
        session_factory=session_factory,
        manifest_path=manifest_path,
    )
