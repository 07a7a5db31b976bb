"""Class labels outside ``[0, C)`` for the classification loss.

What: the integer targets given to ``cross_entropy``/``nll_loss`` hold values below 0 or at
least the output width C (``ignore_index`` excepted). The labels are checked as the loss is
called, before it runs, so the finding is there even when the loss raises; and the targets of
*every* batch the doctor runs are checked on the host before they move to the device (a Task:
when the batch's targets reach the loss unchanged; a script: at each loss call), so one bad
label among hundreds of samples is found on the step that reads it.
Why: on CUDA an out-of-range label stops the process with the opaque "device-side assert
triggered" (and poisons the CUDA context); on the CPU it is an IndexError deep inside torch.
Example: labels 1..10 for a 10-way ``nn.Linear(64, 10)`` head (10 is out of range).
Fix: make the last layer as wide as the number of classes, or re-encode the labels to 0..C-1.
"""

from __future__ import annotations

import torch

from torchwise.doctor.report import Finding, Skipped
from torchwise.utils.labels import is_class_target, label_problem

CODES = ("TW106",)
SCRIPT = True


def check(ctx) -> list[Finding] | Skipped:
    calls = [c for c in ctx.loss_calls if c.func in ("cross_entropy", "nll_loss")]
    watched = list(getattr(getattr(ctx, "watch", None), "label_problems", None) or [])
    if getattr(ctx, "script", False):
        return _later_batches(watched)  # a script: every loss call was checked as it ran
    if not calls and not watched:
        return Skipped(CODES, "no cross_entropy/nll_loss call was seen")
    findings = _later_batches(watched)
    for call in calls:
        target = call.target
        if not isinstance(target, torch.Tensor) or not is_class_target(call.input, target):
            continue
        ignore = call.kwargs.get("ignore_index", -100)
        problem = label_problem(call.input, target, ignore_index=ignore)
        if problem is None:
            continue
        width = int(call.input.shape[1] if call.input.dim() >= 2 else call.input.shape[0])
        t = target.reshape(-1)
        mask = (t < 0) | (t >= width)
        bad = t[mask & (t != ignore)] if ignore is not None else t[mask]
        values = torch.unique(bad).cpu().tolist()
        findings.append(Finding(
            "TW106", "error", problem, f"targets of {call.func}",
            {"output_width": width, "bad_count": int(bad.numel()), "bad_values": values[:20], "target_min": int(t.min()), "target_max": int(t.max())},
            f"labels must be in [0, {width - 1}]: widen the last layer to the number of classes or re-encode the labels",
        ))
    return findings


def _later_batches(problems: list[dict]) -> list[Finding]:
    """One finding for the bad labels seen in the batches after the first."""
    if not problems:
        return []
    first = problems[0]
    width = first["output_width"]
    values = sorted({v for p in problems for v in p["bad_values"]})
    count = sum(p["bad_count"] for p in problems)
    steps = [p["step"] for p in problems]
    where = f"targets of {first['loss']}" + (f" at {first['line']}" if first.get("line") else "")
    return [Finding(
        "TW106", "error",
        f"{count} target label(s) out of range for an output of width {width} in step(s) {steps[:10]}"
        + (f": found {', '.join(map(str, values[:10]))}" if values else "")
        + f"; class labels must lie in [0, {width - 1}]",
        where,
        {"output_width": width, "bad_count": count, "bad_values": values[:20], "steps": steps[:20]},
        f"labels must be in [0, {width - 1}]: widen the last layer to the number of classes or re-encode the labels",
    )]
