"""Where the model runs: one device, or DistributedDataParallel under torchrun.

A strategy places and wraps the model, says whether gradients are synchronised on this
micro-step (``no_sync`` on the others), reduces metrics across processes and tells who logs and
checkpoints (rank 0). ``detect()`` picks DDP when the process was started by ``torchrun``
(``WORLD_SIZE`` > 1 in the environment) and the single-device strategy otherwise.
"""

from __future__ import annotations

import datetime
import math
import operator
import os
from contextlib import nullcontext
from pathlib import Path
from typing import Any, ContextManager

import torch
import torch.distributed as dist
from torch import nn

from torchwise.utils.checkpoint import load_checkpoint, load_state_dict, save_checkpoint
from torchwise.core.errors import UsageError
from torchwise.train import checkpoints as ckpt


_NULL = nullcontext()  # reusable: no allocation per step
_GRAD = operator.attrgetter("grad")


def model_devices(model: nn.Module) -> set[torch.device]:
    """The devices holding the model's parameters and buffers."""
    return {t.device for t in model.parameters()} | {t.device for t in model.buffers()}


def is_model_parallel(model: nn.Module) -> bool:
    """True when the model already spans several devices (TW408: leave it where it is)."""
    return len(model_devices(model)) > 1


def _check_finite(grads: list[torch.Tensor | None], found: torch.Tensor, one: torch.Tensor) -> None:
    """Set ``found`` to 1 when a gradient holds NaN/Inf: the GradScaler's fused check with scale 1
    (gradients unchanged, no host read). None entries (a parameter without a gradient this step)
    are left out; sparse gradients (``Embedding(sparse=True)``): their values."""
    try:
        torch._amp_foreach_non_finite_check_and_unscale_(grads, found, one)
    except TypeError:  # a None entry, rejected while the arguments are parsed (nothing read yet)
        present = [g for g in grads if g is not None]
        if len(present) == len(grads):
            raise
        _check_finite(present, found, one)
    except NotImplementedError:  # raised at dispatch, before any tensor is read
        if not any(g.is_sparse for g in grads):
            raise
        torch._amp_foreach_non_finite_check_and_unscale_([g._values() if g.is_sparse else g for g in grads], found, one)


def _host_flags() -> tuple[torch.Tensor, torch.Tensor, Any]:
    found = torch.zeros(1)
    return found, torch.ones(1), found.numpy()


