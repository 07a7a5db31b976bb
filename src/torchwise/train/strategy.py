"""Where the model runs: one device, or DistributedDataParallel under torchrun.

A strategy places and wraps the model, says whether gradients are synchronised on this
micro-step (``no_sync`` on the others), reduces metrics across processes and tells who logs and
checkpoints (rank 0). ``detect()`` picks DDP when the process was started by ``torchrun``
(``WORLD_SIZE`` > 1 in the environment) and the single-device strategy otherwise.
"""

from __future__ import annotations

import datetime
import os
from contextlib import nullcontext
from typing import Any, ContextManager

import torch
import torch.distributed as dist
from torch import nn


_NULL = nullcontext()  # reusable: no allocation per step


def model_devices(model: nn.Module) -> set[torch.device]:
    """The devices holding the model's parameters and buffers."""
    return {t.device for t in model.parameters()} | {t.device for t in model.buffers()}


def is_model_parallel(model: nn.Module) -> bool:
    """True when the model already spans several devices (TW408: leave it where it is)."""
    return len(model_devices(model)) > 1


class SingleDevice:
    """Train in this process on one device (or on the devices a model-parallel model spans)."""

    world_size = 1
    rank = 0
    local_rank = 0
    is_main = True
    distributed = False

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def setup(self, model: nn.Module) -> nn.Module:
        """Move the model to the device, unless it is split across devices already."""
        if is_model_parallel(model):
            first = next(model.parameters()).device
            self.device = first  # inputs go where the first layer lives
            return model
        return model.to(self.device)

    def wrap(self, model: nn.Module) -> nn.Module:
        return model

    def no_sync(self, model: nn.Module, skip_sync: bool) -> ContextManager[Any]:
        return _NULL

    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        return tensor

    def gather_object(self, obj: Any) -> list[Any]:
        return [obj]

    def barrier(self) -> None:
        pass

    def teardown(self) -> None:
        pass


class DDPStrategy(SingleDevice):
    """DistributedDataParallel in a process started by torchrun: gloo on CPU, nccl on CUDA."""

    distributed = True

    def __init__(self, device: torch.device | None = None) -> None:
        self.rank = int(os.environ.get("RANK", 0))
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        self.world_size = int(os.environ.get("WORLD_SIZE", 1))
        self.is_main = self.rank == 0
        if device is None or device.type == "cuda":  # one GPU per process: cuda:LOCAL_RANK
            device = torch.device("cuda", self.local_rank) if torch.cuda.is_available() else torch.device("cpu")
        super().__init__(device)
        self._created_group = False

    def setup(self, model: nn.Module) -> nn.Module:
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        if not dist.is_initialized():
            backend = "nccl" if self.device.type == "cuda" else "gloo"
            dist.init_process_group(backend=backend, timeout=datetime.timedelta(minutes=30))
            self._created_group = True
        return super().setup(model)

    def wrap(self, model: nn.Module) -> nn.Module:
        if is_model_parallel(model):
            return nn.parallel.DistributedDataParallel(model)
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def no_sync(self, model: nn.Module, skip_sync: bool) -> ContextManager[Any]:
        if skip_sync and hasattr(model, "no_sync"):  # DDP, or the compile wrapper around it
            return model.no_sync()
        return _NULL

    def all_reduce(self, tensor: torch.Tensor, op: str = "sum") -> torch.Tensor:
        ops = {"sum": dist.ReduceOp.SUM, "max": dist.ReduceOp.MAX, "min": dist.ReduceOp.MIN}
        dist.all_reduce(tensor, op=ops[op])
        return tensor

    def gather_object(self, obj: Any) -> list[Any]:
        out: list[Any] = [None] * self.world_size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        dist.barrier()

    def teardown(self) -> None:
        if self._created_group and dist.is_initialized():
            dist.barrier()  # no rank tears down while another still talks to it
            dist.destroy_process_group()
            self._created_group = False


def launched_by_torchrun() -> bool:
    """True in a process that torchrun (torch.distributed.run) started with more than one worker."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ


def detect(device: torch.device) -> SingleDevice:
    """DDP when launched by torchrun with several processes, else a single device."""
    if launched_by_torchrun():
        return DDPStrategy(device)
    return SingleDevice(device)
