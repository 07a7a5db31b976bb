"""Find where a NaN or Inf first appeared: the first module, its output, the loss or a gradient.

``find_nonfinite(model, run_forward)`` re-runs one forward pass (and the loss) with forward hooks
on every submodule. The first hook, in execution order, that sees a non-finite output names the
culprit; a non-finite *input* to the model is reported as such (the data, not the model, is bad).
When every output and the loss are finite, gradients are computed with ``torch.autograd.grad``
(the parameters' ``.grad`` are left untouched) and the module whose parameter gradient went bad
first in the backward order is reported. Buffers (BatchNorm statistics) and the RNG state are
restored afterwards, so the diagnosis has no side effect on training.

This is the fast alternative to ``torch.autograd.set_detect_anomaly`` (practice TW112).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import torch
from torch import nn

__all__ = ["NonFiniteReport", "find_nonfinite", "tensors_in", "count_nonfinite"]


@dataclass(frozen=True)
class NonFiniteReport:
    """Where a non-finite value was first seen.

    ``module`` is the qualified name ("" for the whole model), ``module_type`` its class name,
    ``kind`` one of "input", "output", "loss", "grad", ``detail`` a human sentence.
    """

    module: str
    module_type: str
    kind: str
    detail: str

    def __str__(self) -> str:
        where = f"module '{self.module}' ({self.module_type})" if self.module else f"the model ({self.module_type})"
        if self.kind == "input":
            return f"non-finite input reaching {where}: {self.detail}"
        if self.kind == "loss":
            return f"non-finite loss: {self.detail}"
        if self.kind == "grad":
            return f"non-finite gradient first in {where}: {self.detail}"
        return f"non-finite output first produced by {where}: {self.detail}"


def tensors_in(obj: Any, depth: int = 0, *, floating_only: bool = True) -> Iterator[torch.Tensor]:
    """The tensors inside ``obj`` (sequences and mappings, nested twice); floating-point ones only
    unless ``floating_only=False``."""
    if isinstance(obj, torch.Tensor):
        if not floating_only or obj.is_floating_point() or obj.is_complex():
            yield obj
    elif depth < 3 and isinstance(obj, (list, tuple)):
        for item in obj:
            yield from tensors_in(item, depth + 1, floating_only=floating_only)
    elif depth < 3 and isinstance(obj, Mapping):
        for item in obj.values():
            yield from tensors_in(item, depth + 1, floating_only=floating_only)


def count_nonfinite(t: torch.Tensor) -> tuple[int, int, int]:
    """(NaN count, Inf count, total) of a tensor (sparse: of its stored values); syncs the device (diagnosis only)."""
    t = t.detach()
    if t.is_sparse:
        t = t._values()
    nan = int(torch.isnan(t).sum())
    inf = int(torch.isinf(t).sum())
    return nan, inf, t.numel()


def _bad(obj: Any) -> tuple[int, int, int] | None:
    nan = inf = total = 0
    for t in tensors_in(obj):
        n, i, c = count_nonfinite(t)
        nan, inf, total = nan + n, inf + i, total + c
    return (nan, inf, total) if nan or inf else None


def _counts(c: tuple[int, int, int]) -> str:
    nan, inf, total = c
    parts = [f"{nan} NaN"] if nan else []
    parts += [f"{inf} Inf"] if inf else []
    return f"{' and '.join(parts)} of {total} values"


def _bad_params(module: nn.Module) -> list[str]:
    return [n for n, p in module.named_parameters(recurse=False) if not torch.isfinite(p.detach()).all()]


class _Stop(Exception):
    """Raised inside a hook to end the forward pass once the culprit is known."""


def find_nonfinite(model: nn.Module, run_forward: Callable[[], Any], *, check_grads: bool = True) -> NonFiniteReport | None:
    """Re-run ``run_forward()`` (forward + loss, returning the loss) and name the first bad spot.

    Returns None when everything (outputs, loss and, with ``check_grads``, gradients) is finite.
    """
    names = {m: n for n, m in model.named_modules()}
    order: list[nn.Module] = []
    found: list[NonFiniteReport] = []

    def pre_hook(module: nn.Module, args: tuple, kwargs: dict) -> None:
        if found or module is not model:
            return
        c = _bad((args, kwargs))
        if c is not None:
            found.append(NonFiniteReport("", type(model).__name__, "input", f"the batch contains {_counts(c)}"))
            raise _Stop

    def hook(module: nn.Module, args: tuple, output: Any) -> None:
        if module not in order:
            order.append(module)
        if found:
            return
        c = _bad(output)
        if c is None:
            return
        name = names.get(module, "?")
        detail = f"its output has {_counts(c)}"
        bad_params = _bad_params(module)
        if bad_params:
            detail += f"; its parameter(s) {', '.join(bad_params)} are already non-finite"
        elif _bad(args) is None:
            detail += " although its input was finite"
        found.append(NonFiniteReport(name, type(module).__name__, "output", detail))
        raise _Stop

    handles = [model.register_forward_pre_hook(pre_hook, with_kwargs=True)]
    handles += [m.register_forward_hook(hook) for m in model.modules()]
    devices = sorted({p.device.index for p in model.parameters() if p.device.type == "cuda" and p.device.index is not None})
    loss: Any = None
    try:
        with no_side_effects(model, devices):
            try:
                loss = run_forward()
            except _Stop:
                loss = None
            if found:
                return found[0]
            c = _bad(loss)
            if c is not None:
                loss_t = next(tensors_in(loss))
                return NonFiniteReport("", type(model).__name__, "loss", f"the loss is {_counts(c)} ({'loss' if loss_t.numel() == 1 else 'tensor'} computed from finite outputs)")
            if not check_grads:
                return None
            return _grad_report(model, loss, names, order)
    finally:
        for h in handles:
            h.remove()


@contextmanager
def no_side_effects(model: nn.Module, cuda_devices: Sequence[int] = ()) -> Iterator[None]:
    """Run a diagnostic pass without leaving a trace: the random streams are forked (CPU and
    ``cuda_devices``) and the model's buffers (BatchNorm running statistics...) are restored."""
    buffers = {n: b.detach().clone() for n, b in model.named_buffers()}
    try:
        with torch.random.fork_rng(devices=list(cuda_devices)):
            yield
    finally:
        with torch.no_grad():
            for n, b in model.named_buffers():
                if n in buffers:
                    b.copy_(buffers[n])


def _grad_report(model: nn.Module, loss: Any, names: dict[nn.Module, str], order: list[nn.Module]) -> NonFiniteReport | None:
    loss_t = next(tensors_in(loss), None)
    if loss_t is None or not loss_t.requires_grad:
        return None
    if loss_t.numel() != 1:
        loss_t = loss_t.sum()
    owners: list[tuple[nn.Module, str, nn.Parameter]] = []
    for module in model.modules():
        for pname, p in module.named_parameters(recurse=False):
            if p.requires_grad:
                owners.append((module, pname, p))
    if not owners:
        return None
    grads = torch.autograd.grad(loss_t, [p for _, _, p in owners], allow_unused=True)
    rank = {m: i for i, m in enumerate(order)}
    bad = [(m, pn, g) for (m, pn, _), g in zip(owners, grads) if g is not None and sum(count_nonfinite(g)[:2])]
    if not bad:
        return None
    # backward runs in reverse execution order: the module executed last went bad first
    module, pname, g = max(bad, key=lambda item: rank.get(item[0], -1))
    return NonFiniteReport(names.get(module, "?"), type(module).__name__, "grad", f"the gradient of its parameter '{pname}' has {_counts(count_nonfinite(g))}")
