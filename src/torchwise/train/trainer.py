"""The Trainer: a readable step loop with the catalog's training practices switched on.

:meth:`Trainer.fit` reads top to bottom: epochs, the epoch's batches (:mod:`.batches`), for each
batch its phases (one per optimizer; one in most runs) -- forward and backward, and at the end of
an accumulation window the optimizer step (:mod:`.stepper`) -- then the step-end hooks (the
schedulers, EMA, your callbacks, the log interval, rolling checkpoints, interrupts), and at the
end of each epoch validation and the epoch-end hooks (early stopping, the best checkpoint, a
checkpoint). Everything else is a component with a narrow interface:

* :mod:`.callbacks` -- the plug-in surface every optional part goes through;
* :mod:`.plan` -- building the optimizers and phases, planning the run, restoring a checkpoint;
* :mod:`.state` / :mod:`.checkpointing` -- the run's state in a checkpoint, when checkpoints are
  written and where a resumed run comes from; :mod:`.runs` -- one folder per run, run ids;
* :mod:`.evaluation`, :mod:`.intervals` (the log interval), :mod:`.result` (result and summary);
* :mod:`.strategy` / :mod:`.fsdp` (where the model runs), :mod:`.precision`, :mod:`.phases`.

Per step the loop does no host-device synchronisation except one scalar read for the non-finite
guard (free on the CPU; on CUDA, ``nonfinite_patience=0`` turns it off). Loss sums stay on the
device and are read once per log interval.
"""

from __future__ import annotations

import dataclasses
import gc
import random
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

import torch
from torch import nn

from torchwise.utils.device import select_device
from torchwise.core.errors import UsageError
from torchwise.utils.seed import seed_everything
from torchwise.core.task import RunPlan, wants
from torchwise.train import evaluation, plan, runs
from torchwise.train.auto import AutoSettings
from torchwise.train.batches import epoch_batches, fit_loaders, prepare
from torchwise.train.best import BestCheckpoint
from torchwise.train.callbacks import Hooks, stateful
from torchwise.train.checkpointing import CheckpointEvery, EpochCheckpoint, save, wanted
from torchwise.train.early_stopping import EarlyStopping
from torchwise.train.ema import EMA
from torchwise.train.fsdp import apply_activation_checkpointing, find_blocks, make_strategy
from torchwise.train.guard import NonFiniteGuard
from torchwise.train.intervals import IntervalLog, ProgressTick
from torchwise.train.interrupt import InterruptCatcher
from torchwise.train.loaders import PreparedLoader
from torchwise.train.monitor import Monitor
from torchwise.train.oom import OOMRecovery
from torchwise.train.options import apply_tuned, check_options
from torchwise.train.phases import Phase, named
from torchwise.train.precision import Precision, normalize
from torchwise.train.report import RunLog
from torchwise.train.result import FitResult, finish
from torchwise.train.schedule import epoch_schedulers, step_schedulers
from torchwise.train.stepper import Steps
from torchwise.train.strategy import SingleDevice

__all__ = ["Trainer", "FitResult"]


