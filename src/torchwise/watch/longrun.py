"""Checks that only a whole run shows: what changes between the windows of a long run.

Each window of samples (see :mod:`torchwise.watch.window`) leaves a few numbers: the median loss
of each objective, the share of step time spent waiting for batches, the step time, the memory
held and the learning rates. Kept in bounded :class:`~torchwise.watch.series.Series`, they are
compared across the run:

- **loss spike** (TW134): an objective's window median rises to ``SPIKE`` times the best window
  median seen before it (objectives whose loss goes to zero or below, like a WGAN critic's, are
  left out); after a restart (``--resume``), the first window is compared with the last ones
  before the restart (``RESTART`` times higher: the checkpoint did not restore the run);
- **learning rate collapsed** (TW133): every group's learning rate below ``LR_FLOOR`` of its
  peak for two windows or more, and for ``LR_LOW_SHARE`` of the run so far, while training goes on — a schedule that ended before the run
  (a per-epoch scheduler stepped per batch, a ``T_max`` in epochs given steps);
- **input pipeline slowing down** (TW222): the wait share of a window above ``WAIT_SHARE``,
  ``WAIT_RISE`` points above the early windows' and the wait per step 3x theirs, or above
  ``WAIT_SHARE`` from the start for three windows; never for waits under ``WAIT_MS`` a step;
- **memory growing** (TW101): the memory held rose in each of the last ``GROW_WINDOWS``
  windows, by ``GROW_SHARE`` and ``GROW_MB`` in all since the second window: tensors kept
  across steps (a loss summed with its graph, outputs appended to a list).

Thresholds chosen wide of what healthy runs show: a healthy loss never comes back to 3x its
best window median (minibatch noise moves a 20-sample median by a few percent); a cosine
schedule reaches 1e-3 of its peak only in its last 2-3% of steps; healthy loaders on this
machine wait 0-10% of the step (tests/watch measure both sides).
"""

from __future__ import annotations

import math
from typing import Any

from torchwise.doctor.report import Finding
from torchwise.watch.series import Series, median

SPIKE = 3.0
RESTART = 2.0
LR_FLOOR = 1e-3
LR_LOW_SHARE = 0.1  # ... for this share of the run's steps so far (a cosine ends below 1e-3 in its last 2%)
WAIT_SHARE = 0.25
WAIT_RISE = 0.15
WAIT_MS = 2.0  # ... and at least this long per step (a tiny model's sub-millisecond fetches are no bottleneck)
GROW_WINDOWS = 5
GROW_SHARE = 0.2
GROW_MB = 100.0


