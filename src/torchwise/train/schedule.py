"""Learning-rate schedulers: when they step (per optimizer step or per epoch) and a sanity check.

The interval rule (``scheduler_interval=None``, the default): the schedulers that tutorials step
once per epoch step per epoch -- ``StepLR``, ``MultiStepLR``, ``ExponentialLR``,
``MultiplicativeLR`` and ``ReduceLROnPlateau`` (and a ``SequentialLR``/``ChainedScheduler`` made
only of those); every other scheduler (``OneCycleLR``, ``CosineAnnealingLR``, ``LambdaLR``,
``LinearLR`` warm-ups, ``CyclicLR``, your own) steps after each optimizer step, so write its
length in optimizer steps (``plan.total_steps``). ``ReduceLROnPlateau`` always steps per epoch, on
the monitored metric.

The schedulers are plug-ins of the loop (:mod:`.callbacks`): :class:`StepSchedulers` steps the
per-step ones after every optimizer step their optimizer took (not after one skipped by the
non-finite guard or the fp16 scaler), :class:`EpochSchedulers` the per-epoch ones at each epoch's
end, ``ReduceLROnPlateau`` on the monitored value.

A scheduler that takes the learning rate below 1/1000 of its peak within the first epoch is
almost always an epoch-style schedule stepped per batch: :func:`first_epoch_decay` finds it by
stepping a copy of the optimizer and scheduler (never the real ones).
"""

from __future__ import annotations

import copy
import warnings
from typing import Any, Mapping

import torch
from torch.optim import lr_scheduler as S

from torchwise.core.errors import UsageError
from torchwise.train.callbacks import Callback

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


class StepSchedulers(Callback):
    """Step the per-step schedulers of the phases whose optimizer just stepped."""

    def __init__(self, phases: list[Any]) -> None:
        self.phases = phases

    def on_step_end(self, trainer: Any) -> None:
        for phase in self.phases:
            if phase.stepped:
                phase.scheduler.step()


class EpochSchedulers(Callback):
    """Step the per-epoch schedulers at each epoch's end (ReduceLROnPlateau on the monitored value)."""

    def __init__(self, phases: list[Any], monitor: Any) -> None:
        self.phases, self.monitor = phases, monitor

    def on_epoch_end(self, trainer: Any, values: Mapping[str, float]) -> None:
        for phase in self.phases:
            if not is_plateau(phase.scheduler):
                phase.scheduler.step()
                continue
            value = self.monitor.value(values)
            if value is None:
                trainer._warn_once("plateau", f"warning: ReduceLROnPlateau did not step: the monitored metric {self.monitor.name!r} was not logged "
                                              f"(logged: {', '.join(sorted(values)) or 'nothing'}); set monitor= to one of them")
                continue
            if getattr(phase.scheduler, "mode", self.monitor.mode) != self.monitor.mode:
                trainer._warn_once("plateau-mode", f"warning: ReduceLROnPlateau has mode={phase.scheduler.mode!r} but the monitored "
                                                   f"{self.monitor.key(values)!r} is better when {'lower' if self.monitor.mode == 'min' else 'higher'}")
            phase.scheduler.step(value)


def step_schedulers(phases: list[Any]) -> StepSchedulers | None:
    """The per-step schedulers' plug-in, or None when no phase has one."""
    found = [p for p in phases if p.scheduler is not None and p.interval == "step"]
    return StepSchedulers(found) if found else None


def epoch_schedulers(phases: list[Any], monitor: Any) -> EpochSchedulers | None:
    """The per-epoch schedulers' plug-in, or None when no phase has one."""
    found = [p for p in phases if p.scheduler is not None and p.interval == "epoch"]
    return EpochSchedulers(found, monitor) if found else None
