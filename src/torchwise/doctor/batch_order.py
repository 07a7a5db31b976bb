"""What each training batch holds, for the shuffling check (the evidence of TW141).

For the first classification loss of each step (class targets given to ``cross_entropy`` /
``nll_loss``, or the 0/1 targets of ``binary_cross_entropy(_with_logits)``, one label per sample): the share of the batch taken by its most common class and
which class that is; the class counts summed over the run. For the first regression loss of each
step (``mse_loss``, ``l1_loss`` ...): the mean and spread of its targets. All on the device,
read back in batches.
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["BatchOrder", "MIN_BATCH"]

MIN_BATCH = 8  # smaller batches say little about their composition


class BatchOrder:
    def __init__(self, limit: int = 2000) -> None:
        self.limit = limit
        self._step = -1
        self._pending: list[torch.Tensor] = []
        self._totals: torch.Tensor | None = None
        self.kind = ""  # "classes" | "regression" (the first seen)
        self.batches: list[tuple[float, float]] = []  # classes: (majority share, majority class); regression: (mean, std)
        self.class_counts: list[int] = []

    def classes(self, step: int, target: torch.Tensor, width: int) -> None:
        if step == self._step or len(self._pending) + len(self.batches) >= self.limit or self.kind == "regression":
            return
        t = target.detach()
        if t.dim() != 1 or t.numel() < MIN_BATCH or width < 2 or width > 100_000:
            return
        self._step, self.kind = step, "classes"
        counts = torch.bincount(t.clamp(0, width - 1), minlength=width)
        self._totals = counts if self._totals is None or self._totals.shape != counts.shape else self._totals + counts
        top = counts.max()
        self._pending.append(torch.stack([top.float() / t.numel(), counts.argmax().float()]))

    def binary(self, step: int, target: Any) -> None:
        """The 0./1. targets of a binary classifier (one per sample): two classes."""
        if not isinstance(target, torch.Tensor) or target.numel() < MIN_BATCH:
            return
        t = target.detach()
        if t.dim() == 2 and t.shape[1] == 1:
            t = t[:, 0]
        if t.dim() != 1:
            return
        self.classes(step, (t > 0.5).long(), 2)

    def regression(self, step: int, target: Any) -> None:
        if step == self._step or len(self._pending) + len(self.batches) >= self.limit or self.kind == "classes":
            return
        if not isinstance(target, torch.Tensor) or not target.is_floating_point() or target.numel() < MIN_BATCH:
            return
        if target.dim() > 2 or (target.dim() == 2 and target.shape[1] != 1):
            return
        self._step, self.kind = step, "regression"
        t = target.detach().float().reshape(-1)
        self._pending.append(torch.stack([t.mean(), t.std()]))

    def read(self) -> None:
        if self._pending:
            try:
                rows = torch.stack(self._pending).cpu().tolist()
            except RuntimeError:
                rows = [p.cpu().tolist() for p in self._pending]
            self.batches.extend((float(a), float(b)) for a, b in rows)
            self._pending = []
        if self._totals is not None:
            self.class_counts = [int(v) for v in self._totals.cpu().tolist()]
