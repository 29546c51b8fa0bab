"""Mix the weights of two ONNX exports of one network: `(1 - w) * A + w * B`, every float initializer.

    .venv/bin/python -m lab.blend A.onnx B.onnx --weight 0.5 --out C.onnx

Why: a model fine-tuned for something new (a camera's light and noise, detector stages 11-11d) often loses a
little of what it held before (clean photos of one real set or the other), and the weights half way between
the model it started from and the fine-tuned one often keep most of both. This is weight-space ensembling
("WiSE-FT", Wortsman et al., CVPR 2022; "model soups", ICML 2022), which asks that both models descend from
one set of weights, as the detector's stages do (each was trained from the committed export before it).

The two files must be the same graph: the same nodes (with their attributes) in the same order and the
same initializers by name, shape and type (exports of one architecture by one exporter); anything else is
refused with the first difference. The batch norms are folded into the convolutions in an export, so what is
mixed is each layer's effective weights and biases; non-float initializers (shapes, indices) must be equal and
are kept.
Hand-written on the `onnx` package's own helpers (the `train`/`dev` extras): no library mixes two ONNX files.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

import numpy as np

from vision.onnx_session import sha256_of


class GraphMismatchError(ValueError):
    """The two models are not the same graph, so their weights cannot be mixed."""


def blend_models(a: Any, b: Any, weight: float) -> Any:
    """A copy of ONNX model `a` whose float initializers are `(1 - weight) * a + weight * b`.

    Raises:
        ValueError: `weight` outside [0, 1].
        GraphMismatchError: the graphs differ (nodes, initializer names, shapes or types, a non-float value).
    """
    import onnx
    from onnx import numpy_helper

    if not 0.0 <= weight <= 1.0:
        raise ValueError(f"the weight of the second model must be in [0, 1], got {weight}")

    def node_list(model: Any) -> list[tuple[str, list[str], list[str], list[bytes]]]:
        # Attributes too (strides, pads, groups): the same weights under other attributes are another net.
        return [
            (n.op_type, list(n.input), list(n.output), [x.SerializeToString() for x in n.attribute])
            for n in model.graph.node
        ]

    nodes_a, nodes_b = node_list(a), node_list(b)
    if nodes_a != nodes_b:
        first = next((i for i, (x, y) in enumerate(zip(nodes_a, nodes_b, strict=False)) if x != y), None)
        at = f"node {first}" if first is not None else f"{len(nodes_a)} against {len(nodes_b)} nodes"
        raise GraphMismatchError(f"the two graphs differ ({at})")
    inits_b = {t.name: t for t in b.graph.initializer}
    out = onnx.ModelProto()
    out.CopyFrom(a)
    for tensor in out.graph.initializer:
        other = inits_b.pop(tensor.name, None)
        if other is None:
            raise GraphMismatchError(f"initializer {tensor.name} is missing from the second model")
        x, y = numpy_helper.to_array(tensor), numpy_helper.to_array(other)
        if x.shape != y.shape or x.dtype != y.dtype:
            raise GraphMismatchError(
                f"initializer {tensor.name}: {x.dtype}{list(x.shape)} against {y.dtype}{list(y.shape)}"
            )
        if np.issubdtype(x.dtype, np.floating):
            mixed = (1.0 - weight) * x.astype(np.float64) + weight * y.astype(np.float64)
            tensor.CopyFrom(numpy_helper.from_array(mixed.astype(x.dtype), tensor.name))
        elif not np.array_equal(x, y):
            raise GraphMismatchError(f"initializer {tensor.name} ({x.dtype}) differs and is not a weight")
    if inits_b:
        raise GraphMismatchError(f"the second model has initializers the first lacks: {sorted(inits_b)[:3]}")
    return out


def blend_files(a: Path, b: Path, weight: float, out: Path) -> str:
    """Write the mix of two ONNX files to `out` (checked by onnx's checker); return its SHA-256."""
    import onnx

    model = blend_models(onnx.load(str(a)), onnx.load(str(b)), weight)
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        raise ValueError(f"the mix fails onnx's model checker: {exc}") from exc
    out.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(out))
    return sha256_of(out)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("first", type=Path, help="the model the mix starts from (weight 1 - w)")
    parser.add_argument("second", type=Path, help="the model mixed in (weight w)")
    parser.add_argument("--weight", type=float, required=True, help="w, the second model's share in [0, 1]")
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    for path in (args.first, args.second):
        if not path.is_file():
            raise SystemExit(f"{path} not found")
    try:
        digest = blend_files(args.first, args.second, args.weight, args.out)
    except ValueError as exc:
        raise SystemExit(f"cannot mix {args.first} and {args.second}: {exc}") from exc
    print(
        f"{args.out}: {1 - args.weight:g} x {args.first.name} + {args.weight:g} x {args.second.name}, "
        f"SHA-256 {digest}"
    )


if __name__ == "__main__":
    main()
