"""Evaluation run with the model still in training mode (no ``model.eval()``).

What: script mode: the forward passes of a trained model that no backward went through, fed a
batch of a DataLoader, and either from another loader than the training one (a validation or
test loader) or under ``no_grad``/``inference_mode``, while some of its Dropout / BatchNorm
(InstanceNorm with running statistics) layers were in training mode. A batch is recognised by
the shapes of the tensors the loader just served; a generator sampling from noise is not an
evaluation. When the doctor's steps are done it ends the training loader's epoch early, so the
script's own evaluation runs and is seen (see script_hooks.py). Task mode: the model's modes
while the ``evaluate=`` function given to the doctor runs its forward passes.
Why: in training mode Dropout drops units at random and BatchNorm normalises each evaluation
batch by its own statistics (and updates the running ones with evaluation data): the metrics are
noisy and wrong, and depend on the batch size. Accuracy measured this way is not the model's.
Example: ``def test(model, loader): with torch.no_grad(): for x, y in loader: model(x)...`` with
no ``model.eval()`` before it.
Fix: ``model.eval()`` before evaluating and ``model.train()`` before training again (or a
context manager that restores the mode).
Measured (2026-11-25): pytorch/examples' mnist (``model.eval()`` in its test()) and the clean
scripts of tests/doctor/scripts record no such pass; the same loops without ``model.eval()``
record one per evaluation batch. There is no threshold: one evaluation pass is enough.
"""

from __future__ import annotations

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW139",)
SCRIPT = True


def check(ctx) -> list[Finding] | Skipped:
    if not getattr(ctx, "script", False):
        return _task(ctx)
    evals = ctx.scratch.get("train_mode_evals") or []
    if not evals:
        return []
    layers = sorted({m for e in evals for m in e["modules"]})
    first = evals[0]
    feeds = "another loader than training's" if first["other_loader"] else "loader batches under no_grad"
    return [Finding(
        "TW139", "warning",
        f"evaluation ran with the model in training mode: {len(evals)} forward pass(es) on {feeds}, no backward, "
        f"while {len(layers)} Dropout/BatchNorm layer(s) were training (first at {first['line']})",
        f"evaluation forward at {first['line']}" if first["line"] else "evaluation forward",
        {"passes": len(evals), "training_layers": layers[:20], "no_grad": not first["grad"], "other_loader": first["other_loader"],
         "after_the_steps": first.get("draining", False)},
        "call model.eval() before evaluating and model.train() before training again",
    )]


def _task(ctx) -> list[Finding] | Skipped:
    if not ctx.evaluate_given:
        return Skipped(CODES, "no evaluate= function given: the doctor runs training steps only")
    layers = ctx.scratch.get("evaluate_training_layers")
    if layers is None:
        return Skipped(CODES, "evaluate() did not call the model")
    if not layers:
        return []
    return [Finding(
        "TW139", "warning",
        f"evaluate() ran the model in training mode: {len(layers)} Dropout/BatchNorm layer(s) were training",
        listing(layers), {"training_layers": layers[:20]},
        "call model.eval() at the start of evaluate() (and model.train() before training again)",
    )]
