"""DataLoader workers: ``num_workers`` x ``pin_memory`` x ``persistent_workers``.

What: how many worker processes prepare batches, whether batches land in page-locked memory,
and whether the workers survive from one epoch to the next. Measured as samples/s through the
real loader and the training step, so the cost of feeding the model is included.
Why: with ``num_workers=0`` the step waits while the main process loads and collates every
batch; too many workers fight the step for cores. Pinned memory makes host-to-device copies
faster and asynchronous (``non_blocking=True``), which only means something with CUDA.
Persistent workers skip the start-up of every worker at each epoch, which matters for short
epochs; they need at least one worker.
Example: a model on augmented images, where loading takes longer than the step, gains almost
linearly from 0 to 4 workers; in-memory tensors may gain nothing.
Fix: ``DataLoader(..., num_workers=N, pin_memory=True, persistent_workers=True)`` (tune.json
``"num_workers"``, ``"pin_memory"``, ``"persistent_workers"``).
"""

from __future__ import annotations

from typing import Any

from torchwise.tune.knobs import Plan

CODES = ("TW202", "TW203", "TW222")
NAME = "loader"
MODE = "loader"
NUMERICS = False


def worker_counts(cores: int) -> list[int]:
    """0, 1, 2, 4, ... up to the cores."""
    out, n = [0], 1
    while n <= cores:
        out.append(n)
        n *= 2
    if cores > 0 and out[-1] != cores:
        out.append(cores)
    return out


def plan_workers(ctx: Any, config: dict[str, Any]) -> Plan:
    if ctx.loader_problem:
        return Plan(skipped=[("num_workers", ctx.loader_problem)])
    if ctx.iterable_dataset:
        return Plan(skipped=[("num_workers", "an IterableDataset is copied into every worker unless it shards itself; not measured")])
    values = [n for n in worker_counts(ctx.cores) if n != config.get("num_workers")]
    # workers are tried with persistent workers: re-spawning them at every epoch is pure overhead
    # that would hide what the workers themselves are worth; the next stage measures without.
    cands = [{"num_workers": n, "persistent_workers": True} if n else {"num_workers": 0, "persistent_workers": False} for n in values]
    return Plan(candidates=cands, stop_after_worse=2)


def plan_pin(ctx: Any, config: dict[str, Any]) -> Plan:
    if ctx.loader_problem:
        return Plan(skipped=[("pin_memory", ctx.loader_problem)])
    if ctx.device_type != "cuda":
        return Plan(skipped=[("pin_memory", f"pinned memory speeds up copies to a CUDA device; running on {ctx.device_type}")])
    if config.get("pin_memory"):
        return Plan()
    return Plan(candidates=[{"pin_memory": True}])


def plan_persistent(ctx: Any, config: dict[str, Any]) -> Plan:
    if ctx.loader_problem:
        return Plan(skipped=[("persistent_workers", ctx.loader_problem)])
    if not config.get("num_workers"):
        return Plan(skipped=[("persistent_workers", "no worker processes (num_workers=0) to keep alive")])
    return Plan(candidates=[{"persistent_workers": not config.get("persistent_workers")}])


PLANS = (plan_workers, plan_pin, plan_persistent)
