"""Phases: one optimizer each, with what steps it. The step loop runs every phase on each batch.

A Trainer with one optimizer has one phase (named ""). With several optimizers (a GAN's
discriminator and generator, actor and critic), ``optimizer={"d": ..., "g": ...}`` and
``step_fn={"d": d_step, "g": g_step}`` make one phase per name, run in that order on every
batch: the phase's loss is backpropagated and stepped with its own optimizer only, under its own
precision plug-in (one GradScaler per optimizer under fp16), accumulation window, clipping,
non-finite guard and scheduler. While a phase runs its backward, the gradients of parameters
that only other phases step are set aside and put back afterwards, so a generator's loss never
leaks into the discriminator's accumulated gradients.

Under torchrun, a run with several phases does not wrap the model in DDP (a step function
calling ``model.gen(...)`` would bypass DDP's forward, and each phase leaves the other phase's
parameters unused): the model is broadcast from rank 0 once (:func:`broadcast_model`) and each
phase's gradients are averaged over the processes at the end of its window
(:func:`average_gradients`), which is what DDP computes. Under FSDP each top-level submodule is
sharded as a unit of its own and reduces its own gradients (``FSDPStrategy.wrap_phases``).
"""

from __future__ import annotations

from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Mapping

import torch
from torch import nn

from torchwise.core.errors import UsageError
from torchwise.train.precision import Precision

_NULL = nullcontext()
_BASE_ZERO_GRAD = torch.optim.Optimizer.zero_grad


@dataclass
class Phase:
    """One optimizer, its step function (None: the default loss), precision, scheduler and logs."""

    name: str
    optimizer: torch.optim.Optimizer
    step_fn: Callable[[nn.Module, Any], Any] | None
    precision: Precision
    scheduler: Any = None
    interval: str = "step"
    params: list[nn.Parameter] = field(default_factory=list)
    others: list[nn.Parameter] = field(default_factory=list)  # parameters only other phases step
    window_loss: torch.Tensor | float | None = None  # the loss summed over the current accumulation window
    last_loss: torch.Tensor | float | None = None  # the last optimizer step's (window's) loss, as kept: what callbacks read
    losses: list[torch.Tensor | float] = field(default_factory=list)  # window losses of the log interval (floats on the CPU, else detached)
    extras: dict[str, list[torch.Tensor]] = field(default_factory=dict)  # other 0-d outputs of step_fn
    count: int = 0  # micro-batches behind ``losses``
    grad_norm: torch.Tensor | None = None  # the last pre-clip gradient norm
    plain: bool = False  # nothing to enter around its forward/backward (set once the model is wrapped)
    guarded: bool = False  # the non-finite guard judges its steps (set with ``plain``)
    stepped: bool = False  # whether its last optimizer step was taken (not skipped by the guard or the scaler)

    def clear_grads(self) -> None:
        """``optimizer.zero_grad(set_to_none=True)`` [TW208]. Where the optimizer keeps the base
        ``zero_grad`` (not overridden on its class or the object) and no profiler is recording, the
        gradients are set to None here, which is all it does then, without its profiler range and
        dynamo guard: two torch calls and a wrapper per step on a small model's critical path."""
        opt = self.optimizer
        if type(opt).zero_grad is not _BASE_ZERO_GRAD or "zero_grad" in opt.__dict__ or torch.autograd._profiler_enabled():
            opt.zero_grad(set_to_none=True)
            return
        for group in opt.param_groups:
            for p in group["params"]:
                p.grad = None

    def own_gradients(self) -> Any:
        """Keep this phase's backward from adding to the gradients of parameters it does not step."""
        return self._set_aside() if self.others else _NULL

    def prefix(self, split: str) -> str:
        """``train/`` for a single phase, ``train/<name>/`` for several."""
        return f"{split}/{self.name}/" if self.name else f"{split}/"

    @contextmanager
    def _set_aside(self) -> Iterator[None]:
        saved = [p.grad for p in self.others]
        for p in self.others:
            p.grad = None
        try:
            yield
        finally:
            for p, g in zip(self.others, saved):
                p.grad = g


def as_outputs(out: Any, where: str) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """``(loss, other 0-d outputs)`` of a step function's result (a tensor or a mapping with "loss")."""
    if isinstance(out, torch.Tensor):
        return out, {}
    if isinstance(out, Mapping):
        loss = out.get("loss")
        if not isinstance(loss, torch.Tensor):
            raise UsageError(f"{where} returned a mapping without a 'loss' tensor (keys: {', '.join(map(str, out))}); return the loss or {{'loss': loss, ...}}")
        extras = {str(k): v.detach() for k, v in out.items() if k != "loss" and isinstance(v, torch.Tensor) and v.dim() == 0}
        return loss, extras
    raise UsageError(f"{where} returned {type(out).__name__}; expected the loss tensor or a mapping with 'loss'")


