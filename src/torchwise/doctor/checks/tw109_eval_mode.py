"""A model left in eval mode when training starts.

What: the model handed to the doctor has ``training == False`` (``model.eval()`` was called and
never undone) and it contains layers that behave differently in training: Dropout, BatchNorm,
InstanceNorm with running statistics. (The catalog has no separate code for this; it is filed
under TW109, the practice about train/eval mode of such layers.)
Why: trained in eval mode, Dropout does nothing (no regularisation) and BatchNorm normalises with
its running statistics instead of the batch's and never updates them, so training is unstable and
the result differs from what was intended. A validation loop that calls ``eval()`` without the
training loop calling ``train()`` again is the usual cause.
Example: ``evaluate(model)`` (which calls ``model.eval()``) before the first epoch, and a training
loop without ``model.train()``.
Fix: call ``model.train()`` at the start of every training epoch (the Trainer does).
In script mode the mode is read at each training step (the forward a backward goes through),
so a validation loop that leaves the model in eval mode for the next epoch is caught there.
"""

from __future__ import annotations

from torch import nn

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding

CODES = ("TW109",)
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)

MODE_DEPENDENT = (nn.modules.dropout._DropoutNd, nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)


def mode_dependent(m: nn.Module) -> bool:
    """Dropout, BatchNorm, or InstanceNorm with running statistics: behaves differently in eval()."""
    if isinstance(m, nn.modules.instancenorm._InstanceNorm):
        return bool(m.track_running_stats)
    return isinstance(m, MODE_DEPENDENT)


def check(ctx) -> list[Finding]:
    if ctx.initial_training.get("", True):
        return []
    layers = [
        n for n, m in ctx.model.named_modules()
        if isinstance(m, MODE_DEPENDENT) and (not isinstance(m, nn.modules.instancenorm._InstanceNorm) or m.track_running_stats)
        and not ctx.initial_training.get(n, True)
    ]
    if not layers:
        return []
    line, step = ctx.scratch.get("trained_in_eval", ("", None))
    when = f"when training step {step} ran (backward through a forward at {line})" if step is not None else "at the start of training"
    return [Finding(
        "TW109", "warning",
        f"the model is in eval mode {when}; {len(layers)} Dropout/normalisation layer(s) would not train as intended",
        listing(layers),
        {"model_training": False, "mode_dependent_layers": len(layers), "layers": layers[:20]},
        "call model.train() at the start of each training epoch (after any evaluation)",
    )]
