"""Out-of-memory recovery: split each batch into smaller micro-batches, keeping the maths.

On a CUDA out-of-memory error the Trainer doubles :attr:`OOMRecovery.splits`: every loader batch
is then cut into that many chunks along dimension 0, each chunk's (mean) loss weighted by its
share of the batch, so the gradient of the step is the same as before (only BatchNorm-style
layers, which see smaller batches, differ). When a chunk would hold less than one sample,
training cannot go on and a :class:`~torchwise.core.errors.TrainingError` says so.

With several processes (DDP, FSDP) a rank cannot retry inside the step: the out-of-memory error
can strike between two collectives (FSDP all-gathers each block's parameters in the forward and
reduce-scatters its gradients in the backward; DDP all-reduces gradient buckets during the
backward), and the other ranks then wait in a collective this rank will never enter; any flag it
all-reduced to agree on a retry would be paired with the wrong collective. So the ranks agree at
the one point where none has a collective pending, a restart of the whole group: the rank that
ran out of memory writes the doubled split count to ``<checkpoint_dir>/oom.json`` and stops with
one line; torchrun (``--max-restarts``) stops the others and restarts the group, and every rank
resumes from the last checkpoint with that many micro-batches per batch (the same effective batch).
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import torch

from torchwise.utils.batch import batch_size_of
from torchwise.core.errors import TrainingError

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
    """How many chunks each batch is cut into, and the cutting itself.

    ``world_size`` > 1: an out-of-memory error stops this rank for a restart of the group (see the
    module's docstring); ``folder`` (the checkpoint folder) is where the split count waits for it.
    """

    FILE = "oom.json"

    def __init__(self, enabled: bool = True, *, rank: int = 0, world_size: int = 1, folder: str | Path | None = None) -> None:
        self.enabled = enabled
        self.splits = 1
        self.events: list[str] = []
        self.rank, self.world_size = rank, world_size
        self.folder = Path(folder) if folder is not None else None

    def chunks(self, batch: Any) -> list[tuple[Any, float]]:
        """``[(chunk, weight)]`` with weights summing to 1 (``[(batch, 1.0)]`` normally)."""
        if self.splits == 1:
            return [(batch, 1.0)]
        n = batch_size_of(batch)
        parts = min(self.splits, n) if n else 1
        pieces = [p for p in _split(batch, n, parts) if batch_size_of(p) > 0]
        return [(p, batch_size_of(p) / n) for p in pieces]

    def recover(self, exc: BaseException, batch: Any, device: torch.device, step: int = 0) -> str:
        """Free memory and double the split after ``exc``; raise if a micro-batch of 1 failed, or (several
        processes) to stop this rank for a restart with the doubled split."""
        n = batch_size_of(batch)
        chunk = -(-n // self.splits) if n else 0
        if not self.enabled or chunk <= 1:
            what = "a micro-batch of 1 sample" if chunk <= 1 else "this batch (OOM recovery is off)"
            raise TrainingError(
                f"out of memory on {device} with {what}: the model does not fit; use a smaller model, "
                f"mixed precision (precision='auto'), or a device with more memory ({str(exc).splitlines()[0][:160]})"
            ) from exc
        if self.world_size > 1:
            raise self._stop_for_restart(device, chunk, step) from exc
        free_memory(device)
        self.splits *= 2
        new_chunk = -(-n // self.splits)
        message = f"out of memory with micro-batches of {chunk}: now {self.splits} micro-batches of about {new_chunk} per batch (same effective batch)"
        self.events.append(message)
        return message

    def _stop_for_restart(self, device: torch.device, chunk: int, step: int) -> TrainingError:
        """Leave the doubled split count for the restarted group; the one-line error that stops this rank."""
        splits = self.splits * 2
        head = (f"rank {self.rank} of {self.world_size} ran out of memory on {device} at step {step} with micro-batches of {chunk}: "
                "the other processes wait in a collective it cannot join, so this run stops")
        if self.folder is None:
            return TrainingError(f"{head}; give checkpoint_dir and torchrun --max-restarts so that the group restarts "
                                 f"from the last checkpoint with {splits} micro-batches per batch")
        self.folder.mkdir(parents=True, exist_ok=True)
        tmp = self.folder / f".{self.FILE}.{self.rank}.tmp"
        tmp.write_text(json.dumps({"splits": splits, "rank": self.rank, "step": step}))
        os.replace(tmp, self.folder / self.FILE)  # (ranks that fail together write the same count)
        return TrainingError(f"{head}; restarted by torchrun (--max-restarts) the group resumes from the last checkpoint "
                             f"with {splits} micro-batches per batch (same effective batch)")

    def resume(self, saved_splits: int) -> str | None:
        """The split count of a resumed run: the checkpoint's, or more when a rank ran out of memory after it."""
        self.splits = saved_splits
        left = self._left_by_a_rank()
        if left is None or left["splits"] <= saved_splits:
            return None
        self.splits = left["splits"]
        return (f"rank {left['rank']} ran out of memory at step {left['step']} before the restart: "
                f"{self.splits} micro-batches per batch from now on (same effective batch)")

    def start_fresh(self) -> str | None:
        """A run that resumes no checkpoint: after a restart by torchrun the count a rank left applies;
        a first attempt drops one that an earlier run left in the same folder."""
        if int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0:
            return self.resume(self.splits)
        if self.folder is not None and self.rank == 0:
            (self.folder / self.FILE).unlink(missing_ok=True)
        return None

    def _left_by_a_rank(self) -> dict[str, int] | None:
        if self.folder is None:
            return None
        try:
            data = json.loads((self.folder / self.FILE).read_text())
            return {k: int(data[k]) for k in ("splits", "rank", "step")}
        except (OSError, ValueError, KeyError, TypeError):
            return None  # none left (or unreadable: the checkpoint's count stands)


def free_memory(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()
