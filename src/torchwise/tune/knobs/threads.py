"""Torch intra-op threads (``torch.set_num_threads``).

What: the number of threads PyTorch uses for one operator on the CPU.
Why: by default PyTorch takes every core it sees. Several jobs on one host (or DataLoader workers,
or a container whose CPU quota is smaller than the cores it sees) then oversubscribe the cores and
every step slows down; small models also lose time synchronising threads they cannot use.
Example: two training jobs on an 8-core box, each with 8 threads, run slower than with 4 each.
Fix: measure, then cap with ``torch.set_num_threads(n)`` (tune.json ``"threads"``; the Trainer
applies it through ``TunedConfig.apply_process_settings``).
"""

from __future__ import annotations

from typing import Any

from torchwise.tune.knobs import Plan

CODES = ("TW221",)
NAME = "threads"
MODE = "step"
NUMERICS = False


def counts(cores: int) -> list[int]:
    """1, 2, 4, ... up to ``cores``, and ``cores`` itself."""
    out, n = [], 1
    while n < cores:
        out.append(n)
        n *= 2
    out.append(max(1, cores))
    return out


def plan(ctx: Any, config: dict[str, Any]) -> Plan:
    current = config.get("threads")
    # from the most threads down: the first slower counts prune the smaller ones
    values = [n for n in sorted(counts(ctx.cores), reverse=True) if n != current]
    if not values:
        return Plan(skipped=[("threads", f"only {ctx.cores} core here: nothing to choose")])
    return Plan(candidates=[{"threads": n} for n in values], stop_after_worse=2)


PLANS = (plan,)
