"""Shared helpers of the training-dynamics checks (TW130-TW138): they read ``ctx.watch`` only."""

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
    if done < minimum and not (asked >= minimum and done >= MIN_STEPS_BEFORE_FAILURE):
        return Skipped(codes, f"watches training over >= {minimum} optimizer steps; {done} ran (use --steps 200)")
    return None


def window(values: list[float], start: float, stop: float) -> list[float]:
    """The slice of ``values`` between fractions ``start`` and ``stop`` of its length (>= 1 value)."""
    n = len(values)
    a, b = int(n * start), max(int(n * start) + 1, int(math.ceil(n * stop)))
    return values[a:b]


def loss_levels(losses: list[float]) -> tuple[float, float]:
    """(median of the first 5% of the losses (at least 3), median of the last 20%)."""
    return median(losses[:max(3, len(losses) // 20)]), median(window(losses, 0.8, 1.0))


__all__ = ["needs_steps", "window", "loss_levels", "loss_where", "median"]


def loss_where(ctx: Any) -> str:
    """"training loss", with the line of ``loss.backward()`` in a script run."""
    line = getattr(getattr(ctx, "watch", None), "backward_line", "")
    return f"training loss (backward at {line})" if line else "training loss"