class Trainer:
    """Train ``model`` with ``optimizer`` on batches ``(inputs, targets)`` (or dicts, or ``step_fn``).

    >>> trainer = Trainer(model, torch.optim.AdamW(model.parameters()), nn.CrossEntropyLoss())
    >>> result = trainer.fit(train_loader, val_loader, epochs=3)

    Defaults apply the catalog: precision "auto" (bf16/fp16 autocast on CUDA, fp32 on the CPU),
    channels_last and cudnn.benchmark "auto", DDP when started by torchrun, labels checked on
    every batch, a non-finite guard, OOM recovery, atomic checkpoints with exact resume.

    ``optimizer``: an Optimizer, a factory ``fn(params[, model][, plan])``, or a dict of those
    (several optimizers; ``step_fn`` then a dict with the same names). ``scheduler``: a scheduler,
    a factory ``fn(optimizer[, plan])`` or a dict by optimizer name; ``scheduler_interval`` None
    decides by its class (see :mod:`torchwise.train.schedule`). ``monitor``/``monitor_mode``: the
    metric followed by ReduceLROnPlateau, ``early_stopping`` and the best checkpoint (``keep_best``).
    ``ema``: a decay such as 0.999 to evaluate and checkpoint a moving average of the weights.
    ``tuned`` (a tune.json path or TunedConfig) supplies settings the caller left at their defaults.
    ``log_dir`` None: a new ``runs/NAME/version_N`` per run (see :mod:`torchwise.train.runs`).
    ``callbacks``: objects with hooks (:mod:`torchwise.train.callbacks`); a callback may set
    ``trainer.should_stop = True`` to end the run cleanly. ``watch``: True (or watch options)
    watches the fit with the doctor's checks sampled (``trainer.watch_report``), a callback too.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: Any,
        loss_fn: Callable[..., torch.Tensor] | None = None,
        *,
        precision: str = "auto",
        accumulate: int = 1,
        clip_grad_norm: float | None = None,
        compile: bool = False,
        channels_last: bool | str = "auto",
        cudnn_benchmark: bool | str = "auto",
        device: str | torch.device = "auto",
        seed: int | None = None,
        deterministic: bool = False,
        scheduler: Any = None,
        scheduler_interval: str | None = None,
        monitor: str = "val/loss",
        monitor_mode: str | None = None,
        early_stopping: EarlyStopping | None = None,
        ema: float | None = None,
        keep_best: bool = True,
        checkpoint_dir: str | Path | None = None,
        checkpoint_every: int | None = None,
        keep_checkpoints: int = 3,
        log_dir: str | Path | None | bool = None,
        log_every: int = 50,
        progress: bool = True,
        callbacks: Sequence[Any] = (),
        step_fn: Any = None,
        metrics: Mapping[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] | None = None,
        tuned: Any = None,
        nonfinite_patience: int = 5,
        check_labels: bool = True,
        oom_recovery: bool = True,
        strategy: Any = "auto",
        activation_checkpointing: bool = False,
        watch: Any = False,
    ) -> None:
        check_options(locals())  # every option checked up front: one line naming it and what is expected
        precision, channels_last, cudnn_benchmark, compile = apply_tuned(self, tuned, precision, channels_last, cudnn_benchmark, compile)
        self.precision_name = normalize(precision)  # validates early: unknown strings list the valid ones
        self.strategy: SingleDevice = make_strategy(strategy, select_device(device))  # "auto" | "ddp" | "fsdp" | object
        self._seed(seed, deterministic)
        self.model, self.loss_fn, self.step_fn, self.metrics = model, loss_fn, step_fn, dict(metrics or {})
        self.accumulate, self.compile, self.deterministic = accumulate, bool(compile), deterministic
        self.clip_grad_norm = float(clip_grad_norm) if clip_grad_norm is not None else None
        self.scheduler_interval, self.monitor = scheduler_interval, Monitor(monitor, monitor_mode)
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.checkpoint_every, self.keep_checkpoints, self.activation_checkpointing = checkpoint_every, keep_checkpoints, bool(activation_checkpointing)
        self.log_dir = Path("runs") / "trainer" / runs.VERSION if log_dir is None else (Path(log_dir) if log_dir else None)
        self.log_every, self.progress, self.callbacks, self.check_labels = log_every, progress, list(callbacks), check_labels
        self.auto = AutoSettings(self.strategy.configure_channels_last(channels_last), cudnn_benchmark, device_type=self.strategy.device.type,
                                 deterministic=deterministic, relayout_parameters=self.strategy.relayout_parameters)
        self.guard = NonFiniteGuard(patience=nonfinite_patience, enabled=nonfinite_patience > 0)
        self.oom = OOMRecovery(enabled=oom_recovery, rank=self.strategy.rank, world_size=self.strategy.world_size, folder=checkpoint_dir or None)
        self.precision: Precision = plan.new_precision(self)
        self._plugins(ema, keep_best, early_stopping, watch)
        self._optimizers(optimizer, scheduler, step_fn)
        self._start_state(check_labels)

    def _plugins(self, ema: float | None, keep_best: bool, early_stopping: EarlyStopping | None, watch: Any) -> None:
        """The Trainer's own checkpointed plug-ins (EMA, early stopping, the best checkpoint) and the watcher."""
        self.watch_report: Any = None
        if watch is not False and watch is not None:  # a callback like any other (after the user's)
            from torchwise.watch.callback import WatchCallback

            self.callbacks.append(WatchCallback(watch))
        self.ema = EMA(ema) if ema is not None else None
        self.best_checkpoint = BestCheckpoint(self.monitor) if keep_best else None
        if early_stopping is not None:
            early_stopping.bind(self.monitor)
        self.plugins: list[Any] = [p for p in (self.ema, early_stopping, self.best_checkpoint) if p is not None]

    def _optimizers(self, optimizer: Any, scheduler: Any, step_fn: Any) -> None:
        """The optimizers and schedulers by name, built now unless a factory waits for the run's plan."""
        self.task: Any = None
        self.plan: RunPlan | None = None
        self.phases: list[Phase] = []
        self._specs = (named(optimizer, "optimizer"), named(scheduler, "scheduler") if scheduler is not None else {}, step_fn)
        self.strategy.configure_phases(list(self._specs[0]))  # (FSDP shards by submodule when there are several)
        self._wants_plan = any(wants(f, "plan") for f in (*self._specs[0].values(), *self._specs[1].values()))
        self._placed = False
        if not self._wants_plan:
            plan.build_phases(self, None)  # factories that need the run's plan are built when fit() knows it

    def _seed(self, seed: int | None, deterministic: bool) -> None:
        if deterministic and seed is None:
            seed = 0
        if seed is not None:
            seed_everything(seed + self.strategy.rank, deterministic=deterministic)
        self.seed = seed
        # the data order depends on this seed only (the same on every rank, stored in checkpoints)
        self.data_seed = seed if seed is not None else random.SystemRandom().randrange(2**31)

    def _start_state(self, check_labels: bool) -> None:
        """The run's counters and the components that keep per-fit state."""
        self.epoch = 0  # epochs completed
        self.step = 0  # optimizer steps taken (skipped ones included)
        self.batch_in_epoch = 0  # loader batches consumed in the current epoch
        self.best: dict[str, tuple[float, int]] = {}
        self.should_stop = False
        self.last_checkpoint: Path | None = None
        self.last_val: dict[str, float] = {}
        self.events: list[str] = []
        self.run_id: str | None = None
        self.steps = Steps(self, self.loss_fn, self.clip_grad_norm, check_labels)
        self.meter = IntervalLog(self.log_every)
        self.hooks = Hooks(())
        self.log = RunLog(None, progress=False, enabled=False)
        self._saved_at: int | None = None
        self._warned: set[str] = set()
        self._own_folders: set[str] = set()  # folders this Trainer's run already uses (not "another run")

    @classmethod
    def from_task(cls, task: Any, **overrides: Any) -> "Trainer":
        """A Trainer for a :class:`torchwise.Task` (or a ``file.py:fn`` reference to one).

        The task supplies the model, optimizer(s), loss, step function, metrics, scheduler(s) and
        its interval, and the monitored metric. A keyword naming a Task field (``loss_fn``,
        ``metrics``, ``step_fn``, ``batch_size``, ``epochs``, ``scheduler``...) overrides the task's
        value; the others go to the Trainer. ``fit()`` then uses the task's loaders and epochs, and
        the default log folder is ``runs/TASK_NAME/version_N``.
        """
        from torchwise.core.task import Task, load_task

        task = load_task(task)
        changes = {k: overrides.pop(k) for k in list(overrides) if k in Task.field_names()}
        if changes:
            task = dataclasses.replace(task, **changes)
        kwargs = dict(scheduler=task.scheduler, scheduler_interval=task.scheduler_interval, monitor=task.monitor,
                      monitor_mode=task.monitor_mode, step_fn=task.step_fn, metrics=task.metrics)
        kwargs.update(overrides)
        optimizer = task.optimizer if task.optimizer is not None else _default_optimizer
        trainer = cls(task.model, optimizer, task.loss_fn, **kwargs)
        trainer.task = task
        if kwargs.get("log_dir") is None:
            trainer.log_dir = Path("runs") / task.name / runs.VERSION
        return trainer

    # ------------------------------------------------------------------ what the Trainer holds

    @property
    def optimizer(self) -> Any:
        """The optimizer (a dict by name with several; None before fit() when its factory needs the plan)."""
        if not self.phases:
            return None
        return self.phases[0].optimizer if len(self.phases) == 1 else {p.name: p.optimizer for p in self.phases}

    @property
    def scheduler(self) -> Any:
        """The scheduler (a dict by optimizer name with several optimizers), or None."""
        if len(self.phases) == 1:
            return self.phases[0].scheduler
        return {p.name: p.scheduler for p in self.phases if p.scheduler is not None} or None

    @property
    def device(self) -> torch.device:
        return self.strategy.device

    @property
    def module(self) -> nn.Module:
        """The plain model (no DDP or compile wrapper): what checkpoints and evaluation use."""
        return self.model

    @property
    def stateful(self) -> list[Any]:
        """The plug-ins and callbacks whose state is checkpointed (see :func:`.callbacks.stateful`)."""
        return stateful([*self.plugins, *self.callbacks])

    # ------------------------------------------------------------------ the training loop

    def fit(self, train_loader: Iterable[Any] | None = None, val_loader: Iterable[Any] | None = None, epochs: int | None = None,
            max_steps: int | None = None, resume: Any = None) -> FitResult:
        """Train for ``epochs`` (default: the task's, else 1) or until ``max_steps`` optimizer steps.

        ``resume``: "last" (the newest checkpoint of this run's checkpoint folder; a fresh start,
        said in the log, when there is none), a checkpoint path, or False (not even after a
        restart by torchrun).
        """
        train_loader, val_loader, epochs = fit_loaders(self, train_loader, val_loader, epochs, max_steps)
        self._place()
        resume = wanted(resume, self.checkpoint_dir)
        locks = runs.claim(self, resuming=resume is not None and resume is not False)  # one run per folder, locked
        catcher = InterruptCatcher(enabled=not self.strategy.distributed).install()  # reliability: checkpoint on SIGINT/SIGTERM
        try:
            train, val, n_batches = plan.open_fit(self, train_loader, val_loader, epochs, max_steps, resume, catcher)
            steps, phases, step_end = self.steps, self.phases, self.hooks.step_end
            stop = max_steps is not None and self.step >= max_steps
            while not stop and (epochs is None or self.epoch < epochs):
                for batch, window_end, last_of_epoch in epoch_batches(self, train, n_batches):
                    on_device = steps.to_device(batch)  # labels checked on the host first
                    for phase in phases:  # one phase per optimizer (one in most runs)
                        steps.forward_backward(phase, on_device, window_end)  # (gradients synced on a window's last batch)
                        if window_end:
                            steps.optimizer_step(phase)  # clip, guard, step, zero the gradients
                    if not window_end:
                        steps.pending.append(batch)  # (replayed after an out-of-memory error)
                        continue
                    self.step += 1
                    for hook in step_end:  # schedulers, EMA, callbacks, the log interval, checkpoints, interrupts
                        hook(self)
                    if self.should_stop or (max_steps is not None and self.step >= max_steps):
                        stop = True
                        if not last_of_epoch:
                            break  # (after the last batch of an epoch the epoch still ends below)
                else:
                    self._end_epoch(val)
                    stop = stop or self.should_stop
            return finish(self)
        except Exception as exc:  # a dead or silent peer: one line naming it, not a hang (strategy.translate_failure)
            failure = self.strategy.translate_failure(exc, self.last_checkpoint)
            if failure is None:
                raise
            self._event(str(failure))
            raise failure from None
        finally:
            self.auto.finish()
            self.log.close()
            catcher.restore()  # reliability
            locks.release()  # reliability

    def _hooks(self, catcher: InterruptCatcher) -> Hooks:
        """This fit's callbacks in order: the Trainer's plug-ins, the user's, then the run's bookkeeping."""
        plugins = [step_schedulers(self.phases), epoch_schedulers(self.phases, self.monitor), *self.plugins]
        bookkeeping = [self.meter]
        if self.checkpoint_dir is not None:
            bookkeeping += [CheckpointEvery(self.checkpoint_every) if self.checkpoint_every else None, EpochCheckpoint()]
        bookkeeping += [catcher if catcher.installed else None, ProgressTick() if self.log.bar_wanted else None]
        stateful([*self.plugins, *self.callbacks])  # (refuses two stateful callbacks with one key, before any step)
        return Hooks([*plugins, *self.callbacks, *bookkeeping])

    def _end_epoch(self, val: PreparedLoader | None) -> None:
        """Validate, then the epoch-end hooks (schedulers, early stopping, best checkpoint, callbacks, checkpoint)."""
        if self.meter.unlogged(self):
            self.meter.flush(self)
        self.epoch += 1
        self.batch_in_epoch = 0
        values = evaluation.validate(self, val) if val is not None else {}
        if self.meter.train_loss is not None:
            values.setdefault("train/loss", self.meter.train_loss)
        plan.check_monitored(self, values)
        Hooks.run(self.hooks.epoch_end, self, values)

    # ------------------------------------------------------------------ evaluation, checkpoints, set-up

    def evaluate(self, loader: Iterable[Any], metrics: Mapping[str, Callable[..., torch.Tensor]] | None = None) -> dict[str, float]:
        """Mean loss and metrics over ``loader`` under ``inference_mode`` and ``model.eval()``.

        With ``ema`` on, the averaged weights are evaluated. Train mode is restored afterwards.
        Under DDP each process evaluates its shard and the sums are all-reduced, so every process
        returns the same numbers (see :mod:`torchwise.train.evaluation`).
        """
        self._place()
        if not self.phases:
            raise UsageError("evaluate() needs the optimizers built: their factories ask for the run's plan, so call fit() first")
        prepared = loader if isinstance(loader, PreparedLoader) else prepare(self, loader, train=False)
        return evaluation.evaluate(self, prepared, loader, self.metrics if metrics is None else dict(metrics))

    def save_checkpoint(self, path: str | Path | None = None) -> Path | None:
        """Write ``checkpoint_dir/step-NNNNNNNN.pt`` (or ``path``; rank 0; every rank must call it under DDP).

        Under FSDP every rank writes its shards into a folder ``step-NNNNNNNN.dcp`` (``path``: ``<stem>.dcp``).
        """
        return save(self, path)

    def _place(self) -> None:
        """Put the model on its device (DDP process group included); idempotent."""
        if self._placed:
            return
        if self.activation_checkpointing:  # before sharding, so FSDP's hooks stay outside the recomputed forward
            blocks = find_blocks(self.model, getattr(self.strategy, "block", None))  # FSDP's own choice of blocks, if given
            self._event(f"activation checkpointing on {apply_activation_checkpointing(blocks)} blocks")
        self.model = self.strategy.setup(self.model)
        plan.adopt_optimizers(self)  # FSDP replaced the parameters: every optimizer follows (none yet: done when built)
        self.steps.place(self.model)
        if self.ema is not None:
            self.ema.attach(self.model)
        self._placed = True

    def _prepare(self, loader: Any, train: bool) -> PreparedLoader:
        return prepare(self, loader, train)

    # ------------------------------------------------------------------ saying things

    def _say(self, message: str) -> None:
        if self.progress:
            self.log.info(message)

    def _event(self, message: str) -> None:
        self.events.append(message)
        self.log.info(message)

    def _warn_once(self, key: str, message: str) -> None:
        if key not in self._warned:
            self._warned.add(key)
            self._event(message)

    def close(self) -> None:
        """Drop the DDP wrapper and release the process group if this Trainer created it."""
        self.steps.model = None  # the DDP reducer must go before its process group
        gc.collect()
        self.strategy.teardown()


def _default_optimizer(params: list[nn.Parameter]) -> torch.optim.Optimizer:
    """A Task without an optimizer trains with AdamW, lr 1e-3."""
    return torch.optim.AdamW(params, lr=1e-3)
