"""lab.blend: two exports of one graph mixed weight by weight; anything else refused."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from lab.blend import GraphMismatchError, blend_files, blend_models  # noqa: E402
from vision.onnx_session import onnxruntime_session  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def conv_model(seed: int, *, out_channels: int = 4, axes: list[int] | None = None) -> Any:
    """A 3x3 convolution with bias, then a ReduceMean over `axes` (an int64 initializer, not a weight)."""
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(out_channels, 3, 3, 3)).astype(np.float32)
    b = rng.normal(size=(out_channels,)).astype(np.float32)
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["y"], pads=[1, 1, 1, 1]),
        helper.make_node("ReduceMean", ["y", "axes"], ["z"], keepdims=1),
    ]
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("z", TensorProto.FLOAT, [1, out_channels, 1, 1])],
        initializer=[
            numpy_helper.from_array(w, "w"),
            numpy_helper.from_array(b, "b"),
            numpy_helper.from_array(np.asarray(axes or [2, 3], np.int64), "axes"),
        ],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def weights(model: Any) -> dict[str, np.ndarray]:
    return {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}


def test_every_weight_is_mixed_by_the_given_share_and_the_rest_kept() -> None:
    a, b = conv_model(1), conv_model(2)
    mixed = weights(blend_models(a, b, 0.25))
    wa, wb = weights(a), weights(b)
    for name in ("w", "b"):
        np.testing.assert_allclose(mixed[name], 0.75 * wa[name] + 0.25 * wb[name], rtol=1e-6, atol=1e-6)
        assert mixed[name].dtype == np.float32
    np.testing.assert_array_equal(mixed["axes"], wa["axes"])
    # The inputs are left as they were.
    np.testing.assert_array_equal(weights(a)["w"], wa["w"])


def test_the_ends_of_the_mix_are_the_two_models(tmp_path: Path) -> None:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(conv_model(1), str(a))
    onnx.save(conv_model(2), str(b))
    x = np.random.default_rng(0).normal(size=(1, 3, 8, 8)).astype(np.float32)

    def run(path: Path) -> np.ndarray:
        session = onnxruntime_session(path, 1, ("CPUExecutionProvider",))
        return np.asarray(session.run(None, {"x": x})[0])

    for weight, source in ((0.0, a), (1.0, b)):
        out = tmp_path / f"mix-{weight}.onnx"
        digest = blend_files(a, b, weight, out)
        assert len(digest) == 64
        np.testing.assert_allclose(run(out), run(source), rtol=1e-6, atol=1e-6)
    half = tmp_path / "half.onnx"
    blend_files(a, b, 0.5, half)
    # Conv then a mean are linear in the weights: the half mix reads the mean of the two outputs.
    np.testing.assert_allclose(run(half), (run(a) + run(b)) / 2, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize(
    ("other", "message"),
    [
        (conv_model(2, out_channels=5), "initializer w"),
        (conv_model(2, axes=[2]), "initializer axes"),
    ],
)
def test_different_graphs_are_refused_with_the_difference(other: Any, message: str) -> None:
    with pytest.raises(GraphMismatchError, match=message):
        blend_models(conv_model(1), other, 0.5)


def test_a_different_node_list_is_refused() -> None:
    other = conv_model(2)
    other.graph.node[1].op_type = "ReduceMax"
    with pytest.raises(GraphMismatchError, match="node 1"):
        blend_models(conv_model(1), other, 0.5)


def test_a_node_with_other_attributes_is_refused() -> None:
    other = conv_model(2)
    other.graph.node[0].attribute.append(helper.make_attribute("strides", [2, 2]))
    with pytest.raises(GraphMismatchError, match="node 0"):
        blend_models(conv_model(1), other, 0.5)


@pytest.mark.parametrize("weight", [-0.1, 1.5, float("nan")])
def test_a_share_outside_0_to_1_is_refused(weight: float) -> None:
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        blend_models(conv_model(1), conv_model(2), weight)


def test_the_command_says_what_it_wrote_and_refuses_a_missing_file(tmp_path: Path) -> None:
    a, b = tmp_path / "a.onnx", tmp_path / "b.onnx"
    onnx.save(conv_model(1), str(a))
    onnx.save(conv_model(2), str(b))
    out = tmp_path / "c.onnx"
    cmd = [sys.executable, "-m", "lab.blend", str(a), str(b), "--weight", "0.3", "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert "0.7 x a.onnx + 0.3 x b.onnx" in done.stdout and out.is_file()
    cmd[3] = str(tmp_path / "missing.onnx")
    missing = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, check=False)
    assert missing.returncode != 0 and "not found" in missing.stderr
