"""``torchwise.tune``: measure which speed settings help *this* model on *this* machine.

``torchwise.tune(task, budget_s=120)`` times the training step of the task's model (a copy of it)
under candidate settings — threads, precision, channels_last, cudnn.benchmark, TF32, torch.compile,
the batch size that fits (CUDA) and DataLoader workers — keeps the fastest that leaves the loss
where fp32 puts it, and returns a :class:`TuneResult` whose ``config`` is the ``tune.json`` the
Trainer applies (``Trainer(..., tuned="tune.json")``).

    result = torchwise.tune("examples/digits.py:task", budget_s=60, out="tune.json")
    print(result.summary())
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Callable, Iterable

from typing import TYPE_CHECKING

from torchwise.core.callable_module import make_callable
from torchwise.core.errors import TorchwiseError, UsageError
from torchwise.core.tuned import TunedConfig, check_output_path, describe_model

if TYPE_CHECKING:  # pragma: no cover
    from torchwise.tune.report import TuneResult

__all__ = ["tune", "TuneResult", "TunedConfig"]


def __getattr__(name: str) -> Any:
    # TuneResult's module needs torch: imported on first use, so `torchwise tune --help` stays light
    if name == "TuneResult":
        from torchwise.tune.report import TuneResult

        return TuneResult
    raise AttributeError(f"module 'torchwise.tune' has no attribute {name!r}")


def tune(
    task: Any,
    budget_s: float = 120,
    *,
    device: Any = "auto",
    out: "str | Path | None" = None,
    knobs: "Iterable[str] | str | None" = None,
    plot: "str | Path | None" = None,
    seed: int = 0,
    loss_rtol: float = 0.05,
    min_gain: float = 0.03,
    trial_s: float | None = None,
    max_batch_size: int | None = None,
    progress: Callable[[str], None] | None = None,
    measure: Callable[..., Any] | None = None,
    context: Any = None,
    clock: Callable[[], float] | None = None,
) -> TuneResult:
    """Measure candidate settings for ``task`` within ``budget_s`` seconds and pick the fastest.

    ``task``: a :class:`torchwise.Task` or a ``"file.py:function"`` reference. ``device``: "auto",
    "cpu", "cuda[:N]". ``out``: write ``tune.json`` there. ``knobs``: measure only these (names
    of ``torchwise.tune.knobs.KNOB_NAMES``). ``plot``: write the speed-up bar chart (PNG).
    ``loss_rtol``: how far the loss after a few steps may move from the fp32 baseline.
    ``min_gain``: the least relative speed-up that counts. ``trial_s``: timed seconds per trial
    (default: budget/15, between 0.2 and 10). ``measure``/``context``/``clock`` replace the real
    measurer, the hardware facts and the clock (for tests).
    """
    import torch

    from torchwise.core.task import load_task
    from torchwise.tune.context import Context, resolve_device
    from torchwise.tune.measure import TaskMeasurer
    from torchwise.tune.report import TuneResult, make_meta, tuned_config
    from torchwise.tune.search import Search

    if isinstance(budget_s, bool) or not isinstance(budget_s, (int, float)) or not budget_s > 0:
        raise UsageError(f"budget_s must be a positive number of seconds, got {budget_s!r}")
    if not 0 <= loss_rtol:
        raise UsageError(f"loss_rtol must be >= 0, got {loss_rtol!r}")
    if max_batch_size is not None and max_batch_size < 1:
        raise UsageError(f"max_batch_size must be >= 1, got {max_batch_size!r}")
    from torchwise.tune.knobs import select_knobs

    select_knobs(knobs)  # an unknown knob name fails before anything is loaded
    check_output_path(out, "out")  # so is an output that could not be written after the whole budget
    check_output_path(plot, "plot")
    clock = clock or time.perf_counter
    started = clock()
    task = load_task(task)
    dev = resolve_device(device)
    owned = measure is None
    measurer = TaskMeasurer(task, dev, seed=seed) if owned else measure
    try:
        if context is None:
            sample = measurer.sample_batches() if isinstance(measurer, TaskMeasurer) else [task.get_example_batch()]
            context = Context.from_task(task, dev, sample, max_batch_size)
        search = Search(
            context,
            measurer,
            budget_s=float(budget_s),
            knobs=knobs,
            clock=clock,
            loss_rtol=loss_rtol,
            min_gain=min_gain,
            trial_s=trial_s,
            progress=progress,
            started_at=started,
        )
        found = search.run()
    finally:
        if owned:
            measurer.release()
    device_text = context.describe()
    meta = make_meta(found, device=device_text, task=task.name)
    meta["model"] = describe_model(task.model, _example_inputs(task))  # compared when the file is applied
    result = TuneResult(
        config=tuned_config(found, meta),
        trials=found.trials,
        skipped=found.skipped,
        speedup=found.speedup,
        default_samples_per_s=found.default_samples_per_s,
        tuned_samples_per_s=found.tuned_samples_per_s,
        basis=found.basis,
        elapsed_s=found.elapsed_s,
        budget_s=found.budget_s,
        device=device_text,
        task=task.name,
        pairs=found.pairs,
        extra={"default_threads": context.threads, "default_batch_size": context.batch_size, "torch": torch.__version__},
    )
    if out is not None:
        result.save(out)
    if plot is not None:
        result.plot(plot)
    return result


def _example_inputs(task: Any) -> Any:
    """The inputs of the task's example batch, or None when there is none to be had."""
    from torchwise.utils.batch import split_batch

    try:
        return split_batch(task.get_example_batch())[0]
    except TorchwiseError:  # no batch, or one the Task convention cannot split: the shape is not recorded
        return None


make_callable(__name__, "tune")
