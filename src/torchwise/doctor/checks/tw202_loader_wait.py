"""The share of step time spent waiting for the DataLoader.

What: during the timed steps (the first, recording step is left out: it also pays for worker
start-up) the time blocked in ``next(loader)`` is compared with the time of the steps
themselves, both less the time the thread sat in the run queue waiting for a core (Linux's
``/proc/thread-self/schedstat``, see clock.py): what other processes take is not counted, so a
busy machine does not make a fast loader look slow. A wait share of at least 30% (and at least 2
ms a step) is reported, when it holds for the totals *and* for the quickest wait against the
quickest step (on a busy machine a preemption lengthens single samples; a slow loader is slow on
every step): as TW202 when the loader has ``num_workers=0`` (loading runs in the training
process, between steps), else as TW222 (the workers cannot keep up).
Why: while the model waits for data, the GPU (or the CPU cores doing the maths) idle; buying a
faster GPU does not help an input-bound run.
Example: ``DataLoader(images_on_disk, batch_size=64)`` decoding JPEGs in the main process.
Fix: ``num_workers`` > 0 (measure: ``torchwise tune`` tries 0, 1, 2, 4...), ``persistent_workers``,
``pin_memory`` for a GPU, a larger ``prefetch_factor``, or cheaper per-sample work (pre-decoded or
cached data, faster storage).
"""

from __future__ import annotations

from torchwise.doctor.report import Finding, Skipped

CODES = ("TW202", "TW222")
SCRIPT = True  # runs in script mode too (see torchwise.doctor.script_evidence)
MIN_SHARE = 0.30
MIN_WAIT_PER_STEP_S = 0.002


def check(ctx) -> list[Finding] | Skipped:
    if ctx.batch_given or ctx.loader is None:
        return Skipped(CODES, "no DataLoader fed the steps (the script makes its own batches)" if getattr(ctx, "script", False)
                       else "no loader to time (a fixed batch was given)")
    waited = ctx.loader_wait()
    if waited is None:
        return Skipped(CODES, "fewer than 2 steps ran after the first (which is not timed)" if getattr(ctx, "script", False)
                       else "needs at least 2 completed steps to time the loader (--steps 3 or more; steps=3 from Python)")
    wait, busy, share = waited
    timed = len(ctx.timed_steps)
    # decided on the quickest wait and the quickest step, both less the time the thread waited
    # for a core (clock.py): a busy machine's preemptions only ever lengthen a sample, and the
    # run-queue time they add is not counted at all where Linux reports it
    least_wait = min(_free(s.free_wait_s, s.wait_s) for s in ctx.timed_steps)
    least_step = min(_free(s.free_step_s, s.step_s) for s in ctx.timed_steps)
    steady_share = least_wait / max(1e-12, least_wait + least_step)
    if share < MIN_SHARE or steady_share < MIN_SHARE or least_wait < MIN_WAIT_PER_STEP_S:
        return []
    workers = int(getattr(ctx.loader, "num_workers", 0) or 0)
    evidence = {
        "loader_wait_share": round(share, 3),
        "wait_ms_per_step": round(wait / timed * 1e3, 3),
        "step_ms": round(busy / timed * 1e3, 3),
        "timed_steps": timed,
        "num_workers": workers,
    }
    where = f"train loader (num_workers={workers}, batch_size={getattr(ctx.loader, 'batch_size', '?')})"
    if workers == 0:
        return [Finding(
            "TW202", "warning",
            f"{share:.0%} of step time is spent waiting for the loader, which loads in the main process (num_workers=0)",
            where, evidence,
            "set num_workers > 0 (measure the best count with `torchwise tune`), with persistent_workers=True and pin_memory=True for a GPU",
        )]
    return [Finding(
        "TW222", "warning",
        f"{share:.0%} of step time is spent waiting for the loader with {workers} worker(s): the input pipeline is the bottleneck",
        where, evidence,
        "more workers (measure with `torchwise tune`), persistent_workers, a larger prefetch_factor, or cheaper per-sample work",
    )]


def _free(load_free: float | None, wall: float) -> float:
    return wall if load_free is None else load_free
