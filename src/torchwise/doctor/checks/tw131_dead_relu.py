"""Dead ReLU units: units whose output was zero for every sample over many steps.

What: every ReLU (module or ``F.relu``/``torch.relu``) output is watched on every other step;
a unit (a channel for conv outputs, a feature otherwise) is *dead* when it was never above zero
for any sample of any watched step. A layer is reported when at least ``DEAD_SHARE`` of its
units are dead after ``MIN_WATCHED`` watched calls.
Why: a dead unit passes no gradient, so it never recovers: the layer trains with a fraction of
its width. The usual causes are a too-large learning rate that knocks the pre-activations
negative, a large negative bias, or an init that is far too wide.
Example: ``Adam(model.parameters(), lr=0.5)`` on an MLP: most hidden units die within a few
dozen steps.
A ReLU on the model's *output* that is zero for every sample (however few its units: a count
regressor's single output) is an error: no gradient reaches any weight.
Fix: a smaller learning rate (or a warm-up), kaiming init, normalisation before the ReLU, or a
leaky variant (``nn.LeakyReLU``, ``nn.GELU``) that keeps a gradient below zero.

Thresholds, measured with ``--steps 200`` on the healthy ReLU models of
``tests/doctor/realistic.py`` (MLP, CNN with BatchNorm, GRU head, transformer LM; seeds 0, 1):
at most 3% dead units in any layer. The MLP at lr 0.5 has 70-95% dead.
"""

from __future__ import annotations

from torchwise.doctor.checks import listing
from torchwise.doctor.checks._dynamics import needs_steps
from torchwise.doctor.report import Finding, Skipped

CODES = ("TW131",)
SCRIPT = True
EXPLAINS = ("TW135",)  # the loss cannot fall through units that pass no gradient
DYNAMICS = True  # needs a run of >= MIN_DYNAMICS_STEPS steps
DEAD_SHARE = 0.4
MIN_WATCHED = 10
MIN_UNITS = 4


def check(ctx) -> list[Finding] | Skipped:
    skip = needs_steps(ctx, CODES)
    if skip:
        return skip
    acts = [a for a in ctx.watch.activations if a.func == "relu" and a.dead_units is not None]
    if not acts:
        return Skipped(CODES, "no ReLU output was seen")
    bad = [a for a in acts if a.calls >= MIN_WATCHED and a.units >= MIN_UNITS and a.dead_units / a.units >= DEAD_SHARE]
    shut = [a for a in acts if a.is_output and a.calls >= MIN_WATCHED and a.units and a.dead_units == a.units]
    if shut:
        return [_output_dead(ctx, shut[0])]
    if not bad:
        return []
    worst = max(bad, key=lambda a: a.dead_units / a.units)
    share = worst.dead_units / worst.units
    where = listing([_where(a) for a in bad], 3)
    return [Finding(
        "TW131", "warning",
        f"{len(bad)} ReLU layer(s) with dead units: {worst.dead_units} of {worst.units} units of {_where(worst)} "
        f"({share:.0%}) were zero for every sample over {worst.calls} watched calls",
        where,
        {"layers": {_where(a): {"dead": a.dead_units, "units": a.units, "watched_calls": a.calls} for a in bad[:10]},
         "steps": ctx.watch.steps},
        "lower the learning rate (or warm it up), use kaiming init and normalisation before the ReLU, or a leaky activation (LeakyReLU/GELU)",
    )]


def _output_dead(ctx, a) -> Finding:
    return Finding(
        "TW131", "error",
        f"the model's output goes through a ReLU that was zero for every sample over {a.calls} watched calls "
        f"({a.units} output unit(s)): no gradient reaches the model, nothing trains",
        _where(a),
        {"layers": {_where(a): {"dead": a.dead_units, "units": a.units, "watched_calls": a.calls}}, "output": True,
         "steps": ctx.watch.steps},
        "drop the ReLU on the output (for a non-negative target use softplus or exp, or clamp only when predicting), "
        "and do not start its input's bias below zero",
    )


def _where(a) -> str:
    """The ReLU module's path; for a functional relu, the module whose forward calls it."""
    k = a.key.rsplit("|", 1)[1]
    name = a.module if a.key.endswith("|1") else f"{a.module} (call #{k})"
    if not a.is_module:
        name = f"{a.module}: relu() #{k}"
    return f"{name} at {a.line}" if a.line else name
