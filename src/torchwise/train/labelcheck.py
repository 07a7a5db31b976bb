"""The label check (TW106): class labels checked against the model's output width, on the host.

The first batch's targets are checked against its output (:func:`torchwise.utils.labels.label_problem`),
which also tells the width. From then on every batch's integer targets are checked on the CPU
before the batch is copied to the device (no device sync), so an out-of-range label is named
with its batch and values instead of CUDA's device-side assert. Batches used where they are (no
copy) by a loss that range-checks its targets itself before any gradient exists (CE/NLL on the
CPU: "IndexError: Target 7 is out of bounds") skip that pass: the check then runs when that
error comes, to name the batch and values.
"""

from __future__ import annotations

from typing import Any, Mapping

import torch
from torch import nn

from torchwise.utils.batch import TARGET_KEYS
from torchwise.core.errors import DataError
from torchwise.utils.labels import check_batch_labels, is_class_target, label_problem

_PAIRS = (tuple, list)
# losses whose CPU kernels reject an out-of-range class index before any gradient exists
_RANGE_CHECKING_LOSSES = (nn.CrossEntropyLoss, nn.NLLLoss)


def checks_label_range(loss_fn: Any) -> bool:
    """Whether ``loss_fn`` refuses an out-of-range class index itself (on the CPU)."""
    return isinstance(loss_fn, _RANGE_CHECKING_LOSSES) or loss_fn in (nn.functional.cross_entropy, nn.functional.nll_loss)


class LabelCheck:
    """The first batch against the output's width, then every batch on the host (see the module)."""

    def __init__(self, enabled: bool, loss_fn: Any) -> None:
        self.pending = enabled  # the first batch's check against the output is still to run
        self.loss_fn = loss_fn
        self.width: int | None = None  # the output width once the first batch showed it
        self.per_batch = False  # whether each later batch gets the host check before its copy (read every step)

    def first(self, output: Any, targets: Any, copies: bool) -> None:
        """The first batch: labels against the output's width (``copies``: batches go to a device)."""
        self.pending = False
        if isinstance(output, torch.Tensor) and isinstance(targets, torch.Tensor):
            problem = label_problem(output.detach(), targets)
            if problem:
                raise DataError(f"label check before the first step: {problem}")
            if is_class_target(output, targets):
                self.width = int(output.shape[1] if output.dim() >= 2 else output.shape[0])
                self.per_batch = copies or not checks_label_range(self.loss_fn)

    def host(self, batch: Any, epoch: int, batch_in_epoch: int, step: int) -> None:
        """A later batch: class labels in [0, width) checked on the CPU (no device sync)."""
        if type(batch) in _PAIRS and len(batch) >= 2:
            targets = batch[1]
        elif isinstance(batch, Mapping):
            targets = next((batch[k] for k in TARGET_KEYS if k in batch), None)
        else:
            return
        if isinstance(targets, torch.Tensor) and targets.is_cpu:
            problem = check_batch_labels(targets, self.width)  # type: ignore[arg-type]
            if problem:
                raise DataError(f"batch {batch_in_epoch} of epoch {epoch + 1} (before step {step + 1}): {problem}")
