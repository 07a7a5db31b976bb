"""Label leakage: the target is readable from the input, and the training loss collapses.

What: two signs, either is reported. (1) On the watched steps the class targets given to
``cross_entropy``/``nll_loss`` are compared with the model's input: equal token for token in
at least ``EQUAL_SHARE`` of the positions (a language model whose targets were not shifted), or
equal to one input column (the label left among the features). (2) Within the first pass over
the data (each batch new to the model, so nothing can have been memorised) the running median
of 5 step losses falls below ``COLLAPSE`` times the starting loss. (2) is not checked when the
same batch is used on every step (``doctor(batch=...)``): fitting one batch is expected.
Why: real tasks do not become trivially easy within one epoch; a loss near zero that early
means the target is readable from the input: a language model whose targets were not shifted
by one (it predicts the token it is given), a label column left among the features, a mask
that lets attention see the future.
Example: ``inputs, targets = tokens[:, :-1], tokens[:, :-1]`` (should be ``tokens[:, 1:]``).
Fix: shift LM targets (``targets = tokens[:, 1:]``), apply the causal mask, drop the label (and
anything derived from it) from the inputs.

Thresholds, measured on the healthy models of ``tests/doctor/realistic.py`` (seeds 0, 1) over
their first epoch: the lowest running-median loss stayed above 0.035x the start (the CNN with
BatchNorm on digits, the easiest task, reached 0.037-0.055x; the MLPs 0.3-0.55x; the LM 0.94x),
so ``COLLAPSE`` = 0.01 keeps a margin of 3.5x. The tiny LM with unshifted targets only reaches
0.024x in 150 steps, which is why sign (1) exists: there, 100% of its targets equal its inputs
(shifted: 6%, the chance of a repeated token).
"""

from __future__ import annotations

import math

from torchwise.doctor.checks._dynamics import median, needs_steps, loss_where
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW136",)
SCRIPT = True
COLLAPSE = 0.01
EQUAL_SHARE = 0.9
RUN = 5


def measure(losses: list[float], first_epoch: int | None) -> dict | None:
    n = len(losses) if first_epoch is None else min(len(losses), first_epoch)
    if n < 2 * RUN:
        return None
    start = min(losses[:3])  # not inflated by a loss that jumps up at step 1
    running = [median(losses[i - RUN:i]) for i in range(RUN, n + 1)]
    low = min(running)
    at = running.index(low) + RUN
    reached = next((i + RUN for i, v in enumerate(running) if v < COLLAPSE * start), None)
    return {"loss_start": start, "lowest_running_median": low, "lowest_at_step": at, "ratio": low / start if start > 0 else math.nan,
            "collapsed_at_step": reached, "steps_in_first_epoch": n}


def check(ctx) -> list[Finding] | Skipped:
    w = ctx.watch
    if w is None:
        return Skipped(CODES, "the steps were not watched")
    fix = "shift language-model targets by one (targets = tokens[:, 1:]), keep the causal mask, and keep the label out of the inputs"
    if w.target_in_input and median(w.target_in_input) >= EQUAL_SHARE:
        share = median(w.target_in_input)
        return [Finding(
            "TW136", "error",
            f"the targets are readable from the model's input ({share:.0%} equal to it over {len(w.target_in_input)} watched loss calls): "
            "label leakage, e.g. language-model targets not shifted by one",
            "loss targets vs model input", {"equal_share": round(share, 4), "watched_calls": len(w.target_in_input),
                                             "losses_first": [round(v, 4) for v in w.losses[:3]], "losses_last": [round(v, 4) for v in w.losses[-3:]]},
            fix,
        )]
    if needs_steps(ctx, CODES):
        return []  # the equality sign was checked; the loss curve needs a longer run
    if w.batches_repeat:
        return Skipped(CODES, "the same batch is used on every step (fitting it is expected)")
    m = measure(w.losses, w.distinct_batches)
    if m is None:
        return Skipped(CODES, "too few steps within the first pass over the data")
    if m["collapsed_at_step"] is None or not m["loss_start"] > 0:
        return []
    evidence = {k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in m.items()}
    return [Finding(
        "TW136", "warning",
        f"the training loss collapsed from {m['loss_start']:.4g} to {m['lowest_running_median']:.3g} by step {m['collapsed_at_step']}, "
        "within the first pass over the data: the target is probably readable from the input (label leakage)",
        loss_where(ctx), evidence, fix,
    )]
