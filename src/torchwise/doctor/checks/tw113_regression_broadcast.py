"""A regression target whose shape differs from the prediction's, silently broadcast.

What: ``mse_loss``/``l1_loss``/``smooth_l1_loss``/``huber_loss`` called with an input and a
target of different shapes that broadcast to a larger one, e.g. a (N, 1) prediction against a
(N,) target gives an (N, N) matrix of every prediction against every target.
Why: the loss is still a number and still decreases, but it is the wrong number: the model is
pulled towards the mean of all targets instead of each sample's own, and no error is raised
(torch only warns, and warnings are easy to miss).
Example: ``F.mse_loss(model(x), y)`` with ``model(x).shape == (64, 1)`` and ``y.shape == (64,)``.
Fix: make the shapes equal: ``model(x).squeeze(-1)`` or ``y.unsqueeze(-1)`` / ``y.view_as(pred)``.
"""

from __future__ import annotations

import torch

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW113",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)
EXPLAINS = ("TW135",)  # pulled towards the mean of all targets, the loss stalls
REGRESSION = ("mse_loss", "l1_loss", "smooth_l1_loss", "huber_loss")


def check(ctx) -> list[Finding] | Skipped:
    calls = [c for c in ctx.loss_calls if c.func in REGRESSION]
    if not calls:
        return Skipped(CODES, "no regression loss (mse/l1/smooth_l1/huber) call was seen")
    findings = []
    for call in calls:
        if not isinstance(call.target, torch.Tensor):
            continue
        pred, target = tuple(call.input.shape), tuple(call.target.shape)
        if pred == target:
            continue
        try:
            wide = tuple(torch.broadcast_shapes(pred, target))
        except RuntimeError:
            continue  # does not broadcast: the loss raises on its own
        findings.append(Finding(
            "TW113", "error",
            f"{call.func}: prediction {pred} and target {target} broadcast to {wide} ({_numel(wide)} terms instead of {max(_numel(pred), _numel(target))})",
            f"loss_fn ({call.func})" + (f" at {call.line}" if call.line else ""),
            {"prediction_shape": list(pred), "target_shape": list(target), "broadcast_shape": list(wide)},
            "make prediction and target the same shape (pred.squeeze(-1) or target.view_as(pred))",
        ))
    return findings


def _numel(shape: tuple[int, ...]) -> int:
    n = 1
    for s in shape:
        n *= s
    return n
