"""Shared helpers of the training-dynamics checks (TW130-TW142): they read ``ctx.watch`` only."""

from __future__ import annotations

import math
from typing import Any

from torchwise.doctor.report import Skipped
from torchwise.doctor.watch import MIN_DYNAMICS_STEPS, median


MIN_STEPS_BEFORE_FAILURE = 8  # a long run that broke early (NaN) still shows its dynamics


def needs_steps(ctx: Any, codes: tuple[str, ...], minimum: int = MIN_DYNAMICS_STEPS) -> Skipped | None:
    """A Skipped when fewer than ``minimum`` optimizer steps were watched, else None."""
    w = getattr(ctx, "watch", None)
    done = w.steps if w is not None else 0
    asked = getattr(ctx, "steps_requested", 0) or 0
    if done >= minimum or (asked >= minimum and done >= MIN_STEPS_BEFORE_FAILURE):
        return None
    script = getattr(ctx, "script", False)
    if asked >= minimum or (script and not asked):  # the run ended before the steps asked for
        ended = ("the script failed" if getattr(ctx, "failure", None) else "the script ended") if script else "the steps stopped"
        return Skipped(codes, f"watches training over >= {minimum} optimizer steps; only {done} ran before {ended}")
    how = "--steps 200" if script else "--steps 200 on the command line, steps=200 from Python"
    return Skipped(codes, f"watches training over >= {minimum} optimizer steps; {done} ran ({how})")


def window(values: list[float], start: float, stop: float) -> list[float]:
    """The slice of ``values`` between fractions ``start`` and ``stop`` of its length (>= 1 value)."""
    n = len(values)
    a, b = int(n * start), max(int(n * start) + 1, int(math.ceil(n * stop)))
    return values[a:b]


def loss_levels(losses: list[float]) -> tuple[float, float]:
    """(median of the first 5% of the losses (at least 3), median of the last 20%)."""
    return median(losses[:max(3, len(losses) // 20)]), median(window(losses, 0.8, 1.0))


def loss_where(ctx: Any, objective: Any = None) -> str:
    """"training loss", with the line of ``loss.backward()`` in a script run (and the objective's
    name when the script has several)."""
    w = getattr(ctx, "watch", None)
    objectives = getattr(w, "objectives", None) or []
    if objective is not None and len(objectives) > 1:
        line = objective.lines[0] if objective.lines else ""
        return f"loss of {objective.name}" + (f" (backward at {line})" if line else "")
    line = getattr(w, "backward_line", "")
    return f"training loss (backward at {line})" if line else "training loss"


def judged(ctx: Any, codes: tuple[str, ...]) -> tuple[list[Any], Skipped | None]:
    """The objectives whose loss curve is judged on its own, and a Skipped for the coupled ones
    (a GAN's generator and discriminator: their losses trade off, a rising one is expected)."""
    objectives = list(getattr(ctx.watch, "objectives", None) or [])
    free = [o for o in objectives if not o.coupled]
    coupled = [o for o in objectives if o.coupled]
    note = None
    if coupled:
        names = ", ".join(o.name for o in coupled)
        note = Skipped(codes, f"the losses of {names} trade off (adversarial objectives: each one's steps run the other's model); "
                       "a rising or flat loss is expected there and is not judged")
    return free, note


def task_kind(ctx: Any) -> tuple[str, int | None]:
    """What the first training loss compares: ("classes", C) for class labels (C outputs),
    ("binary", 2) for one 0/1 target per sample under binary cross-entropy, ("regression", None)
    for mse/l1/huber, ("other", None) when no such loss call was seen."""
    import torch

    from torchwise.utils.labels import is_class_target

    for call in getattr(ctx, "loss_calls", None) or []:
        if call.func in ("cross_entropy", "nll_loss") and isinstance(call.target, torch.Tensor) \
                and is_class_target(call.input, call.target):
            return "classes", int(call.input.shape[1] if call.input.dim() >= 2 else call.input.shape[0])
        if call.func in ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss"):
            return "regression", None
        if call.func.startswith("binary_cross_entropy") and isinstance(call.target, torch.Tensor) \
                and call.target.shape == call.input.shape and (call.input.dim() == 1 or call.input.shape[-1] == 1):
            return "binary", 2  # one 0/1 target per sample
    return "other", None


def chance_loss(ctx: Any) -> float | None:
    """ln C, the cross-entropy of a uniform guess over C classes, ln 2 for a binary classifier (None
    when not classification)."""
    kind, classes = task_kind(ctx)
    return math.log(classes) if kind in ("classes", "binary") and classes and classes >= 2 else None


__all__ = ["needs_steps", "window", "loss_levels", "loss_where", "judged", "task_kind", "chance_loss", "median"]
