"""What a fit returns (:class:`FitResult`) and the summary it prints at the end."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from torchwise.train.report import _duration, _fmt


@dataclass
class FitResult:
    """What :meth:`Trainer.fit` did: counts, speed, best validation values, last and best checkpoints.

    ``steps`` and ``epochs`` count the whole run (a resumed run's earlier steps included);
    ``steps_run`` the optimizer steps this call took; ``seconds`` and ``samples`` are this call's.
    """

    steps: int
    epochs: int
    seconds: float
    samples: int
    samples_per_s: float
    train_loss: float | None
    val: dict[str, float] = field(default_factory=dict)
    best: dict[str, tuple[float, int]] = field(default_factory=dict)
    checkpoint: Path | None = None
    precision: str = "32"
    amp_skipped: int = 0
    nonfinite_skipped: int = 0
    oom_splits: int = 1
    events: list[str] = field(default_factory=list)
    best_checkpoint: Path | None = None
    stopped_early: bool = False
    steps_run: int = 0
    run_id: str | None = None
    log_dir: Path | None = None


def plural(n: int, word: str) -> str:
    """``1 epoch``, ``2 epochs``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def steps_done(result: FitResult) -> str:
    """``30 steps (3 epochs)``, or after a resume ``12 steps this run, 30 in all (3 epochs)``."""
    if result.steps_run == result.steps:
        return f"{plural(result.steps, 'step')} ({plural(result.epochs, 'epoch')})"
    return f"{plural(result.steps_run, 'step')} this run, {result.steps} in all ({plural(result.epochs, 'epoch')})"


def finish(trainer: Any) -> FitResult:
    """End a fit: the last interval logged, a last checkpoint, the result, the summary, ``on_fit_end``."""
    from torchwise.train.callbacks import Hooks
    from torchwise.train.checkpointing import save_unsaved

    meter = trainer.meter
    if meter.unlogged(trainer):
        meter.flush(trainer)
    save_unsaved(trainer)
    meter.fit_samples += meter.samples(trainer)
    result = result_of(trainer, meter)
    if trainer.progress:
        trainer.log.summary(summary(trainer, result))
    Hooks.run(trainer.hooks.fit_end, trainer, result)
    return result


def result_of(trainer: Any, meter: Any) -> FitResult:
    """The :class:`FitResult` of the fit that just ended."""
    seconds = time.perf_counter() - meter.fit_start
    samples = meter.fit_samples * trainer.strategy.world_size
    best = trainer.best_checkpoint
    return FitResult(
        steps=trainer.step, epochs=trainer.epoch, seconds=seconds, samples=samples, samples_per_s=samples / max(seconds, 1e-9),
        train_loss=meter.train_loss, val=dict(trainer.last_val), best=dict(trainer.best), checkpoint=trainer.last_checkpoint,
        precision=trainer.precision.name, amp_skipped=sum(p.precision.skipped for p in trainer.phases), nonfinite_skipped=trainer.guard.skipped,
        oom_splits=trainer.oom.splits, events=list(trainer.events), best_checkpoint=best.path if best is not None else None,
        stopped_early=trainer.should_stop, steps_run=trainer.step - meter.start_step, run_id=trainer.run_id, log_dir=trainer.log_dir,
    )


def summary(trainer: Any, result: FitResult) -> list[tuple[str, str]]:
    """The end-of-run summary as ``(name, value)`` lines."""
    lines = [("time", _duration(result.seconds) + f" ({result.seconds:.1f} s)"), ("steps", steps_done(result)),
             ("samples/s", _fmt(result.samples_per_s)), ("device", f"{trainer.device}, precision {result.precision}")]
    lines += [(f"best {k}", f"{_fmt(v)} (epoch {e})") for k, (v, e) in result.best.items()]
    if result.amp_skipped:
        lines.append(("amp skipped steps", str(result.amp_skipped)))
    if result.nonfinite_skipped:
        lines.append(("non-finite skipped", str(result.nonfinite_skipped)))
    if result.oom_splits > 1:
        lines.append(("oom micro-batches", f"{result.oom_splits} per batch"))
    if result.stopped_early:
        lines.append(("stopped early", f"after epoch {result.epochs}"))
    lines.append(("checkpoint", str(result.checkpoint) if result.checkpoint else "none (no checkpoint_dir)"))
    best = trainer.best_checkpoint
    if result.best_checkpoint is not None:
        followed = best.followed or best.monitor.name
        lines.append(("best checkpoint", f"{result.best_checkpoint} ({followed} {_fmt(best.best)}, epoch {best.epoch})"))
    if trainer.log.csv_path:
        lines.append(("metrics", str(trainer.log.csv_path)))
    if result.run_id and result.log_dir is not None:
        lines.append(("run", f"{result.log_dir} (id {result.run_id})"))
    return lines
