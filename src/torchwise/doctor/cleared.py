"""Were the gradients cleared between two optimizer steps? (the evidence of runtime TW110)

``backward()`` adds into ``.grad``. Right before each ``backward()`` of the first ``LIMIT`` ones
the norm of every watched parameter's gradient is stacked on the device (no sync; nothing at all
when every gradient is ``None``, as after ``zero_grad()``): what that backward will add to. Each
optimizer step is noted with the parameters it holds. A parameter's gradient was *cleared* between
two steps of its optimizer when at one backward in between it was ``None`` or zero. Deliberate
accumulation (k backwards, one step, one clear) clears once per step; a loop without
``zero_grad()`` never does. A GAN's generator step leaves gradients in the discriminator that the
discriminator's own ``zero_grad()`` clears before its next backward: cleared too.
"""

from __future__ import annotations

from typing import Any

import torch

from torchwise.doctor.frames import grad_norm_vector

__all__ = ["ClearedGrads", "LIMIT"]

LIMIT = 40  # backwards watched


class ClearedGrads:
    """Collects the leftover gradient before each backward and the optimizer steps."""

    def __init__(self) -> None:
        self.backwards = 0
        self._events: list[tuple[str, int, Any]] = []  # ("b", backward number, device vector | None) / ("s", optimizer, positions)
        self._host: list[tuple[str, int, Any]] = []
        self.active = True

    def before_backward(self, params: list[torch.Tensor]) -> None:
        if not self.active:
            return
        self.backwards += 1
        if self.backwards > LIMIT:
            self.active = False
            return
        self._events.append(("b", self.backwards, grad_norm_vector(params) if params else None))

    def step(self, optimizer: int, positions: list[int]) -> None:
        if self.active:
            self._events.append(("s", optimizer, positions))

    def read(self) -> None:
        vectors = [v for kind, _, v in self._events if kind == "b" and v is not None]
        try:
            host = iter(torch.stack([v.float() for v in vectors]).cpu().tolist()) if vectors else iter(())
        except RuntimeError:  # vectors of different lengths (parameters added later)
            host = iter([v.cpu().tolist() for v in vectors])
        for kind, n, v in self._events:
            self._host.append((kind, n, next(host) if kind == "b" and v is not None else v))
        self._events = []

    def never_cleared(self, hand: bool = False) -> dict[str, Any] | None:
        """Positions of the parameters whose gradient was never cleared between two of their
        optimizer's steps (or between two backwards when weights are updated by hand), and the
        number of such intervals seen; None when fewer than two intervals were seen."""
        self.read()
        intervals: dict[int, list[list[list[float] | None]]] = {}  # optimizer -> backwards' leftovers per interval
        held: dict[int, list[int]] = {}
        open_: dict[int, list[list[float] | None]] = {}
        if hand:  # every backward is a step: the interval is the backward itself
            rows = [v for kind, _, v in self._host if kind == "b"]
            intervals[0] = [[v] for v in rows[1:]]
            held[0] = list(range(max((len(v) for v in rows if v), default=0)))
        else:
            for kind, n, v in self._host:
                if kind == "s":
                    if n in open_:
                        intervals.setdefault(n, []).append(open_[n])
                    held.setdefault(n, v)
                    open_[n] = []
                else:
                    for seen in open_.values():
                        seen.append(v)
        found: dict[int, int] = {}
        spans = 0
        for opt, spans_of in intervals.items():
            spans_of = [s for s in spans_of if s]
            if len(spans_of) < 2:
                continue
            spans = max(spans, len(spans_of))
            for pos in held.get(opt, []):
                if all(all(v is not None and pos < len(v) and v[pos] > 0 for v in span) for span in spans_of):
                    found[pos] = len(spans_of)
        if not spans:
            return None
        return {"positions": sorted(found), "intervals": spans}
