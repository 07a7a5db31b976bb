"""Class labels outside ``[0, C)`` for the classification loss.

What: the integer targets given to ``cross_entropy``/``nll_loss`` hold values below 0 or at
least the output width C (``ignore_index`` excepted). The labels are checked as the loss is
called, before it runs, so the finding is there even when the loss raises; and the targets of
*every* batch the doctor runs are checked on the host before they move to the device (a Task:
when the batch's targets reach the loss unchanged; a script: at each loss call), so one bad
label among hundreds of samples is found on the step that reads it.
And where the dataset's labels can be read without loading samples (a ``TensorDataset``'s last
tensor, a ``.targets``/``.labels`` attribute, ``Subset``s of those: dataset_targets.py), all of
them are checked at once after the first step, so a bad label in a batch the run never reached
is found too, with its sample index. That scan is trusted only when the first loss call's labels
all occur in the dataset's and the out-of-range ones are a small minority (at most
``MAX_BAD_SHARE`` of the samples): a script that re-encodes its labels before the loss (``y // 2``,
``y - 1``) is left to the per-batch check.
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


MAX_BAD_SHARE = 0.01


def check(ctx) -> list[Finding] | Skipped:
    calls = [c for c in ctx.loss_calls if c.func in ("cross_entropy", "nll_loss")]
    watched = list(getattr(getattr(ctx, "watch", None), "label_problems", None) or [])
    whole = _dataset_scan(ctx, calls)
    if getattr(ctx, "script", False):  # a script: every loss call was checked as it ran
        return whole or _later_batches(watched)
    if not calls and not watched:
        return Skipped(CODES, "no cross_entropy/nll_loss call was seen")
    if whole:
        return whole  # every sample's label, first batch included
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


def _dataset_scan(ctx, calls: list) -> list[Finding]:
    """Every label of the training dataset, when they are cheap to read and feed the loss as they are."""
    from torchwise.doctor.dataset_targets import cheap_targets
    from torchwise.utils.labels import out_of_range

    call = next((c for c in calls if isinstance(c.target, torch.Tensor) and c.target.dim() == 1
                 and is_class_target(c.input, c.target)), None)
    dataset = getattr(getattr(ctx, "loader", None), "dataset", None)
    if call is None or dataset is None:
        return []
    labels = cheap_targets(dataset)
    if labels is None or not labels.numel():
        return []
    width = int(call.input.shape[1])
    ignore = call.kwargs.get("ignore_index", -100)
    seen = call.target.detach().cpu().to(labels.dtype)
    if not bool(torch.isin(seen, labels).all()):
        return []  # the loss gets other labels than the dataset's (re-encoded): not comparable
    bad = out_of_range(labels, width, ignore)
    count = int(bad.sum())
    if not count or count > max(1, MAX_BAD_SHARE * labels.numel()):
        return []
    index = bad.nonzero().flatten()
    values = sorted({int(v) for v in labels[index].tolist()})
    samples = [int(i) for i in index[:10]]
    shown = ", ".join(f"sample {i} has {int(labels[i])}" for i in samples[:5])
    return [Finding(
        "TW106", "error",
        f"{count} of the {labels.numel()} labels of the training dataset are out of range for an output of width {width} "
        f"({shown}{', ...' if count > 5 else ''}); class labels must lie in [0, {width - 1}]",
        f"labels of the training dataset ({type(dataset).__name__})",
        {"output_width": width, "bad_count": count, "bad_values": values[:20], "samples": samples, "dataset_size": int(labels.numel()),
         "read_from": "the whole dataset's labels"},
        f"fix those samples' labels (or the label encoding), or widen the last layer to the number of classes; labels must be in [0, {width - 1}]",
    )]


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