class LongRun:
    """The window aggregates of a run, and the checks over them."""

    def __init__(self, capacity: int = 512) -> None:
        self.capacity = capacity
        self.loss: dict[str, Series] = {}
        self.wait = Series(capacity)
        self.wait_ms = Series(capacity)
        self.step_ms = Series(capacity)
        self.memory = Series(capacity)
        self.lr_peak: list[float] = []
        self.lr_low_since: int | None = None
        self.lr_low_windows = 0
        self.lr_reported = False
        self._lr_now: list[float] = []
        self.windows = 0
        self.restart_at: int | None = None  # a resumed run: the step it resumed from
        self.before_restart: dict[str, list[float]] = {}  # objective -> window medians before it

    def restarted(self, step: int, earlier: list[dict[str, Any]]) -> None:
        """The run resumed at ``step``; ``earlier``: the window records of the log before it."""
        self.restart_at = step
        for w in earlier[-3:]:
            for site, v in (w.get("loss") or {}).items():
                if isinstance(v, (int, float)) and math.isfinite(v):
                    self.before_restart.setdefault(site, []).append(float(v))

    def add(self, step: int, start: int, agg: dict[str, Any]) -> list[Finding]:
        """One window's aggregates (``loss``: objective -> median, ``wait``, ``step_ms``,
        ``memory_mb``, ``lrs``); the findings they show."""
        self.windows += 1
        out: list[Finding] = []
        if agg.get("samples", 3) < 3:  # a window cut short (the run ended, a NaN): too few samples to compare
            return out
        for site, value in (agg.get("loss") or {}).items():
            out += self._loss(site, step, start, value)
        if agg.get("wait") is not None:
            wait_ms = agg["wait"] * (agg.get("step_ms") or 0.0)
            out += self._wait(step, start, agg["wait"], wait_ms)
            self.wait.add(step, agg["wait"])
            self.wait_ms.add(step, wait_ms)
        if agg.get("step_ms") is not None:
            self.step_ms.add(step, agg["step_ms"])
        if agg.get("memory_mb") is not None and math.isfinite(agg["memory_mb"]):
            self.memory.add(step, agg["memory_mb"])
            out += self._memory(step)
        if agg.get("lrs"):
            out += self._lr(step, agg["lrs"])
        return out

    def annealed(self) -> bool:
        """The learning rate is below 1e-2 of its peak now (a schedule near its end, or collapsed)."""
        peaks = [(v, p) for v, p in zip(self._lr_now, self.lr_peak) if p > 0]  # (an lr of 0 from the start is no schedule)
        return self.lr_low_since is not None or bool(peaks and all(v < 10 * LR_FLOOR * p for v, p in peaks))

    # -- the checks ------------------------------------------------------------------------------
    def _loss(self, site: str, step: int, start: int, value: float) -> list[Finding]:
        series = self.loss.setdefault(site, Series(self.capacity))
        earlier = series.finite()
        series.add(step, value)
        where = f"training loss (backward at {site})"
        if not math.isfinite(value):
            return []
        before = self.before_restart.get(site)
        if before and len(earlier) == 0 and min(before) > 0 and value > RESTART * median(before):
            level = median(before)
            return [Finding("TW134", "warning",
                            f"after the restart at step {self.restart_at:,} the loss is {value / level:.3g}x its level before it "
                            f"({value:.4g} over steps {start:,}-{step:,} vs {level:.4g})", where,
                            {"after": value, "before": level, "restart_step": self.restart_at, "steps": [start, step]},
                            "resume from a checkpoint that holds the optimizer, scheduler and scaler states (and the data position), "
                            "not the weights alone; check that the learning rate after the restart is the one before it")]
        if len(earlier) < 3 or min(earlier) <= 0 or any(v <= 0 for v in earlier):
            return []
        best = min(earlier)
        if value > SPIKE * best:
            return [Finding("TW134", "warning",
                            f"the loss rose to {value / best:.3g}x its best level: median {value:.4g} over steps {start:,}-{step:,}, "
                            f"best window median {best:.4g}", where,
                            {"window_median": value, "best_median": best, "steps": [start, step]},
                            "lower the learning rate or add warm-up/clipping (clip_grad_norm_); look at the data of these steps; "
                            "resume from the last good checkpoint")]
        return []

    def _wait(self, step: int, start: int, share: float, wait_ms: float) -> list[Finding]:
        early = self.wait.values[:3]
        if share <= WAIT_SHARE or wait_ms < WAIT_MS:
            return []
        where = "DataLoader"
        fix = ("more DataLoader workers (num_workers), pin_memory with non_blocking copies, persistent_workers=True, "
               "a faster decode/augmentation (or do it once, ahead of training)")
        if len(early) >= 3 and median(early) + WAIT_RISE < share and wait_ms > 3 * median(self.wait_ms.values[:3]):
            return [Finding("TW222", "warning",
                            f"waiting for batches rose from {median(early):.0%} of the step time early in the run to {share:.0%} "
                            f"over steps {start:,}-{step:,}: the input pipeline is slowing training down", where,
                            {"wait_share": share, "early_wait_share": median(early), "steps": [start, step]}, fix)]
        recent = self.wait.values[-2:] + [share]
        if len(recent) >= 3 and min(recent) > WAIT_SHARE:
            return [Finding("TW222", "warning",
                            f"the steps spend {median(recent):.0%} of their time waiting for batches (last {len(recent)} windows, up to step {step:,})",
                            where, {"wait_share": median(recent), "steps": [start, step]}, fix)]
        return []

    def _memory(self, step: int) -> list[Finding]:
        values, steps = self.memory.values, self.memory.steps
        if len(values) < GROW_WINDOWS + 2:
            return []
        last = values[-(GROW_WINDOWS + 1):]
        base, now = values[1], values[-1]
        if not all(b > a for a, b in zip(last, last[1:])):
            return []
        if now - base < max(GROW_MB, GROW_SHARE * base):
            return []
        per_k = (now - base) / max(1, steps[-1] - steps[1]) * 1000
        return [Finding("TW101", "warning",
                        f"the memory held grows step after step: {base:.0f} MB at step {steps[1]:,}, {now:.0f} MB at step {step:,} "
                        f"(about {per_k:.3g} MB per 1,000 steps, rising in each of the last {GROW_WINDOWS} windows)",
                        "memory", {"memory_mb": [round(v, 1) for v in last], "steps": [steps[1], step], "mb_per_1000_steps": per_k},
                        "keep no tensor across steps: accumulate loss.item() (or loss.detach()), do not append outputs or losses "
                        "that hold their graph to a list; free caches that grow with the step count")]

    def _lr(self, step: int, lrs: list[float]) -> list[Finding]:
        self._lr_now = list(lrs)
        if len(self.lr_peak) != len(lrs):
            self.lr_peak = [0.0] * len(lrs)
        self.lr_peak = [max(p, v) if math.isfinite(v) else p for p, v in zip(self.lr_peak, lrs)]
        low = all(v < LR_FLOOR * p for v, p in zip(lrs, self.lr_peak) if p > 0) and any(p > 0 for p in self.lr_peak)
        if not low:
            self.lr_low_since, self.lr_low_windows = None, 0
            return []
        if self.lr_low_since is None:
            self.lr_low_since = step
        self.lr_low_windows += 1
        low_share = (step - self.lr_low_since) / max(1, step)
        if self.lr_low_windows < 2 or low_share < LR_LOW_SHARE or self.lr_reported:
            return []
        self.lr_reported = True
        return [Finding("TW133", "warning",
                        f"the learning rate fell below {LR_FLOOR:g} of its peak by step {self.lr_low_since:,} and stays there: "
                        f"training goes on but the weights barely move (now {', '.join(f'{v:.3g}' for v in lrs[:4])}, peak "
                        f"{', '.join(f'{v:.3g}' for v in self.lr_peak[:4])})", "learning rate schedule",
                        {"lrs": lrs, "peaks": self.lr_peak, "low_since": self.lr_low_since},
                        "make the schedule span the run: step a per-epoch scheduler once per epoch (or give step-based "
                        "schedulers the total number of optimizer steps, e.g. T_max=epochs*len(loader))")]


__all__ = ["LongRun"]
