"""Give a trained face model a second output, `embedding`, so that a table can be enrolled on it.

    python -m models.expose_embedding IN.onnx OUT.onnx [--tensor NAME]

Table enrollment (`vision/pips/enrolled.py`, `vision/pips/enroll/`) fits a correction of a face model's head
on the features its head reads: the model's second output, `embedding`. The faces nets trained by `throwbox
train faces` export it; the shipped stage 18c (`models/nets.py::FaceClassifier`, five convolutions, global
average pooling, one linear layer) was exported with `probs` alone. Its pooled features are already a tensor
of the graph (the input of the final `Gemm`), so this adds that tensor as a graph output and changes nothing
else: no weight, no node. `probs` stays the first output and is computed by the same nodes, so every read
is the same to the bit (`tests/models/test_expose_embedding.py` checks it, and the golden outputs of
`tests/golden/` do not move); the file's SHA-256 changes, and the manifest takes the new one.

`--tensor` names the tensor to expose; by default the first input of the `Gemm` whose output the final
`Softmax` reads (the pooled features). The onnx package is needed (the dev and train extras have it); the
service does not need it: it reads the output with onnxruntime.
"""

from __future__ import annotations

import argparse
from pathlib import Path

EMBEDDING = "embedding"


class ExposeError(ValueError):
    """The graph is not the shape this tool knows (or already has an embedding output)."""


def pooled_features_tensor(graph: object) -> str:
    """The input of the `Gemm` feeding the graph's final `Softmax` (`probs`)."""
    nodes = list(graph.node)  # type: ignore[attr-defined]
    produced_by = {out: node for node in nodes for out in node.output}
    outputs = [o.name for o in graph.output]  # type: ignore[attr-defined]
    if not outputs:
        raise ExposeError("the graph has no output")
    softmax = produced_by.get(outputs[0])
    if softmax is None or softmax.op_type != "Softmax":
        raise ExposeError(f"the first output {outputs[0]!r} is not made by a Softmax")
    gemm = produced_by.get(softmax.input[0])
    if gemm is None or gemm.op_type != "Gemm":
        raise ExposeError("the Softmax does not read a Gemm: not a pooled-features-then-linear head")
    return str(gemm.input[0])


def expose_embedding(source: Path, target: Path, tensor: str | None = None) -> str:
    """Write `target`: `source` with `tensor` (default: the pooled features) as a second output `embedding`.

    Returns the name of the tensor exposed. The tensor is passed through an `Identity` node named
    `embedding`, so the output has the name enrollment looks for whatever the exporter called it.
    """
    import onnx
    from onnx import helper, shape_inference

    model = onnx.load(str(source))
    graph = model.graph
    if any(o.name == EMBEDDING for o in graph.output):
        raise ExposeError(f"{source} already has an {EMBEDDING!r} output")
    name = tensor or pooled_features_tensor(graph)
    inferred = shape_inference.infer_shapes(model)
    info = next((v for v in inferred.graph.value_info if v.name == name), None)
    if info is None:
        raise ExposeError(f"no tensor {name!r} with a known shape in {source}")
    graph.node.append(helper.make_node("Identity", [name], [EMBEDDING], name="expose_embedding"))
    output = helper.make_tensor_value_info(EMBEDDING, info.type.tensor_type.elem_type, None)
    output.type.tensor_type.shape.CopyFrom(info.type.tensor_type.shape)
    graph.output.append(output)
    onnx.checker.check_model(model)
    target.parent.mkdir(parents=True, exist_ok=True)
    onnx.save(model, str(target))
    return name


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    parser.add_argument("--tensor", default=None, help="The tensor to expose (default: the pooled features).")
    args = parser.parse_args()
    try:
        name = expose_embedding(args.source, args.target, args.tensor)
    except ExposeError as exc:
        raise SystemExit(f"expose_embedding: {exc}") from exc
    from vision.onnx_session import sha256_of

    print(f"{args.target}: {name!r} exposed as {EMBEDDING!r}; sha256 {sha256_of(args.target)}")


if __name__ == "__main__":
    main()
