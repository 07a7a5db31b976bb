"""Loader preparation: GPU-friendly defaults, a seekable per-epoch sampler, DDP sharding.

The Trainer never iterates the user's DataLoader directly. ``prepare_loader`` rebuilds a plain
map-style DataLoader (same dataset, batch size, collate function...) with:

* an :class:`EpochSampler` (a ``DistributedSampler``, also for one process) whose order is a
  function of ``(seed, epoch)`` and which can start in the middle of an epoch, so a resumed run
  sees exactly the batches an uninterrupted run would have seen (TW406: ``set_epoch`` each epoch),
  batched by slicing its index list (:class:`SlicedBatches`, ``BatchSampler``'s batches);
* its own seeded ``generator`` and ``seed_worker`` (TW304);
* for GPU training, ``pin_memory=True`` and a worker count when the user left the defaults
  (TW202/TW203), and the tuner's decided loader settings when a tune.json is given.

Loaders it cannot rebuild faithfully (DataLoader subclasses, custom samplers, iterable
datasets, plain lists of batches) are used as they are; resuming inside an epoch then skips the
batches already seen by iterating over them.
"""

from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Any, Iterable, Iterator

import torch
from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, IterableDataset, RandomSampler, Sampler, SequentialSampler

from torchwise.core.errors import DataError

DEFAULT_GPU_WORKERS = 4


class EpochSampler(DistributedSampler):
    """A DistributedSampler (any number of replicas, 1 included) that can start mid-epoch.

    The order of epoch ``e`` depends only on ``(seed, e)``; ``set_start(n)`` makes the next
    iteration skip the first ``n`` indices of this replica's share.
    """

    def __init__(self, dataset: Any, num_replicas: int, rank: int, shuffle: bool, seed: int) -> None:
        super().__init__(dataset, num_replicas=num_replicas, rank=rank, shuffle=shuffle, seed=seed, drop_last=False)
        self._start = 0

    def set_start(self, n: int) -> None:
        self._start = max(0, int(n))

    def __iter__(self) -> Iterator[int]:
        return iter(self.order())

    def order(self) -> list[int]:
        """This replica's indices for the epoch, from the start set by :meth:`set_start` (then reset)."""
        indices = list(super().__iter__())
        start, self._start = self._start, 0
        return indices[start:] if start else indices


class SlicedBatches(BatchSampler):
    """The batches ``BatchSampler`` makes from an :class:`EpochSampler`, cut from its index list
    by slicing: the same batches, without ``BatchSampler``'s Python work per sample (about a dozen
    bytecodes per index, i.e. per step as many as the batch has samples)."""

    sampler: EpochSampler

    def __iter__(self) -> Iterator[list[int]]:
        indices, size = self.sampler.order(), self.batch_size
        end = len(indices) - len(indices) % size if self.drop_last else len(indices)
        for i in range(0, end, size):
            yield indices[i:i + size]


class ShardSampler(Sampler[int]):
    """Evaluation sharding without padding: replica ``r`` of ``w`` gets indices r, r+w, r+2w..."""

    def __init__(self, length: int, num_replicas: int, rank: int) -> None:
        self.length, self.num_replicas, self.rank = length, num_replicas, rank

    def __iter__(self) -> Iterator[int]:
        return iter(range(self.rank, self.length, self.num_replicas))

    def __len__(self) -> int:
        return len(range(self.rank, self.length, self.num_replicas))


@dataclass
class PreparedLoader:
    """A loader ready for the step loop, with what the Trainer needs to position it."""

    loader: Iterable[Any]
    sampler: EpochSampler | None = None
    generator: torch.Generator | None = None
    batch_size: int | None = None
    seed: int = 0
    rebuilt: bool = False

    def __len__(self) -> int:
        return len(self.loader)  # type: ignore[arg-type]

    @property
    def has_len(self) -> bool:
        try:
            len(self.loader)  # type: ignore[arg-type]
            return True
        except TypeError:
            return False

    def epoch_iter(self, epoch: int, start_batch: int = 0) -> Iterator[Any]:
        """An iterator over epoch ``epoch`` starting at batch ``start_batch``."""
        if self.generator is not None:
            self.generator.manual_seed((self.seed + 1_000_003 * epoch) % 2**63)
        if self.sampler is not None:
            self.sampler.set_epoch(epoch)
            if start_batch and self.batch_size:
                self.sampler.set_start(start_batch * self.batch_size)
                return iter(self.loader)
        it = iter(self.loader)
        for _ in range(start_batch):  # cannot seek: skip by iterating
            next(it, None)
        return it


