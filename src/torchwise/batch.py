"""Interpreting a batch as ``(inputs, targets)``: the one place every engine asks.

Accepted: a ``(inputs, targets)`` tuple or list, a ``(inputs, targets, extra...)`` sequence with
a ``lengths``/mask extra (as ``pad_collate`` yields), or a mapping with an input key and a target
key. Anything else raises :class:`~torchwise.errors.DataError` saying what was received and what is
expected; a user ``step_fn`` covers other layouts.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from torchwise.errors import DataError

INPUT_KEYS = ("inputs", "input", "x", "features", "image", "images", "input_ids")
TARGET_KEYS = ("targets", "target", "y", "labels", "label")


def describe(obj: Any, depth: int = 0) -> str:
    """A short description of a batch: types and tensor shapes, never the values."""
    shape = getattr(obj, "shape", None)
    if shape is not None and hasattr(obj, "dtype"):
        return f"{type(obj).__name__}(shape={tuple(shape)}, dtype={obj.dtype})"
    if depth >= 2:
        return type(obj).__name__
    if isinstance(obj, Mapping):
        inner = ", ".join(f"{k!r}: {describe(v, depth + 1)}" for k, v in list(obj.items())[:6])
        return "{" + inner + "}"
    if isinstance(obj, (list, tuple)):
        inner = ", ".join(describe(v, depth + 1) for v in list(obj)[:6])
        more = ", ..." if len(obj) > 6 else ""
        return f"{type(obj).__name__}[{inner}{more}] (length {len(obj)})"
    return type(obj).__name__


def split_batch(batch: Any) -> tuple[Any, Any]:
    """Return ``(inputs, targets)`` of a batch, or raise a one-line :class:`DataError`."""
    if isinstance(batch, Mapping):
        inp = next((k for k in INPUT_KEYS if k in batch), None)
        tgt = next((k for k in TARGET_KEYS if k in batch), None)
        if inp is not None and tgt is not None:
            return batch[inp], batch[tgt]
        raise DataError(
            f"cannot interpret batch {describe(batch)}: expected a dict with an input key "
            f"({'/'.join(INPUT_KEYS[:4])}...) and a target key ({'/'.join(TARGET_KEYS)}), "
            "or pass step_fn(model, batch) -> loss"
        )
    if isinstance(batch, Sequence) and not isinstance(batch, (str, bytes)) and len(batch) >= 2:
        return batch[0], batch[1]
    raise DataError(
        f"cannot interpret batch {describe(batch)}: expected (inputs, targets) or a dict with "
        "input and target keys, or pass step_fn(model, batch) -> loss"
    )


def batch_size_of(batch: Any) -> int:
    """Number of samples in a batch (first dimension of its first tensor); 0 if unknown."""
    if hasattr(batch, "shape") and len(getattr(batch, "shape", ())) > 0:
        return int(batch.shape[0])
    if isinstance(batch, Mapping):
        for v in batch.values():
            n = batch_size_of(v)
            if n:
                return n
    elif isinstance(batch, (list, tuple)):
        for v in batch:
            n = batch_size_of(v)
            if n:
                return n
    return 0
