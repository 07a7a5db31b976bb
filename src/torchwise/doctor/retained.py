"""Graphs kept alive across steps (the evidence of runtime TW101).

``total += loss`` (or ``ema = 0.9 * ema + 0.1 * loss``, ``torch.stack(kept_losses)``) makes a
tensor that carries the autograd graph of every step so far: the graph, and the activations an
un-backwarded graph holds, stay alive as long as that tensor does, and grow each step.

Seen through the watch's ``TorchFunctionMode``, outside any module's forward: every result of an
operation that requires grad and has a ``grad_fn`` is remembered (weakly, with the step it was made
at); an operation that *combines* such a result of an earlier step into a new graph (its output
requires grad) is the accumulation. The first one is kept with its line; later ones are counted.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import torch

__all__ = ["Retained"]

MAX_REMEMBERED = 256


class Retained:
    """Remembers graph-carrying results by step and notes when an older one is built upon."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[weakref.ref, int]] = {}  # id(tensor) -> (ref, step made)
        self.first: dict[str, Any] | None = None
        self.count = 0
        self.steps: set[int] = set()

    def op(self, func: Callable, args: tuple, out: Any, step: int, line: Callable[[], str]) -> None:
        """After ``func(*args)`` returned ``out`` outside a module's forward at ``step``."""
        if not isinstance(out, torch.Tensor) or not out.requires_grad or out.grad_fn is None:
            return
        for a in _tensors(args):
            hit = self._made.get(id(a))
            if hit is not None and hit[0]() is a and hit[1] < step:
                self.count += 1
                self.steps.add(step)
                if self.first is None:
                    self.first = {"line": line(), "function": getattr(func, "__name__", str(func)), "made_at_step": hit[1],
                                  "used_at_step": step, "shape": list(out.shape)}
                break
        if len(self._made) >= MAX_REMEMBERED:
            for k in [k for k, (r, _) in self._made.items() if r() is None][:MAX_REMEMBERED // 2] or list(self._made)[:MAX_REMEMBERED // 4]:
                del self._made[k]
        try:
            self._made[id(out)] = (weakref.ref(out), step)
        except TypeError:
            pass

    def evidence(self) -> dict[str, Any] | None:
        if self.first is None:
            return None
        return {**self.first, "operations": self.count, "steps_with_it": len(self.steps)}


def _tensors(args: Any):
    for a in args:
        if isinstance(a, torch.Tensor):
            yield a
        elif isinstance(a, (list, tuple)):
            for b in a:
                if isinstance(b, torch.Tensor):
                    yield b
