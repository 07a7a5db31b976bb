"""Saturated sigmoid/tanh units: hidden activations pinned at their limits.

What: on the watched steps the share of sigmoid outputs below 0.01 or above 0.99 (tanh: beyond
+-0.99) is measured for every hidden sigmoid/tanh call (module or functional; the model's own
output, e.g. a classifier's final sigmoid, is left out). Reported when the average share over
the run is at least ``SATURATED_SHARE``.
Why: a saturated unit has a gradient near zero, so the layers before it barely learn; the
common cause is unscaled inputs (raw pixel values 0-255, unnormalised features) or a too-wide
init.
Example: ``nn.Sequential(nn.Linear(8, 64), nn.Tanh(), ...)`` fed features in the hundreds.
Fix: standardise the inputs (subtract the mean, divide by the std), use xavier init, add
normalisation before the activation, or use ReLU-family activations.

Thresholds, measured with ``--steps 200`` on the healthy tanh/sigmoid models of
``tests/doctor/realistic.py`` (tanh MLP on digits, tanh and sigmoid regression MLPs; seeds 0,
1): average saturated share at most 0.15. The same regression MLP fed inputs x100 has 0.8-0.95.
"""

from __future__ import annotations

from torchwise.doctor.checks import listing
from torchwise.doctor.checks._dynamics import needs_steps
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW132",)
SCRIPT = True
DYNAMICS = True  # needs a run of >= MIN_DYNAMICS_STEPS steps
SATURATED_SHARE = 0.5
MIN_WATCHED = 10


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES)
    if skip:
        return skip
    acts = [a for a in ctx.watch.activations if a.func in ("sigmoid", "tanh") and a.saturated_share is not None and not a.is_output]
    if not acts:
        return Skipped(CODES, "no hidden sigmoid/tanh output was seen")
    bad = [a for a in acts if a.calls >= MIN_WATCHED and a.saturated_share >= SATURATED_SHARE]
    if not bad:
        return []
    worst = max(bad, key=lambda a: a.saturated_share)
    where = listing([f"{a.module} at {a.line}" if a.line else a.module for a in bad], 3)
    return [Finding(
        "TW132", "warning",
        f"{len(bad)} saturated {worst.func} layer(s): {worst.saturated_share:.0%} of the outputs of {worst.module} sit at the limits",
        where,
        {"layers": {a.module: {"func": a.func, "saturated_share": round(a.saturated_share, 3), "watched_calls": a.calls} for a in bad[:10]},
         "steps": ctx.watch.steps},
        "standardise the inputs, use xavier init or normalisation before the activation, or ReLU-family activations",
    )]
