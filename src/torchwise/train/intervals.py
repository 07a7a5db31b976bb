"""The log interval: the step loop's values, synced once per ``log_every`` steps and reported.

Per step the loop only appends each phase's window loss (a float on one CPU process, else a
detached tensor) and counts micro-batches and the time spent waiting for the loader; the batch
stream (:mod:`.batches`) feeds ``wait`` and ``micro``. Every ``log_every`` steps
:class:`IntervalLog` reduces the sums across processes in one collective, adds the learning
rates, gradient norms, rates and loader wait, writes them through :class:`~.report.RunLog`
(CSV, TensorBoard, a line or the bar) and hands them to the callbacks' ``on_log``.
"""

from __future__ import annotations

import math
import time
from typing import Any

import torch

from torchwise.utils.batch import batch_size_of
from torchwise.train.callbacks import Callback, Hooks


class IntervalLog(Callback):
    """Counts of the current log interval and of the whole fit; flushed every ``every`` steps."""

    def __init__(self, every: int) -> None:
        self.every = every
        self.batch_size: int | None = None  # the loader's batch size (per process)
        self.train_loss: float | None = None  # the last logged train/loss
        self.start(0)

    def start(self, step: int) -> None:
        """A new fit from ``step``: clocks and counters from zero."""
        self.wait = 0.0  # seconds waiting for the loader in this interval
        self.micro = 0  # micro-batches in this interval
        self.fit_samples = 0
        self.fit_start = self.interval_start = time.perf_counter()
        self.start_step = self.interval_step = step

    def exclude(self, seconds: float) -> None:
        """Leave ``seconds`` (evaluation) out of the interval's training time."""
        self.interval_start += seconds

    def on_step_end(self, trainer: Any) -> None:
        if trainer.step % self.every == 0:
            self.flush(trainer)

    def unlogged(self, trainer: Any) -> bool:
        return any(p.count or p.extras for p in trainer.phases)

    def flush(self, trainer: Any) -> None:
        """Sync the accumulated values once and report them."""
        elapsed = max(time.perf_counter() - self.interval_start, 1e-9)
        steps = trainer.step - self.interval_step
        if steps <= 0:
            return
        values = _reduced(trainer)
        losses = [values[k] for p in trainer.phases if (k := p.prefix("train") + "loss") in values]
        if losses:
            values["train/loss"] = self.train_loss = sum(losses)  # several optimizers: the sum of their losses
        for phase in trainer.phases:
            values[phase.prefix("train") + "lr"] = float(phase.optimizer.param_groups[0]["lr"])
            if phase.grad_norm is not None:
                values[phase.prefix("train") + "grad_norm"] = float(phase.grad_norm)
        samples = self.samples(trainer)
        values["train/steps_per_s"] = steps / elapsed
        values["train/samples_per_s"] = samples * trainer.strategy.world_size / elapsed
        values["train/loader_wait"] = min(1.0, self.wait / elapsed)
        if trainer.precision.handles_nonfinite:
            values["train/amp_skipped"] = float(sum(p.precision.skipped for p in trainer.phases))
        if trainer.guard.skipped:
            values["train/nonfinite_skipped"] = float(trainer.guard.skipped)
        trainer.log.log(trainer.step, trainer.epoch + 1, values, line=trainer.progress)
        Hooks.run(trainer.hooks.log, trainer, values)
        self.fit_samples += samples
        for phase in trainer.phases:
            phase.losses, phase.extras, phase.count = [], {}, 0
        self.wait, self.micro = 0.0, 0
        self.interval_start, self.interval_step = time.perf_counter(), trainer.step

    def samples(self, trainer: Any) -> int:
        """Samples in this interval: micro-batches times the batch size (a smaller last batch counts full)."""
        if not self.micro:
            return 0
        return self.micro * (self.batch_size or batch_size_of(trainer.steps.last_batch))


def _reduced(trainer: Any) -> dict[str, float]:
    """Each phase's mean loss and step-function values over the interval, across processes (one collective)."""
    device = trainer.device
    names: list[str] = []
    pairs: list[torch.Tensor] = []  # (sum, count) per logged value
    zero = torch.zeros((), device=device)
    for phase in trainer.phases:
        names.append(phase.prefix("train") + "loss")
        pairs += [_total(phase.losses, device) if phase.losses else zero, torch.tensor(float(phase.count), device=device)]
        for key, vals in phase.extras.items():
            names.append(phase.prefix("train") + key)
            pairs += [torch.stack(vals).float().sum(), torch.tensor(float(len(vals)), device=device)]
    reduced = trainer.strategy.all_reduce(torch.stack(pairs)).tolist()
    return {n: reduced[2 * k] / reduced[2 * k + 1] for k, n in enumerate(names) if reduced[2 * k + 1]}


def _total(losses: list[Any], device: torch.device) -> torch.Tensor:
    """The sum of an interval's kept losses (floats, or detached tensors summed on their device)."""
    if isinstance(losses[0], torch.Tensor):
        return torch.stack(losses).float().sum()
    return torch.tensor(math.fsum(losses), dtype=torch.float32, device=device)


class ProgressTick(Callback):
    """Moves the progress bar after each step (registered only when there is a bar)."""

    def on_step_end(self, trainer: Any) -> None:
        trainer.log.tick(trainer.step)
