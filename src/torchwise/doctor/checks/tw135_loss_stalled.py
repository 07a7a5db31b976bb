"""Loss not decreasing: after the whole run the training loss is where it started.

What: the median loss over the last fifth of the run is compared with that of the first steps;
reported when it fell by less than ``1 - STALL_RATIO`` *and* by no more than ``NOISE`` times
the spread of single step losses at the end (median absolute deviation): a slow but steady
descent is progress, a flat line within its own noise is not (and TW134 did not already find
it rising or swinging).
Why: the model is not learning: a learning rate far off (too small, or so large that it
stalls), the optimizer over the wrong parameters, targets that do not match the outputs,
inputs that carry no signal (e.g. an augmentation that erases them), or a detached graph.
Example: ``Adam(params, lr=1e-7)``, or ``loss_fn(out.detach().requires_grad_(), y)``.
Fix: try a learning-rate range test (``torchwise tune``), check that ``optimizer.step()`` runs,
that the loss uses the model output, and that one batch can be overfitted.

Thresholds, measured with ``--steps 200`` on the healthy models of ``tests/doctor/realistic.py``
(seeds 0, 1): the last-fifth/first-steps ratio lay between 0.02 and 0.94. A stuck model (lr
1e-8, dead units) sits at 0.97-1.02 with a drop below its noise. The transformer LM at lr 3e-4
fell only 4% in 200 steps (ratio 0.96), but ten times its step noise: not reported.
"""

from __future__ import annotations

import math

from torchwise.doctor.checks._dynamics import judged, loss_levels, loss_where, median, needs_steps, window
from torchwise.doctor.checks.tw134_loss_diverging import RISE, STALL_DROP, SWING, measure
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW135",)
SCRIPT = True
DYNAMICS = True  # needs a run of >= MIN_DYNAMICS_STEPS steps
STALL_RATIO = 0.95
NOISE = 3.0
MIN_STEPS = 50


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES, MIN_STEPS)
    if skip:
        return skip
    objectives, coupled = judged(ctx, CODES)
    findings = [f for o in objectives for f in _judge(ctx, o)]
    return findings or coupled or ([] if any(len(o.losses) >= MIN_STEPS for o in objectives) else Skipped(CODES, "the loss values were not seen"))


def _judge(ctx, objective) -> list[Finding]:
    losses = objective.losses
    if len(losses) < MIN_STEPS:
        return []
    m = measure(losses)
    early, late = loss_levels(losses)
    if not (early > 0 and math.isfinite(late)):
        return []
    if m["rise"] > RISE or (m["ratio"] > STALL_DROP and m["swing"] > SWING):
        return []  # TW134 reports it
    if late / early < STALL_RATIO:
        return []
    tail = window(losses, 0.8, 1.0)
    spread = median([abs(v - late) for v in tail])
    if early - late > NOISE * spread:
        return []  # slow, but a steady descent
    what = "training loss" if len(ctx.watch.objectives) < 2 else f"loss of {objective.name}"
    return [Finding(
        "TW135", "warning",
        f"the {what} is not decreasing: {early:.4g} over the first steps, {late:.4g} over the last of {len(losses)} steps",
        loss_where(ctx, objective),
        {"loss_early": float(f"{early:.4g}"), "loss_late": float(f"{late:.4g}"), "ratio": round(late / early, 4),
         "late_spread": float(f"{spread:.3g}"), "steps": len(losses)},
        "check the learning rate (too small or far too large), that optimizer.step() updates the model's parameters, "
        "that the targets can be learned from the inputs, and that one batch can be overfitted",
    )]
