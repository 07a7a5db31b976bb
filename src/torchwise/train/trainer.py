"""The Trainer: a readable step loop with the catalog's training practices switched on.

The loop in :meth:`Trainer.fit` reads top to bottom: fetch a batch (timing the wait), check its
labels on the host and copy it to the device, then for each phase (one per optimizer; one in
most runs) forward and backward under the precision plug-in (``no_sync`` on non-final
micro-steps under DDP), and at the end of each accumulation window clip, check for non-finite
values, step, zero the gradients (``set_to_none``), step the scheduler; then log, checkpoint and
ask the plug-ins (EMA, early stopping, best checkpoint, user callbacks) whether to go on.
Everything else lives in small modules: ``strategy`` (single device / DDP), ``fsdp`` and ``dcp``
(FSDP2, sharded checkpoints), ``precision`` (32 / bf16-mixed / 16-mixed), ``phases`` (several
optimizers), ``schedule`` (scheduler interval),
``monitor``, ``early_stopping``, ``best``, ``ema``, ``loaders``, ``auto`` (channels_last,
cudnn.benchmark), ``checkpoints``, ``report``, ``oom``, ``guard``, ``options``.

Per step the loop does no host-device synchronisation except one scalar read for the
non-finite guard (free on the CPU; on CUDA, ``nonfinite_patience=0`` turns it off). Loss sums
stay on the device and are read once per log interval.
"""

from __future__ import annotations

import contextlib
import dataclasses
import gc
import math
import os
import random
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import torch
from torch import nn

from torchwise.utils.batch import TARGET_KEYS, batch_size_of, describe, forward_names, model_call
from torchwise.utils.device import select_device, to_device
from torchwise.core.errors import CheckpointError, DataError, UsageError
from torchwise.utils.labels import check_batch_labels, is_class_target, label_problem
from torchwise.utils.seed import get_rng_state, seed_everything, set_rng_state
from torchwise.core.task import RunPlan, build_optimizer, build_scheduler, wants
from torchwise.train import checkpoints as ckpt
from torchwise.train.auto import AutoSettings
from torchwise.train import interrupt
from torchwise.train.best import BestCheckpoint
from torchwise.train.early_stopping import EarlyStopping
from torchwise.train.ema import EMA
from torchwise.train.fsdp import apply_activation_checkpointing, find_blocks, make_strategy
from torchwise.train.guard import NonFiniteGuard
from torchwise.train.interrupt import InterruptCatcher
from torchwise.train.loaders import PreparedLoader, prepare_loader
from torchwise.train.lock import lock_folders
from torchwise.train.monitor import Monitor, lower_is_better
from torchwise.train.oom import OOM_ERRORS, OOMRecovery
from torchwise.train.options import check_options
from torchwise.train.phases import Phase, as_outputs, average_gradients, check_coverage, named, split_params
from torchwise.train.precision import Precision, make_precision, normalize
from torchwise.train.report import RunLog, _duration, _fmt
from torchwise.train.schedule import DECAY_LIMIT, decay_warning, first_epoch_decay, is_plateau, resolve_interval
from torchwise.train.strategy import SingleDevice

_TUNABLE_DEFAULTS = {"precision": "auto", "channels_last": "auto", "cudnn_benchmark": "auto", "compile": False}


