"""The knobs ``torchwise tune`` measures, one module each, in the order the search visits them.

Every knob module has a docstring (what / why / example / fix), a literal ``CODES`` tuple naming
its practice codes (``torchwise rule`` reads it with ``ast``), and:

- ``NAME``: the knob's name (what ``tune(..., knobs=[...])`` selects);
- ``MODE``: ``"step"`` (timed on batches already in memory) or ``"loader"`` (samples/s through the
  real DataLoader and the step);
- ``NUMERICS``: whether a candidate can change the loss, so it is checked against the fp32 baseline;
- ``PLANS``: functions ``plan(ctx, config) -> Plan`` called one after the other with the best
  configuration so far (coordinate-wise search; the loader knob has three stages).

A knob never imports torch at module level beyond what its plans need, and never measures anything
itself: the search does, through an injectable measuring function.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any

from torchwise.core.errors import UsageError

# search order: process-wide threads first (they scale everything on CPU), then precision and the
# layouts that pay off with it, kernel selection, compilation (expensive, estimated), the batch
# size (CUDA), and last the input pipeline measured through the real loader.
KNOB_NAMES: tuple[str, ...] = (
    "threads",
    "precision",
    "channels_last",
    "cudnn_benchmark",
    "tf32",
    "compile",
    "batch_size",
    "loader",
)


@dataclass
class Plan:
    """What one stage of a knob will try from the current best configuration.

    ``candidates`` are partial configurations (TunedConfig field -> value) in the order to try;
    ``skipped`` lists ``(setting, reason)`` pairs that cannot apply here; ``stop_after_worse``
    prunes the rest of the candidates once that many in a row were not faster.
    """

    candidates: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    stop_after_worse: int | None = None


def label(settings: dict[str, Any]) -> str:
    """``{"precision": "bf16-mixed"}`` -> ``"precision=bf16-mixed"``."""
    return ", ".join(f"{k}={v}" for k, v in settings.items())


def load_knob(name: str) -> ModuleType:
    """The module of one knob."""
    if name not in KNOB_NAMES:
        raise UsageError(f"unknown tune knob {name!r}; expected some of {', '.join(KNOB_NAMES)}")
    return importlib.import_module(f"{__name__}.{name}")


def select_knobs(names: "list[str] | tuple[str, ...] | str | None" = None) -> list[ModuleType]:
    """The knob modules to measure, in search order (all of them by default)."""
    if names is None:
        wanted = list(KNOB_NAMES)
    else:
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        wanted = list(names)
        for name in wanted:
            load_knob(name)  # raises on an unknown name
    return [load_knob(n) for n in KNOB_NAMES if n in wanted]
