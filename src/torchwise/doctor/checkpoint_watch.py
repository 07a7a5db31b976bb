"""Reentrant activation checkpoints whose inputs need no grad (the evidence of TW138)."""

from __future__ import annotations

from typing import Any

import torch

from torchwise.doctor.frames import user_frame

__all__ = ["patch", "unpatch"]


def patch(watch: Any) -> Any:
    """Wrap ``CheckpointFunction.apply`` to note calls with autograd on and no input needing grad;
    returns what :func:`unpatch` needs (None when this torch has no reentrant checkpoint)."""
    try:
        from torch.utils.checkpoint import CheckpointFunction
    except ImportError:
        return None
    original = CheckpointFunction.__dict__.get("apply")

    def apply(cls, function, preserve, *args):
        if torch.is_grad_enabled():
            tensors = [a for a in args if isinstance(a, torch.Tensor)]
            if tensors and not any(t.requires_grad for t in tensors):
                res = watch.result
                if len(res.checkpoint_no_grad) < 20:
                    name = getattr(function, "__qualname__", None) or type(function).__name__
                    res.checkpoint_no_grad.append((name, user_frame(watch.inside_own), watch.step_index))
        return super(CheckpointFunction, cls).apply(function, preserve, *args)

    CheckpointFunction.apply = classmethod(apply)
    return (CheckpointFunction, original)


def unpatch(token: Any) -> None:
    if token is None:
        return
    cls, original = token
    if original is None:
        try:
            del cls.apply
        except AttributeError:
            pass
    else:
        cls.apply = original