@dataclass
class FitResult:
    """What :meth:`Trainer.fit` did: counts, speed, best validation values, last and best checkpoints."""

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
    A callback may set ``trainer.should_stop = True`` to end the run cleanly. ``watch``: True (or
    watch options) watches the fit with the doctor's checks sampled (``trainer.watch_report``).
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
        precision, channels_last, cudnn_benchmark, compile = self._apply_tuned(tuned, precision, channels_last, cudnn_benchmark, compile)
        self.precision_name = normalize(precision)  # validates early: unknown strings list the valid ones

        self.strategy: SingleDevice = make_strategy(strategy, select_device(device))  # "auto" | "ddp" | "fsdp" | object
        if deterministic and seed is None:
            seed = 0
        if seed is not None:
            seed_everything(seed + self.strategy.rank, deterministic=deterministic)
        self.seed = seed
        # the data order depends on this seed only (the same on every rank, stored in checkpoints)
        self.data_seed = seed if seed is not None else random.SystemRandom().randrange(2**31)

        self.model = model
        self.loss_fn = loss_fn
        self.step_fn = step_fn
        self.metrics = dict(metrics or {})
        self.accumulate = accumulate
        self.clip_grad_norm = float(clip_grad_norm) if clip_grad_norm is not None else None
        self.compile = bool(compile)
        self.deterministic = deterministic
        self.scheduler_interval = scheduler_interval
        self.monitor = Monitor(monitor, monitor_mode)
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.checkpoint_every = checkpoint_every
        self.keep_checkpoints = keep_checkpoints
        self.log_dir = Path("runs") / time.strftime("%Y%m%d-%H%M%S") if log_dir is None else (Path(log_dir) if log_dir else None)
        self.log_every = log_every
        self.progress = progress
        self.callbacks = list(callbacks)
        self.watch_report: Any = None
        if watch is not False and watch is not None:  # watched like any loop: torchwise.watch.callback
            from torchwise.watch.callback import WatchCallback

            self.callbacks.append(WatchCallback(watch))
        self.check_labels = check_labels
        self.auto = AutoSettings(self.strategy.configure_channels_last(channels_last), cudnn_benchmark, device_type=self.strategy.device.type,
                                 deterministic=deterministic, relayout_parameters=self.strategy.relayout_parameters)
        self.guard = NonFiniteGuard(patience=nonfinite_patience, enabled=nonfinite_patience > 0)
        self.oom = OOMRecovery(enabled=oom_recovery, rank=self.strategy.rank, world_size=self.strategy.world_size, folder=checkpoint_dir or None)
        self.precision: Precision = self._new_precision()
        self.activation_checkpointing = bool(activation_checkpointing)
        self.ema = EMA(ema) if ema is not None else None
        self.best_checkpoint = BestCheckpoint(self.monitor) if keep_best else None
        if early_stopping is not None:
            early_stopping.bind(self.monitor)
        self.plugins: list[Any] = [p for p in (self.ema, early_stopping, self.best_checkpoint) if p is not None]
        self.task: Any = None
        self.plan: RunPlan | None = None
        self.phases: list[Phase] = []
        self._specs = (named(optimizer, "optimizer"), named(scheduler, "scheduler") if scheduler is not None else {}, step_fn)
        self.strategy.configure_phases(list(self._specs[0]))  # (FSDP shards by submodule when there are several)
        self._wants_plan = any(wants(f, "plan") for f in (*self._specs[0].values(), *self._specs[1].values()))
        if not self._wants_plan:
            self._build(None)  # factories that need the run's plan are built when fit() knows it

        self.epoch = 0  # epochs completed
        self.step = 0  # optimizer steps taken (skipped ones included)
        self.batch_in_epoch = 0  # loader batches consumed in the current epoch
        self.best: dict[str, tuple[float, int]] = {}
        self.should_stop = False
        self.last_checkpoint: Path | None = None
        self.events: list[str] = []
        self._placed = False
        self._train_model: nn.Module | None = None
        self._inputs_as_is = False  # True once the "auto" settings are known to leave inputs alone
        self._average_phases = False
        self._labels_pending = check_labels and loss_fn is not None and step_fn is None
        self._label_width: int | None = None  # the output width once the first batch showed it
        self._labels_every_batch = True  # the host check before each copy (see _check_labels)
        self._batch_size: int | None = None
        self._saved_at: int | None = None
        self._last_train_loss: float | None = None
        self._to_device = False
        self._kept: Callable[[torch.Tensor], Any] = torch.Tensor.detach  # (see _place)
        self._last_batch: Any = None
        self._warned: set[str] = set()
        self.log = RunLog(None, progress=False, enabled=False)

    # ------------------------------------------------------------------ construction helpers

    @classmethod
    def from_task(cls, task: Any, **overrides: Any) -> "Trainer":
        """A Trainer for a :class:`torchwise.Task` (or a ``file.py:fn`` reference to one).

        The task supplies the model, optimizer(s), loss, step function, metrics, scheduler(s) and
        its interval, and the monitored metric. A keyword naming a Task field (``loss_fn``,
        ``metrics``, ``step_fn``, ``batch_size``, ``epochs``, ``scheduler``...) overrides the task's
        value; the others go to the Trainer. ``fit()`` then uses the task's loaders and epochs.
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
        return trainer

    def _apply_tuned(self, tuned: Any, precision: Any, channels_last: Any, cudnn_benchmark: Any, compile: Any) -> tuple[Any, Any, Any, Any]:
        """Settings from a tune.json for the options the caller left at their defaults."""
        self.tuned = None
        self.tuned_applied: dict[str, Any] = {}  # what the tuned configuration actually set
        given = {"precision": precision, "channels_last": channels_last, "cudnn_benchmark": cudnn_benchmark, "compile": compile}
        if tuned is not None:
            from torchwise.core.tuned import TunedConfig

            self.tuned = TunedConfig.load(tuned)
            for key, value in self.tuned.trainer_overrides().items():
                if given[key] == _TUNABLE_DEFAULTS[key]:  # the caller left it at its default
                    given[key] = self.tuned_applied[key] = value
            self.tuned_applied.update(self.tuned.loader_overrides())
            self.tuned_applied.update({k: getattr(self.tuned, k) for k in ("threads", "matmul_precision") if getattr(self.tuned, k)})
            self.tuned.apply_process_settings()
        return given["precision"], given["channels_last"], given["cudnn_benchmark"], given["compile"]

    def _build(self, plan: RunPlan | None) -> None:
        """Build the optimizers and schedulers (factories get ``model``/``plan`` when they ask) and the phases."""
        opt_specs, sched_specs, step_fn = self._specs
        optimizers = {n: build_optimizer(f, self.model, plan) for n, f in opt_specs.items()}
        check_coverage(self.model, optimizers)
        unknown = [n for n in sched_specs if n not in optimizers]
        if unknown:
            raise UsageError(
                f"scheduler(s) for {unknown} but the optimizers are {list(optimizers)}"
                + ("; with several optimizers pass scheduler={name: scheduler}" if "" in unknown else "")
            )
        parts = split_params(optimizers)
        self.phases = []
        for k, (name, opt) in enumerate(optimizers.items()):
            sched = build_scheduler(sched_specs.get(name), opt, plan)
            own, others = parts[name]
            self.phases.append(Phase(
                name, opt, step_fn[name] if isinstance(step_fn, Mapping) else step_fn,
                self.precision if k == 0 else self._new_precision(),
                sched, resolve_interval(sched, self.scheduler_interval) if sched is not None else "step",
                params=[p for p in own if p.requires_grad], others=others,
            ))
        if getattr(self, "_placed", False):  # built after the model was placed (factories that wait for the plan)
            self._adopt_optimizers()

    def _new_precision(self) -> Precision:
        """A precision plug-in for one optimizer, as the strategy runs it (FSDP: its policy, a sharded scaler)."""
        return self.strategy.configure_precision(make_precision(self.precision_name, self.strategy.device))

    def _adopt_optimizers(self) -> None:
        """Every optimizer follows the parameters the strategy's setup produced (FSDP replaces them)."""
        for phase in self.phases:
            self.strategy.adopt_optimizer(phase.optimizer)
        parts = split_params({p.name: p.optimizer for p in self.phases})
        for phase in self.phases:
            own, phase.others = parts[phase.name]
            phase.params = [p for p in own if p.requires_grad]

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

    # ------------------------------------------------------------------ the training loop

    def fit(self, train_loader: Iterable[Any] | None = None, val_loader: Iterable[Any] | None = None, epochs: int | None = None, max_steps: int | None = None, resume: Any = None) -> FitResult:
        """Train for ``epochs`` (default: the task's, else 1) or until ``max_steps`` optimizer steps.

        ``resume``: "last" (newest checkpoint in ``checkpoint_dir``; a fresh start, said in the
        log, when there is none) or a checkpoint path.
        """
        train_loader, val_loader, epochs = self._defaults(train_loader, val_loader, epochs, max_steps)
        self._place()
        locks = lock_folders([(self.checkpoint_dir, "checkpoint folder"), (self.log_dir, "log folder")] if self.strategy.is_main else [])  # reliability: one run per folder
        self._interrupt = InterruptCatcher(enabled=not self.strategy.distributed).install()  # reliability: checkpoint on SIGINT/SIGTERM
        try:
            self.log = RunLog(self.log_dir, progress=self.progress, enabled=self.strategy.is_main)
            state = self._read_resume(resume)
            train = self._prepare(train_loader, train=True)
            val = self._prepare(val_loader, train=False) if val_loader is not None else None
            n_batches = self._start(train, train_loader, epochs, max_steps, state)
            A, log_every, ckpt_every = self.accumulate, self.log_every, self.checkpoint_every or 0
            stop = max_steps is not None and self.step >= max_steps
            window = A
            pending: list[Any] = []  # earlier batches of this window (replayed after an OOM)

            while not stop and (epochs is None or self.epoch < epochs):
                for batch, last_of_epoch in self._batches(train, n_batches):
                    i = self.batch_in_epoch
                    self.batch_in_epoch = i + 1
                    window_start, window_end = i % A == 0, i % A == A - 1 or last_of_epoch
                    if window_start and A > 1:
                        window = A if n_batches is None else min(A, n_batches - i)  # a last partial window
                        pending.clear()
                    on_device = self._to_step(batch)  # labels checked on the host first
                    for phase in self.phases:  # one phase per optimizer (one in most runs)
                        loss = self._forward_backward(phase, on_device, pending, window, sync=window_end)
                        phase.window_loss = loss if window_start else phase.window_loss + loss
                        if window_end:
                            self._optimizer_step(phase, window, pending)
                    if not window_end:
                        pending.append(batch)
                        continue
                    self.step += 1
                    self.log.tick(self.step)
                    for fn in self._on_step:  # EMA, user callbacks
                        fn(self)
                    if self.step % log_every == 0:
                        self._log_interval()
                    if ckpt_every and self.step % ckpt_every == 0:
                        self.save_checkpoint()
                    if self._interrupt.requested:
                        interrupt.stop(self)  # saves a checkpoint, raises Interrupted
                    if self.should_stop or (max_steps is not None and self.step >= max_steps):
                        stop = True
                        if not last_of_epoch:
                            break  # (after the last batch of an epoch the epoch still ends below)
                else:
                    self._end_epoch(val)
                    stop = stop or self.should_stop
            return self._finish()
        except Exception as exc:  # a dead or silent peer: one line naming it, not a hang (strategy.translate_failure)
            failure = self.strategy.translate_failure(exc, self.last_checkpoint)
            if failure is None:
                raise
            self._event(str(failure))
            raise failure from None
        finally:
            self.auto.finish()
            self.log.close()
            self._interrupt.restore()  # reliability
            locks.release()  # reliability

    def _to_step(self, batch: Any) -> Any:
        """Check the batch's labels on the host (no device sync), then copy it to the device."""
        if self._label_width is not None and self._labels_every_batch:
            self._check_host_labels(batch)
        return to_device(batch, self.device, non_blocking=True) if self._to_device else batch

    def _forward_backward(self, phase: Phase, batch: Any, pending: list[Any], window: int, sync: bool) -> torch.Tensor | float:
        """Forward + backward of one batch for one phase; after an OOM, split smaller and redo the window."""
        try:
            return self._micro_step(phase, batch, 1.0 / window, sync)
        except OOM_ERRORS as exc:
            error: BaseException = exc
        except IndexError:  # a CE/NLL target out of range (see _check_labels): name the batch and values
            if self._label_width is not None:
                self._check_host_labels(batch)
            raise
        while True:  # recovering: free memory, cut batches smaller, recompute this window's gradients
            self._event(f"step {self.step + 1}: {self.oom.recover(error, batch, self.device, self.step + 1)}")  # (several processes: stops for a restart)
            phase.clear_grads()
            try:
                for earlier in pending:
                    self._micro_step(phase, to_device(earlier, self.device) if self._to_device else earlier, 1.0 / window, sync=False)
                return self._micro_step(phase, batch, 1.0 / window, sync)
            except OOM_ERRORS as exc:
                error = exc

    def _micro_step(self, phase: Phase, batch: Any, scale: float, sync: bool) -> torch.Tensor | float:
        """Forward and backward of one batch (in chunks after an OOM); returns its mean loss as kept (``_kept``)."""
        if self._train_model is None:
            self._first_batch(batch)
        if self.oom.splits > 1:
            return self._chunked_step(phase, batch, scale, sync)
        if phase.plain:  # float32, one optimizer, no gradient sync to put off: no context to enter
            loss = self._loss(phase, batch)
            (loss if scale == 1.0 else loss * scale).backward()
        else:
            with phase.own_gradients(), self.strategy.no_sync(self._train_model, skip_sync=not sync):
                with phase.precision.autocast():
                    loss = self._loss(phase, batch)
                phase.precision.backward(loss if scale == 1.0 else loss * scale)
        self._last_batch = batch
        return self._kept(loss)

    def _chunked_step(self, phase: Phase, batch: Any, scale: float, sync: bool) -> torch.Tensor | float:
        """After an OOM: the batch in ``oom.splits`` chunks, each weighted by its share."""
        chunks = self.oom.chunks(batch)
        total: torch.Tensor | float | None = None
        for k, (chunk, weight) in enumerate(chunks):
            with phase.own_gradients(), self.strategy.no_sync(self._train_model, skip_sync=not sync or k < len(chunks) - 1):
                with phase.precision.autocast():
                    loss = self._loss(phase, chunk)
                s = scale * weight
                phase.precision.backward(loss if s == 1.0 else loss * s)
            part = self._kept(loss) if weight == 1.0 else self._kept(loss) * weight
            total = part if total is None else total + part
        self._last_batch = batch
        return total  # type: ignore[return-value]

    def _loss(self, phase: Phase, batch: Any) -> torch.Tensor:
        if phase.step_fn is not None:
            loss, extras = as_outputs(phase.step_fn(self._train_model, batch), "step_fn")
            for key, value in extras.items():
                phase.extras.setdefault(key, []).append(value)
            return loss
        if type(batch) in _PAIRS and len(batch) >= 2 and type(batch[0]) is torch.Tensor:  # (inputs, targets, ...): the common case, no ABC checks
            targets = batch[1]
            output = self._train_model(batch[0] if self._inputs_as_is else self._input(batch[0]))
        else:
            args, kwargs, targets = model_call(batch, self._forward_names)
            output = self._train_model(self._input(args[0]), *args[1:], **kwargs) if args else self._train_model(**kwargs)
        if self._labels_pending:
            self._check_labels(output, targets)
        return self.loss_fn(output, targets)  # type: ignore[misc]

    def _input(self, inputs: Any) -> Any:
        """The model's first input as the "auto" settings want it (channels_last; shapes watched)."""
        if self.auto.watching:
            self.auto.observe(inputs)
        return self.auto.prepare_input(inputs)

    def _optimizer_step(self, phase: Phase, window: int, pending: list[Any]) -> None:
        """Clip, guard, step, zero the gradients, step the scheduler: the end of a phase's window."""
        norm = None
        if self._average_phases:
            average_gradients(phase.params, self.strategy.world_size)
        if self.clip_grad_norm is not None:
            phase.precision.unscale(phase.optimizer)
            norm = phase.grad_norm = self.strategy.clip_grad_norm(phase.params, self.clip_grad_norm)  # the pre-clip norm
        if self.guard.enabled and phase.precision.name != "16-mixed":  # fp16: the GradScaler handles inf gradients
            # a gradient can go bad while the loss stays finite; one scalar read per optimizer step
            if not self.strategy.step_is_finite(phase.window_loss, phase.params, norm):
                phase.clear_grads()
                where = f" (phase {phase.name!r})" if phase.name else ""
                self._event(self.guard.bad_step(self.step + 1, self.model, self._reruns(phase, pending)) + where)
                return
            if self.guard.consecutive:
                self.guard.consecutive = 0  # a good step ends a run of bad ones
        stepped = phase.precision.step(phase.optimizer)
        phase.clear_grads()
        if stepped and phase.scheduler is not None and phase.interval == "step":
            phase.scheduler.step()
        phase.losses.append(phase.window_loss)  # type: ignore[arg-type]  # as kept (_kept), summed once per log interval
        phase.count += window

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, loader: Iterable[Any], metrics: Mapping[str, Callable[..., torch.Tensor]] | None = None) -> dict[str, float]:
        """Mean loss and metrics over ``loader`` under ``inference_mode`` and ``model.eval()``.

        With ``ema`` on, the averaged weights are evaluated. Train mode is restored afterwards.
        Under DDP each process evaluates its shard and the sums are all-reduced, so every process
        returns the same numbers. With a custom ``step_fn`` its loss and other 0-d outputs are
        averaged; metrics get ``(output, target)`` from its ``"output"``/``"target"`` entries when
        it returns them, else from the default model call on the batch.
        """
        self._place()
        if not self.phases:
            raise UsageError("evaluate() needs the optimizers built: their factories ask for the run's plan, so call fit() first")
        metrics = self.metrics if metrics is None else dict(metrics)
        prepared = loader if isinstance(loader, PreparedLoader) else self._prepare(loader, train=False)
        model = self.model
        was_training = model.training
        model.eval()
        sums: dict[str, torch.Tensor] = {}
        count = 0
        try:
            with self._eval_weights(), torch.inference_mode():  # (swapped outside inference mode: sharded weights are DTensors)
                for batch in prepared.loader:
                    if self._to_device:
                        batch = to_device(batch, self.device, non_blocking=True)
                    with self.precision.autocast():
                        values, n = self._eval_batch(model, batch, metrics)
                    for name, value in values.items():
                        acc = sums.get(name)
                        sums[name] = value * n if acc is None else acc + value * n
                    count += n
        finally:
            model.train(was_training)
        if count == 0:
            raise DataError(f"the validation loader is empty ({describe(loader)}): it yields no batches")
        names = list(sums)
        packed = torch.stack([sums[k].float() for k in names] + [torch.tensor(float(count), device=self.device)])
        packed = self.strategy.all_reduce(packed).tolist()
        return {k: v / packed[-1] for k, v in zip(names, packed[:-1])}

    def _eval_weights(self) -> Any:
        return self.ema.swapped() if self.ema is not None and self.ema.params else contextlib.nullcontext()

    def _eval_batch(self, model: nn.Module, batch: Any, metrics: Mapping[str, Callable[..., torch.Tensor]]) -> tuple[dict[str, torch.Tensor], int]:
        out: dict[str, torch.Tensor] = {}
        pair: tuple[Any, Any] | None = None
        size = batch_size_of(batch) or 1
        for phase in self.phases if self.step_fn is not None else ():
            result = phase.step_fn(model, batch)  # type: ignore[misc]
            loss, extras = as_outputs(result, "step_fn")
            prefix = f"{phase.name}/" if phase.name else ""
            out[prefix + "loss"] = loss.detach().float()
            out.update({prefix + k: v.float() for k, v in extras.items()})
            if isinstance(result, Mapping) and "output" in result and "target" in result:
                pair = (result["output"], result["target"])
        if self.step_fn is None or (metrics and pair is None):
            args, kwargs, targets = model_call(batch, self._forward_names)
            if args:
                output = model(self.auto.prepare_input(args[0]), *args[1:], **kwargs)
            else:
                output = model(**kwargs)
            pair = (output, targets)
            size = batch_size_of(targets) or batch_size_of(args) or size
            if self.step_fn is None and self.loss_fn is not None:
                out["loss"] = self.loss_fn(output, targets).float()
        for name, fn in metrics.items():
            out[name] = torch.as_tensor(fn(*pair), device=self.device).float()  # type: ignore[misc]
        return out, size

    # ------------------------------------------------------------------ checkpoints

    def _state_dict(self, rng: Any) -> dict[str, Any]:
        """Everything a resumed run needs: one place, so strategies and plug-ins add to it here."""
        single = len(self.phases) == 1 and not self.phases[0].name

        def each(fn: Callable[[Phase], Any]) -> Any:  # one optimizer: plain entries; several: by name
            return fn(self.phases[0]) if single else {p.name: fn(p) for p in self.phases}

        return {
            "format": ckpt.FORMAT,
            "model": self.strategy.model_state_dict(self.model),
            "optimizer": each(lambda p: self.strategy.optimizer_state_dict(self.model, p.optimizer)),
            "scheduler": each(lambda p: p.scheduler.state_dict() if p.scheduler is not None else None),
            "precision": each(lambda p: p.precision.state_dict()),
            "plugins": {p.key: p.state_dict() for p in self.plugins},
            "rng": rng,
            "epoch": self.epoch,
            "step": self.step,
            "batch_in_epoch": self.batch_in_epoch,
            "batch_size": self._batch_size,
            "accumulate": self.accumulate,
            "data_seed": self.data_seed,
            "oom_splits": self.oom.splits,
            "best": {k: [v, e] for k, (v, e) in self.best.items()},
            "world_size": self.strategy.world_size,
            "plan": dataclasses.asdict(self.plan) if self.plan is not None else None,
        }

    def _load_state(self, state: dict[str, Any], path: Path) -> None:
        """Restore what :meth:`_state_dict` saved (the RNG last, in :meth:`_start`): the strategy loads the model."""
        plugins = {p.key: p.state_dict() for p in self.plugins}
        state = self.strategy.load_checkpoint(path, state, self.model, {p.name: p.optimizer for p in self.phases}, plugins=plugins)
        single = len(self.phases) == 1 and not self.phases[0].name
        for phase in self.phases:
            def part(key: str, phase: Phase = phase) -> Any:
                value = state.get(key)
                if single or value is None:
                    return value
                if not isinstance(value, Mapping) or phase.name not in value:
                    raise CheckpointError(f"{path} has no {key} state for optimizer {phase.name!r}: was it saved with other optimizers?")
                return value[phase.name]
            try:
                self.strategy.load_optimizer_state(self.model, phase.optimizer, part("optimizer"))
            except (ValueError, KeyError, RuntimeError, TypeError) as exc:
                raise CheckpointError(f"the optimizer state in {path} does not fit this optimizer ({exc}); was it saved with another optimizer or parameter grouping?") from exc
            if phase.scheduler is not None and part("scheduler") is not None:
                phase.scheduler.load_state_dict(part("scheduler"))
            phase.precision.load_state_dict(part("precision") or {})
        saved_plugins = state.get("plugins") or {}
        for plugin in self.plugins:
            if plugin.key in saved_plugins:
                plugin.load_state_dict(saved_plugins[plugin.key])
        self.epoch, self.step, self.batch_in_epoch = int(state["epoch"]), int(state["step"]), int(state["batch_in_epoch"])
        note = self.oom.resume(int(state.get("oom_splits", 1)))  # (more after a rank ran out of memory: see oom.py)
        if note:
            self._event(note)
        self.best = {k: (float(v[0]), int(v[1])) for k, v in (state.get("best") or {}).items()}
        if state.get("accumulate", self.accumulate) != self.accumulate:
            self._event(f"note: the checkpoint used accumulate={state['accumulate']}, this run {self.accumulate}")
        planned = (state.get("plan") or {}).get("total_steps")
        if self._wants_plan and self.plan is not None and planned is not None and planned != self.plan.total_steps:
            self._event(f"note: the checkpoint's run planned {planned} optimizer steps, this run {self.plan.total_steps}: the optimizer "
                        f"and scheduler factories that take the plan were built for this run's, so the schedule continues from step "
                        f"{self.step} on the new plan (resume with the same epochs/batch size/accumulate to keep the old one)")
        self.last_checkpoint = path
        self._saved_at = self.step

    def save_checkpoint(self, path: str | Path | None = None) -> Path | None:
        """Write ``checkpoint_dir/step-NNNNNNNN.pt`` (or ``path``; rank 0; every rank must call it under DDP).

        Under FSDP every rank writes its shards into a folder ``step-NNNNNNNN.dcp`` (``path``: ``<stem>.dcp``).
        """
        if self.checkpoint_dir is None and path is None:
            return None
        rng = self.strategy.gather_object(get_rng_state())  # one entry per rank
        written = None
        rolling = path is None
        if self.strategy.is_main or self.strategy.sharded_checkpoints:  # sharded: every rank writes its part
            target = self.strategy.checkpoint_path(self.checkpoint_dir, self.step) if rolling else self.strategy.named_checkpoint_path(Path(path))  # type: ignore[arg-type]
            written = self.strategy.save_checkpoint(self._state_dict(rng), target)
            if rolling and self.strategy.is_main:
                ckpt.prune(self.checkpoint_dir, self.keep_checkpoints)  # type: ignore[arg-type]
        self.strategy.barrier()
        if rolling:
            self.last_checkpoint = written
            self._saved_at = self.step
        return written

    def _read_resume(self, resume: Any) -> tuple[dict[str, Any], Path] | None:
        """Read the checkpoint to resume from (its data seed applies before the loaders are built)."""
        if resume is None and self.checkpoint_dir is not None and int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0:
            resume = "last"  # torchrun restarted the group after a failure: go on from the last checkpoint (resume=False: don't)
        path, note = ckpt.resolve_resume(resume, self.checkpoint_dir)
        if note:
            self._event(note)
        if path is None:
            return None
        state = self.strategy.read_checkpoint(path)  # (FSDP: the shards load later, into the built optimizers)
        self.data_seed = int(state.get("data_seed", self.data_seed))
        return state, path

    # ------------------------------------------------------------------ set-up and bookkeeping

    def _defaults(self, train_loader: Any, val_loader: Any, epochs: int | None, max_steps: int | None) -> tuple[Any, Any, int | None]:
        for name, value in (("epochs", epochs), ("max_steps", max_steps)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise UsageError(f"{name} must be a positive integer or None, got {value!r}")
        if train_loader is None:
            if self.task is None:
                raise UsageError("fit() needs a train_loader (or a Trainer made with Trainer.from_task)")
            train_loader = self.task.train_loader()
            if val_loader is None:
                val_loader = self.task.val_loader()
        if epochs is None and max_steps is None:
            epochs = self.task.epochs if self.task is not None else 1
        return train_loader, val_loader, epochs

    def _place(self) -> None:
        """Put the model on its device (DDP process group included); idempotent."""
        if self._placed:
            return
        if self.activation_checkpointing:  # before sharding, so FSDP's hooks stay outside the recomputed forward
            blocks = find_blocks(self.model, getattr(self.strategy, "block", None))  # FSDP's own choice of blocks, if given
            self._event(f"activation checkpointing on {apply_activation_checkpointing(blocks)} blocks")
        self.model = self.strategy.setup(self.model)
        self._adopt_optimizers()  # FSDP replaced the parameters: every optimizer follows (none yet: done in _build)
        self._to_device = self.device.type != "cpu"
        # a step's loss as the guard and the log keep it: a float where reading it is free (the CPU,
        # one process: no detached tensor made), else a detached tensor (read once per log interval)
        self._kept = torch.Tensor.item if self.strategy.host_reads_free else torch.Tensor.detach
        self._forward_names = forward_names(self.model)
        if self.ema is not None:
            self.ema.attach(self.model)
        self._placed = True

    def _prepare(self, loader: Any, train: bool) -> PreparedLoader:
        overrides = self.tuned.loader_overrides() if self.tuned else {}
        if not train:
            overrides = {k: v for k, v in overrides.items() if k != "batch_size"}
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            return prepare_loader(
                loader, train=train, device=self.device, seed=self.data_seed, num_replicas=self.strategy.world_size,
                rank=self.strategy.rank, local_world=int(os.environ.get("LOCAL_WORLD_SIZE", 1)), overrides=overrides,
            )

    def _start(self, train: PreparedLoader, train_loader: Any, epochs: int | None, max_steps: int | None, resumed: tuple[dict[str, Any], Path] | None) -> int | None:
        """Plan the run, build what waited for the plan, restore a checkpoint, say what will happen."""
        n_batches = len(train) if train.has_len else None
        if n_batches == 0:
            raise DataError(f"the training loader is empty ({describe(train_loader)}): it yields no batches; check the dataset length, batch_size and drop_last")
        self.plan = RunPlan.build(n_batches, epochs=epochs, accumulate=self.accumulate, max_steps=max_steps,
                                  batch_size=train.batch_size or getattr(train_loader, "batch_size", None), world_size=self.strategy.world_size)
        if not self.phases:
            self._build(self.plan)
        if resumed is not None:
            self._load_state(*resumed)
        else:
            note = self.oom.start_fresh()  # (a restarted group that had no checkpoint yet still takes a rank's split count)
            if note:
                self._event(note)
            self._check_schedules(self.plan)
        total = self.plan.total_steps
        self.should_stop = False  # (a new fit() after an early stop trains again)
        self._on_step = [p.on_step_end for p in self.plugins if hasattr(p, "on_step_end")]
        self._on_step += [cb.on_step_end for cb in self.callbacks if hasattr(cb, "on_step_end")]
        self._wait = 0.0
        self._micro = 0  # micro-batches in this log interval
        self._fit_samples = 0
        self._fit_start = self._interval_start = time.perf_counter()
        self._interval_step = self.step
        self._last_val: dict[str, float] = {}
        self.log.start(total, self.step)
        self._say(
            f"training on {self.device} ({self.strategy.world_size} process{'es' if self.strategy.world_size > 1 else ''}), "
            f"precision {self.precision.name}, accumulate {self.accumulate}"
            + (f", {total} steps" if total else "")
            + (f", from step {self.step} (epoch {self.epoch + 1}, batch {self.batch_in_epoch})" if resumed else "")
        )
        for m in self._monitors():
            self._say(f"monitoring {m.name}: {'lower' if m.mode == 'min' else 'higher'} is better"
                      + (" (from its name; monitor_mode= sets it)" if m.from_name else ""))
        if self.tuned is not None:
            settings = ", ".join(f"{k}={v}" for k, v in self.tuned_applied.items())
            self._say(f"tuned settings applied: {settings or 'none (every tuned setting was chosen explicitly by the caller)'}")
        self._callback("on_fit_start")
        if resumed is not None:  # restored last, so nothing between here and the first step draws from them
            rng = resumed[0]["rng"]
            set_rng_state(rng[min(self.strategy.rank, len(rng) - 1)] if isinstance(rng, list) else rng)
        return n_batches

    def _monitors(self) -> list[Monitor]:
        """The metrics something acts on: early stopping's, and the Trainer's for best.pt and ReduceLROnPlateau."""
        found = [p.monitor for p in self.plugins if isinstance(p, EarlyStopping) and p.monitor is not None]
        if (self.best_checkpoint is not None and self.checkpoint_dir is not None) or any(is_plateau(p.scheduler) for p in self.phases):
            found.append(self.monitor)
        return [m for i, m in enumerate(found) if (m.name, m.mode) not in {(o.name, o.mode) for o in found[:i]}]

    def _check_schedules(self, plan: RunPlan) -> None:
        """Say it when a scheduler would cut the learning rate more than 1000x within the first epoch."""
        for phase in self.phases:
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
                self._event(message)

    def _batches(self, train: PreparedLoader, n_batches: int | None) -> Iterator[tuple[Any, bool]]:
        """``(batch, is_last_of_epoch)`` for the rest of this epoch, timing the loader wait."""
        self._batch_size = train.batch_size or self._batch_size
        it = train.epoch_iter(self.epoch, self.batch_in_epoch)
        clock = time.perf_counter
        i = self.batch_in_epoch
        if n_batches is not None:
            while True:
                t = clock()
                batch = next(it, _END)
                self._wait += clock() - t
                if batch is _END:
                    return
                i += 1
                self._micro += 1
                yield batch, i >= n_batches
        else:  # unknown length: look one batch ahead to know which is last
            t = clock()
            batch = next(it, _END)
            self._wait += clock() - t
            if batch is _END and self.batch_in_epoch == 0:
                raise DataError("the training loader is empty: it yielded no batches in this epoch")
            while batch is not _END:
                t = clock()
                upcoming = next(it, _END)
                self._wait += clock() - t
                self._micro += 1
                yield batch, upcoming is _END
                batch = upcoming

    def _first_batch(self, batch: Any) -> None:
        """Decide the "auto" settings from the first inputs, then wrap (DDP) and compile."""
        inputs = None
        if self.step_fn is None:
            args, _, _ = model_call(batch, self._forward_names)
            inputs = args[0] if args else None
        self.auto.start(self.model, inputs)
        self._inputs_as_is = not (self.auto.watching or self.auto.channels_last)  # (observe() only switches things off)
        if self.tuned is not None:
            self.tuned.check_fits(self.model, inputs)  # reliability: warn when tuned for another model
        for note in ("channels_last", "cudnn_benchmark"):
            if getattr(self.auto, note):
                self._event(f"{note.replace('_', '.') if note == 'cudnn_benchmark' else note} on (4-D convolutional inputs)")
        if len(self.phases) > 1:  # several optimizers: no DDP wrapper (the phases average their gradients); FSDP: units per submodule
            model, self._average_phases = self.strategy.wrap_phases(self.model)
        else:
            model = self.strategy.wrap(self.model)
        if self.compile:
            model = _CompileOnce(model, self._event)
        self._train_model = model
        for phase in self.phases:
            phase.plain = not phase.others and phase.precision.plain and not self.strategy.defers_sync

    def _check_labels(self, output: torch.Tensor, targets: Any) -> None:
        """The first batch: labels against the output's width (from then on, on the host, see _check_host_labels)."""
        self._labels_pending = False
        if isinstance(output, torch.Tensor) and isinstance(targets, torch.Tensor):
            problem = label_problem(output.detach(), targets)
            if problem:
                raise DataError(f"label check before the first step: {problem}")
            if is_class_target(output, targets):
                self._label_width = int(output.shape[1] if output.dim() >= 2 else output.shape[0])
                # Batches used where they are (no device copy) by a loss that range-checks its targets
                # itself before any gradient exists (CE/NLL on the CPU: "IndexError: Target 7 is out
                # of bounds") need no second pass per step: the check runs when that error comes
                # (_forward_backward) to name the batch and values. Elsewhere it runs before each copy.
                self._labels_every_batch = self._to_device or not _checks_label_range(self.loss_fn)

    def _check_host_labels(self, batch: Any) -> None:
        """Every later batch: class labels in [0, width) checked on the CPU before the copy (no device sync)."""
        if type(batch) in _PAIRS and len(batch) >= 2:
            targets = batch[1]
        elif isinstance(batch, Mapping):
            targets = next((batch[k] for k in TARGET_KEYS if k in batch), None)
        else:
            return
        if isinstance(targets, torch.Tensor) and targets.is_cpu:
            problem = check_batch_labels(targets, self._label_width)  # type: ignore[arg-type]
            if problem:
                raise DataError(f"batch {self.batch_in_epoch} of epoch {self.epoch + 1} (before step {self.step + 1}): {problem}")

    def _reruns(self, phase: Phase, pending: list[Any]) -> list[Callable[[], Any]]:
        """Forward+loss closures over the window's batches, for naming the first bad module."""
        batches = [to_device(b, self.device) if self._to_device else b for b in pending] + [self._last_batch]

        def make(b: Any) -> Callable[[], Any]:
            def run() -> Any:
                with phase.precision.autocast():
                    if phase.step_fn is not None:
                        return as_outputs(phase.step_fn(self.model, b), "step_fn")[0]
                    args, kwargs, targets = model_call(b, self._forward_names)
                    output = self.model(self.auto.prepare_input(args[0]), *args[1:], **kwargs) if args else self.model(**kwargs)
                    return self.loss_fn(output, targets)  # type: ignore[misc]

            return run

        return [make(b) for b in batches]

    def _log_interval(self) -> None:
        """Sync the accumulated values once and report them."""
        now = time.perf_counter()
        elapsed = max(now - self._interval_start, 1e-9)
        steps = self.step - self._interval_step
        if steps <= 0:
            return
        names: list[str] = []
        pairs: list[torch.Tensor] = []  # (sum, count) per logged value, reduced across processes at once
        zero = torch.zeros((), device=self.device)
        for phase in self.phases:
            names.append(phase.prefix("train") + "loss")
            pairs += [_total(phase.losses, self.device) if phase.losses else zero, torch.tensor(float(phase.count), device=self.device)]
            for key, vals in phase.extras.items():
                names.append(phase.prefix("train") + key)
                pairs += [torch.stack(vals).float().sum(), torch.tensor(float(len(vals)), device=self.device)]
        reduced = self.strategy.all_reduce(torch.stack(pairs)).tolist()
        values: dict[str, float] = {n: reduced[2 * k] / reduced[2 * k + 1] for k, n in enumerate(names) if reduced[2 * k + 1]}
        losses = [values[p.prefix("train") + "loss"] for p in self.phases if p.prefix("train") + "loss" in values]
        if losses:
            values["train/loss"] = self._last_train_loss = sum(losses)  # several optimizers: the sum of their losses
        for phase in self.phases:
            values[phase.prefix("train") + "lr"] = float(phase.optimizer.param_groups[0]["lr"])
            if phase.grad_norm is not None:
                values[phase.prefix("train") + "grad_norm"] = float(phase.grad_norm)
        values["train/steps_per_s"] = steps / elapsed
        samples = self._interval_samples()
        values["train/samples_per_s"] = samples * self.strategy.world_size / elapsed
        values["train/loader_wait"] = min(1.0, self._wait / elapsed)
        if self.precision.name == "16-mixed":
            values["train/amp_skipped"] = float(sum(p.precision.skipped for p in self.phases))
        if self.guard.skipped:
            values["train/nonfinite_skipped"] = float(self.guard.skipped)
        self.log.log(self.step, self.epoch + 1, values, line=self.progress)
        self._callback("on_log", values)
        self._fit_samples += samples
        for phase in self.phases:
            phase.losses, phase.extras, phase.count = [], {}, 0
        self._wait, self._micro = 0.0, 0
        self._interval_start, self._interval_step = time.perf_counter(), self.step

    def _interval_samples(self) -> int:
        """Samples in this interval: micro-batches times the batch size (a smaller last batch counts full)."""
        if not self._micro:
            return 0
        size = self._batch_size or batch_size_of(self._last_batch)
        return self._micro * size

    def _unlogged(self) -> bool:
        return any(p.count or p.extras for p in self.phases)

    def _end_epoch(self, val: PreparedLoader | None) -> None:
        """Validate, step the epoch schedulers, run the plug-ins (early stopping, best checkpoint), checkpoint."""
        if self._unlogged():
            self._log_interval()
        self.epoch += 1
        self.batch_in_epoch = 0
        values: dict[str, float] = {}
        if val is not None:
            t = time.perf_counter()
            values = {f"val/{k}": v for k, v in self.evaluate(val).items()}
            self._interval_start += time.perf_counter() - t  # evaluation time is not training time
            self._last_val = values
            for name, value in values.items():
                old = self.best.get(name)
                if old is None or (value < old[0] if lower_is_better(name) else value > old[0]):
                    self.best[name] = (value, self.epoch)
            self.log.log(self.step, self.epoch, values, line=self.progress)
        monitored = dict(values)
        if self._last_train_loss is not None:
            monitored.setdefault("train/loss", self._last_train_loss)
        for phase in self.phases:
            if phase.scheduler is not None and phase.interval == "epoch":
                self._epoch_scheduler_step(phase, monitored)
        for plugin in self.plugins:
            if hasattr(plugin, "on_epoch_end"):
                plugin.on_epoch_end(self, monitored)  # (before the checkpoint, so it holds their state)
        if self.checkpoint_dir is not None:
            self.save_checkpoint()
        self._callback("on_epoch_end", values)

    def _epoch_scheduler_step(self, phase: Phase, monitored: dict[str, float]) -> None:
        if not is_plateau(phase.scheduler):
            phase.scheduler.step()
            return
        value = self.monitor.value(monitored)
        if value is None:
            self._warn_once("plateau", f"warning: ReduceLROnPlateau did not step: the monitored metric {self.monitor.name!r} was not logged "
                                       f"(logged: {', '.join(sorted(monitored)) or 'nothing'}); set monitor= to one of them")
            return
        if getattr(phase.scheduler, "mode", self.monitor.mode) != self.monitor.mode:
            self._warn_once("plateau-mode", f"warning: ReduceLROnPlateau has mode={phase.scheduler.mode!r} but the monitored "
                                            f"{self.monitor.key(monitored)!r} is better when {'lower' if self.monitor.mode == 'min' else 'higher'}")
        phase.scheduler.step(value)

    def _finish(self) -> FitResult:
        if self._unlogged():
            self._log_interval()
        if self.checkpoint_dir is not None and self._saved_at != self.step:
            self.save_checkpoint()
        self._fit_samples += self._interval_samples()
        seconds = time.perf_counter() - self._fit_start
        samples = self._fit_samples * self.strategy.world_size
        best_path = self.best_checkpoint.path if self.best_checkpoint is not None else None
        result = FitResult(
            steps=self.step, epochs=self.epoch, seconds=seconds, samples=samples, samples_per_s=samples / max(seconds, 1e-9),
            train_loss=self._last_train_loss, val=dict(self._last_val), best=dict(self.best), checkpoint=self.last_checkpoint,
            precision=self.precision.name, amp_skipped=sum(p.precision.skipped for p in self.phases), nonfinite_skipped=self.guard.skipped,
            oom_splits=self.oom.splits, events=list(self.events), best_checkpoint=best_path, stopped_early=self.should_stop,
        )
        lines = [("time", _duration(seconds) + f" ({seconds:.1f} s)"), ("steps", f"{result.steps} ({result.epochs} epochs)"),
                 ("samples/s", _fmt(result.samples_per_s)), ("device", f"{self.device}, precision {self.precision.name}")]
        lines += [(f"best {k}", f"{_fmt(v)} (epoch {e})") for k, (v, e) in self.best.items()]
        if result.amp_skipped:
            lines.append(("amp skipped steps", str(result.amp_skipped)))
        if result.nonfinite_skipped:
            lines.append(("non-finite skipped", str(result.nonfinite_skipped)))
        if result.oom_splits > 1:
            lines.append(("oom micro-batches", f"{result.oom_splits} per batch"))
        if result.stopped_early:
            lines.append(("stopped early", f"after epoch {self.epoch}"))
        lines.append(("checkpoint", str(self.last_checkpoint) if self.last_checkpoint else "none (no checkpoint_dir)"))
        if best_path is not None:
            lines.append(("best checkpoint", f"{best_path} ({self.best_checkpoint.monitor.name} {_fmt(self.best_checkpoint.best)}, epoch {self.best_checkpoint.epoch})"))  # type: ignore[union-attr]
        if self.log.csv_path:
            lines.append(("metrics", str(self.log.csv_path)))
        if self.progress:
            self.log.summary(lines)
        self._callback("on_fit_end", result)
        return result

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

    def _callback(self, name: str, *args: Any) -> None:
        for cb in self.callbacks:
            fn = getattr(cb, name, None)
            if fn is not None:
                fn(self, *args)

    def close(self) -> None:
        """Drop the DDP wrapper and release the process group if this Trainer created it."""
        self._train_model = None  # the DDP reducer must go before its process group
        gc.collect()
        self.strategy.teardown()


class _CompileOnce(nn.Module):
    """``torch.compile`` with a fallback: if the first compiled call fails, warn once and run eagerly."""

    def __init__(self, model: nn.Module, report: Callable[[str], None]) -> None:
        super().__init__()
        self.eager = model
        self.report = report
        try:
            self.compiled: Any = torch.compile(model)
        except Exception as exc:
            self._fail(exc)
        self.verified = False

    def _fail(self, exc: BaseException) -> None:
        first = (str(exc).strip().splitlines() or [""])[0][:200]
        self.report(f"warning: torch.compile failed ({type(exc).__name__}: {first}); running eagerly")
        self.compiled = None

    def no_sync(self) -> Any:
        return self.eager.no_sync()  # type: ignore[operator]

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if self.compiled is None:
            return self.eager(*args, **kwargs)
        if self.verified:
            return self.compiled(*args, **kwargs)
        try:
            out = self.compiled(*args, **kwargs)
        except Exception as exc:  # compilation errors surface at the first call
            self._fail(exc)
            return self.eager(*args, **kwargs)
        self.verified = True
        return out


_END = object()
_PAIRS = (tuple, list)
# losses whose CPU kernels reject an out-of-range class index before any gradient exists
_RANGE_CHECKING_LOSSES = (nn.CrossEntropyLoss, nn.NLLLoss)


def _total(losses: list[Any], device: torch.device) -> torch.Tensor:
    """The sum of an interval's kept losses (floats, or detached tensors summed on their device)."""
    if isinstance(losses[0], torch.Tensor):
        return torch.stack(losses).float().sum()
    return torch.tensor(math.fsum(losses), dtype=torch.float32, device=device)


def _checks_label_range(loss_fn: Any) -> bool:
    return isinstance(loss_fn, _RANGE_CHECKING_LOSSES) or loss_fn in (nn.functional.cross_entropy, nn.functional.nll_loss)


def _default_optimizer(params: list[nn.Parameter]) -> torch.optim.Optimizer:
    """A Task without an optimizer trains with AdamW, lr 1e-3."""
    return torch.optim.AdamW(params, lr=1e-3)
