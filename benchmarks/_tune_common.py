"""Shared by the tune benchmarks: confirm a tuning result by measuring default and tuned
configurations end to end through the DataLoader, in alternation (drift hits both alike)."""

from __future__ import annotations

import statistics
from typing import Any

import torch

from torchwise.tune import TuneResult
from torchwise.tune.measure import TaskMeasurer, TrialSpec
from torchwise.tune.search import default_config


def configs(result: TuneResult, ctx_threads: int, batch_size: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """(default, tuned) full configurations for the measurer."""

    class _Ctx:
        threads = ctx_threads

    _Ctx.batch_size = batch_size
    default = default_config(_Ctx)
    decided = {k: v for k, v in result.config.to_dict().items() if k not in ("format", "meta") and v is not None}
    return default, {**default, **decided}


def confirm(task: Any, device: torch.device, default: dict, tuned: dict, seconds: float, rounds: int) -> dict[str, float]:
    """Median samples/s of both configurations over ``rounds`` alternated windows of ``seconds``."""
    meas = TaskMeasurer(task, device)
    got: dict[str, list[float]] = {"default": [], "tuned": []}
    try:
        for _ in range(rounds):
            for name, cfg in (("default", default), ("tuned", tuned)):
                m = meas(TrialSpec(cfg, "loader", time_cap_s=seconds))
                got[name].append(m.samples_per_s)
    finally:
        meas.release()
    return {k: statistics.median(v) for k, v in got.items()}


def settings_text(result: TuneResult) -> str:
    return ", ".join(f"{k}={v}" for k, v in result.changes().items()) or "defaults kept"
