"""The learning rate is far too high: measured as how far the steps throw the weights.

What: for every trained weight matrix/kernel, how far the run moved it against its initial size,
``||w_end - w_start|| / ||w_start||`` (the *displacement*), and on sampled steps (updates.py) the
size of one step's update against the weights, ``||w_after - w_before|| / ||w_before||``.
Reported when the median displacement over the layers is at least ``DISPLACED`` (scaled by
``sqrt(steps / 200)`` for longer runs) *and* the loss shows it: a classification loss pinned at
the chance level ln C (the last fifth within ``CHANCE_BAND`` of it: the model predicts the class
prior), or a loss that diverges, swings without progress or does not fall (the TW134/TW135
conditions), for an objective judged on its own (not a GAN's). The finding names the learning
rate(s), the displacement and the largest early update ratio per layer.
Why: each step throws the weights a large fraction of their own size in a direction computed for
the old weights: they end up several times their initial size, ReLU units die or saturate, and a
classifier collapses to predicting the class prior. A symptom check would only say "diverging" or
"not decreasing"; the displacement says where it comes from. (The update ratio of a step is not a
good sign on its own: the first steps of Adam move every weight by about lr, 20% of a layer with
fan-in 10,000 at lr 1e-3, in healthy runs; after a blow-up the ratio is tiny because the weights
are huge.)
Example: ``Adam(model.parameters(), lr=0.1)`` on a small transformer, or ``SGD(lr=0.3,
momentum=0.9)`` on a CNN: the loss sits at ln C for the whole run.
Fix: lower the learning rate 10-100x (Adam-family: 1e-4..3e-3; SGD: 1e-3..1e-1), add a warm-up;
``torchwise tune`` can run a learning-rate range test.
Measured (2026-11-25). Median displacement: the realistic models of tests/doctor (150 steps,
seed 0) 0.28-0.91 (largest single layer 1.35, an SGD head); public scripts at 200 steps
(pytorch/examples mnist, vae, dcgan, word_language_model; yunjey's feedforward, CNN, GAN;
PyTorch-GAN wgan_gp) 0.08-0.74, yunjey's LSTM (Adam 0.01) 2.82 — and its loss falls, so no
symptom. LR 10-300x too high (Adam 0.1 on the LM, 0.3 on the GRU, SGD 0.3 and 1.0 on the CNN, SGD
1.0 on the MLP, SGD 0.5 on a digits CNN): 5.2-2800, every one with the loss at ln C. The update
ratio of single steps does not separate them (evidence only): healthy Adam's first steps on small
weights reach 0.2 (yunjey's LSTM, mnist's fc1), SGD with momentum at 50x the rate peaks at 0.2
only after 25 steps. Adam 0.1 on the MLP (displacement 10) still learns (loss 0.58): no symptom,
not reported.
L-BFGS is not judged: each of its steps runs several iterations and moves the weights far by
design (pytorch/examples' time-sequence example, lr 0.8, was called far too high).
"""

from __future__ import annotations

import math
from typing import Any

import torch

from torchwise.doctor.checks._dynamics import chance_loss, judged, loss_levels, loss_where, median, needs_steps
from torchwise.doctor.checks.tw134_loss_diverging import RISE, STALL_DROP, SWING, measure
from torchwise.doctor.checks.tw135_loss_stalled import STALL_RATIO
from torchwise.doctor.checks.tw115_optimizer_params import each_optimizer
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW140",)
SCRIPT = True
DYNAMICS = True  # needs a run of >= MIN_DYNAMICS_STEPS steps
EXPLAINS = ("TW130", "TW131", "TW132", "TW134", "TW135")  # explosion, dead and saturated units, a loss that swings or stalls
DISPLACED = 3.0
CHANCE_BAND = 0.1


def displacement(w: Any) -> dict[str, float]:
    """Each trained weight matrix's ||w_end - w_start|| / ||w_start|| over the run."""
    rows = [r for r in w.grad_norms if len(r) == len(w.param_names)]
    out = {}
    for i, (name, shape) in enumerate(zip(w.param_names, w.param_shapes)):
        if len(shape) < 2 or not w.requires_grad[i] or i >= len(w.moved) or w.weight_norms[i] <= 0:
            continue
        if rows and not any(r[i] > 0 for r in rows):
            continue  # no gradient: not trained
        value = w.moved[i] / w.weight_norms[i]
        if math.isfinite(value):
            out[name] = value
    return out


def early_ratios(w: Any) -> dict[str, float]:
    """Each weight matrix's largest update ratio over the first sampled steps."""
    return {n: max(r[:6]) for n, r, s in zip(w.param_names, w.update_ratios or [], w.param_shapes)
            if len(s) >= 2 and r and all(math.isfinite(v) for v in r[:6])}


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES)
    if skip:
        return skip
    stepped = getattr(ctx.optimizer, "stepped", None) or [opt for _, opt in each_optimizer(ctx)]
    if any(isinstance(opt, torch.optim.LBFGS) for opt in stepped):
        return Skipped(CODES, "L-BFGS runs several iterations per step and takes steps of a different size by design "
                              "(lr about 1 is usual): its update size is not judged")
    w = ctx.watch
    moved = displacement(w)
    if not moved:
        return Skipped(CODES, "no trained weight matrix was watched")
    typical = median(list(moved.values()))
    limit = DISPLACED * max(1.0, math.sqrt(w.steps / 200))
    if not math.isfinite(typical) or typical < limit:
        return []
    objectives, coupled = judged(ctx, CODES)
    chance = chance_loss(ctx)
    for obj in objectives:
        symptom = _symptom(obj.losses, chance)
        if symptom:
            return [_finding(ctx, obj, moved, typical, symptom, chance)]
    return coupled or []


def _finding(ctx: Any, obj: Any, moved: dict[str, float], typical: float, symptom: str, chance: float | None) -> Finding:
    w = ctx.watch
    lrs = sorted({v for v in w.lrs if v is not None})
    early = early_ratios(w)
    top = dict(sorted(moved.items(), key=lambda kv: -kv[1])[:8])
    first = median(list(early.values())) if early else math.nan
    lr_text = f" (lr {', '.join(f'{v:g}' for v in lrs[:4])})" if lrs else ""
    early_text = f"; its first steps changed them by {first:.0%} each (healthy: at most a few %)" if math.isfinite(first) else ""
    return Finding(
        "TW140", "error",
        f"the learning rate is far too high{lr_text}: in {w.steps} steps the weights moved {typical:.3g}x their initial size "
        f"(median over {len(moved)} layers; healthy runs: under 1.5x){early_text}, and {symptom}",
        loss_where(ctx, obj) if len(w.objectives) > 1 else "optimizer lr",
        {"median_displacement": round(typical, 4), "displacement_per_layer": {k: round(v, 4) for k, v in top.items()},
         "early_update_ratio_per_layer": {k: round(v, 4) for k, v in list(early.items())[:8]},
         "lrs": lrs[:10], "chance_loss": round(chance, 4) if chance else None, "steps": w.steps},
        "lower the learning rate 10-100x (Adam-family: 1e-4..3e-3, SGD: 1e-3..1e-1) or add a warm-up; "
        "`torchwise tune` runs a learning-rate range test",
    )


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
