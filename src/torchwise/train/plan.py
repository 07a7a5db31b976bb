"""Plan and start a fit: build the optimizers and phases, plan the run, restore a checkpoint, say what will happen.

Optimizer and scheduler factories that declare ``plan`` are built here once the run's
:class:`~torchwise.core.task.RunPlan` is known (optimizer steps per epoch and in total, from the
loader's length, epochs, ``max_steps``, accumulation and the number of processes); the others are
built with the Trainer. A restored checkpoint's counters and states apply before the first batch,
its RNG states last, so nothing drawn in between shifts them.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Mapping

from torchwise.utils.batch import describe
from torchwise.core.errors import DataError, UsageError
from torchwise.utils.seed import set_rng_state
from torchwise.core.task import RunPlan, build_optimizer, build_scheduler
from torchwise.train.batches import prepare
from torchwise.train.callbacks import Hooks
from torchwise.train.checkpointing import read_resume
from torchwise.train.early_stopping import EarlyStopping
from torchwise.train.loaders import PreparedLoader
from torchwise.train.monitor import Monitor, describe_followed, refuse_unproducible
from torchwise.train.phases import Phase, check_coverage, split_params
from torchwise.train.precision import Precision, make_precision
from torchwise.train.report import RunLog
from torchwise.train.schedule import DECAY_LIMIT, decay_warning, first_epoch_decay, is_plateau, resolve_interval
from torchwise.train.state import load_state


def new_precision(trainer: Any) -> Precision:
    """A precision plug-in for one optimizer, as the strategy runs it (FSDP: its policy, a sharded scaler)."""
    return trainer.strategy.configure_precision(make_precision(trainer.precision_name, trainer.strategy.device))  # type: ignore[no-any-return]


def build_phases(trainer: Any, plan: RunPlan | None) -> None:
    """Build the optimizers and schedulers (factories get ``model``/``plan`` when they ask) and the phases."""
    opt_specs, sched_specs, step_fn = trainer._specs
    optimizers = {n: build_optimizer(f, trainer.model, plan) for n, f in opt_specs.items()}
    check_coverage(trainer.model, optimizers)
    unknown = [n for n in sched_specs if n not in optimizers]
    if unknown:
        raise UsageError(
            f"scheduler(s) for {unknown} but the optimizers are {list(optimizers)}"
            + ("; with several optimizers pass scheduler={name: scheduler}" if "" in unknown else "")
        )
    parts = split_params(optimizers)
    trainer.phases = []
    for k, (name, opt) in enumerate(optimizers.items()):
        sched = build_scheduler(sched_specs.get(name), opt, plan)
        own, others = parts[name]
        trainer.phases.append(Phase(
            name, opt, step_fn[name] if isinstance(step_fn, Mapping) else step_fn,
            trainer.precision if k == 0 else new_precision(trainer),
            sched, resolve_interval(sched, trainer.scheduler_interval) if sched is not None else "step",
            params=[p for p in own if p.requires_grad], others=others,
        ))
    if trainer._placed:  # built after the model was placed (factories that wait for the plan)
        adopt_optimizers(trainer)


def adopt_optimizers(trainer: Any) -> None:
    """Every optimizer follows the parameters the strategy's setup produced (FSDP replaces them)."""
    for phase in trainer.phases:
        trainer.strategy.adopt_optimizer(phase.optimizer)
    parts = split_params({p.name: p.optimizer for p in trainer.phases})
    for phase in trainer.phases:
        own, phase.others = parts[phase.name]
        phase.params = [p for p in own if p.requires_grad]


def open_fit(trainer: Any, train_loader: Any, val_loader: Any, epochs: int | None, max_steps: int | None, resume: Any,
             catcher: Any) -> tuple[PreparedLoader, PreparedLoader | None, int | None]:
    """Start a fit: the log, the checkpoint to resume, the loaders, the plan, the hooks; say what will happen."""
    trainer.log = RunLog(trainer.log_dir, progress=trainer.progress, enabled=trainer.strategy.is_main)
    if trainer._run_note:
        trainer._event(trainer._run_note)
    resumed = read_resume(trainer, resume)
    train = prepare(trainer, train_loader, train=True)
    val = prepare(trainer, val_loader, train=False) if val_loader is not None else None
    n_batches = start(trainer, train, train_loader, epochs, max_steps, resumed, has_val=val is not None)
    trainer.log.run_id = trainer.run_id
    trainer.meter.start(trainer.step)
    trainer.last_val = {}
    trainer.hooks = trainer._hooks(catcher)
    trainer.log.start(trainer.plan.total_steps, trainer.step)
    announce(trainer, resumed is not None, has_val=val is not None)
    Hooks.run(trainer.hooks.fit_start, trainer)
    restore_rng(trainer, resumed)  # last: nothing between here and the first step draws from it
    return train, val, n_batches


