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
    """The layer's path in the exported module, from the legacy exporter's scope names.

    '/features/features.0/features.0.0/Conv_output_0' -> 'features.0.0'; a wrapped net (the die-state
    export, `ExportWrapper(net)`) gives '/net/features/features.0/features.0.0/Conv_output_0' ->
    'net.features.0.0': a scope that repeats its parent's name with a suffix replaces it, any other is
    a child. Shapes the project's nets do not have can come out wrong (a ModuleDict's scope holds only its
    key); such a path almost always names no layer of the net, and the load stops with a ValueError.
    """
    parts = node.output[0].split("/")[1:-1]
    path: list[str] = []
    for part in parts:
        if path and part.startswith(path[-1] + "."):
            path[-1] = part
        else:
            path.append(part)
    return ".".join(path)


def _layer(model: nn.Module, path: str, onnx_name: str) -> nn.Module:
    try:
        return model.get_submodule(path)
    except AttributeError as exc:
        raise ValueError(f"{onnx_name}: {path!r} is not a layer of {type(model).__name__}") from exc


def _next_in_sequential(conv_path: str) -> str | None:
    """The path of the layer after `conv_path` in its Sequential ('a.b.0' -> 'a.b.1'), None outside one."""
    parent_path, _, index = conv_path.rpartition(".")
    if not index.isdigit():
        return None
    return f"{parent_path}.{int(index) + 1}" if parent_path else str(int(index) + 1)


def _next_batch_norm(
    model: nn.Module, conv_path: str, onnx_name: str
) -> tuple[str, nn.BatchNorm2d, Tensor, Tensor]:
    """The batch norm after a conv in its Sequential (its path, itself, its running mean and variance)."""
    bn_path = _next_in_sequential(conv_path)
    if bn_path is None:
        raise ValueError(f"{onnx_name}: {conv_path!r} is not a conv inside a Sequential of the net")
    bn = _layer(model, bn_path, onnx_name)
    if not isinstance(bn, nn.BatchNorm2d) or bn.running_mean is None or bn.running_var is None:
        raise ValueError(
            f"{onnx_name}: {conv_path} is not followed by a batch norm in {type(model).__name__}"
        )
    return bn_path, bn, bn.running_mean, bn.running_var


def _followed_by_batch_norm(model: nn.Module, conv_path: str) -> bool:
    """Whether the layer after `conv_path` in its Sequential is a batch norm (the export folded it in)."""
    after_path = _next_in_sequential(conv_path)
    if after_path is None:
        return False
    try:
        return isinstance(model.get_submodule(after_path), nn.BatchNorm2d)
    except AttributeError:
        return False


def init_from_onnx(model: nn.Module, onnx_path: Path, calibration: Tensor) -> None:
    """Load `onnx_path`'s weights into `model` (same architecture).

    Raises ValueError when the file does not fit the net (a layer it lacks or the net lacks, another shape,
    a parameter of the net left unset), so a wrong file never starts a run silently.
    """
    with torch.no_grad():
        _init_from_onnx(model, onnx_path, calibration)


def _init_from_onnx(model: nn.Module, onnx_path: Path, calibration: Tensor) -> None:
    name = onnx_path.name
    graph = onnx.load(str(onnx_path)).graph
    weights = {
        t.name: torch.from_numpy(numpy_helper.to_array(t).astype(np.float32)) for t in graph.initializer
    }
    # the exporter shares equal initializers (all-zero biases of an untrained net) through Identity nodes
    alias = {n.output[0]: n.input[0] for n in graph.node if n.op_type == "Identity"}

    def value(key: str) -> Tensor:
        while key not in weights and key in alias:
            key = alias[key]
        if key not in weights:
            raise ValueError(f"{name}: no constant weight {key!r} (not an export of a net like this one)")
        return weights[key]

    params = dict(model.named_parameters())
    set_params: set[str] = set()
    folded: list[tuple[nn.Conv2d, nn.BatchNorm2d, Tensor, Tensor, Tensor]] = []
    for node in graph.node:
        if node.op_type == "Conv":
            path = _module_path(node)
            conv = _layer(model, path, name)
            if (
                isinstance(conv, nn.Conv2d)
                and conv.bias is not None
                and len(node.input) == 3
                and not _followed_by_batch_norm(model, path)
            ):
                # A conv with its own bias and no batch norm after it (the detector's output layer): the
                # exporter keeps its parameters unfolded, copied as they are.
                for key, param in ((node.input[1], conv.weight), (node.input[2], conv.bias)):
                    if value(key).shape != param.shape:
                        raise ValueError(
                            f"{name}: {path} has shape {tuple(value(key).shape)}, the net "
                            f"{tuple(param.shape)}"
                        )
                    param.copy_(value(key))
                set_params |= {f"{path}.weight", f"{path}.bias"}
                continue
            if not isinstance(conv, nn.Conv2d) or conv.bias is not None or len(node.input) < 3:
                raise ValueError(f"{name}: {path} is not a bias-free convolution of the net")
            w, b = value(node.input[1]), value(node.input[2])
            if w.shape != conv.weight.shape:
                raise ValueError(
                    f"{name}: {path} has shape {tuple(w.shape)}, the net {tuple(conv.weight.shape)}"
                )
            conv.weight.copy_(w)
            bn_path, bn, mean, var = _next_batch_norm(model, path, name)
            bn.weight.fill_(1.0)
            bn.bias.copy_(b)
            mean.zero_()
            var.fill_(1.0 - bn.eps)
            folded.append((conv, bn, mean, var, b))
            set_params |= {f"{path}.weight", f"{bn_path}.weight", f"{bn_path}.bias"}
        elif node.op_type == "Gemm":
            for key in node.input[1:]:
                if key not in params or params[key].shape != value(key).shape:
                    raise ValueError(f"{name}: {key} does not fit the net")
                params[key].copy_(value(key))
                set_params.add(key)
    unset = sorted(set(params) - set_params)
    # Every batch norm of the net must be one the export folded into the conv before it: one anywhere else
    # (after an activation, or after a conv copied as unfolded) leaves the loaded net computing another
    # function.
    stray = [
        path
        for path, m in model.named_modules()
        if isinstance(m, nn.BatchNorm2d) and all(m is not f[1] for f in folded)
    ]
    if stray:
        raise ValueError(
            f"{name} does not fold these batch norms of {type(model).__name__}: {', '.join(stray)}"
        )
    if unset:
        raise ValueError(f"{name} leaves parameters of {type(model).__name__} unset: {', '.join(unset)}")

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
