"""The class targets of a whole dataset, where they can be read without loading its samples.

A ``TensorDataset`` whose last tensor holds class labels (one per sample: integers, or the 0./1.
floats of a binary classifier, shaped (N,) or (N, 1)), a dataset with a
``targets`` or ``labels`` attribute (torchvision's datasets, many custom ones), and ``Subset``s of
those: their labels are one tensor or list, read in microseconds. Every other dataset would have
to load each sample to see its label; it is left alone (None).
"""

from __future__ import annotations

from typing import Any

import torch

__all__ = ["cheap_targets", "MAX_SAMPLES"]

MAX_SAMPLES = 50_000_000


def cheap_targets(dataset: Any) -> torch.Tensor | None:
    """The dataset's integer class labels as a 1-D CPU tensor in index order, or None."""
    from torch.utils.data import Subset, TensorDataset

    if isinstance(dataset, Subset):
        inner = cheap_targets(dataset.dataset)
        if inner is None:
            return None
        try:
            return inner[torch.as_tensor(list(dataset.indices), dtype=torch.long)]
        except (IndexError, TypeError, ValueError, RuntimeError):
            return None
    if isinstance(dataset, TensorDataset):
        labels: Any = dataset.tensors[-1] if len(dataset.tensors) >= 2 else None
    else:
        labels = None
        for attr in ("targets", "labels"):
            value = getattr(dataset, attr, None)
            if value is not None and not callable(value):
                labels = value
                break
    return _as_labels(labels, dataset)


def _as_labels(labels: Any, dataset: Any) -> torch.Tensor | None:
    if labels is None:
        return None
    try:
        t = labels if isinstance(labels, torch.Tensor) else torch.as_tensor(labels)
    except (TypeError, ValueError, RuntimeError):
        return None
    if t.dim() == 2 and t.shape[1] == 1:
        t = t[:, 0]  # (N, 1): one label per sample, as BCE losses want it
    if t.dim() != 1 or t.is_complex() or t.numel() > MAX_SAMPLES:
        return None
    if t.is_floating_point() or t.dtype == torch.bool:  # 0./1. targets of a binary classifier
        if not bool((t == t.round()).all()) or t.unique().numel() > 100:
            return None
        t = t.long()
    try:
        if len(dataset) != t.numel():
            return None
    except TypeError:
        return None
    return t.detach().cpu()
