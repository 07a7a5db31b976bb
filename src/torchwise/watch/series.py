"""Bounded time series: a week-long run keeps a fixed amount of history in memory.

A :class:`Series` holds at most ``capacity`` points. When it is full, every other point is
dropped and from then on only one point in two is kept (then one in four...), so the series
always spans the whole run at an even, coarser spacing: memory stays constant over millions
of steps, and the start of the run (needed to compare against) is never lost.
"""

from __future__ import annotations

import math
import statistics
from typing import Iterable


class Series:
    """``(step, value)`` points, thinned evenly when more than ``capacity`` arrive."""

    def __init__(self, capacity: int = 512) -> None:
        if capacity < 4:
            raise ValueError("capacity must be >= 4")
        self.capacity = capacity
        self.steps: list[int] = []
        self.values: list[float] = []
        self._stride = 1
        self._offered = 0

    def add(self, step: int, value: float) -> None:
        self._offered += 1
        if (self._offered - 1) % self._stride:
            return
        self.steps.append(int(step))
        self.values.append(float(value))
        if len(self.steps) > self.capacity:
            self.steps = self.steps[::2]
            self.values = self.values[::2]
            self._stride *= 2

    def __len__(self) -> int:
        return len(self.steps)

    def last(self, n: int) -> list[float]:
        return self.values[-n:]

    def finite(self) -> list[float]:
        return [v for v in self.values if math.isfinite(v)]


def median(values: Iterable[float]) -> float:
    """The median of the finite values (NaN when there is none)."""
    vals = [v for v in values if math.isfinite(v)]
    return statistics.median(vals) if vals else math.nan


__all__ = ["Series", "median"]