class SingleDevice:
    """Train in this process on one device (or on the devices a model-parallel model spans)."""

    world_size = 1
    rank = 0
    local_rank = 0
    is_main = True
    distributed = False
    defers_sync = False  # True: no_sync() may return a real context (gradient sync put off to a window's end)

    def __init__(self, device: torch.device) -> None:
        self.device = device
        # the non-finite guard's reused (found, one, NumPy view of found) for one process on the CPU (None: elsewhere)
        self._cpu_flags = _host_flags() if device.type == "cpu" and not self.distributed else None

    @property
    def host_reads_free(self) -> bool:
        """One process with its model on the CPU: a value read to the host waits for no device (and
        no other process), so the Trainer keeps each step's loss as a float rather than a tensor."""
        return self._cpu_flags is not None

    def setup(self, model: nn.Module) -> nn.Module:
        """Move the model to the device, unless it is split across devices already."""
        if is_model_parallel(model):
            first = next(model.parameters()).device
            self.device = first  # inputs go where the first layer lives
            self._cpu_flags = None  # gradients on several devices: the guard's general path
            return model
        return model.to(self.device)

    def wrap(self, model: nn.Module) -> nn.Module:
        return model

    def wrap_phases(self, model: nn.Module) -> tuple[nn.Module, bool]:
        """The model to train with several optimizers (phases), and whether the Trainer must average
        each phase's gradients over the processes itself (see :mod:`torchwise.train.phases`)."""
        return model, False

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

    # -- hooks the Trainer routes through the strategy (sharding strategies override them) --

    sharded_checkpoints = False  # True: every rank writes its part of each checkpoint
    relayout_parameters = True  # False: channels_last changes the inputs only (FSDP2 keeps its shards contiguous)

    def configure_phases(self, names: list[str]) -> None:
        """Told the optimizers' names before :meth:`setup` (several: step functions may call submodules)."""

    def configure_channels_last(self, channels_last: Any) -> Any:
        """The Trainer's channels_last setting, as this strategy can honour it."""
        return channels_last

    def configure_precision(self, precision: Any) -> Any:
        """The Trainer's precision plug-in, adapted to this strategy (FSDP: its own policy and scaler)."""
        return precision

    def full_state_dict(self, model: nn.Module) -> dict[str, Any]:
        """The whole model's state dict as plain tensors (sharded strategies gather it; every rank calls it)."""
        return model.state_dict()

    def adopt_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """Point ``optimizer`` at the parameters ``setup`` produced (sharding replaces them); once per optimizer."""

    def clip_grad_norm(self, params: list[nn.Parameter], max_norm: float) -> torch.Tensor:
        """Clip the gradients' global norm to ``max_norm``; returns the pre-clip norm (a plain tensor)."""
        return torch.nn.utils.clip_grad_norm_(params, max_norm)

    def grad_norm(self, params: list[nn.Parameter]) -> torch.Tensor:
        """The global norm of the gradients (what every rank sees after synchronisation)."""
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return torch.zeros(())
        return torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))

    def grads_flag(self, params: list[nn.Parameter]) -> torch.Tensor:
        """A tensor that is finite iff every gradient is, alike on every rank (the non-finite guard's check).

        Here one fused pass over the local gradients (the GradScaler's inf check with scale 1, no
        host read); under DDP they are already all-reduced, so every rank decides alike.
        """
        found = self._found_nonfinite(params)
        return found.neg_().add_(1).reciprocal_()  # 1/(1 - found): 1, or inf when a gradient is NaN/Inf

    def step_is_finite(self, loss: torch.Tensor | float, params: list[nn.Parameter], norm: torch.Tensor | None = None) -> bool:
        """The non-finite guard's decision for one optimizer step: loss and gradients all finite.

        ``loss``: a detached tensor, or a float where host reads are free (see ``host_reads_free``).
        One host read (``norm``, the pre-clip norm, stands for the gradients when clipping computed
        it). Under several processes only the all-reduced gradients are judged, so ranks agree.
        """
        if norm is None and self._cpu_flags is not None and (type(loss) is float or loss.is_cpu):  # host reads are free
            found, one, seen = self._cpu_flags  # found stays 0 between checks: no clearing per step
            _check_finite(list(map(_GRAD, params)), found, one)  # (map: no bytecode per parameter)
            if seen[0]:  # read through a NumPy view of the buffer: no torch call
                found.zero_()
                return False
            return math.isfinite(loss if type(loss) is float else loss.item())
        grads = norm if norm is not None else self.grads_flag(params)
        return math.isfinite(float(grads if self.distributed else loss + grads))

    def _found_nonfinite(self, params: list[nn.Parameter]) -> torch.Tensor:
        """A reused one-element tensor: 1 when a gradient holds NaN/Inf, else 0 (one fused pass, no host read)."""
        grads = [g for p in params if (g := p.grad) is not None]
        found, one = self._flag_buffers(grads[0] if grads else None)
        found.zero_()
        if grads:
            _check_finite(grads, found, one)
        return found

    def _flag_buffers(self, like: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        """Two reused one-element tensors per device (that of ``like``; None: the CPU): this check runs
        every step, and allocating tensors and mixing Python scalars into the arithmetic cost more
        than the check itself. Keyed by the device index (-1 for the CPU), cheaper than a device."""
        key = like.get_device() if like is not None else -1
        buffers = self.__dict__.setdefault("_guard_buffers", {})
        if key not in buffers:
            device = like.device if like is not None else torch.device("cpu")
            buffers[key] = (torch.zeros(1, device=device), torch.ones(1, device=device))
        return buffers[key]

    # -- checkpoints: the Trainer builds the state with these two, the strategy writes and reads it --

    def model_state_dict(self, model: nn.Module) -> dict[str, Any]:
        """The model's entry of a checkpoint (sharded strategies: this rank's shards)."""
        return model.state_dict()

    def optimizer_state_dict(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """One optimizer's entry of a checkpoint (sharded strategies: keyed by parameter name, sharded)."""
        return optimizer.state_dict()

    def checkpoint_path(self, folder: Path, step: int) -> Path:
        """Where the checkpoint of ``step`` goes: a single file here, a folder for sharded ones."""
        return ckpt.checkpoint_path(folder, step)

    def named_checkpoint_path(self, path: Path) -> Path:
        """Where a checkpoint the caller named (``best.pt``) goes: that file here, ``<stem>.dcp`` for sharded ones."""
        return Path(path)

    def save_checkpoint(self, state: dict[str, Any], path: Path) -> Path:
        """Write ``state`` (built by the Trainer) atomically; called on the main rank only here."""
        return save_checkpoint(path, **state)

    def read_checkpoint(self, path: Path) -> dict[str, Any]:
        """The training state saved at ``path``, checked (a sharded folder is assembled in this process)."""
        if ckpt.is_sharded(path):
            from torchwise.train.dcp import read_full

            return read_full(path)
        return ckpt.check_format(load_checkpoint(path, map_location=self.device), path)

    def load_checkpoint(self, path: Path, state: dict[str, Any], model: nn.Module, optimizers: dict[str, torch.optim.Optimizer],
                        plugins: dict[str, Any] | None = None) -> dict[str, Any]:
        """Load the model from ``state`` (what :meth:`read_checkpoint` returned); returns the state whose
        ``optimizer`` entries :meth:`load_optimizer_state` takes, one per optimizer (by name when several),
        and whose ``plugins`` entry the plug-ins take (``plugins``: their current states, the shapes that
        sharded checkpoints load into)."""
        load_state_dict(model, state["model"])
        return state

    def load_optimizer_state(self, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        """Restore one optimizer from its entry of the state :meth:`load_checkpoint` returned."""
        optimizer.load_state_dict(state)

    def translate_failure(self, exc: BaseException, checkpoint: Path | None = None) -> BaseException | None:
        """A one-line error for a failed peer, or None when ``exc`` is not one (single process: never)."""
        return None


class DDPStrategy(SingleDevice):
    """DistributedDataParallel in a process started by torchrun: gloo on CPU, nccl on CUDA."""

    distributed = True
    defers_sync = True

    def __init__(self, device: torch.device | None = None, *, peer_timeout: float | None = None) -> None:
        self.peer_timeout = peer_timeout_s(peer_timeout)
        self.rank = int(os.environ.get("RANK", 0))
        self.local_rank = int(os.environ.get("LOCAL_RANK", 0))
        self.world_size = int(os.environ.get("WORLD_SIZE", 1))
        self.is_main = self.rank == 0
        if device is None or device.type == "cuda":  # one GPU per process: cuda:LOCAL_RANK
            device = torch.device("cuda", self.local_rank) if torch.cuda.is_available() else torch.device("cpu")
        super().__init__(device)
        self._created_group = False
        self._broken = False

    def setup(self, model: nn.Module) -> nn.Module:
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        if not dist.is_initialized():
            backend = "nccl" if self.device.type == "cuda" else "gloo"
            timeout = datetime.timedelta(seconds=self.peer_timeout)
            dist.init_process_group(backend=backend, timeout=timeout, **_restart_safe_store(self.rank, self.world_size, timeout))
            self._created_group = True
        return super().setup(model)

    def wrap(self, model: nn.Module) -> nn.Module:
        if is_model_parallel(model):
            return nn.parallel.DistributedDataParallel(model)
        ids = [self.device.index] if self.device.type == "cuda" else None
        return nn.parallel.DistributedDataParallel(model, device_ids=ids)

    def wrap_phases(self, model: nn.Module) -> tuple[nn.Module, bool]:
        """No DDP wrapper (phases call submodules and leave parameters unused): rank 0's weights, averaged gradients."""
        from torchwise.train.phases import broadcast_model

        broadcast_model(model)
        return model, True

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

    def translate_failure(self, exc: BaseException, checkpoint: Path | None = None) -> BaseException | None:
        from torchwise.train.peers import failure_error

        failure = failure_error(exc, self.rank, self.world_size, self.peer_timeout, checkpoint)
        self._broken = self._broken or failure is not None
        return failure

    def teardown(self) -> None:
        if self._created_group and dist.is_initialized():
            if not self._broken:  # after a peer failure nobody is left to meet at the barrier
                dist.barrier()  # no rank tears down while another still talks to it
            dist.destroy_process_group()
            self._created_group = False


def _restart_safe_store(rank: int, world_size: int, timeout: datetime.timedelta) -> dict[str, Any]:
    """Under torchrun's agent store, a store whose keys are private to this restart attempt.

    After an elastic restart the agent's store still holds the previous attempt's gloo addresses;
    a new worker could read a dead peer's address before its replacement overwrites it
    ("connectFullMesh failed ... Connection refused"). A prefix per attempt rules that out.
    """
    if os.environ.get("TORCHELASTIC_USE_AGENT_STORE") != "True" or "MASTER_ADDR" not in os.environ:
        return {}
    store = dist.TCPStore(os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"]), is_master=False, timeout=timeout)
    attempt = os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")
    return {"store": dist.PrefixStore(f"torchwise/attempt-{attempt}", store), "rank": rank, "world_size": world_size}


def launched_by_torchrun() -> bool:
    """True in a process that torchrun (torch.distributed.run) started with more than one worker."""
    return int(os.environ.get("WORLD_SIZE", "1")) > 1 and "RANK" in os.environ


DEFAULT_PEER_TIMEOUT = 1800.0


def peer_timeout_s(value: float | None = None) -> float:
    """Seconds a collective waits for a silent peer: ``value``, else $TORCHWISE_PEER_TIMEOUT, else 1800."""
    if value is None:
        text = os.environ.get("TORCHWISE_PEER_TIMEOUT", "")
        try:
            value = float(text) if text else DEFAULT_PEER_TIMEOUT
        except ValueError:
            raise UsageError(f"TORCHWISE_PEER_TIMEOUT must be a number of seconds, got {text!r}") from None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise UsageError(f"peer timeout must be a positive number of seconds, got {value!r}")
    return float(value)


def detect(device: torch.device, *, peer_timeout: float | None = None) -> SingleDevice:
    """DDP when launched by torchrun with several processes, else a single device."""
    if launched_by_torchrun():
        return DDPStrategy(device, peer_timeout=peer_timeout)
    return SingleDevice(device)
