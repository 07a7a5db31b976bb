"""An exponential moving average of the weights (``Trainer(ema=0.999)``).

After every optimizer step each floating-point parameter's average moves toward it:
``avg += (1 - decay) * (param - avg)`` (floating-point buffers such as BatchNorm statistics too).
Evaluation runs on the averaged weights (swapped in, then swapped back), and the averages are
checkpointed and restored exactly on resume. ``trainer.ema.copy_to(model)`` puts them in a model.

Under FSDP the parameters are sharded ``DTensor``s, and so are their averages: each rank keeps the
average of its own shard (1/world of the memory), the sharded checkpoint holds them through
``torch.distributed.checkpoint``, and :meth:`EMA.copy_to` gathers them (every rank must call it).
"""

from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping

import torch
from torch import nn

from torchwise.core.errors import CheckpointError, UsageError


class EMA:
    """The moving average of ``model``'s floating-point parameters and a copy of its buffers."""

    key = "ema"

    def __init__(self, decay: float) -> None:
        if isinstance(decay, bool) or not isinstance(decay, (int, float)) or not 0.0 < decay < 1.0:
            raise UsageError(f"ema must be a decay in (0, 1) such as 0.999, got {decay!r}")
        self.decay = float(decay)
        self.updates = 0
        self.names: list[str] = []
        self.params: list[nn.Parameter] = []
        self.averages: list[torch.Tensor] = []

    def attach(self, model: nn.Module) -> None:
        """Start the averages at the model's current weights (once, after it is on its device)."""
        if self.params:
            return
        items = [(n, p) for n, p in model.named_parameters() if p.is_floating_point()]
        items += [(n, b) for n, b in model.named_buffers() if b.is_floating_point()]
        self.names = [n for n, _ in items]
        self.params = [t for _, t in items]  # type: ignore[misc]
        self.averages = [t.detach().clone() for t in self.params]

    def on_step_end(self, trainer: Any) -> None:
        self.update()

    @torch.no_grad()
    def update(self) -> None:
        """Move every average toward its parameter by ``1 - decay``."""
        self.updates += 1
        current = [p.detach() for p in self.params]
        torch._foreach_lerp_(self.averages, current, 1.0 - self.decay)

    @contextmanager
    def swapped(self) -> Iterator[None]:
        """The model holds the averaged weights inside the block, its own weights again after it."""
        with torch.no_grad():
            saved = [p.detach().clone() for p in self.params]
            for p, a in zip(self.params, self.averages):
                p.copy_(a)
        try:
            yield
        finally:
            with torch.no_grad():
                for p, s in zip(self.params, saved):
                    p.copy_(s)

    def copy_to(self, model: nn.Module) -> None:
        """Load the averaged weights into ``model`` (the same architecture; sharded averages are gathered)."""
        model.load_state_dict({n: _full(a) for n, a in zip(self.names, self.averages)}, strict=False)

    def state_dict(self) -> dict[str, Any]:
        return {"decay": self.decay, "updates": self.updates, "weights": dict(zip(self.names, self.averages))}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        weights = state.get("weights") or {}
        if set(weights) != set(self.names):
            raise CheckpointError("the checkpoint's EMA weights do not match this model's parameters (was it saved for another model?)")
        with torch.no_grad():
            for name, avg in zip(self.names, self.averages):
                avg.copy_(_like(weights[name], avg))
        self.updates = int(state.get("updates", 0))


def _full(t: torch.Tensor) -> torch.Tensor:
    """A sharded (DTensor) average as the whole tensor (a collective), a plain one as it is."""
    return t.full_tensor() if hasattr(t, "full_tensor") else t


def _like(saved: torch.Tensor, avg: torch.Tensor) -> torch.Tensor:
    """A whole saved average cut like the sharded ``avg`` (this rank's part, no communication)."""
    from torch.distributed.tensor import DTensor, distribute_tensor

    if isinstance(avg, DTensor) and not isinstance(saved, DTensor):
        return distribute_tensor(saved.to(avg.device, avg.dtype), avg.device_mesh, avg.placements, src_data_rank=None)
    return saved
