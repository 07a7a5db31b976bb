"""BatchNorm statistics that change although the layer was meant to be frozen.

What: a BatchNorm layer looks frozen (its weight and bias have ``requires_grad=False``, or it was
put in ``eval()`` while the rest of the model trains), yet its running mean/variance moved during
the doctor's training steps. The doctor calls ``model.train()`` on its copy, as every training
loop does, so a freeze made only with ``.eval()`` is undone just as it would be in training.
Why: the frozen statistics (often from pre-training) are silently replaced by those of small,
different batches; accuracy drops and the "frozen" backbone is not frozen at all.
Example: ``for m in model.modules(): if isinstance(m, nn.BatchNorm2d): m.eval(); m.requires_grad_(False)``
followed by ``model.train()`` at the start of each epoch.
Fix: freeze in a way that survives ``model.train()``: ``torchwise.freeze_batchnorm(model)``,
override ``train()`` to keep those layers in eval mode, or set ``momentum=0``.
"""

from __future__ import annotations

from torch import nn

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW109",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def _meant_frozen(ctx, name: str, m: nn.Module) -> str | None:
    params = [p for p in (m.weight, m.bias) if p is not None]
    if params and not any(p.requires_grad for p in params):
        return "requires_grad=False"
    if ctx.initial_training.get("", True) and not ctx.initial_training.get(name, True):
        return "eval() while the model trained"
    return None


def check(ctx) -> list[Finding] | Skipped:
    if not ctx.bn_stats_before:
        return Skipped(CODES, "no BatchNorm layer with running statistics")
    if not ctx.steps:
        return Skipped(CODES, "no training step completed")
    changed = []
    for name, m in ctx.model.named_modules():
        if name not in ctx.bn_stats_before or not isinstance(m, nn.modules.batchnorm._BatchNorm):
            continue
        why = _meant_frozen(ctx, name, m)
        if why is None:
            continue
        mean0, var0 = ctx.bn_stats_before[name]
        delta = max(float((m.running_mean - mean0).abs().max()), float((m.running_var - var0).abs().max()))
        if delta > 0:
            changed.append((name, why, delta))
    if not changed:
        return []
    return [Finding(
        "TW109", "warning",
        f"{len(changed)} BatchNorm layer(s) meant frozen ({changed[0][1]}) updated their running statistics in {len(ctx.steps)} train step(s)",
        listing(n for n, _, _ in changed),
        {"layers": [n for n, _, _ in changed], "frozen_by": sorted({w for _, w, _ in changed}), "max_stat_change": max(d for _, _, d in changed)},
        "freeze BatchNorm so that model.train() cannot undo it: torchwise.freeze_batchnorm(model), a train() override keeping them in eval(), or momentum=0",
    )]
