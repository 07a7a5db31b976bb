"""The learning rate is far too high: measured as the size of each step's update against the weights.

What: on sampled steps (updates.py) the update of every weight matrix/kernel relative to its
norm, ``||w_after - w_before|| / ||w_before||``; the run's figure is the median over layers of
each layer's median over the steps after the first two. Reported when that ratio is at least
``HIGH_RATIO`` *and* the loss shows it: a classification loss pinned at the chance level ln C
(the last fifth within ``CHANCE_BAND`` of it, the model predicts the class prior), or a loss
that diverges, swings without progress or does not fall (the TW134/TW135 conditions), for an
objective that is judged on its own (not a GAN's). The finding names the learning rate(s) and
the measured ratio per layer.
Why: each step throws the weights a tenth or more of their own size in a direction computed
for the old weights: the loss cannot settle, ReLU units die, the model collapses to predicting
the majority class. A symptom check would only say "diverging" or "not decreasing".
Example: ``Adam(model.parameters(), lr=0.1)`` on a CNN: loss stuck at 2.30 (ln 10) for 200 steps,
test accuracy 9% (85% at lr 1e-3).
Fix: lower the learning rate 10-100x (Adam-family: 1e-4..3e-3; SGD: 1e-3..1e-1), add a warm-up;
``torchwise tune`` can run a learning-rate range test.
Measured (2026-11-25), median update ratio of healthy runs: pytorch/examples mnist (Adadelta
lr 1.0) 0.009, yunjey's feedforward (Adam 1e-3) 0.004, realistic models of tests/doctor
(Adam/AdamW 1e-3, SGD 0.01 momentum 0.9) 0.001-0.02; LR 100x too high: 0.2-3.
"""

from __future__ import annotations

import math
from typing import Any

from torchwise.doctor.checks._dynamics import chance_loss, judged, loss_levels, loss_where, median, needs_steps
from torchwise.doctor.checks.tw134_loss_diverging import RISE, STALL_DROP, SWING, measure
from torchwise.doctor.checks.tw135_loss_stalled import STALL_RATIO
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW140",)
SCRIPT = True
DYNAMICS = True  # needs a run of >= MIN_DYNAMICS_STEPS steps
EXPLAINS = ("TW130", "TW131", "TW132", "TW134", "TW135")  # explosion, dead and saturated units, a loss that swings or stalls
HIGH_RATIO = 0.05
CHANCE_BAND = 0.1


def layer_ratios(w: Any) -> dict[str, float]:
    """Each weight matrix's median update ratio over the sampled steps after the first two."""
    out = {}
    for name, shape, ratios, trains in zip(w.param_names, w.param_shapes, w.update_ratios or [], w.requires_grad):
        values = [r for r in ratios[2:] if math.isfinite(r)] or [r for r in ratios if math.isfinite(r)]
        if len(shape) >= 2 and trains and values:
            out[name] = median(values)
    return out


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES)
    if skip:
        return skip
    w = ctx.watch
    ratios = layer_ratios(w)
    if not ratios:
        return Skipped(CODES, "no weight update was sampled")
    ratio = median(list(ratios.values()))
    if not math.isfinite(ratio) or ratio < HIGH_RATIO:
        return []
    objectives, coupled = judged(ctx, CODES)
    chance = chance_loss(ctx)
    for obj in objectives:
        symptom = _symptom(obj.losses, chance)
        if symptom:
            lrs = sorted({v for v in w.lrs if v is not None})
            top = dict(sorted(ratios.items(), key=lambda kv: -kv[1])[:8])
            return [Finding(
                "TW140", "error",
                f"the learning rate is far too high{' (lr ' + ', '.join(f'{v:g}' for v in lrs[:4]) + ')' if lrs else ''}: "
                f"each step changes the weights by {ratio:.0%} of their norm (median over {len(ratios)} layers; healthy runs: 0.1-2%), "
                f"and {symptom}",
                loss_where(ctx, obj) if len(w.objectives) > 1 else "optimizer lr",
                {"median_update_ratio": round(ratio, 4), "update_ratio_per_layer": {k: round(v, 4) for k, v in top.items()},
                 "lrs": lrs[:10], "chance_loss": round(chance, 4) if chance else None, "steps": w.steps},
                "lower the learning rate 10-100x (Adam-family: 1e-4..3e-3, SGD: 1e-3..1e-1) or add a warm-up; "
                "`torchwise tune` runs a learning-rate range test",
            )]
    return coupled or []


def _symptom(losses: list[float], chance: float | None) -> str:
    """What the loss curve shows of a learning rate far too high ("" when it looks healthy)."""
    if len(losses) < 10:
        return ""
    early, late = loss_levels(losses)
    if chance and math.isfinite(late) and abs(late - chance) <= CHANCE_BAND * chance:
        return f"the loss stays at the chance level ln C = {chance:.3g} ({late:.4g} over the last steps): the model predicts the class prior"
    m = measure(losses)
    if math.isfinite(m["rise"]) and m["rise"] > RISE:
        return f"the loss diverges ({m['loss_start']:.4g} -> {m['loss_late']:.4g})"
    if math.isfinite(m["ratio"]) and m["ratio"] > STALL_DROP and m["swing"] > SWING:
        return f"the loss swings by {m['swing']:.0%} of its level from step to step without progress"
    if early > 0 and math.isfinite(late) and late / early >= STALL_RATIO:
        return f"the loss does not fall ({early:.4g} -> {late:.4g})"
    return ""