def named(value: Any, what: str) -> dict[str, Any]:
    """``{"": value}`` for one, the dict itself for several (checked to be non-empty)."""
    if isinstance(value, Mapping):
        if not value:
            raise UsageError(f"{what} is an empty dict: give at least one")
        bad = [k for k in value if not isinstance(k, str) or not k]
        if bad:
            raise UsageError(f"{what} names must be non-empty strings, got {bad}")
        return dict(value)
    return {"": value}


def check_coverage(model: nn.Module, optimizers: Mapping[str, torch.optim.Optimizer]) -> None:
    """Refuse optimizers over none of the model's parameters; warn about partial coverage (TW115)."""
    import warnings

    in_opt = {id(p) for opt in optimizers.values() for g in opt.param_groups for p in g["params"]}
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        raise UsageError(f"{type(model).__name__} has no parameter that requires grad: nothing to train")
    which = " and ".join(f"{type(o).__name__}" + (f" {k!r}" if k else "") for k, o in optimizers.items())
    if not any(id(p) in in_opt for _, p in trainable):
        raise UsageError(
            f"the optimizer ({which}) holds none of the model's {len(trainable)} trainable parameters: "
            "build it from this model, e.g. torch.optim.AdamW(model.parameters()) (after re-creating the model, re-create the optimizer)"
        )
    missing = [n for n, p in trainable if id(p) not in in_opt]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        warnings.warn(f"TW115: {len(missing)} trainable parameter(s) are not in the optimizer and will not be updated: {shown}", stacklevel=4)


def split_params(optimizers: Mapping[str, torch.optim.Optimizer]) -> dict[str, tuple[list[nn.Parameter], list[nn.Parameter]]]:
    """For each optimizer: (its parameters, the parameters only the others hold)."""
    own = {k: [p for g in o.param_groups for p in g["params"]] for k, o in optimizers.items()}
    out = {}
    for k, params in own.items():
        mine = {id(p) for p in params}
        seen: set[int] = set()
        others = []
        for k2, ps in own.items():
            for p in ps:
                if k2 != k and id(p) not in mine and id(p) not in seen:
                    seen.add(id(p))
                    others.append(p)
        out[k] = (params, others)
    return out


class SeveralOptimizers(torch.optim.Optimizer):
    """Several optimizers (a task's ``{name: factory}``) stepped together: what the doctor and tune time."""

    def __init__(self, optimizers: dict[str, torch.optim.Optimizer]) -> None:
        self.optimizers = dict(optimizers)
        self.defaults = {}
        self.state = next(iter(self.optimizers.values())).state if self.optimizers else {}  # type: ignore[assignment]
        self.param_groups = [g for o in self.optimizers.values() for g in o.param_groups]

    def zero_grad(self, set_to_none: bool = True) -> None:
        for o in self.optimizers.values():
            o.zero_grad(set_to_none=set_to_none)

    def step(self, closure: Any = None) -> None:  # type: ignore[override]
        for o in self.optimizers.values():
            o.step()


def task_step(step_fn: Any) -> Callable[[nn.Module, Any], torch.Tensor] | None:
    """One ``(model, batch) -> loss`` from a task's step function(s): several phases' losses are summed."""
    if step_fn is None:
        return None
    fns = list(step_fn.values()) if isinstance(step_fn, dict) else [step_fn]

    def step(model: nn.Module, batch: Any) -> torch.Tensor:
        losses = [as_outputs(fn(model, batch), "step_fn")[0] for fn in fns]
        return losses[0] if len(losses) == 1 else torch.stack([l.float() for l in losses]).sum()

    return step


def broadcast_model(model: nn.Module) -> None:
    """Give every process rank 0's parameters and buffers (what DDP does when it wraps a model)."""
    import torch.distributed as dist

    with torch.no_grad():
        for t in [*model.parameters(), *model.buffers()]:
            dist.broadcast(t.data, 0)


def average_gradients(params: list[nn.Parameter], world_size: int) -> None:
    """Average the gradients of ``params`` over the processes in one all-reduce (None counts as zero)."""
    import torch.distributed as dist

    if not params:
        return
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)  # every process must contribute the same tensors
    flat = torch.cat([p.grad.reshape(-1) for p in params])  # type: ignore[union-attr]
    dist.all_reduce(flat)
    flat /= world_size
    offset = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p))  # type: ignore[union-attr]
        offset += n
