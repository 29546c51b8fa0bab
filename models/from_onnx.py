"""Start training from a committed ONNX export instead of a `last.pt` checkpoint (training only).

The exports fold each batch norm into the convolution before it (`torch.onnx.export` in eval mode), so the
checkpoint's batch-norm statistics are not in the file. `init_from_onnx` puts the folded weights back into a
PyTorch net of the same architecture and "unfolds" each batch norm from the statistics of a calibration
batch (crops drawn from the training data): with conv output z = W x (W folded) and per-channel mean mu and
standard deviation s of z over the batch, the batch norm gets running mean mu, running variance s^2 - eps,
weight s and bias mu + b (b the folded bias). In eval mode the net then computes W x + b, the export's
function, exactly; in train mode the batch statistics are close to mu and s, so the first steps of
fine-tuning start from nearly the same function instead of from a net whose batch norms scale every channel
afresh.

Why: the checkpoints are not committed (models/*/last.pt is ignored, a few MB each stage) and a lost one
broke a chain of fine-tuning stages (models/pips_facenet/README.md, stage 14); the ONNX file is always in
the repository, checked by its SHA-256.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
import torch
from onnx import numpy_helper
from torch import Tensor, nn


def _module_path(node: onnx.NodeProto) -> str:
    """'/features/features.0/features.0.0/Conv_output_0' -> 'features.0.0' (the legacy exporter's names)."""
    scope: str = node.output[0].rsplit("/", 1)[0]
    return scope.rsplit("/", 1)[-1]


def _next_batch_norm(model: nn.Module, conv_path: str) -> tuple[nn.BatchNorm2d, Tensor, Tensor]:
    """The batch norm after a conv in its Sequential, with its running mean and variance."""
    parent_path, _, index = conv_path.rpartition(".")
    parent = model.get_submodule(parent_path) if parent_path else model
    bn = parent.get_submodule(str(int(index) + 1))
    if not isinstance(bn, nn.BatchNorm2d) or bn.running_mean is None or bn.running_var is None:
        raise ValueError(f"{conv_path} is not followed by a batch norm in {type(model).__name__}")
    return bn, bn.running_mean, bn.running_var


@torch.no_grad()
def init_from_onnx(model: nn.Module, onnx_path: Path, calibration: Tensor) -> list[str]:
    """Load `onnx_path`'s weights into `model` (same architecture); return the parameters set.

    Raises ValueError when the file does not fit the net (a missing or extra layer, another shape), so a
    wrong file never starts a run silently.
    """
    graph = onnx.load(str(onnx_path)).graph
    weights = {
        t.name: torch.from_numpy(numpy_helper.to_array(t).astype(np.float32)) for t in graph.initializer
    }
    params = dict(model.named_parameters())
    loaded: list[str] = []
    folded: list[tuple[nn.Conv2d, nn.BatchNorm2d, Tensor, Tensor, Tensor]] = []
    for node in graph.node:
        if node.op_type == "Conv":
            path = _module_path(node)
            conv = model.get_submodule(path)
            if not isinstance(conv, nn.Conv2d) or conv.bias is not None:
                raise ValueError(f"{onnx_path.name}: {path} is not a bias-free convolution of the net")
            w, b = weights[node.input[1]], weights[node.input[2]]
            if w.shape != conv.weight.shape:
                raise ValueError(
                    f"{onnx_path.name}: {path} has shape {tuple(w.shape)}, the net {tuple(conv.weight.shape)}"
                )
            conv.weight.copy_(w)
            bn, mean, var = _next_batch_norm(model, path)
            bn.weight.fill_(1.0)
            bn.bias.copy_(b)
            mean.zero_()
            var.fill_(1.0 - bn.eps)
            folded.append((conv, bn, mean, var, b))
            loaded.append(f"{path} (and its batch norm)")
        elif node.op_type == "Gemm":
            for name in node.input[1:]:
                if name not in params or params[name].shape != weights[name].shape:
                    raise ValueError(f"{onnx_path.name}: {name} does not fit the net")
                params[name].copy_(weights[name])
                loaded.append(name)
    convs = [m for m in model.modules() if isinstance(m, nn.Conv2d)]
    if len(folded) != len(convs):
        raise ValueError(f"{onnx_path.name} has {len(folded)} convolutions, the net {len(convs)}")

    # statistics of each folded conv's output (W x, before the bias) with every earlier layer already exact
    stats: dict[nn.Conv2d, tuple[Tensor, Tensor]] = {}

    def hook(module: nn.Module, _inp: tuple[Tensor, ...], out: Tensor) -> None:
        assert isinstance(module, nn.Conv2d)
        stats[module] = (out.mean(dim=(0, 2, 3)), out.var(dim=(0, 2, 3), unbiased=False))

    was_training = model.training
    model.eval()
    handles = [f[0].register_forward_hook(hook) for f in folded]
    try:
        model(calibration)
    finally:
        for h in handles:
            h.remove()
    for conv, bn, running_mean, running_var, b in folded:
        mu, batch_var = stats[conv]
        running_mean.copy_(mu)
        running_var.copy_((batch_var - bn.eps).clamp(min=0.0))
        bn.weight.copy_((running_var + bn.eps).sqrt())
        bn.bias.copy_(mu + b)
    model.train(was_training)
    return loaded
