"""FSDP2: shard parameters, gradients and optimizer state across processes with ``fully_shard``.

:class:`FSDPStrategy` applies ``torch.distributed.fsdp.fully_shard`` to every block of the model
(found by :func:`find_blocks`: transformer layers, the repeated members of a ``ModuleList`` or
``Sequential``, residual stages; or the classes given), then to the root. Each rank then holds
1/world of every parameter, gradient and optimizer state as a ``DTensor`` shard.

What it changes in the Trainer's loop, through the strategy hooks:

* ``no_sync``: ``set_requires_gradient_sync(False)`` on non-final micro-steps (no reduce-scatter);
* ``clip_grad_norm`` / ``grad_norm``: the norm over the shards, all-reduced (identical on every rank);
* checkpoints: ``torch.distributed.checkpoint``, every rank writing its shard (:mod:`.dcp`);
* precision: bf16/fp16 through FSDP's ``MixedPrecisionPolicy`` (parameters all-gathered in the low
  dtype, gradients reduced in float32), fp16 with the ``ShardedGradScaler`` (found-inf agreed by
  all ranks);
* several optimizers (``configure_phases``): every top-level submodule is a unit of its own (its
  own FSDP root), so step functions may call ``model.gen(z)`` directly; gradients are reduced on
  every micro-step (see :meth:`FSDPStrategy.no_sync`) and each unit reduces its own, so the
  Trainer averages nothing itself (``wrap_phases``);
* channels_last (``relayout_parameters = False``): ``fully_shard`` refuses non-contiguous
  parameters, so only the inputs become NHWC; the convolution kernels follow the input's format.

The EMA's averages of sharded parameters are sharded too and saved through DCP with the other
plug-ins' states (:mod:`.dcp`); an out-of-memory error on one of several ranks stops the group
for a restart with smaller micro-batches (:mod:`.oom`).

Without torchrun it runs as a single-process group (world size 1), which is handy for tests and
to start from the same code path.
"""

from __future__ import annotations

import os
import weakref
from collections import Counter
from pathlib import Path
from typing import Any, ContextManager, Iterable

import torch
import torch.distributed as dist
from torch import nn

from torchwise.core.errors import UsageError
from torchwise.train.strategy import _NULL, DDPStrategy, is_model_parallel

_KNOWN_BLOCKS: tuple[type[nn.Module], ...] = (nn.TransformerEncoderLayer, nn.TransformerDecoderLayer)
_CONTAINERS = (nn.ModuleList, nn.Sequential)


def _has_params(module: nn.Module) -> bool:
    return any(True for _ in module.parameters())


def find_blocks(model: nn.Module, block: Any = None) -> list[nn.Module]:
    """The modules to shard one by one (each gets its own all-gather), outermost first.

    ``block``: a module class, a class name, or a sequence of them; None finds them: the
    ``TransformerEncoderLayer``/``DecoderLayer`` instances, else the classes that occur at least
    twice as children of one ``ModuleList``/``Sequential`` (repeated layers, residual stages).
    A block nested inside another chosen block is left to its parent.
    """
    if block is not None:
        wanted = tuple(block) if isinstance(block, (list, tuple, set)) else (block,)
        for w in wanted:
            if not (isinstance(w, str) or (isinstance(w, type) and issubclass(w, nn.Module))):
                raise UsageError(f"fsdp block must be an nn.Module class or a class name, got {w!r}")

        def chosen(m: nn.Module) -> bool:
            return any(type(m).__name__ == w if isinstance(w, str) else isinstance(m, w) for w in wanted)

    else:
        classes: set[type] = set()
        if any(isinstance(m, _KNOWN_BLOCKS) for m in model.modules()):
            classes = set(_KNOWN_BLOCKS)
        else:
            for container in model.modules():
                if isinstance(container, _CONTAINERS):
                    counts = Counter(type(c) for c in container.children() if _has_params(c))
                    classes |= {cls for cls, n in counts.items() if n >= 2}

        def chosen(m: nn.Module) -> bool:
            return type(m) in classes or isinstance(m, tuple(c for c in classes if c in _KNOWN_BLOCKS))

    out: list[nn.Module] = []
    inside: set[int] = set()
    for module in model.modules():  # pre-order: a parent comes before its children
        if module is model or id(module) in inside or not chosen(module) or not _has_params(module):
            continue
        out.append(module)
        inside |= {id(m) for m in module.modules()}
    if block is not None and not out:
        raise UsageError(f"fsdp block {block!r}: no module of that class (with parameters) in {type(model).__name__}")
    return out


def apply_activation_checkpointing(blocks: Iterable[nn.Module]) -> int:
    """Recompute each block's forward in the backward (``torch.utils.checkpoint``, non-reentrant).

    The block's own ``__call__`` (and so FSDP's all-gather hooks) stays outside the checkpointed
    region; only ``forward`` is recomputed. Returns the number of blocks changed.
    """
    from functools import partial

    from torch.utils.checkpoint import checkpoint

    n = 0
    for block in blocks:
        if getattr(block, "_torchwise_checkpointed", False):
            continue
        forward = block.forward
        block.forward = partial(checkpoint, forward, use_reentrant=False)  # type: ignore[method-assign]
        block._torchwise_checkpointed = True  # type: ignore[assignment]
        n += 1
    return n


