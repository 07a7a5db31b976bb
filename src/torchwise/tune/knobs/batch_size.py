"""The largest batch that fits in GPU memory, a multiple of 8, found by measuring.

What: double the batch size until a step runs out of memory, bisect between the last size that
fitted and the first that did not (in steps of 8), then keep a safety margin below the limit.
Why: a GPU is used well only with enough work per kernel; the largest batch that fits usually
gives the most samples/s, and multiples of 8 let fp16/bf16 tensor cores tile the batch dimension.
Guessing means either idle GPU or an out-of-memory crash some epochs in (memory varies a little
from step to step, hence the margin). On a CPU there is no memory wall to find, and a larger
batch changes the optimisation, so the knob is GPU-only.
Example: a ResNet-style CNN on 32x32 images, batch 128 by default, fits 2048 on a large GPU.
Fix: ``DataLoader(..., batch_size=N)`` (tune.json ``"batch_size"``); scale the learning rate
with it. Memory is freed between trials, so the process is not left out of memory.
"""

from __future__ import annotations

from typing import Any, Callable

from torchwise.tune.knobs import Plan

CODES = ("TW216", "TW210")
NAME = "batch_size"
MODE = "step"
NUMERICS = False
MULTIPLE = 8
MARGIN = 0.1


def plan(ctx: Any, config: dict[str, Any]) -> Plan:
    """Only says whether the knob applies; the sizes come from :func:`largest_fitting`."""
    if ctx.device_type != "cuda":
        return Plan(skipped=[("batch_size", f"the largest batch that fits is a GPU-memory question; on {ctx.device_type} the task's batch is kept (a larger batch changes the optimisation)")])
    if ctx.loader_problem:
        return Plan(skipped=[("batch_size", ctx.loader_problem)])
    if ctx.max_batch is None or ctx.max_batch < MULTIPLE:
        return Plan(skipped=[("batch_size", "the dataset is too small (or has no length) to build larger batches")])
    return Plan()


PLANS = (plan,)


def round_up(n: int, multiple: int = MULTIPLE) -> int:
    return max(multiple, -(-int(n) // multiple) * multiple)


def with_margin(n: int, margin: float = MARGIN, multiple: int = MULTIPLE) -> int:
    """``n`` less ``margin``, rounded down to a multiple (never below ``multiple``)."""
    if n <= multiple:
        return n
    return max(multiple, int(n * (1.0 - margin)) // multiple * multiple)


def largest_fitting(
    fits: Callable[[int], "bool | None"],
    start: int,
    cap: int,
    multiple: int = MULTIPLE,
) -> tuple[int | None, list[tuple[int, bool]], bool]:
    """Largest multiple of ``multiple`` in ``[multiple, cap]`` for which ``fits`` holds.

    ``fits(n)`` returns True (a step ran), False (out of memory) or None (could not be measured,
    e.g. no time left: the search stops with what it knows). Doubling from ``start`` (rounded up to
    a multiple), then bisection. Returns ``(largest or None, [(size, fitted)...], complete)``.
    """
    cap = cap // multiple * multiple
    history: list[tuple[int, bool]] = []
    if cap < multiple:
        return None, history, True
    lo, hi = 0, None  # lo: largest size known to fit (0: none); hi: smallest known not to fit

    def probe(n: int) -> bool | None:
        ok = fits(n)
        if ok is not None:
            history.append((n, bool(ok)))
        return ok

    n = min(round_up(start, multiple), cap)
    while True:
        ok = probe(n)
        if ok is None:
            return (lo or None), history, False
        if not ok:
            hi = n
            break
        lo = n
        if n >= cap:
            return lo, history, True
        n = min(n * 2, cap)
    while hi - lo > multiple:
        mid = (lo + hi) // 2 // multiple * multiple
        if mid <= lo:
            mid = lo + multiple
        if mid >= hi:
            break
        ok = probe(mid)
        if ok is None:
            return (lo or None), history, False
        if ok:
            lo = mid
        else:
            hi = mid
    return (lo or None), history, True
