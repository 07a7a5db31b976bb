"""Out-of-memory recovery: split each batch into smaller micro-batches, keeping the maths.

On a CUDA out-of-memory error the Trainer doubles :attr:`OOMRecovery.splits`: every loader batch
is then cut into that many chunks along dimension 0, each chunk's (mean) loss weighted by its
share of the batch, so the gradient of the step is the same as before (only BatchNorm-style
layers, which see smaller batches, differ). When a chunk would hold less than one sample,
training cannot go on and a :class:`~torchwise.errors.TrainingError` says so.
"""

from __future__ import annotations

import gc
from collections.abc import Mapping
from typing import Any

import torch

from torchwise.batch import batch_size_of
from torchwise.errors import TrainingError

OOM_ERRORS: tuple[type[BaseException], ...] = tuple(
    {getattr(torch, "OutOfMemoryError", None), getattr(torch.cuda, "OutOfMemoryError", None)} - {None}  # type: ignore[arg-type]
)


def is_oom(exc: BaseException) -> bool:
    return isinstance(exc, OOM_ERRORS)


def _split(obj: Any, n: int, parts: int) -> list[Any]:
    """``obj`` cut into ``parts`` pieces along dim 0 (things without that dim are repeated)."""
    if isinstance(obj, torch.Tensor) and obj.dim() > 0 and obj.shape[0] == n:
        return list(torch.tensor_split(obj, parts))
    if isinstance(obj, Mapping):
        pieces = {k: _split(v, n, parts) for k, v in obj.items()}
        return [{k: pieces[k][i] for k in obj} for i in range(parts)]
    if isinstance(obj, (list, tuple)) and not hasattr(obj, "_fields"):
        if len(obj) == n and not any(isinstance(v, (torch.Tensor, list, tuple, Mapping)) for v in obj):
            q, r = divmod(n, parts)  # a list of per-sample items, cut like torch.tensor_split
            bounds = [i * q + min(i, r) for i in range(parts + 1)]
            return [type(obj)(obj[bounds[i]:bounds[i + 1]]) for i in range(parts)]
        columns = [_split(v, n, parts) for v in obj]
        return [type(obj)(col[i] for col in columns) for i in range(parts)]
    return [obj] * parts


class OOMRecovery:
    """How many chunks each batch is cut into, and the cutting itself."""

    def __init__(self, enabled: bool = True) -> None:
        self.enabled = enabled
        self.splits = 1
        self.events: list[str] = []

    def chunks(self, batch: Any) -> list[tuple[Any, float]]:
        """``[(chunk, weight)]`` with weights summing to 1 (``[(batch, 1.0)]`` normally)."""
        if self.splits == 1:
            return [(batch, 1.0)]
        n = batch_size_of(batch)
        parts = min(self.splits, n) if n else 1
        pieces = [p for p in _split(batch, n, parts) if batch_size_of(p) > 0]
        return [(p, batch_size_of(p) / n) for p in pieces]

    def recover(self, exc: BaseException, batch: Any, device: torch.device) -> str:
        """Free memory and double the split after ``exc``; raise if a micro-batch of 1 failed."""
        n = batch_size_of(batch)
        chunk = -(-n // self.splits) if n else 0
        if not self.enabled or chunk <= 1:
            what = "a micro-batch of 1 sample" if chunk <= 1 else "this batch (OOM recovery is off)"
            raise TrainingError(
                f"out of memory on {device} with {what}: the model does not fit; use a smaller model, "
                f"mixed precision (precision='auto'), or a device with more memory ({str(exc).splitlines()[0][:160]})"
            ) from exc
        free_memory(device)
        self.splits *= 2
        new_chunk = -(-n // self.splits)
        message = f"out of memory with micro-batches of {chunk}: now {self.splits} micro-batches of about {new_chunk} per batch (same effective batch)"
        self.events.append(message)
        return message


def free_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
