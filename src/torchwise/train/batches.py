"""Loaders for a fit and the stream of batches the step loop takes from them.

:func:`fit_loaders` picks the loaders (given, or the task's) and the epochs; :func:`prepare`
rebuilds a loader the Trainer can position (seeded order, mid-epoch start, DDP sharding,
GPU-friendly settings, a tune.json's loader settings: :mod:`.loaders`); :func:`epoch_batches`
yields the rest of an epoch as ``(batch, window_end, last_of_epoch)``, timing the wait for each
batch, counting ``trainer.batch_in_epoch`` and marking the accumulation windows (a last partial
window of ``k`` batches scales each loss by ``1/k``).
"""

from __future__ import annotations

import os
import time
import warnings
from typing import Any, Iterator

from torchwise.core.errors import DataError, UsageError
from torchwise.train.loaders import PreparedLoader, prepare_loader

_END = object()


def fit_loaders(trainer: Any, train_loader: Any, val_loader: Any, epochs: int | None, max_steps: int | None) -> tuple[Any, Any, int | None]:
    """The loaders and epochs of a fit: as given, else the task's (its epochs unless ``max_steps`` alone is given)."""
    for name, value in (("epochs", epochs), ("max_steps", max_steps)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise UsageError(f"{name} must be a positive integer or None, got {value!r}")
    if train_loader is None:
        if trainer.task is None:
            raise UsageError("fit() needs a train_loader (or a Trainer made with Trainer.from_task)")
        train_loader = trainer.task.train_loader()
        if val_loader is None:
            val_loader = trainer.task.val_loader()
    if epochs is None and max_steps is None:
        epochs = trainer.task.epochs if trainer.task is not None else 1
    return train_loader, val_loader, epochs


def prepare(trainer: Any, loader: Any, train: bool) -> PreparedLoader:
    """``loader`` rebuilt for the step loop (see :func:`torchwise.train.loaders.prepare_loader`)."""
    overrides = trainer.tuned.loader_overrides() if trainer.tuned else {}
    if not train:
        overrides = {k: v for k, v in overrides.items() if k != "batch_size"}
    strategy = trainer.strategy
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        return prepare_loader(
            loader, train=train, device=strategy.device, seed=trainer.data_seed, num_replicas=strategy.world_size,
            rank=strategy.rank, local_world=int(os.environ.get("LOCAL_WORLD_SIZE", 1)), overrides=overrides,
        )


def epoch_batches(trainer: Any, train: PreparedLoader, n_batches: int | None) -> Iterator[tuple[Any, bool, bool]]:
    """``(batch, window_end, last_of_epoch)`` for the rest of this epoch (see the module)."""
    meter, steps, A = trainer.meter, trainer.steps, trainer.accumulate
    meter.batch_size = train.batch_size or meter.batch_size
    it = train.epoch_iter(trainer.epoch, trainer.batch_in_epoch)
    if n_batches is None:
        yield from _unsized(trainer, it)
        return
    clock = time.perf_counter
    i = trainer.batch_in_epoch  # batches of this epoch already taken
    while True:
        t = clock()
        batch = next(it, _END)
        meter.wait += clock() - t
        if batch is _END:
            return
        meter.micro += 1
        if A > 1 and i % A == 0:  # a window starts: its size (a last partial one is smaller)
            steps.window = min(A, n_batches - i)
            steps.pending.clear()
        i += 1
        trainer.batch_in_epoch = i
        last = i >= n_batches
        yield batch, last or A == 1 or i % A == 0, last


def _unsized(trainer: Any, it: Iterator[Any]) -> Iterator[tuple[Any, bool, bool]]:
    """A loader without a length: look one batch ahead to know which is the last."""
    meter, steps, A = trainer.meter, trainer.steps, trainer.accumulate
    clock = time.perf_counter
    i = trainer.batch_in_epoch
    t = clock()
    batch = next(it, _END)
    meter.wait += clock() - t
    if batch is _END and i == 0:
        raise DataError("the training loader is empty: it yielded no batches in this epoch")
    while batch is not _END:
        t = clock()
        upcoming = next(it, _END)
        meter.wait += clock() - t
        meter.micro += 1
        if A > 1 and i % A == 0:
            steps.window = A
            steps.pending.clear()
        i += 1
        trainer.batch_in_epoch = i
        last = upcoming is _END
        yield batch, last or A == 1 or i % A == 0, last
        batch = upcoming
