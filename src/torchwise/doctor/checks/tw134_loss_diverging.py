"""Loss diverging or oscillating: the training loss rises, or swings by about its own size.

What: the loss of every step is kept (on the device). *Diverging*: the median loss of the last
fifth of the run is more than ``RISE`` times the starting loss (the lowest of the first three
steps, so a loss that jumps up at step 1 still counts as rising). *Oscillating*: the
loss did not fall by ``STALL_DROP`` and the median step-to-step jump over the second half is
more than ``SWING`` times the median loss there. (A loss that turns NaN/inf is TW105.)
Why: both are the classic signs of a learning rate too high for the model and batch size:
updates overshoot the minimum, and the loss bounces or climbs instead of settling.
Example: ``SGD(params, lr=1.0, momentum=0.9)`` on a small MLP: the loss leaves its starting
level within a few steps and bounces between large values.
Fix: lower the learning rate (try 3-10x smaller), add a warm-up, clip gradients.

Thresholds, measured with ``--steps 200`` on the healthy models of ``tests/doctor/realistic.py``
(seeds 0, 1): the last-fifth/start loss ratio lay between 0.02 and 0.95 (none rose), and the
relative step-to-step jump in the second half between 0.004 and 0.63 (minibatch noise on a
small loss). A ReLU regression MLP with plain SGD at lr 1.0 ends 4-8x above its start.
"""

from __future__ import annotations

import math

from torchwise.doctor.checks._dynamics import judged, loss_levels, loss_where, median, needs_steps, window
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW134",)
SCRIPT = True
DYNAMICS = True  # needs a run of >= MIN_DYNAMICS_STEPS steps
RISE = 1.5
SWING = 1.0
STALL_DROP = 0.9


def measure(losses: list[float]) -> dict:
    early, late = loss_levels(losses)
    start = min(losses[:3])
    half = window(losses, 0.5, 1.0)
    jumps = [abs(b - a) for a, b in zip(half, half[1:]) if math.isfinite(a) and math.isfinite(b)]
    level = median([abs(v) for v in half])
    return {"loss_start": start, "loss_early": early, "loss_late": late, "ratio": late / early if early > 0 else float("nan"),
            "rise": late / start if start > 0 else float("nan"),
            "swing": median(jumps) / level if jumps and level > 0 else float("nan"),
            "loss_max": max((v for v in losses if math.isfinite(v)), default=float("nan"))}


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES)
    if skip:
        return skip
    objectives, coupled = judged(ctx, CODES)
    findings = [f for o in objectives for f in _judge(ctx, o)]
    return findings or coupled or ([] if any(len(o.losses) >= 10 for o in objectives) else Skipped(CODES, "the loss values were not seen"))


def _judge(ctx, objective) -> list[Finding]:
    losses = objective.losses
    if len(losses) < 10:
        return []
    m = measure(losses)
    if not (m["loss_start"] > 0 and math.isfinite(m["rise"]) and math.isfinite(m["ratio"])):
        return []
    evidence = {k: float(f"{v:.4g}") for k, v in m.items()}
    evidence["steps"] = len(losses)
    fix = "lower the learning rate (3-10x), add a warm-up, clip gradients (clip_grad_norm_)"
    what = "training loss" if len(ctx.watch.objectives) < 2 else f"loss of {objective.name}"
    if m["rise"] > RISE:
        return [Finding("TW134", "warning",
                        f"the {what} is diverging: {m['loss_start']:.4g} at the start, {m['loss_late']:.4g} at the end of {len(losses)} steps",
                        loss_where(ctx, objective), evidence, fix)]
    if m["ratio"] > STALL_DROP and m["swing"] > SWING:
        return [Finding("TW134", "warning",
                        f"the {what} oscillates: step-to-step jumps of {m['swing']:.0%} of its level, no progress in {len(losses)} steps",
                        loss_where(ctx, objective), evidence, fix)]
    return []
