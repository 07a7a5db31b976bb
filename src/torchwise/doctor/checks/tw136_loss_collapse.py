"""Label leakage: the target is readable from the input, and the training loss collapses.

What: two signs, either is reported. (1) On the watched steps the class targets given to
``cross_entropy``/``nll_loss`` are compared with the model's input: equal token for token in
at least ``EQUAL_SHARE`` of the positions (a language model whose targets were not shifted), or
equal to one input column (the label left among the features). (2) Within the first pass over
the data (each batch new to the model, so nothing can have been memorised) every loss of 5 steps
in a row of a *classification* loss is below ``COLLAPSE`` times the starting loss,
from a normal start: at most ``NORMAL_START`` times the chance level ln C. (2) is not checked
when the same batch is used on every step (``doctor(batch=...)``: fitting one batch is
expected), when the batches do not come from a DataLoader (the length of an epoch is unknown:
an easy dataset sliced by hand is fitted over many epochs), for regression losses (an easy target may well be fitted within an epoch; "near zero"
has no scale there), for a first loss far above chance (a bad init that recovers: TW142), or for
objectives that trade off (a GAN's discriminator winning is not leakage).
Why: real tasks do not become trivially easy within one epoch; a loss near zero that early
means the target is readable from the input: a language model whose targets were not shifted
by one (it predicts the token it is given), a label column left among the features, a mask
that lets attention see the future.
Example: ``inputs, targets = tokens[:, :-1], tokens[:, :-1]`` (should be ``tokens[:, 1:]``).
Fix, by task: a model fed tokens: shift the targets (``targets = tokens[:, 1:]``) and apply the
causal mask; features: drop the label (and anything derived from it) from the inputs.

Thresholds, measured 2026-11-25 on the healthy models of ``tests/doctor/realistic.py`` (150
steps, seeds 0, 1) over their first epoch: the lowest 5-step running maximum of the loss stayed
above 0.087x the start (the CNN with BatchNorm on digits, the easiest task; the MLPs 0.42-0.62x,
the LM 0.93x), so ``COLLAPSE`` = 0.01 keeps a margin of 8.7x. A running *median* was used before:
an easy dataset (well separated blobs, one of the doctor-bug corpus's fixed twins) dipped to
0.005x of its start with some batches still at 0.07-0.19x, and was called leakage; its lowest
running maximum is 0.025x. A planted leak (the label one-hot and scaled among the inputs) falls
to about 1e-5x within 20 steps. First losses of healthy classifiers are 0.99-1.18 x ln C (see
tw142_bad_init.py), so a start above ``NORMAL_START`` = 2 x ln C is not normal. The tiny LM with
unshifted targets only reaches 0.024x in 150 steps, which is why sign (1) exists: there, 100% of
its targets equal its inputs (shifted: 6%, the chance of a repeated token).
"""

from __future__ import annotations

import math

from torchwise.doctor.checks._dynamics import chance_loss, judged, loss_where, median, needs_steps, task_kind
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW136",)
SCRIPT = True
COLLAPSE = 0.01
EQUAL_SHARE = 0.9
RUN = 5
NORMAL_START = 2.0  # a first loss above NORMAL_START x ln C is not a normal start (see tw142_bad_init.py)
FIX_TOKENS = "shift the targets by one (inputs = tokens[:, :-1], targets = tokens[:, 1:]) and keep the causal mask"
FIX_FEATURES = "remove the label, and anything derived from it (ids, file names, a sorted index), from the model's inputs"


def measure(losses: list[float], first_epoch: int | None) -> dict | None:
    n = len(losses) if first_epoch is None else min(len(losses), first_epoch)
    if n < 2 * RUN:
        return None
    start = min(losses[:3])  # not inflated by a loss that jumps up at step 1
    running = [max(losses[i - RUN:i]) for i in range(RUN, n + 1)]  # every loss of RUN steps in a row
    low = min(running)
    at = running.index(low) + RUN
    reached = next((i + RUN for i, v in enumerate(running) if v < COLLAPSE * start), None)
    return {"loss_start": start, "lowest_running_max": low, "lowest_at_step": at, "ratio": low / start if start > 0 else math.nan,
            "collapsed_at_step": reached, "steps_in_first_epoch": n}


def check(ctx) -> list[Finding] | Skipped:
    w = ctx.watch
    if w is None:
        return Skipped(CODES, "the steps were not watched")
    fix = FIX_TOKENS if w.token_input else FIX_FEATURES
    if w.target_in_input and median(w.target_in_input) >= EQUAL_SHARE:
        share = median(w.target_in_input)
        what = "language-model targets not shifted by one" if w.token_input else "the label is one of the input features"
        return [Finding(
            "TW136", "error",
            f"the targets are readable from the model's input ({share:.0%} equal to it over {len(w.target_in_input)} watched loss calls): "
            f"label leakage: {what}",
            "loss targets vs model input", {"equal_share": round(share, 4), "watched_calls": len(w.target_in_input),
                                             "losses_first": [round(v, 4) for v in w.losses[:3]], "losses_last": [round(v, 4) for v in w.losses[-3:]]},
            fix,
        )]
    if needs_steps(ctx, CODES):
        return []  # the equality sign was checked; the loss curve needs a longer run
    if w.batches_repeat:
        return Skipped(CODES, "the same batch is used on every step (fitting it is expected)")
    if w.distinct_batches is None:
        return Skipped(CODES, "the batches do not come from a DataLoader, so the first pass over the data is unknown: "
                       "only the target-equals-input sign applies")
    chance = chance_loss(ctx)
    if chance is None:
        return Skipped(CODES, f"the loss is not a classification loss ({task_kind(ctx)[0]}): only the target-equals-input sign applies")
    objectives, coupled = judged(ctx, CODES)
    findings = [f for o in objectives for f in _collapse(ctx, o, chance, fix)]
    return findings or coupled or []


def _collapse(ctx, objective, chance: float, fix: str) -> list[Finding]:
    m = measure(objective.losses, ctx.watch.distinct_batches)
    if m is None or m["collapsed_at_step"] is None or not m["loss_start"] > 0:
        return []
    if m["loss_start"] > NORMAL_START * chance:
        return []  # not a normal start: a bad init falling back (TW142)
    evidence = {k: (float(f"{v:.4g}") if isinstance(v, float) else v) for k, v in m.items()}
    evidence["chance_loss"] = round(chance, 4)
    return [Finding(
        "TW136", "warning",
        f"the training loss fell from {m['loss_start']:.4g} (chance: {chance:.3g}) to at most {m['lowest_running_max']:.3g} for {RUN} steps in a row by step "
        f"{m['collapsed_at_step']}, within the first pass over the data: the target is probably readable from the input (label leakage)",
        loss_where(ctx, objective), evidence, fix,
    )]
