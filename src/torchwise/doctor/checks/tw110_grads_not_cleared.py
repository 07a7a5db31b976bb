"""Gradients never cleared between optimizer steps: every step adds onto all earlier ones.

What: in a script run, right before each of the first 40 ``backward()`` calls the norm of every
parameter's ``.grad`` is read on the device (nothing when all are ``None``, as after
``zero_grad()``): what that backward will add to. Between two steps of an optimizer, a parameter's
gradient counts as cleared when it was ``None`` or zero before at least one backward. Reported:
the parameters of an optimizer whose gradients were *never* cleared over at least two such
intervals. Deliberate accumulation (k backwards, one step, one ``zero_grad()``) clears once per
step and stays quiet; so does a GAN, whose generator step leaves gradients in the discriminator
that the discriminator's ``zero_grad()`` clears before its own backward. With weights updated by
hand (no optimizer), each backward is a step and must start from cleared gradients.
In Task mode the doctor's own steps clear the gradients (as the Trainer does): not applicable.
Why: ``backward()`` adds into ``.grad``. Without ``optimizer.zero_grad()`` the gradient of step
t is the sum of all t steps' gradients: the update grows every step, training diverges or swings,
and lowering the learning rate only delays it.
Example: ``for x, y in loader: loss_fn(model(x), y).backward(); opt.step()`` (no zero_grad).
Fix: ``optimizer.zero_grad()`` once per optimizer step (before ``backward()`` or after
``step()``); to accumulate on purpose, clear once every k micro-batches, right after the step.
Measured (2026-11-25): a loop without ``zero_grad()`` keeps every gradient non-zero before
every backward (all intervals); clean loops, accumulation over 4 micro-batches and the GAN of
tests/doctor/scripts clear in every interval. There is no threshold: cleared or not.
"""

from __future__ import annotations

from torchwise.doctor.checks import listing
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW110",)
SCRIPT = True
EXPLAINS = ("TW130", "TW131", "TW132", "TW134", "TW135", "TW140")  # the growing update diverges, swings, explodes, kills or saturates units


def check(ctx) -> list[Finding] | Skipped:
    if not getattr(ctx, "script", False):
        return Skipped(CODES, "the doctor's own steps clear the gradients (as the Trainer does); checked on scripts")
    w = ctx.watch
    seen = getattr(w, "not_cleared", None)
    if seen is None:
        return Skipped(CODES, "fewer than two steps of one optimizer were watched")
    positions = [i for i in seen["positions"] if i < len(w.param_names) and w.requires_grad[i]]
    if not positions:
        return []
    names = [w.param_names[i] for i in positions]
    trainable = sum(w.requires_grad)
    every = len(positions) == trainable
    how = "by hand after each backward" if w.hand_updated else "by the optimizer"
    return [Finding(
        "TW110", "error",
        ("the gradients are never cleared: before every backward, .grad still held the previous steps' gradients "
         if every else f"{len(positions)} of {trainable} parameter tensors never have their gradient cleared: ")
        + f"(over {seen['intervals']} steps); each update {how} uses the sum of all gradients so far",
        listing(names),
        {"parameters": names[:50], "count": len(positions), "trainable": trainable, "steps_watched": seen["intervals"]},
        "clear the gradients before each backward (p.grad = None, or model.zero_grad()) after the update by hand"
        if w.hand_updated else
        "call optimizer.zero_grad() once per optimizer step (before backward() or after step()); "
        "to accumulate over k micro-batches on purpose, clear right after every k-th step",
    )]
