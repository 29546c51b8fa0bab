"""`python -m models.expose_embedding`: the shipped 18c's second output, `embedding`, is its pooled features,
added with no weight changed, so `probs` is the same to the bit. Skipped without the onnx package."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from models.expose_embedding import EMBEDDING, ExposeError, expose_embedding
from vision.onnx_session import MANIFEST_PATH, load_manifest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")


def _run(path: Path, batch: np.ndarray) -> list[np.ndarray]:
    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return [np.asarray(o) for o in session.run(None, {session.get_inputs()[0].name: batch})]


def test_the_shipped_face_model_has_its_embedding_and_probs_unchanged(tmp_path: Path) -> None:
    spec = load_manifest(MANIFEST_PATH)["pips"]
    shipped = MANIFEST_PATH.parent / spec.file
    # The model as it was exported (probs alone): the shipped one with the added output taken off again.
    model = onnx.load(str(shipped))
    assert [o.name for o in model.graph.output][1:] == [EMBEDDING]
    del model.graph.output[1]
    kept = [n for n in model.graph.node if EMBEDDING not in n.output]
    del model.graph.node[:]
    model.graph.node.extend(kept)
    bare = tmp_path / "bare.onnx"
    onnx.save(model, str(bare))

    again = tmp_path / "again.onnx"
    assert expose_embedding(bare, again) == "/ReduceMean_output_0"
    batch = np.random.default_rng(0).random((5, 3, 64, 64), dtype=np.float32)
    (probs_bare,) = _run(bare, batch)
    probs, embedding = _run(again, batch)
    probs_shipped, embedding_shipped = _run(shipped, batch)
    assert np.array_equal(probs, probs_bare) and np.array_equal(probs_shipped, probs_bare)
    assert embedding.shape == (5, 96) and np.array_equal(embedding, embedding_shipped)
    with pytest.raises(ExposeError, match="already has"):
        expose_embedding(shipped, tmp_path / "twice.onnx")
