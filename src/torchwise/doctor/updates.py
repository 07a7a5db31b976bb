"""Per-step update/weight ratios, per parameter: how far one optimizer step moves each tensor.

``||w_after - w_before|| / ||w_before||`` of one step is the size of an update relative to the
weights it changes (healthy training: about 1e-4 to 1e-2 a step; an LR far too high: 1e-1 and
more). Measured on a fixed random sample of at most ``SAMPLE`` elements of each tensor (a
gather, no copy of the model), on every ``EVERY``-th step, kept on the device and read in batches.
"""

from __future__ import annotations

import torch

__all__ = ["UpdateSampler", "SAMPLE", "EVERY"]

SAMPLE = 4096  # elements of each parameter followed
EVERY = 3  # a sampled step every EVERY steps (and the first two)


class UpdateSampler:
    """``before(params, step)`` snapshots the sampled elements, ``after()`` stacks the ratios."""

    def __init__(self) -> None:
        self._index: dict[int, torch.Tensor | None] = {}  # id(param) -> sampled flat indices (None: all)
        self._open: tuple[list[int], list[torch.Tensor], list[torch.Tensor]] | None = None
        self._pending: list[tuple[list[int], torch.Tensor]] = []
        self.ratios: dict[int, list[float]] = {}  # param position -> ratios of the sampled steps

    @staticmethod
    def sampled(step: int) -> bool:
        return step < 2 or step % EVERY == 0

    def _take(self, p: torch.Tensor) -> torch.Tensor:
        flat = p.detach().reshape(-1)
        idx = self._index.get(id(p), ...)
        if idx is ...:
            if flat.numel() > SAMPLE:
                g = torch.Generator().manual_seed(flat.numel())
                idx = torch.randperm(flat.numel(), generator=g)[:SAMPLE].to(flat.device)
            else:
                idx = None
            self._index[id(p)] = idx
        return flat.float().clone() if idx is None else flat.index_select(0, idx).float()

    def before(self, params: list[torch.Tensor], positions: list[int]) -> None:
        """Before an optimizer step: the sampled values of ``params`` (at ``positions`` of the watch)."""
        keep = [(i, p) for i, p in zip(positions, params) if p.numel() > 0 and p.device.type != "meta"]
        if not keep:
            return
        self._open = ([i for i, _ in keep], [p for _, p in keep], [self._take(p) for _, p in keep])

    def after(self) -> None:
        """After the step: one ratio per sampled tensor, stacked on the device (no sync)."""
        if self._open is None:
            return
        positions, params, old = self._open
        self._open = None
        try:
            new = [self._take(p) for p in params]
            moved = torch._foreach_norm(torch._foreach_sub(new, old))
            size = torch._foreach_norm(old)
            ratios = torch.stack([m / s.clamp_min(1e-12) for m, s in zip(moved, size)])
        except RuntimeError:  # tensors on several devices: not compared
            return
        if len(self._pending) < 10_000:
            self._pending.append((positions, ratios))

    def read(self) -> None:
        if not self._pending:
            return
        try:
            flat = torch.cat([v for _, v in self._pending]).cpu().tolist()  # one transfer
        except RuntimeError:
            flat = [x for _, v in self._pending for x in v.cpu().tolist()]
        it = iter(flat)
        for positions, _ in self._pending:
            for i in positions:
                self.ratios.setdefault(i, []).append(float(next(it)))
        self._pending = []
