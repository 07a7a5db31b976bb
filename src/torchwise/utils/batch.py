"""Interpreting a batch as ``(inputs, targets)`` and calling the model with it: the one place every engine asks.

Accepted: a ``(inputs, targets)`` tuple or list, a ``(inputs, targets, extra...)`` sequence with
a ``lengths``/mask extra (as ``pad_collate`` yields), or a mapping with an input key and a target
key. Anything else raises :class:`~torchwise.core.errors.DataError` saying what was received and what is
expected; a user ``step_fn`` covers other layouts.

How a batch reaches the model (:func:`model_call`):

* ``(inputs, targets, ...)``: ``model(inputs)``; a Mapping ``inputs`` gives ``model(**inputs)`` when
  ``forward`` names all its keys (or takes ``**kwargs``), else ``model(inputs)`` (a forward that
  takes the dict whole); a tuple/list ``inputs`` gives ``model(*inputs)``. Extra tuple fields are not passed (their
  meaning is positional only): use dict samples to hand ``lengths``/``mask`` to the model.
* a dict batch with an input key: its value is passed as above, and every other key that the
  model's ``forward`` names as a parameter (``lengths``, ``mask``, ``attention_mask``...) is passed
  as a keyword. The target key goes to the loss.
* a dict batch without an input key: every key that ``forward`` names is passed as a keyword
  (two-input models: ``{"image": ..., "text": ..., "label": ...}`` for ``forward(image, text)``).
"""

from __future__ import annotations

import inspect
from collections.abc import Mapping, Sequence
from typing import Any

from torchwise.core.errors import DataError

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


def forward_names(model: Any) -> frozenset[str]:
    """The parameter names of ``model.forward`` that a batch may fill by keyword (plus ``"**"`` if it takes ``**kwargs``)."""
    forward = getattr(model, "forward", model)
    try:
        params = inspect.signature(forward).parameters.values()
    except (TypeError, ValueError):
        return frozenset()
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    names = {p.name for p in params if p.kind in kinds}
    if any(p.kind == inspect.Parameter.VAR_KEYWORD for p in params):
        names.add("**")
    return frozenset(names)


def model_call(batch: Any, names: frozenset[str] = frozenset()) -> tuple[tuple[Any, ...], dict[str, Any], Any]:
    """``(args, kwargs, targets)`` of a batch for ``model(*args, **kwargs)`` (see the module docstring).

    ``names`` are the model's forward parameters (:func:`forward_names`): the dict keys passed as
    keywords beside the inputs. Raises a one-line :class:`DataError` for a batch it cannot read.
    """
    if isinstance(batch, Mapping):
        tgt = next((k for k in TARGET_KEYS if k in batch), None)
        inp = next((k for k in INPUT_KEYS if k in batch), None)
        if inp is None and tgt is not None:
            kwargs = {k: v for k, v in batch.items() if k != tgt and k in names}
            if kwargs:
                return (), kwargs, batch[tgt]
        if inp is None or tgt is None:
            split_batch(batch)  # raises the usual message
        extras = {k: v for k, v in batch.items() if k not in (inp, tgt) and k in names}
        args, kwargs, _ = model_call((batch[inp], batch[tgt]), names)
        kwargs.update({k: v for k, v in extras.items() if k not in kwargs})
        return args, kwargs, batch[tgt]
    inputs, targets = split_batch(batch)
    if isinstance(inputs, Mapping) and ("**" in names or (inputs and all(k in names for k in inputs))):
        return (), dict(inputs), targets
    if isinstance(inputs, (tuple, list)):
        return tuple(inputs), {}, targets
    return (inputs,), {}, targets
