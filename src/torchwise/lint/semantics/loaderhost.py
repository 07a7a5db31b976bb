"""Host code of a data pipeline (TW207): what a dataset's ``__getitem__`` or a transform's
``__call__`` runs (:func:`~torchwise.lint.semantics.workerseeds.in_worker_code`), in a module that
defines a dataset, works on the NumPy arrays and lists a loader hands it (``float(x)`` over a
bbox in a crop helper an augmentation calls), not on device tensors: no read there waits for
the GPU. Callable loss classes (``class FocalLoss: def __call__``) are not data code."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.workerseeds import in_worker_code


def data_pipeline_code(ctx: Context, node: AST) -> bool:
    """``node`` runs in the data pipeline of a dataset module (see the module's text)."""
    if "__getitem__" not in ctx.source or "cuda" in ctx.source or ".to(" in ctx.source:
        return False  # (a dataset file that moves data to the device may hand device tensors on)
    klass = ctx.class_of(node)
    if klass is not None and any(w in klass.name.lower() for w in ("loss", "criterion", "metric")):
        return False
    func = ctx.function_of(node)
    return func is not None and func.__class__ is not ast.Lambda and in_worker_code(ctx, node)


__all__ = ["data_pipeline_code"]