def start(trainer: Any, train: PreparedLoader, train_loader: Any, epochs: int | None, max_steps: int | None,
          resumed: tuple[dict[str, Any], Path] | None, has_val: bool) -> int | None:
    """Plan the run, build what waited for the plan, restore a checkpoint; returns the batches per epoch (None: unknown)."""
    n_batches = len(train) if train.has_len else None
    if n_batches == 0:
        raise DataError(f"the training loader is empty ({describe(train_loader)}): it yields no batches; check the dataset length, batch_size and drop_last")
    trainer.plan = RunPlan.build(n_batches, epochs=epochs, accumulate=trainer.accumulate, max_steps=max_steps,
                                 batch_size=train.batch_size or getattr(train_loader, "batch_size", None), world_size=trainer.strategy.world_size)
    if not trainer.phases:
        build_phases(trainer, trainer.plan)
    for monitor in monitors(trainer):
        refuse_unproducible(monitor, has_val)
    if resumed is not None:
        load_state(trainer, *resumed)
    else:
        note = trainer.oom.start_fresh()  # (a restarted group that had no checkpoint yet still takes a rank's split count)
        if note:
            trainer._event(note)
        check_schedules(trainer, trainer.plan)
    trainer.should_stop = False  # (a new fit() after an early stop trains again)
    return n_batches


def announce(trainer: Any, resumed: bool, has_val: bool) -> None:
    """Say what will happen: device, precision, steps, where a resumed run continues, what is monitored."""
    total, s = trainer.plan.total_steps, trainer.strategy
    trainer._say(
        f"training on {trainer.device} ({s.world_size} process{'es' if s.world_size > 1 else ''}), "
        f"precision {trainer.precision.name}, accumulate {trainer.accumulate}"
        + (f", {total} steps" if total else "")
        + (f", from step {trainer.step} (epoch {trainer.epoch + 1}, batch {trainer.batch_in_epoch})" if resumed else "")
    )
    for m in monitors(trainer):
        trainer._say(describe_followed(m, has_val, [p.name for p in trainer.phases]))
    if trainer.tuned is not None:
        settings = ", ".join(f"{k}={v}" for k, v in trainer.tuned_applied.items())
        trainer._say(f"tuned settings applied: {settings or 'none (every tuned setting was chosen explicitly by the caller)'}")


def restore_rng(trainer: Any, resumed: tuple[dict[str, Any], Path] | None) -> None:
    """The checkpoint's RNG state for this rank, restored last, so nothing before the first step draws from it."""
    if resumed is not None:
        rng = resumed[0]["rng"]
        set_rng_state(rng[min(trainer.strategy.rank, len(rng) - 1)] if isinstance(rng, list) else rng)


def monitors(trainer: Any) -> list[Monitor]:
    """The metrics something acts on: early stopping's, and the Trainer's for best.pt and ReduceLROnPlateau."""
    found = [p.monitor for p in trainer.plugins if isinstance(p, EarlyStopping) and p.monitor is not None]
    if (trainer.best_checkpoint is not None and trainer.checkpoint_dir is not None) or any(is_plateau(p.scheduler) for p in trainer.phases):
        found.append(trainer.monitor)
    return [m for i, m in enumerate(found) if (m.name, m.mode) not in {(o.name, o.mode) for o in found[:i]}]


def check_schedules(trainer: Any, plan: RunPlan) -> None:
    """Say it when a scheduler would cut the learning rate more than 1000x within the first epoch."""
    for phase in trainer.phases:
        if phase.scheduler is None or phase.interval != "step":
            continue
        steps = plan.steps_per_epoch
        if steps is None or plan.total_steps is None:
            steps = plan.total_steps
        elif plan.total_steps <= steps:
            steps = plan.total_steps // 2  # a one-epoch run may anneal to its floor at the end
        ratio = first_epoch_decay(phase.optimizer, phase.scheduler, steps or 0)
        if ratio is not None and ratio > DECAY_LIMIT:
            message = decay_warning(phase.name, phase.scheduler, phase.interval, ratio, steps or 0)
            warnings.warn(message, stacklevel=4)
            trainer._event(message)


def check_monitored(trainer: Any, values: Mapping[str, float]) -> None:
    """Warn once when a metric something acts on was not logged at an epoch's end."""
    for monitor in monitors(trainer):
        if monitor.key(values) not in values:
            trainer._warn_once(f"monitor:{monitor.name}", f"warning: the monitored metric {monitor.name!r} was not logged at the end of "
                               f"epoch {trainer.epoch} (logged: {', '.join(sorted(values)) or 'nothing'}): nothing follows it; set monitor= to one of these")
