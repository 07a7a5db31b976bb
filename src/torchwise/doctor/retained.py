"""Graphs kept alive across steps (the evidence of runtime TW101).

``total += loss`` (or ``ema = 0.9 * ema + 0.1 * loss``, ``torch.stack(kept_losses)``) makes a
tensor that carries the autograd graph of every step so far: the graph, and the activations an
un-backwarded graph holds, stay alive as long as that tensor does, and grow each step.

Seen through the watch's ``TorchFunctionMode``, outside any module's forward: every result of an
operation that requires grad and has a ``grad_fn``, and every model output, is remembered (weakly,
with the step it was made at and its *generation*: 0, or one more than the oldest-lineage input it
was built from that an earlier step made). Using an earlier step's result once is normal (metrics
computed after ``optimizer.step()`` on that iteration's output); what marks the bug is a chain —
a result built on an earlier step's result that is itself built on again at a later step
(generation 2: ``total += loss`` over three steps) — or one operation gathering results of three
or more earlier steps (``torch.cat(kept_outputs)``, ``torch.stack(kept_losses)``). The first one
is kept with its line; later ones are counted.
"""

from __future__ import annotations

import weakref
from typing import Any, Callable

import torch

__all__ = ["Retained"]

MAX_REMEMBERED = 256


class Retained:
    """Remembers graph-carrying results by step and notes when older ones are built upon."""

    def __init__(self) -> None:
        self._made: dict[int, tuple[weakref.ref, int, int]] = {}  # id(tensor) -> (ref, step made, generation)
        self.first: dict[str, Any] | None = None
        self.count = 0
        self.steps: set[int] = set()

    def made(self, out: Any, step: int) -> None:
        """A model output (or any result) made at ``step``, generation 0."""
        if isinstance(out, torch.Tensor) and out.requires_grad and out.grad_fn is not None:
            self._remember(out, step, 0)

    def op(self, func: Callable, args: tuple, out: Any, step: int, line: Callable[[], str]) -> None:
        """After ``func(*args)`` returned ``out`` outside a module's forward at ``step``."""
        if not isinstance(out, torch.Tensor) or not out.requires_grad or out.grad_fn is None:
            return
        older = []
        for a in _tensors(args):
            hit = self._made.get(id(a))
            if hit is not None and hit[0]() is a and hit[1] < step:
                older.append((hit[1], hit[2]))
        generation = 1 + max(g for _, g in older) if older else 0
        spanned = len({s for s, _ in older})
        if generation >= 2 or spanned >= 3:
            self.count += 1
            self.steps.add(step)
            if self.first is None:
                self.first = {"line": line(), "function": getattr(func, "__name__", str(func)),
                              "made_at_step": min(s for s, _ in older), "used_at_step": step, "shape": list(out.shape),
                              "kind": "gathers results of earlier steps" if spanned >= 3 else "builds on a result of earlier steps"}
        self._remember(out, step, generation)

    def _remember(self, out: torch.Tensor, step: int, generation: int) -> None:
        if len(self._made) >= MAX_REMEMBERED:
            dead = [k for k, (r, _, _) in self._made.items() if r() is None]
            for k in dead[:MAX_REMEMBERED // 2] or list(self._made)[:MAX_REMEMBERED // 4]:
                del self._made[k]
        try:
            self._made[id(out)] = (weakref.ref(out), step, generation)
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
