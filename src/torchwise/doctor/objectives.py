"""One loss series per objective: what each optimizer steps on, judged on its own.

A script may train several things at once: a GAN's discriminator and generator (two optimizers,
two losses that trade off), a critic stepped five times per generator step, or weights updated
by hand after ``loss.backward()`` (no ``torch.optim`` at all). One loss series fed by every
``backward()`` would interleave those losses; a dynamics check reading it would call a
generator loss that rises (as it should while the discriminator learns) a divergence.

So each ``backward()`` notes its loss (on the device, no sync) as *pending*; the next optimizer
step takes the pending losses as one step of its objective (their sum: the micro-batches of an
accumulation, or ``d_real + d_fake`` backwarded separately). An optimizer that steps with
nothing pending (one backward, two optimizers: an encoder and a decoder) joins the objective of
the previous step. Without any optimizer, every backward is a step of the objective of its call
site (``backward at train.py:88``).

*Coupled* objectives: the forward passes of one objective's steps ran a model that another
objective's optimizer trains (a generator's loss goes through the discriminator, and the
discriminator's steps run the generator for their fakes). Their losses trade off, so a rising or
flat loss is no fault there; the loss-curve checks (TW134-TW136) leave them out.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

__all__ = ["Objective", "Objectives"]


@dataclass
class Objective:
    """One objective's loss series (host floats, one per optimizer step of it)."""

    key: str  # "optimizer 0" or "backward at train.py:88"
    name: str  # shown in findings: "opt_d (backward at gan.py:52)"
    optimizer: int | None = None  # index among the optimizers that stepped (None: updated by hand)
    lines: list[str] = field(default_factory=list)  # backward call sites feeding it
    losses: list[float] = field(default_factory=list)
    steps: int = 0
    models: list[str] = field(default_factory=list)  # the models its optimizer trains
    coupled_with: list[str] = field(default_factory=list)  # names of the objectives whose models its steps ran

    @property
    def coupled(self) -> bool:
        return bool(self.coupled_with)

    def where(self) -> str:
        """``training loss (backward at train.py:95)``, or the objective's own name when there are several."""
        line = self.lines[0] if self.lines else ""
        return f"training loss (backward at {line})" if line else "training loss"

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "optimizer": self.optimizer, "lines": self.lines[:5], "steps": self.steps,
                "models": self.models, "coupled_with": self.coupled_with}


class Objectives:
    """Collects the per-objective losses on the device; :meth:`read` brings them to the host."""

    def __init__(self, limit: int = 100_000) -> None:
        self.items: list[Objective] = []
        self._by_key: dict[str, Objective] = {}
        self._pending: list[tuple[torch.Tensor, str]] = []
        self._device: list[tuple[Objective, torch.Tensor]] = []
        self._last: Objective | None = None
        self.roots: dict[str, set[int]] = {}  # objective key -> ids of the models its steps ran forward
        self.limit = limit

    def backward(self, loss: Any, line: str) -> None:
        """A ``backward()`` of ``loss`` at ``line``: pending until the next optimizer step."""
        if isinstance(loss, torch.Tensor) and loss.numel() == 1 and len(self._pending) < 10_000:
            self._pending.append((loss.detach().float().reshape(()), line))
        elif len(self._pending) < 10_000:
            self._pending.append((torch.full((), float("nan")), line))

    def take_pending(self) -> list[tuple[torch.Tensor, str]]:
        """The pending losses, removed (weights updated by hand: each backward is its own step)."""
        out, self._pending = self._pending, []
        return out

    def put_pending(self, value: torch.Tensor, line: str) -> None:
        self._pending.append((value, line))

    def step(self, key: str, name: str, optimizer: int | None, roots: set[int]) -> Objective:
        """One step of the objective ``key``: the pending losses (summed) are its loss for the step."""
        if not self._pending and self._last is not None and optimizer is not None:
            obj = self._last  # one backward, several optimizers: the same objective
        else:
            obj = self._by_key.get(key)
            if obj is None:
                obj = Objective(key, name, optimizer)
                self._by_key[key] = obj
                self.items.append(obj)
            if self._pending:
                for _, line in self._pending:
                    if line not in obj.lines and len(obj.lines) < 10:
                        obj.lines.append(line)
                total = torch.stack([v.to(self._pending[0][0].device) for v, _ in self._pending]).sum()
                if len(self._device) < self.limit:
                    self._device.append((obj, total))
                self._pending = []
            obj.steps += 1
        self.roots.setdefault(obj.key, set()).update(roots)
        self._last = obj
        return obj

    def read(self) -> None:
        """Bring the pending device values to the host (one transfer per device)."""
        if not self._device:
            return
        by_device: dict[torch.device, list[int]] = {}
        for i, (_, v) in enumerate(self._device):
            by_device.setdefault(v.device, []).append(i)
        values: list[float] = [0.0] * len(self._device)
        for idx in by_device.values():
            for i, x in zip(idx, torch.stack([self._device[i][1] for i in idx]).cpu().tolist()):
                values[i] = float(x)
        for (obj, _), v in zip(self._device, values):
            obj.losses.append(v)
        self._device = []

    def couple(self, owner: dict[int, str]) -> None:
        """Mark objectives whose steps ran a model trained by another objective (``owner``: model id
        -> key of the objective whose optimizer trains it)."""
        names = {o.key: o.name for o in self.items}
        for obj in self.items:
            others = {owner[r] for r in self.roots.get(obj.key, ()) if r in owner and owner[r] != obj.key}
            obj.coupled_with = sorted(names[k] for k in others if k in names)
        for obj in self.items:  # coupling goes both ways (the discriminator's steps may reuse a detached fake)
            for other in self.items:
                if obj.name in other.coupled_with and other.name not in obj.coupled_with:
                    obj.coupled_with.append(other.name)

    def main(self) -> Objective | None:
        """The objective with the most steps (the first of them on a tie)."""
        return max(self.items, key=lambda o: o.steps, default=None)