def _default_workers(local_world: int) -> int:
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(0, min(DEFAULT_GPU_WORKERS, cpus // max(1, local_world) - 1))


def _check_reiterable(loader: Any, what: str) -> None:
    if isinstance(loader, DataLoader):
        return
    if not isinstance(loader, Iterable) or isinstance(loader, (str, bytes, torch.Tensor)):
        raise DataError(f"the {what} loader must be a DataLoader or a re-iterable sequence of batches, got {type(loader).__name__}")
    if iter(loader) is loader:
        raise DataError(f"the {what} loader is a one-shot iterator ({type(loader).__name__}); pass a DataLoader or a list of batches that can be iterated every epoch")


def _batching(loader: DataLoader) -> tuple[Any, int | None, bool]:
    """``(sampler, batch_size, drop_last)`` of a DataLoader, one rebuilt by the Trainer included."""
    b = loader.batch_sampler
    if type(b) is SlicedBatches:
        return b.sampler, b.batch_size, b.drop_last
    return loader.sampler, loader.batch_size, loader.drop_last


def _is_standard(loader: DataLoader) -> bool:
    """Whether the loader uses a plain BatchSampler over a sampler the Trainer can replace faithfully."""
    inner = _batching(loader)[0]
    plain_random = type(inner) is RandomSampler and not inner.replacement and inner._num_samples is None
    return type(loader.batch_sampler) in (BatchSampler, SlicedBatches) and (
        type(inner) is SequentialSampler or plain_random or type(inner) is DistributedSampler or isinstance(inner, EpochSampler)
    )


def _copied_settings(loader: DataLoader) -> dict[str, Any]:
    """The user's DataLoader settings that a rebuilt loader keeps."""
    kwargs: dict[str, Any] = {
        "dataset": loader.dataset,
        "num_workers": loader.num_workers,
        "collate_fn": loader.collate_fn,
        "pin_memory": loader.pin_memory,
        "timeout": loader.timeout,
        "worker_init_fn": loader.worker_init_fn,
        "multiprocessing_context": loader.multiprocessing_context,
        "persistent_workers": loader.persistent_workers,
        "pin_memory_device": getattr(loader, "pin_memory_device", ""),
    }
    if getattr(loader, "in_order", True) is False:
        kwargs["in_order"] = False
    if loader.num_workers > 0 and loader.prefetch_factor is not None:
        kwargs["prefetch_factor"] = loader.prefetch_factor
    return kwargs


def _sampling(loader: DataLoader, train: bool, seed: int, num_replicas: int, rank: int, batch_size: int | None, what: str) -> tuple[dict[str, Any], EpochSampler | None]:
    """Sampler and batching keywords: an EpochSampler for training, shards for evaluation, custom ones kept."""
    inner, _, drop_last = _batching(loader)
    if not _is_standard(loader):
        if num_replicas > 1 and train:
            custom = inner if loader.batch_sampler is None else loader.batch_sampler
            warnings.warn(
                f"the {what} loader uses a custom sampler ({type(custom).__name__}); "
                "it is not sharded across processes: each process reads what it yields",
                stacklevel=4,
            )
        if loader.batch_sampler is not None:
            return {"batch_sampler": loader.batch_sampler}, None
        return {"sampler": inner, "batch_size": None}, None
    if train:
        shuffle = type(inner) is RandomSampler or (isinstance(inner, DistributedSampler) and inner.shuffle)
        sampler = EpochSampler(loader.dataset, num_replicas, rank, shuffle, seed)
        return {"batch_sampler": SlicedBatches(sampler, batch_size, drop_last)}, sampler  # type: ignore[arg-type]
    kwargs: dict[str, Any] = {"batch_size": batch_size, "drop_last": drop_last}
    if num_replicas > 1:
        kwargs["sampler"] = ShardSampler(len(loader.dataset), num_replicas, rank)  # type: ignore[arg-type]
    else:
        kwargs["sampler"] = inner
    return kwargs, None


def _worker_settings(kwargs: dict[str, Any], loader: DataLoader, device: torch.device, local_world: int, overrides: dict[str, Any]) -> None:
    """GPU training: workers and pinning when left at the defaults (TW202/TW203), then the tuner's choices."""
    if device.type == "cuda":
        if loader.num_workers == 0:
            kwargs["num_workers"] = _default_workers(local_world)
        if not loader.pin_memory:
            kwargs["pin_memory"] = True
    kwargs.update({k: v for k, v in overrides.items() if k in ("num_workers", "pin_memory", "persistent_workers")})
    if kwargs["num_workers"] == 0:
        kwargs["persistent_workers"] = False
        kwargs.pop("prefetch_factor", None)
    elif loader.num_workers == 0:
        kwargs["persistent_workers"] = kwargs.get("persistent_workers") or True
    if kwargs["pin_memory"] and device.type != "cuda":
        kwargs["pin_memory"] = False  # pinning only helps copies to a GPU
    if kwargs["worker_init_fn"] is None and kwargs["num_workers"] > 0:
        from torchwise.utils.seed import seed_worker

        kwargs["worker_init_fn"] = seed_worker


def prepare_loader(
    loader: Any,
    *,
    train: bool,
    device: torch.device,
    seed: int,
    num_replicas: int = 1,
    rank: int = 0,
    local_world: int = 1,
    overrides: dict[str, Any] | None = None,
) -> PreparedLoader:
    """Rebuild ``loader`` for the step loop (see the module docstring); never loses user settings."""
    what = "training" if train else "validation"
    _check_reiterable(loader, what)
    if not isinstance(loader, DataLoader) or type(loader) is not DataLoader or isinstance(loader.dataset, IterableDataset):
        if num_replicas > 1 and train:
            warnings.warn(
                f"the {what} loader ({type(loader).__name__}) cannot be given a DistributedSampler; "
                "make sure each process reads its own shard",
                stacklevel=3,
            )
        return PreparedLoader(loader, seed=seed)
    overrides = dict(overrides or {})
    batch_size = int(overrides.pop("batch_size", _batching(loader)[1])) if _is_standard(loader) else loader.batch_size
    kwargs = _copied_settings(loader)
    sampling, sampler = _sampling(loader, train, seed, num_replicas, rank, batch_size, what)
    kwargs.update(sampling)
    _worker_settings(kwargs, loader, device, local_world, overrides)
    generator = torch.Generator()
    generator.manual_seed(seed)
    kwargs["generator"] = generator
    try:
        rebuilt = DataLoader(**kwargs)
    except (TypeError, ValueError) as exc:
        warnings.warn(f"could not rebuild the {what} DataLoader ({exc}); using it as it is", stacklevel=3)
        return PreparedLoader(loader, seed=seed)
    return PreparedLoader(rebuilt, sampler=sampler, generator=generator, batch_size=batch_size if sampler is not None else None, seed=seed, rebuilt=True)
