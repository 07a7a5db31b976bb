"""Learning-rate schedulers: when they step (per optimizer step or per epoch) and a sanity check.

The interval rule (``scheduler_interval=None``, the default): the schedulers that tutorials step
once per epoch step per epoch -- ``StepLR``, ``MultiStepLR``, ``ExponentialLR``,
``MultiplicativeLR`` and ``ReduceLROnPlateau`` (and a ``SequentialLR``/``ChainedScheduler`` made
only of those); every other scheduler (``OneCycleLR``, ``CosineAnnealingLR``, ``LambdaLR``,
``LinearLR`` warm-ups, ``CyclicLR``, your own) steps after each optimizer step, so write its
length in optimizer steps (``plan.total_steps``). ``ReduceLROnPlateau`` always steps per epoch, on
the monitored metric.

A scheduler that takes the learning rate below 1/1000 of its peak within the first epoch is
almost always an epoch-style schedule stepped per batch: :func:`first_epoch_decay` finds it by
stepping a copy of the optimizer and scheduler (never the real ones).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any

import torch
from torch.optim import lr_scheduler as S

from torchwise.core.errors import UsageError

EPOCH_STYLE = (S.StepLR, S.MultiStepLR, S.ExponentialLR, S.MultiplicativeLR, S.ReduceLROnPlateau)
DECAY_LIMIT = 1000.0


def is_plateau(scheduler: Any) -> bool:
    return isinstance(scheduler, S.ReduceLROnPlateau)


def _children(scheduler: Any) -> list[Any]:
    return list(getattr(scheduler, "_schedulers", None) or [])


def resolve_interval(scheduler: Any, requested: str | None) -> str:
    """"step" or "epoch" for ``scheduler``: ``requested`` if given, else by its class (module docstring)."""
    if requested not in (None, "step", "epoch"):
        raise UsageError(f"scheduler_interval must be 'step', 'epoch' or None (by the scheduler's class), got {requested!r}")
    if is_plateau(scheduler):
        if requested == "step":
            raise UsageError("ReduceLROnPlateau steps on a monitored metric at the end of each epoch: use scheduler_interval='epoch' or None")
        return "epoch"
    if requested is not None:
        return requested
    children = _children(scheduler)
    if children:
        return "epoch" if all(isinstance(c, EPOCH_STYLE) for c in children) else "step"
    return "epoch" if isinstance(scheduler, EPOCH_STYLE) else "step"


def first_epoch_decay(optimizer: torch.optim.Optimizer, scheduler: Any, steps: int) -> float | None:
    """The largest fall of the learning rate (peak / later value) over ``steps`` scheduler steps.

    Runs on copies (the model's parameters are not copied); None when the scheduler cannot be
    copied or stepped on its own (it then simply is not checked).
    """
    if is_plateau(scheduler) or steps < 1:
        return None
    memo = {id(p): torch.zeros(()) for g in optimizer.param_groups for p in g["params"]}
    try:
        opt, sched = copy.deepcopy((optimizer, scheduler), memo)
        peak = max(float(g["lr"]) for g in opt.param_groups)
        worst = 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for _ in range(steps):
                sched.step()
                lr = max(float(g["lr"]) for g in opt.param_groups)
                peak = max(peak, lr)
                if peak > 0:
                    worst = max(worst, peak / lr if lr > 0 else float("inf"))
    except Exception:  # a scheduler that refuses to be copied or stepped past its end: not checked
        return None
    return worst


def decay_warning(name: str, scheduler: Any, interval: str, ratio: float, steps: int) -> str:
    """The sentence said when a schedule falls more than :data:`DECAY_LIMIT` times in the first epoch."""
    where = f" of optimizer {name!r}" if name else ""
    fall = "to zero" if ratio == float("inf") else f"{ratio:.3g}x"
    hint = (
        "it is stepped after every optimizer step: if it counts epochs, pass scheduler_interval='epoch' "
        "(--scheduler-interval epoch), or write its length in optimizer steps (a factory with a 'plan' parameter gets plan.total_steps)"
        if interval == "step" else "check its step_size/gamma"
    )
    return f"warning: the learning-rate scheduler {type(scheduler).__name__}{where} lowers the learning rate {fall} within the first epoch ({steps} optimizer steps); {hint}"