def top_level_units(model: nn.Module, blocks: list[nn.Module]) -> list[nn.Module]:
    """The model's top-level submodules that hold parameters (through ``ModuleList``/``ModuleDict``, which
    are never called), for several optimizers whose step functions call them directly; the blocks stay
    units of their own. Parameters on the root itself are refused: no forward of a submodule gathers them."""
    own = [n for n, _ in model.named_parameters(recurse=False)]
    if own:
        raise UsageError(f"strategy='fsdp' with several optimizers shards each top-level submodule of {type(model).__name__}, "
                         f"but parameter(s) {', '.join(own[:3])} sit on the model itself; move them into a submodule")
    out: list[nn.Module] = []
    todo = list(model.children())
    while todo:
        child = todo.pop(0)
        if isinstance(child, (nn.ModuleList, nn.ModuleDict)):
            stray = [n for n, _ in child.named_parameters(recurse=False)]
            if stray:
                raise UsageError(f"strategy='fsdp' with several optimizers: parameter(s) {', '.join(stray[:3])} sit on a {type(child).__name__}; move them into a submodule")
            todo[:0] = list(child.children())
        elif _has_params(child) and not any(child is b for b in blocks):
            out.append(child)
    return out


class FSDPStrategy(DDPStrategy):
    """Fully sharded data parallel (FSDP2 ``fully_shard``) over every process torchrun started.

    ``block``: the module class(es) to shard one by one (default: found by :func:`find_blocks`).
    ``precision``: the Trainer's precision name; bf16/fp16 set FSDP's ``MixedPrecisionPolicy``.
    """

    sharded_checkpoints = True
    relayout_parameters = False  # fully_shard refuses non-contiguous parameters; channels_last inputs alone pick the NHWC kernels

    def __init__(self, device: torch.device | None = None, *, block: Any = None, peer_timeout: float | None = None) -> None:
        self._alone = "RANK" not in os.environ  # not under torchrun: a group of one process
        super().__init__(device, peer_timeout=peer_timeout)
        self.block = block
        self.precision_name = "32"
        self.blocks: list[nn.Module] = []
        self.block_names: list[str] = []
        self.model: nn.Module | None = None
        self.several_phases = False
        self.units: list[nn.Module] = []  # the modules fully_shard was applied to, outermost first
        self._old_params: dict[int, tuple[Any, str]] = {}  # id -> (weak reference, name) of the unsharded parameters
        self._full_optimizer_state = False  # what load_checkpoint left for load_optimizer_state

    def configure_phases(self, names: list[str]) -> None:
        self.several_phases = len(names) > 1

    def configure_precision(self, precision: Any) -> Any:
        """Use FSDP's mixed-precision policy for bf16/fp16 and, for fp16, the sharded grad scaler."""
        from torchwise.train.precision import FP16Mixed

        self.precision_name = precision.name
        if isinstance(precision, FP16Mixed):
            return FP16Mixed(self.device, scaler=self.grad_scaler())
        return precision

    def setup(self, model: nn.Module) -> nn.Module:
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        if is_model_parallel(model):
            raise UsageError("strategy='fsdp' needs a model on one device; this one spans several (shard it with FSDP or split it by hand, not both)")
        if self._alone and not dist.is_initialized():
            dist.init_process_group("gloo" if self.device.type == "cpu" else "nccl", store=dist.HashStore(), rank=0, world_size=1)
            self._created_group = True
        model = super().setup(model)  # process group, model on this rank's device
        self._old_params = {id(p): (weakref.ref(p), n) for n, p in model.named_parameters()}
        mesh = init_device_mesh(self.device.type, (self.world_size,))
        low = {"bf16-mixed": torch.bfloat16, "16-mixed": torch.float16}.get(self.precision_name)
        mp = MixedPrecisionPolicy(param_dtype=low, reduce_dtype=torch.float32) if low is not None else MixedPrecisionPolicy()
        self.blocks = find_blocks(model, self.block)
        self.block_names = [type(b).__name__ for b in self.blocks]  # (fully_shard renames the classes to FSDP<name>)
        # one optimizer: the root is the outermost unit. Several: step functions call submodules (model.gen(z)), which
        # would bypass the root's all-gather, so each top-level submodule is a unit of its own (its own FSDP root)
        self.units = [*(top_level_units(model, self.blocks) if self.several_phases else [model]), *self.blocks]
        for unit in reversed(self.units):  # innermost first
            fully_shard(unit, mesh=mesh, mp_policy=mp)
        self.model = model
        return model

    def wrap(self, model: nn.Module) -> nn.Module:
        return model  # fully_shard changed the model in place during setup

    def adopt_optimizer(self, optimizer: torch.optim.Optimizer) -> None:
        """``fully_shard`` replaced every parameter by a sharded one: make the optimizer hold those."""
        assert self.model is not None, "setup() first"
        if optimizer.state:  # state built before sharding cannot be kept (unsharded tensors)
            raise UsageError("strategy='fsdp': give the Trainer an optimizer that has not stepped yet (its state would not be sharded); resume from a checkpoint instead")
        new = dict(self.model.named_parameters())

        def sharded(p: Any) -> Any:
            ref, name = self._old_params.get(id(p), (None, ""))
            return new[name] if ref is not None and ref() is p else p  # (the weak reference rules out a reused id)

        for group in optimizer.param_groups:
            group["params"] = [sharded(p) for p in group["params"]]

    def full_state_dict(self, model: nn.Module) -> dict[str, Any]:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

        return get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))

    def wrap_phases(self, model: nn.Module) -> tuple[nn.Module, bool]:
        return model, False  # each unit reduce-scatters its own gradients: nothing left to average

    def no_sync(self, model: nn.Module, skip_sync: bool) -> ContextManager[Any]:
        if self.several_phases:  # FSDP keeps unsynced gradients on the unsharded parameters, out of reach
            return _NULL  # of the phase that sets the other phases' gradients aside: reduce every micro-step
        target = getattr(model, "eager", model)  # the compile wrapper keeps the module as .eager
        if hasattr(target, "set_requires_gradient_sync"):
            target.set_requires_gradient_sync(not skip_sync)
        return _NULL

    def clip_grad_norm(self, params: list[nn.Parameter], max_norm: float) -> torch.Tensor:
        return _full(torch.nn.utils.clip_grad_norm_(params, max_norm))

    def grad_norm(self, params: list[nn.Parameter]) -> torch.Tensor:
        grads = [p.grad for p in params if p.grad is not None]
        if not grads:
            return torch.zeros(())
        return _full(torch.nn.utils.get_total_norm(grads))

    def grads_flag(self, params: list[nn.Parameter]) -> torch.Tensor:
        return self.grad_norm(params)  # each rank holds other shards: the all-reduced norm makes every rank decide alike

    def grad_scaler(self) -> Any:
        """The fp16 loss scaler: found-inf is all-reduced, so every rank skips the same steps."""
        from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

        return ShardedGradScaler(self.device.type)

    def model_state_dict(self, model: nn.Module) -> dict[str, Any]:
        from torch.distributed.checkpoint.state_dict import get_model_state_dict

        return get_model_state_dict(model)  # this rank's shards (DTensors), written by DCP

    def optimizer_state_dict(self, model: nn.Module, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        from torch.distributed.checkpoint.state_dict import get_optimizer_state_dict

        return get_optimizer_state_dict(model, optimizer)  # keyed by parameter name, sharded like the model

    def checkpoint_path(self, folder: Any, step: int) -> Any:
        from torchwise.train import dcp

        return dcp.checkpoint_dir(folder, step)

    def named_checkpoint_path(self, path: Any) -> Any:
        return Path(path).with_suffix(".dcp")

    def save_checkpoint(self, state: dict[str, Any], path: Any) -> Any:
        from torchwise.train import dcp

        return dcp.save(state, path, self)

    def read_checkpoint(self, path: Any) -> dict[str, Any]:
        from torchwise.train import dcp

        return dcp.read_state(path)  # a folder's trainer.pt (the shards load in load_checkpoint), or a whole file

    def load_checkpoint(self, path: Any, state: dict[str, Any], model: nn.Module, optimizers: dict[str, torch.optim.Optimizer],
                        plugins: dict[str, Any] | None = None) -> dict[str, Any]:
        from torchwise.train import checkpoints as ckpt
        from torchwise.train import dcp

        self._full_optimizer_state = not ckpt.is_sharded(path)
        if self._full_optimizer_state:  # a single-file (DDP or one-process) checkpoint: every rank keeps its shard
            return dcp.load_full(path, state, model, optimizers)
        return dcp.load_sharded(path, state, model, optimizers, plugins)

    def load_optimizer_state(self, model: nn.Module, optimizer: torch.optim.Optimizer, state: dict[str, Any]) -> None:
        from torch.distributed.checkpoint.state_dict import StateDictOptions, set_optimizer_state_dict

        options = StateDictOptions(full_state_dict=self._full_optimizer_state, strict=True)
        set_optimizer_state_dict(model, optimizer, state, options=options)


def _full(norm: torch.Tensor) -> torch.Tensor:
    """A DTensor norm as a plain tensor (every rank gets the same value)."""
    return norm.full_tensor() if hasattr(norm, "full_tensor") else norm


def make_strategy(name: Any, device: torch.device, *, block: Any = None, peer_timeout: float | None = None) -> Any:
    """The strategy for ``Trainer(strategy=...)``: "auto" (DDP under torchrun), "ddp", "fsdp" or an object."""
    from torchwise.train.strategy import SingleDevice, detect

    if isinstance(name, SingleDevice):
        return name
    if name == "fsdp":
        return FSDPStrategy(device, block=block, peer_timeout=peer_timeout)
    if name in ("auto", "ddp", None):
        return detect(device, peer_timeout=peer_timeout)
    raise UsageError(f"unknown strategy {name!r}; expected 'auto', 'ddp', 'fsdp' or a strategy object")
