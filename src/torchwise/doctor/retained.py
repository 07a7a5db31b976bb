"""Graphs kept alive across steps (the evidence of runtime TW101).

``total += loss`` (or ``ema = 0.9 * ema + 0.1 * loss``, ``torch.stack(kept_losses)``) makes a
tensor that carries the autograd graph of every step so far: the graph, and the activations an
un-backwarded graph holds, stay alive as long as that tensor does, and grow each step.

Seen through the watch's ``TorchFunctionMode``, outside any module's forward: every result of an
operation that requires grad and has a ``grad_fn``, and every model output, is remembered (weakly,
with the step it was made at and the earlier steps whose results it holds). Holding one earlier
step's result is normal (a metric computed after ``optimizer.step()`` on that iteration's output).
Holding the results of two or more earlier steps is the bug: ``total += loss`` by its third step,
``sum(kept_losses)``, ``torch.cat(kept_outputs)``. The first such operation is kept with its line;
later ones are counted.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import torch

__all__ = ["Retained"]

MAX_REMEMBERED = 256


class Retained:
    """Remembers graph-carrying results by step and notes when one holds several earlier steps'."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[weakref.ref, int, frozenset]] = {}  # id(tensor) -> (ref, step made, earlier steps held)
        self.first: dict[str, Any] | None = None
        self.count = 0
        self.steps: set[int] = set()

    def made(self, out: Any, step: int) -> None:
        """A model output (or any result) made at ``step``, holding nothing older."""
        if isinstance(out, torch.Tensor) and out.requires_grad and out.grad_fn is not None:
            self._remember(out, step, frozenset())

    def op(self, func: Callable, args: tuple, out: Any, step: int, line: Callable[[], str]) -> None:
        """After ``func(*args)`` returned ``out`` outside a module's forward at ``step``."""
        if not isinstance(out, torch.Tensor) or not out.requires_grad or out.grad_fn is None:
            return
        held: set[int] = set()
        for a in _tensors(args):
            hit = self._made.get(id(a))
            if hit is not None and hit[0]() is a:
                held |= hit[2] | ({hit[1]} if hit[1] < step else set())
        if len(held) >= 2:
            self.count += 1
            self.steps.add(step)
            if self.first is None:
                self.first = {"line": line(), "function": getattr(func, "__name__", str(func)), "made_at_step": min(held),
                              "used_at_step": step, "earlier_steps_held": len(held), "shape": list(out.shape)}
        self._remember(out, step, frozenset(sorted(held)[-8:]))

    def _remember(self, out: torch.Tensor, step: int, held: frozenset) -> None:
        if len(self._made) >= MAX_REMEMBERED:
            dead = [k for k, (r, _, _) in self._made.items() if r() is None]
            for k in dead[:MAX_REMEMBERED // 2] or list(self._made)[:MAX_REMEMBERED // 4]:
                del self._made[k]
        try:
            self._made[id(out)] = (weakref.ref(out), step, held)
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
