"""Checking the Trainer's options up front: one clear line per bad value, before anything runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import torch
from torch import nn

from torchwise.errors import UsageError


def _positive_int(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError(f"{name} must be a positive integer, got {value!r}")


def check_options(
    *, model: Any, optimizer: Any, loss_fn: Any, step_fn: Any, accumulate: Any, clip_grad_norm: Any,
    scheduler_interval: Any, log_every: Any, checkpoint_every: Any,
) -> None:
    """Raise a :class:`UsageError` naming the first option that is wrong and what is expected."""
    if not isinstance(model, nn.Module):
        raise UsageError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    for name, opt in (optimizer.items() if isinstance(optimizer, Mapping) else [("", optimizer)]):
        if not isinstance(opt, torch.optim.Optimizer) and not callable(opt):
            where = f"optimizer {name!r}" if name else "optimizer"
            raise UsageError(
                f"{where} must be a torch.optim.Optimizer built over the model's parameters (or a factory fn(params) -> Optimizer), "
                f"got {type(opt).__name__}"
            )
    if loss_fn is None and step_fn is None:
        raise UsageError("give loss_fn (called as loss_fn(model(inputs), targets)) or step_fn(model, batch) -> loss")
    if isinstance(step_fn, Mapping):
        names = list(optimizer) if isinstance(optimizer, Mapping) else None
        if names != list(step_fn):
            raise UsageError(f"step_fn is a dict with phases {list(step_fn)}: optimizer must be a dict with the same names in the same order, got {names or type(optimizer).__name__}")
    if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
        raise UsageError(f"accumulate must be an integer >= 1, got {accumulate!r}")
    if clip_grad_norm is not None and not (isinstance(clip_grad_norm, (int, float)) and clip_grad_norm > 0):
        raise UsageError(f"clip_grad_norm must be a positive number or None, got {clip_grad_norm!r}")
    if scheduler_interval not in (None, "step", "epoch"):
        raise UsageError(f"scheduler_interval must be 'step', 'epoch' or None (by the scheduler's class), got {scheduler_interval!r}")
    _positive_int("log_every", log_every)
    if checkpoint_every is not None:
        _positive_int("checkpoint_every", checkpoint_every)
