"""Check classification labels against the model's output width (practice TW106).

An out-of-range class index makes ``cross_entropy``/``nll_loss`` fail on CUDA with the opaque
"device-side assert triggered" (and on the CPU with an IndexError deep inside torch). Checking
once, before the first step, turns that into one sentence naming the bad labels and the width.
"""

from __future__ import annotations

import torch

__all__ = ["label_problem", "is_class_target", "check_batch_labels", "out_of_range"]


def is_class_target(output: torch.Tensor, target: torch.Tensor) -> bool:
    """True when ``target`` looks like class indices for ``output`` (CE/NLL layout).

    Integer targets of shape (N,) for an (N, C) output, or (N, d1, ...) for (N, C, d1, ...).
    Floating targets (probabilities, regression) are not class indices.
    """
    if not isinstance(output, torch.Tensor) or not isinstance(target, torch.Tensor):
        return False
    if target.is_floating_point() or target.is_complex() or target.dtype == torch.bool:
        return False
    if output.dim() < 1 or not output.is_floating_point():
        return False
    if output.dim() == target.dim() + 1:
        return output.shape[:1] + output.shape[2:] == target.shape
    # an unbatched (C,) output with a 0-d target
    return output.dim() == 1 and target.dim() == 0


def out_of_range(labels: torch.Tensor, width: int, ignore_index: int | None = -100) -> torch.Tensor:
    """Boolean mask of the class labels outside ``[0, width)`` (``ignore_index`` is allowed)."""
    bad = (labels < 0) | (labels >= width)
    if ignore_index is not None:
        bad &= labels != ignore_index
    return bad


def check_batch_labels(targets: torch.Tensor, num_classes: int, ignore_index: int | None = -100) -> str | None:
    """A one-line problem if integer class labels ``targets`` fall outside ``[0, num_classes)``, else None.

    Meant for CPU tensors, before the copy to the device (the Trainer runs it on every batch, the
    doctor over a dataset): one min/max pass, no device synchronisation. Floating-point and bool
    targets (probabilities, regression, masks) are not class labels and return None.
    """
    if not isinstance(targets, torch.Tensor) or targets.numel() == 0:
        return None
    if targets.is_floating_point() or targets.is_complex() or targets.dtype == torch.bool:
        return None
    # integer tensors never require grad, so no detach; one pass and two host reads (the Trainer
    # runs this on every batch, so the happy path is kept to the fewest torch calls)
    low, high = torch.aminmax(targets)
    if low.item() >= 0 and high.item() < num_classes:
        return None
    t = targets.detach().reshape(-1)
    bad_mask = out_of_range(t, num_classes, ignore_index)
    return _describe(t, bad_mask, num_classes, ignore_index)


def _describe(t: torch.Tensor, bad_mask: torch.Tensor, width: int, ignore_index: int | None) -> str | None:
    count = int(bad_mask.sum())
    if count == 0:
        return None
    bad_values = torch.unique(t[bad_mask]).cpu().tolist()
    shown = ", ".join(str(v) for v in bad_values[:10]) + (", ..." if len(bad_values) > 10 else "")
    return (
        f"{count} target label(s) out of range for an output of width {width}: found {shown}; "
        f"class labels must lie in [0, {width - 1}]"
        + (f" (or equal ignore_index {ignore_index})" if ignore_index is not None else "")
        + ". Check the number of classes of the last layer or the label encoding"
    )


def label_problem(output: torch.Tensor, target: torch.Tensor, ignore_index: int | None = -100) -> str | None:
    """A one-line problem description if ``target`` holds labels outside ``[0, C)``, else None.

    ``C`` is the class dimension of ``output`` (dim 1, or dim 0 for an unbatched output).
    ``ignore_index`` (CrossEntropyLoss's default -100) is allowed. Non-classification targets
    return None. Syncs the device once: call it before the first step, not every step.
    """
    if not is_class_target(output, target):
        return None
    width = int(output.shape[1] if output.dim() >= 2 else output.shape[0])
    t = target.detach().reshape(-1)
    bad_mask = out_of_range(t, width, ignore_index)
    return _describe(t, bad_mask, width, ignore_index)
