"""Numeric precision plug-ins: how the forward is autocast, how backward and the step are done.

Each plug-in has the same five methods, so the step loop never branches on precision:
``autocast()`` (context for forward + loss), ``backward(loss)``, ``unscale(optimizer)`` (before
clipping), ``step(optimizer) -> bool`` (False when the step was skipped) and
``state_dict``/``load_state_dict`` (the GradScaler's state for checkpoints); and two facts:
``plain`` (nothing to do around the forward and backward) and ``handles_nonfinite`` (it skips
steps with inf/NaN gradients itself, so the Trainer's non-finite guard stands aside).
"""

from __future__ import annotations

from contextlib import nullcontext
from typing import Any, ContextManager

import torch

from torchwise.core.errors import UsageError

_NULL = nullcontext()  # reusable: no allocation per step

VALID = ("auto", "32", "bf16-mixed", "16-mixed")
_ALIASES = {
    "32": "32", "32-true": "32", "fp32": "32", "float32": "32",
    "bf16": "bf16-mixed", "bf16-mixed": "bf16-mixed", "bfloat16": "bf16-mixed",
    "16": "16-mixed", "16-mixed": "16-mixed", "fp16": "16-mixed", "float16": "16-mixed",
    "auto": "auto",
}


def normalize(precision: Any) -> str:
    """The canonical precision name, or a :class:`UsageError` listing the valid ones."""
    key = str(precision).strip().lower() if isinstance(precision, (str, int)) and not isinstance(precision, bool) else None
    if key is None or key not in _ALIASES:
        raise UsageError(f"unknown precision {precision!r}; expected one of: {', '.join(VALID)}")
    return _ALIASES[key]


def resolve(precision: Any, device: torch.device) -> str:
    """Resolve "auto": bf16-mixed on CUDA where supported, else 16-mixed on CUDA, 32 elsewhere."""
    name = normalize(precision)
    if name != "auto":
        return name
    if device.type == "cuda":
        return "bf16-mixed" if torch.cuda.is_bf16_supported() else "16-mixed"
    return "32"


class Precision:
    """Full float32: plain backward and step."""

    name = "32"
    handles_nonfinite = False  # True: steps with inf/NaN gradients are skipped here (the guard stands aside)

    def __init__(self, device: torch.device) -> None:
        self.device = device

    def autocast(self) -> ContextManager[Any]:
        return _NULL

    def backward(self, loss: torch.Tensor) -> None:
        loss.backward()

    @property
    def plain(self) -> bool:
        """True when ``autocast()`` is a no-op and ``backward`` is ``loss.backward()`` (the step may skip both)."""
        return type(self).autocast is Precision.autocast and type(self).backward is Precision.backward

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """Make ``.grad`` hold true gradients (needed before clipping)."""

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        optimizer.step()
        return True

    @property
    def skipped(self) -> int:
        """Optimizer steps skipped by loss scaling so far (only fp16 skips)."""
        return 0

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass


class BF16Mixed(Precision):
    """Autocast to bfloat16 (same exponent range as float32, so no loss scaling is needed)."""

    name = "bf16-mixed"

    def autocast(self) -> ContextManager[Any]:
        return torch.autocast(self.device.type, dtype=torch.bfloat16)


class FP16Mixed(Precision):
    """Autocast to float16 with a GradScaler; a step with inf/NaN gradients is skipped and counted."""

    name = "16-mixed"
    handles_nonfinite = True  # the GradScaler skips (and counts) steps with inf/NaN gradients

    def __init__(self, device: torch.device, scaler: Any = None) -> None:
        super().__init__(device)
        self.scaler = scaler if scaler is not None else torch.amp.GradScaler(device.type)
        self._skipped = 0

    def autocast(self) -> ContextManager[Any]:
        return torch.autocast(self.device.type, dtype=torch.float16)

    def backward(self, loss: torch.Tensor) -> None:
        self.scaler.scale(loss).backward()

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        # GradScaler.step already reads found-inf on the host; comparing the scale before and
        # after update() tells whether this step was skipped (the scale backs off only then).
        before = self.scaler.get_scale()
        self.scaler.step(optimizer)
        self.scaler.update()
        stepped = not self.scaler.get_scale() < before
        if not stepped:
            self._skipped += 1
        return stepped

    @property
    def skipped(self) -> int:
        return self._skipped

    def state_dict(self) -> dict[str, Any]:
        return {"scaler": self.scaler.state_dict(), "skipped": self._skipped}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])
        self._skipped = int(state.get("skipped", 0))


def make_precision(precision: Any, device: torch.device) -> Precision:
    """The plug-in for ``precision`` ("auto" resolved for ``device``)."""
    name = resolve(precision, device)
    if name == "bf16-mixed":
        return BF16Mixed(device)
    if name == "16-mixed":
        return FP16Mixed(device)
    return Precision(device)
