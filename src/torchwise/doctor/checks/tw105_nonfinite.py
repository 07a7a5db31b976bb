"""The first module and output that went NaN/Inf (and a log of zeros behind it).

What: when a step's loss or gradients are not finite, the step is replayed with hooks on every
module (``torchwise.utils.nonfinite.find_nonfinite``) to name the first module whose output (or the
loss, or a gradient) went bad, and once more watching ``log`` calls: a log taken of exact zeros
or negatives (``log(softmax(x))``, ``log(p)`` without epsilon) is reported as TW105, anything else
as TW112.
Why: a NaN spreads through every later layer and into the weights; anomaly mode finds its origin
but slows every step. Knowing the first module points at the cause (log of 0, division by 0,
an exploding layer, bad input data).
Example: ``torch.log(torch.softmax(logits, -1))`` with a very confident row gives ``log(0) = -inf``.
Fix: use ``log_softmax`` (or ``clamp_min(eps)`` before ``log``); for other NaNs lower the learning
rate, clip gradients, check the data, or use the Trainer's non-finite guard.
"""

from __future__ import annotations

from torchwise.doctor.report import Finding

CODES = ("TW105", "TW112")
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)


def check(ctx) -> list[Finding]:
    if ctx.nonfinite_step is None:
        return []
    report = ctx.nonfinite
    where = (report.module or "the model") if report is not None else "unknown (the replay was finite)"
    evidence = {"step": ctx.nonfinite_step}
    line = getattr(ctx.watch, "backward_line", "") if getattr(ctx, "script", False) else ""
    if line:
        evidence["backward_at"] = line
    if report is not None:
        evidence.update({"module": report.module, "module_type": report.module_type, "kind": report.kind, "detail": report.detail})
    logs = [c for c in ctx.log_calls if c.zeros or c.negatives]
    if logs:
        c = logs[0]
        place = c.module or ("the loss computation" if c.line else "the model forward")
        evidence.update({"log_call": c.func, "log_module": c.module or place, "zeros": c.zeros, "negatives": c.negatives, "values": c.total})
        if c.line:
            evidence["log_at"] = c.line
        return [Finding(
            "TW105", "error",
            f"{c.func} of {c.zeros} zero(s) and {c.negatives} negative value(s) in {place}"
            + (f" at {c.line}" if c.line else "") + " made the step non-finite"
            + (f"; first bad spot: {report}" if report is not None else ""),
            (f"{c.module} at {c.line}" if c.module else c.line) if c.line else c.module or (report.module if report is not None else "") or "the model",
            evidence,
            "take log_softmax(logits) instead of log(softmax(logits)), or clamp_min(eps) before log",
        )]
    message = str(report) if report is not None else f"the loss or gradients were non-finite at step {ctx.nonfinite_step}, but a replay was finite"
    return [Finding(
        "TW112", "error", message, where, evidence,
        "fix that module's numerics (division by zero, overflow, exploding activations); lower the learning rate or clip gradients; check the batch for NaN",
    )]
