"""The non-finite guard (TW112): skip a step whose loss or gradient is NaN/Inf and say why.

Once per optimizer step the guard reads one number (the step's loss, plus the gradient norm when
it is computed) on the host. A bad step is skipped (gradients dropped); the batch is re-run with
:func:`torchwise.utils.nonfinite.find_nonfinite` to name the first module whose output went bad, and the
run stops with that message after ``patience`` consecutive bad steps.
"""

from __future__ import annotations

from typing import Any, Callable

from torch import nn

from torchwise.core.errors import TrainingError
from torchwise.utils.nonfinite import NonFiniteReport, find_nonfinite


class NonFiniteGuard:
    def __init__(self, patience: int = 5, enabled: bool = True) -> None:
        self.patience = patience
        self.enabled = enabled
        self.consecutive = 0
        self.skipped = 0
        self.last_report: NonFiniteReport | None = None

    def bad_step(self, step: int, model: nn.Module, reruns: list[Callable[[], Any]]) -> str:
        """Record skipped step number ``step`` (1-based), find the culprit, raise after ``patience`` in a row."""
        self.consecutive += 1
        self.skipped += 1
        report = None
        for rerun in reruns:
            report = find_nonfinite(model, rerun)
            if report is not None:
                break
        self.last_report = report
        cause = str(report) if report else "non-finite loss or gradient (not reproduced when the batch was re-run)"
        if self.consecutive >= self.patience:
            raise TrainingError(f"stopped after {self.consecutive} consecutive non-finite steps (last at step {step}): {cause}")
        return f"step {step} skipped: {cause}"
