"""What one training step shows, recorded the same way in Task mode and in script mode.

The doctor trains in two ways: on a copy of a Task's model (:mod:`torchwise.doctor.probe`) and
inside a user's unmodified script (:mod:`torchwise.doctor.script`). Both fill the same
:class:`~torchwise.doctor.probe.Context` with the records below, so each check is written once:

- :class:`ModuleCall` and the conv -> BatchNorm pairs, from forward hooks (per-module hooks on
  the copy, or the global module hooks of a script) through one :class:`StepRecorder`;
- :class:`LossCall`, each call of a loss function with its input and target, noted *before* the
  call (a call that raises is still seen) by :func:`loss_call`, from a ``TorchFunctionMode``;
- :class:`LogCall`, a ``log`` of zeros or negatives (the usual origin of ``-inf``/NaN).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn

from torchwise.utils.nonfinite import tensors_in

LOSS_FUNCTIONS: dict[Callable, str] = {
    F.cross_entropy: "cross_entropy",
    F.nll_loss: "nll_loss",
    F.mse_loss: "mse_loss",
    F.l1_loss: "l1_loss",
    F.smooth_l1_loss: "smooth_l1_loss",
    F.huber_loss: "huber_loss",
    F.binary_cross_entropy: "binary_cross_entropy",
    F.binary_cross_entropy_with_logits: "binary_cross_entropy_with_logits",
}
LOG_FUNCTIONS: dict[Callable, str] = {
    torch.log: "torch.log",
    torch.Tensor.log: "Tensor.log",
    torch.Tensor.log_: "Tensor.log_",
    torch.log2: "torch.log2",
    torch.Tensor.log2: "Tensor.log2",
    torch.log10: "torch.log10",
    torch.Tensor.log10: "Tensor.log10",
}


@dataclass
class ModuleCall:
    """One module execution seen in the recording step."""

    name: str
    module: nn.Module
    in_shapes: list[tuple[int, ...]]
    in_dtypes: list[torch.dtype]
    out_shapes: list[tuple[int, ...]]
    out_dtypes: list[torch.dtype]
    in_channels_last: bool | None  # first 4-D input NHWC (True), NCHW (False), unknown (None)


@dataclass
class LossCall:
    """A loss function called in the recording step (input and target detached)."""

    func: str
    input: torch.Tensor
    target: Any
    kwargs: dict[str, Any]
    line: str = ""  # script mode: the user's file:line of the call


@dataclass
class LogCall:
    """A log of values that are zero or negative, producing -inf/NaN (seen when a step went bad)."""

    func: str
    module: str
    zeros: int
    negatives: int
    total: int
    line: str = ""  # script mode: the user's file:line of the call


def loss_call(func: Callable, args: tuple, kwargs: dict[str, Any], line: str = "") -> LossCall | None:
    """The :class:`LossCall` of a call ``func(*args, **kwargs)`` when ``func`` is a known loss."""
    name = LOSS_FUNCTIONS.get(func)
    if name is None or not args or not isinstance(args[0], torch.Tensor):
        return None
    target = args[1] if len(args) > 1 else kwargs.get("target")
    extra = {k: v for k, v in kwargs.items() if k in ("ignore_index", "reduction", "label_smoothing")}
    return LossCall(name, args[0].detach(), target.detach() if isinstance(target, torch.Tensor) else target, extra, line)


def channels_last(t: torch.Tensor | None) -> bool | None:
    """True for NHWC storage, False for NCHW, None when unknown (no 4-D tensor, or both fit)."""
    if t is None:
        return None
    cl, std = t.is_contiguous(memory_format=torch.channels_last), t.is_contiguous()
    return None if cl == std else cl


class StepRecorder:
    """Fills ``module_calls`` and ``conv_bn_pairs`` from forward pre/post hooks.

    ``pre``/``post`` take the module's name as the caller knows it; a BatchNorm that receives
    exactly the tensor a convolution with a bias has just returned makes a pair (matched by
    tensor identity, in the executed order, not by names).
    """

    def __init__(self, module_calls: list[ModuleCall], conv_bn_pairs: list[tuple[str, str]], limit: int = 5000) -> None:
        self.module_calls, self.conv_bn_pairs, self.limit = module_calls, conv_bn_pairs, limit
        self.pair_modules: list[tuple[nn.Module, nn.Module]] = []  # the modules of each pair (names are per model)
        self._conv_outputs: dict[int, tuple[str, torch.Tensor, nn.Module]] = {}

    def pre(self, module: nn.Module, args: tuple, name: str) -> None:
        if isinstance(module, nn.modules.batchnorm._BatchNorm) and args and isinstance(args[0], torch.Tensor):
            hit = self._conv_outputs.get(id(args[0]))
            if hit is not None and hit[1] is args[0] and all(c is not hit[2] or b is not module for c, b in self.pair_modules):
                self.conv_bn_pairs.append((hit[0], name))
                self.pair_modules.append((hit[2], module))

    def post(self, module: nn.Module, args: tuple, output: Any, name: str) -> None:
        if len(self.module_calls) >= self.limit:
            return
        ins = list(tensors_in(args, floating_only=False))
        outs = list(tensors_in(output, floating_only=False))
        four_d = next((t for t in ins if t.dim() == 4), None)
        self.module_calls.append(ModuleCall(
            name, module, [tuple(t.shape) for t in ins], [t.dtype for t in ins],
            [tuple(t.shape) for t in outs], [t.dtype for t in outs], channels_last(four_d),
        ))
        if isinstance(module, nn.modules.conv._ConvNd) and module.bias is not None and isinstance(output, torch.Tensor):
            self._conv_outputs[id(output)] = (name, output, module)

    def clear(self) -> None:
        """Drop the references to conv outputs (the recording is over)."""
        self._conv_outputs.clear()


__all__ = ["ModuleCall", "LossCall", "LogCall", "StepRecorder", "loss_call", "channels_last", "LOSS_FUNCTIONS", "LOG_FUNCTIONS"]
