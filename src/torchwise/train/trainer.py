"""The Trainer: a readable step loop with the catalog's training practices switched on.

The loop in :meth:`Trainer.fit` reads top to bottom: fetch a batch (timing the wait), forward and
backward under the precision plug-in (``no_sync`` on non-final micro-steps under DDP), and at the
end of each accumulation window clip, check for non-finite values, step, zero the gradients
(``set_to_none``), step the scheduler, log, checkpoint. Everything else lives in small modules:
``strategy`` (single device / DDP), ``precision`` (32 / bf16-mixed / 16-mixed), ``loaders``,
``auto`` (channels_last, cudnn.benchmark), ``checkpoints``, ``report``, ``oom``, ``guard``.

Per step the loop does no host-device synchronisation except one scalar read for the
non-finite guard (free on the CPU; on CUDA, ``nonfinite_patience=0`` turns it off). Loss sums
stay on the device and are read once per log interval.
"""

from __future__ import annotations

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

from torchwise.batch import batch_size_of, describe, split_batch
from torchwise.device import select_device, to_device
from torchwise.errors import DataError, UsageError
from torchwise.labels import label_problem
from torchwise.seed import get_rng_state, seed_everything, set_rng_state
from torchwise.train import checkpoints as ckpt
from torchwise.train.auto import AutoSettings
from torchwise.train.guard import NonFiniteGuard
from torchwise.train.loaders import PreparedLoader, prepare_loader
from torchwise.train.oom import OOM_ERRORS, OOMRecovery
from torchwise.train.precision import Precision, make_precision, normalize
from torchwise.train.report import RunLog, _duration, _fmt
from torchwise.train.fsdp import apply_activation_checkpointing, find_blocks, make_strategy
from torchwise.train.strategy import SingleDevice

_LOWER_IS_BETTER = ("loss", "error", "err", "mae", "mse", "rmse", "perplexity", "ppl")
_TUNABLE_DEFAULTS = {"precision": "auto", "channels_last": "auto", "cudnn_benchmark": "auto", "compile": False}


@dataclass
class FitResult:
    """What :meth:`Trainer.fit` did: counts, speed, best validation values, last checkpoint."""

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


class Trainer:
    """Train ``model`` with ``optimizer`` on batches ``(inputs, targets)`` (or dicts, or ``step_fn``).

    >>> trainer = Trainer(model, torch.optim.AdamW(model.parameters()), nn.CrossEntropyLoss())
    >>> result = trainer.fit(train_loader, val_loader, epochs=3)

    Defaults apply the catalog: precision "auto" (bf16/fp16 autocast on CUDA, fp32 on the CPU),
    channels_last and cudnn.benchmark "auto", DDP when started by torchrun, labels checked before
    the first step, a non-finite guard, OOM recovery, atomic checkpoints with exact resume.
    ``tuned`` (a tune.json path or TunedConfig) supplies settings the caller left at their defaults.
    """

    def __init__(
        self,
        model: nn.Module,
        optimizer: torch.optim.Optimizer,
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
        scheduler_interval: str = "step",
        checkpoint_dir: str | Path | None = None,
        checkpoint_every: int | None = None,
        keep_checkpoints: int = 3,
        log_dir: str | Path | None | bool = None,
        log_every: int = 50,
        progress: bool = True,
        callbacks: Sequence[Any] = (),
        step_fn: Callable[[nn.Module, Any], torch.Tensor] | None = None,
        metrics: Mapping[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] | None = None,
        tuned: Any = None,
        nonfinite_patience: int = 5,
        check_labels: bool = True,
        oom_recovery: bool = True,
        strategy: Any = "auto",
        activation_checkpointing: bool = False,
    ) -> None:
        if not isinstance(model, nn.Module):
            raise UsageError(f"model must be a torch.nn.Module, got {type(model).__name__}")
        if not isinstance(optimizer, torch.optim.Optimizer):
            raise UsageError(f"optimizer must be a torch.optim.Optimizer built over the model's parameters, got {type(optimizer).__name__}")
        _check_optimizer_holds(model, optimizer)
        if loss_fn is None and step_fn is None:
            raise UsageError("give loss_fn (called as loss_fn(model(inputs), targets)) or step_fn(model, batch) -> loss")
        if isinstance(accumulate, bool) or not isinstance(accumulate, int) or accumulate < 1:
            raise UsageError(f"accumulate must be an integer >= 1, got {accumulate!r}")
        if clip_grad_norm is not None and not (isinstance(clip_grad_norm, (int, float)) and clip_grad_norm > 0):
            raise UsageError(f"clip_grad_norm must be a positive number or None, got {clip_grad_norm!r}")
        if scheduler_interval not in ("step", "epoch"):
            raise UsageError(f"scheduler_interval must be 'step' or 'epoch', got {scheduler_interval!r}")
        for name, value in (("log_every", log_every), ("checkpoint_every", checkpoint_every or 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{name} must be a positive integer, got {value!r}")

        self.tuned = None
        self.tuned_applied: dict[str, Any] = {}  # what the tuned configuration actually set
        if tuned is not None:
            from torchwise.tune.config import TunedConfig

            self.tuned = TunedConfig.load(tuned)
            given = {"precision": precision, "channels_last": channels_last, "cudnn_benchmark": cudnn_benchmark, "compile": compile}
            for key, value in self.tuned.trainer_overrides().items():
                if given[key] == _TUNABLE_DEFAULTS[key]:  # the caller left it at its default
                    given[key] = self.tuned_applied[key] = value
            self.tuned_applied.update(self.tuned.loader_overrides())
            self.tuned_applied.update({k: getattr(self.tuned, k) for k in ("threads", "matmul_precision") if getattr(self.tuned, k)})
            precision, channels_last, cudnn_benchmark, compile = given["precision"], given["channels_last"], given["cudnn_benchmark"], given["compile"]
            self.tuned.apply_process_settings()
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
        self.optimizer = optimizer
        self.loss_fn = loss_fn
        self.step_fn = step_fn
        self.metrics = dict(metrics or {})
        self.accumulate = accumulate
        self.clip_grad_norm = float(clip_grad_norm) if clip_grad_norm is not None else None
        self.compile = bool(compile)
        self.deterministic = deterministic
        self.scheduler = scheduler(optimizer) if callable(scheduler) and not hasattr(scheduler, "step") else scheduler
        self.scheduler_interval = scheduler_interval
        self.checkpoint_dir = Path(checkpoint_dir) if checkpoint_dir else None
        self.checkpoint_every = checkpoint_every
        self.keep_checkpoints = keep_checkpoints
        if log_dir is None:
            log_dir = Path("runs") / time.strftime("%Y%m%d-%H%M%S")
        self.log_dir = Path(log_dir) if log_dir else None
        self.log_every = log_every
        self.progress = progress
        self.callbacks = list(callbacks)
        self.check_labels = check_labels
        self.auto = AutoSettings(self.strategy.configure_channels_last(channels_last), cudnn_benchmark, device_type=self.strategy.device.type, deterministic=deterministic)
        self.guard = NonFiniteGuard(patience=nonfinite_patience, enabled=nonfinite_patience > 0)
        self.oom = OOMRecovery(enabled=oom_recovery and not self.strategy.distributed)
        self.precision: Precision = self.strategy.configure_precision(make_precision(self.precision_name, self.strategy.device))
        self.activation_checkpointing = bool(activation_checkpointing)
        self.task: Any = None

        self.epoch = 0  # epochs completed
        self.step = 0  # optimizer steps taken (skipped ones included)
        self.batch_in_epoch = 0  # loader batches consumed in the current epoch
        self.best: dict[str, tuple[float, int]] = {}
        self.last_checkpoint: Path | None = None
        self.events: list[str] = []
        self._placed = False
        self._train_model: nn.Module | None = None
        self._labels_pending = check_labels and loss_fn is not None and step_fn is None
        self._batch_size: int | None = None
        self._saved_at: int | None = None
        self._last_train_loss: float | None = None
        self._to_device = False
        self._last_batch: Any = None
        self.log = RunLog(None, progress=False, enabled=False)

    # ------------------------------------------------------------------ construction helpers

    @classmethod
    def from_task(cls, task: Any, **kwargs: Any) -> "Trainer":
        """A Trainer for a :class:`torchwise.Task` (or a ``file.py:fn`` reference to one).

        The task supplies the model, optimizer (unless ``optimizer=`` is given), loss, metrics and
        scheduler factory; ``fit()`` without loaders then uses the task's loaders and epochs.
        """
        from torchwise.task import load_task

        task = load_task(task)
        optimizer = kwargs.pop("optimizer", None) or task.make_optimizer()
        kwargs.setdefault("metrics", task.metrics)
        if task.scheduler is not None and "scheduler" not in kwargs:  # (building one changes the optimizer's lr)
            kwargs["scheduler"] = task.scheduler(optimizer)
        trainer = cls(task.model, optimizer, task.loss_fn, **kwargs)
        trainer.task = task
        return trainer

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
        self.log = RunLog(self.log_dir, progress=self.progress, enabled=self.strategy.is_main)
        try:
            state = self._load_resume(resume)
            train = self._prepare(train_loader, train=True)
            val = self._prepare(val_loader, train=False) if val_loader is not None else None
            n_batches = len(train) if train.has_len else None
            if n_batches == 0:
                raise DataError(f"the training loader is empty ({describe(train_loader)}): it yields no batches; check the dataset length, batch_size and drop_last")
            total = _total_steps(n_batches, self.accumulate, epochs, max_steps)
            self._start(total, state)
            A, log_every, ckpt_every = self.accumulate, self.log_every, self.checkpoint_every or 0
            stop = max_steps is not None and self.step >= max_steps
            window, window_loss = A, torch.zeros((), device=self.device)
            pending: list[Any] = []  # earlier batches of this window (replayed after an OOM)

            while not stop and (epochs is None or self.epoch < epochs):
                for batch, last_of_epoch in self._batches(train, n_batches):
                    i = self.batch_in_epoch
                    self.batch_in_epoch = i + 1
                    window_start, window_end = i % A == 0, i % A == A - 1 or last_of_epoch
                    if window_start and A > 1:
                        window = A if n_batches is None else min(A, n_batches - i)  # a last partial window
                        pending.clear()
                    loss = self._forward_backward(batch, pending, window, sync=window_end)
                    window_loss = loss if window_start else window_loss + loss
                    if not window_end:
                        pending.append(batch)
                        continue
                    self._optimizer_step(window_loss, window, pending)
                    self.log.tick(self.step)
                    for fn in self._on_step:
                        fn(self)
                    if self.step % log_every == 0:
                        self._log_interval()
                    if ckpt_every and self.step % ckpt_every == 0:
                        self.save_checkpoint()
                    if max_steps is not None and self.step >= max_steps:
                        stop = True
                        if not last_of_epoch:
                            break  # (after the last batch of an epoch the epoch still ends below)
                else:
                    self._end_epoch(val)
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

    def _forward_backward(self, batch: Any, pending: list[Any], window: int, sync: bool) -> torch.Tensor:
        """Forward + backward of one loader batch; after an OOM, split smaller and redo the window."""
        try:
            return self._micro_step(batch, 1.0 / window, sync)
        except OOM_ERRORS as exc:
            error: BaseException = exc
        while True:  # recovering: free memory, cut batches smaller, recompute this window's gradients
            self._event(f"step {self.step + 1}: {self.oom.recover(error, batch, self.device)}")
            self.optimizer.zero_grad(set_to_none=True)
            try:
                for earlier in pending:
                    self._micro_step(earlier, 1.0 / window, sync=False)
                return self._micro_step(batch, 1.0 / window, sync)
            except OOM_ERRORS as exc:
                error = exc

    def _micro_step(self, batch: Any, scale: float, sync: bool) -> torch.Tensor:
        """Forward and backward of one batch (in chunks after an OOM); returns its detached mean loss."""
        if self._to_device:
            batch = to_device(batch, self.device, non_blocking=True)
        if self._train_model is None:
            self._first_batch(batch)
        if self.oom.splits == 1:  # the usual case: the whole batch at once
            with self.strategy.no_sync(self._train_model, skip_sync=not sync):
                with self.precision.autocast():
                    loss = self._loss(batch)
                self.precision.backward(loss if scale == 1.0 else loss * scale)
            self._last_batch = batch
            return loss.detach()
        chunks = self.oom.chunks(batch)
        total: torch.Tensor | None = None
        for k, (chunk, weight) in enumerate(chunks):
            with self.strategy.no_sync(self._train_model, skip_sync=not sync or k < len(chunks) - 1):
                with self.precision.autocast():
                    loss = self._loss(chunk)
                s = scale * weight
                self.precision.backward(loss if s == 1.0 else loss * s)
            part = loss.detach() if weight == 1.0 else loss.detach() * weight
            total = part if total is None else total + part
        self._last_batch = batch
        return total  # type: ignore[return-value]

    def _loss(self, batch: Any) -> torch.Tensor:
        if self.step_fn is not None:
            return self.step_fn(self._train_model, batch)
        if type(batch) in _PAIRS and len(batch) >= 2:  # the common (inputs, targets) case, skipping ABC checks
            inputs, targets = batch[0], batch[1]
        else:
            inputs, targets = split_batch(batch)
        if self.auto.watching:
            self.auto.observe(inputs)
        output = self._train_model(self.auto.prepare_input(inputs))  # type: ignore[misc]
        if self._labels_pending:
            self._check_labels(output, targets)
        return self.loss_fn(output, targets)  # type: ignore[misc]

    def _optimizer_step(self, window_loss: torch.Tensor, window: int, pending: list[Any]) -> None:
        """Clip, guard, step, zero the gradients, step the scheduler: the end of a window."""
        norm = None
        if self.clip_grad_norm is not None:
            self.precision.unscale(self.optimizer)
            norm = self.strategy.clip_grad_norm(self._params, self.clip_grad_norm)  # returns the pre-clip norm
            self._grad_norm = norm
        if self.guard.enabled and self.precision.name != "16-mixed":  # fp16: the GradScaler handles inf gradients
            if self.strategy.distributed:  # all ranks must agree: judge the all-reduced gradients
                check = norm if norm is not None else self.strategy.grad_norm(self._params)
            else:
                check = window_loss if norm is None else window_loss + norm
            if not math.isfinite(float(check)):  # one scalar read per optimizer step
                self.optimizer.zero_grad(set_to_none=True)
                self.step += 1
                self._event(self.guard.bad_step(self.step, self.model, self._reruns(pending)))
                return
        if self.guard.consecutive:
            self.guard.consecutive = 0  # a good step ends a run of bad ones
        stepped = self.precision.step(self.optimizer)
        self.optimizer.zero_grad(set_to_none=True)
        self.step += 1
        if stepped and self.scheduler is not None and self.scheduler_interval == "step":
            self.scheduler.step()
        self._losses.append(window_loss)  # detached device tensors, summed once per log interval
        self._loss_count += window

    # ------------------------------------------------------------------ evaluation

    def evaluate(self, loader: Iterable[Any], metrics: Mapping[str, Callable[..., torch.Tensor]] | None = None) -> dict[str, float]:
        """Mean loss and metrics over ``loader`` under ``inference_mode`` and ``model.eval()``.

        Train mode is restored afterwards. Under DDP each process evaluates its shard and the
        sums are all-reduced, so every process returns the same numbers.
        """
        self._place()
        metrics = self.metrics if metrics is None else dict(metrics)
        prepared = loader if isinstance(loader, PreparedLoader) else self._prepare(loader, train=False)
        model = self.model
        was_training = model.training
        model.eval()
        sums: dict[str, torch.Tensor] = {}
        count = 0
        try:
            with torch.inference_mode():
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

    def _eval_batch(self, model: nn.Module, batch: Any, metrics: Mapping[str, Callable[..., torch.Tensor]]) -> tuple[dict[str, torch.Tensor], int]:
        if self.step_fn is not None and self.loss_fn is None:
            loss = self.step_fn(model, batch)
            return {"loss": loss.detach().float()}, batch_size_of(batch) or 1
        inputs, targets = split_batch(batch)
        output = model(self.auto.prepare_input(inputs))
        out: dict[str, torch.Tensor] = {}
        if self.loss_fn is not None:
            out["loss"] = self.loss_fn(output, targets).float()
        for name, fn in metrics.items():
            out[name] = torch.as_tensor(fn(output, targets), device=self.device).float()
        return out, batch_size_of(targets) or batch_size_of(inputs) or 1

    # ------------------------------------------------------------------ checkpoints

    def save_checkpoint(self) -> Path | None:
        """Write ``checkpoint_dir/step-NNNNNNNN.pt`` (rank 0; every rank must call it under DDP; FSDP: a .dcp folder)."""
        if self.checkpoint_dir is None:
            return None
        rng = self.strategy.gather_object(get_rng_state())  # one entry per rank
        path = None
        if self.strategy.is_main or self.strategy.sharded_checkpoints:  # sharded: every rank writes its part
            state = {
                "format": ckpt.FORMAT,
                "model": self.model.state_dict(),
                "optimizer": self.optimizer.state_dict(),
                "scheduler": self.scheduler.state_dict() if self.scheduler is not None else None,
                "precision": self.precision.state_dict(),
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
            }
            path = self.strategy.save_checkpoint(state, self.strategy.checkpoint_path(self.checkpoint_dir, self.step))
            if self.strategy.is_main:
                ckpt.prune(self.checkpoint_dir, self.keep_checkpoints)
        self.strategy.barrier()
        self.last_checkpoint = path
        self._saved_at = self.step
        return path

    def _load_resume(self, resume: Any) -> dict[str, Any] | None:
        if resume is None and self.checkpoint_dir is not None and int(os.environ.get("TORCHELASTIC_RESTART_COUNT", "0")) > 0:
            resume = "last"  # torchrun restarted the group after a failure: go on from the last checkpoint (resume=False: don't)
        path, note = ckpt.resolve_resume(resume, self.checkpoint_dir)
        if note:
            self._event(note)
        if path is None:
            return None
        state = self.strategy.load_checkpoint(path, self.model, self.optimizer)  # reads it, restores model + optimizer
        if self.scheduler is not None and state.get("scheduler") is not None:
            self.scheduler.load_state_dict(state["scheduler"])
        self.precision.load_state_dict(state.get("precision") or {})
        self.epoch, self.step, self.batch_in_epoch = int(state["epoch"]), int(state["step"]), int(state["batch_in_epoch"])
        self.data_seed = int(state.get("data_seed", self.data_seed))
        self.oom.splits = int(state.get("oom_splits", 1))
        self.best = {k: (float(v[0]), int(v[1])) for k, v in (state.get("best") or {}).items()}
        if state.get("accumulate", self.accumulate) != self.accumulate:
            self._event(f"note: the checkpoint used accumulate={state['accumulate']}, this run {self.accumulate}")
        self.last_checkpoint = path
        self._saved_at = self.step
        return state

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
                epochs = self.task.epochs
        if epochs is None and max_steps is None:
            epochs = 1
        return train_loader, val_loader, epochs

    def _place(self) -> None:
        """Put the model on its device (DDP process group included); idempotent."""
        if self._placed:
            return
        if self.activation_checkpointing:  # before sharding, so FSDP's hooks stay outside the recomputed forward
            blocks = find_blocks(self.model, getattr(self.strategy, "block", None))  # FSDP's own choice of blocks, if given
            self._event(f"activation checkpointing on {apply_activation_checkpointing(blocks)} blocks")
        self.model = self.strategy.setup(self.model)
        self.strategy.adopt_optimizer(self.optimizer)  # FSDP replaced the parameters: the optimizer follows
        self._to_device = self.device.type != "cpu"
        self._params = [p for p in self.model.parameters() if p.requires_grad]
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

    def _start(self, total: int | None, state: dict[str, Any] | None) -> None:
        self._total = total
        self._on_step = [cb.on_step_end for cb in self.callbacks if hasattr(cb, "on_step_end")]
        self._losses: list[torch.Tensor] = []
        self._loss_count = 0
        self._grad_norm: torch.Tensor | None = None
        self._wait = 0.0
        self._micro = 0  # micro-batches in this log interval
        self._fit_samples = 0
        self._fit_start = self._interval_start = time.perf_counter()
        self._interval_step = self._fit_start_step = self.step
        self._last_val: dict[str, float] = {}
        self.log.start(total, self.step)
        self._say(
            f"training on {self.device} ({self.strategy.world_size} process{'es' if self.strategy.world_size > 1 else ''}), "
            f"precision {self.precision.name}, accumulate {self.accumulate}"
            + (f", {total} steps" if total else "")
            + (f", from step {self.step} (epoch {self.epoch + 1}, batch {self.batch_in_epoch})" if state else "")
        )
        if self.tuned is not None:
            settings = ", ".join(f"{k}={v}" for k, v in self.tuned_applied.items())
            self._say(f"tuned settings applied: {settings or 'none (every tuned setting was chosen explicitly by the caller)'}")
        self._callback("on_fit_start")
        if state is not None:  # restored last, so nothing between here and the first step draws from them
            rng = state["rng"]
            set_rng_state(rng[min(self.strategy.rank, len(rng) - 1)] if isinstance(rng, list) else rng)

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
            inputs, _ = split_batch(batch)
        self.auto.start(self.model, inputs)
        for note in ("channels_last", "cudnn_benchmark"):
            if getattr(self.auto, note):
                self._event(f"{note.replace('_', '.') if note == 'cudnn_benchmark' else note} on (4-D convolutional inputs)")
        model = self.strategy.wrap(self.model)
        if self.compile:
            model = _CompileOnce(model, self._event)
        self._train_model = model

    def _check_labels(self, output: torch.Tensor, targets: Any) -> None:
        self._labels_pending = False
        if isinstance(output, torch.Tensor) and isinstance(targets, torch.Tensor):
            problem = label_problem(output.detach(), targets)
            if problem:
                raise DataError(f"label check before the first step: {problem}")

    def _reruns(self, pending: list[Any]) -> list[Callable[[], Any]]:
        """Forward+loss closures over the window's batches, for naming the first bad module."""
        batches = [to_device(b, self.device) if self._to_device else b for b in pending] + [self._last_batch]

        def make(b: Any) -> Callable[[], Any]:
            def run() -> Any:
                with self.precision.autocast():
                    if self.step_fn is not None:
                        return self.step_fn(self.model, b)
                    inputs, targets = split_batch(b)
                    return self.loss_fn(self.model(self.auto.prepare_input(inputs)), targets)  # type: ignore[misc]

            return run

        return [make(b) for b in batches]

    def _log_interval(self) -> None:
        """Sync the accumulated values once and report them."""
        now = time.perf_counter()
        elapsed = max(now - self._interval_start, 1e-9)
        steps = self.step - self._interval_step
        if steps <= 0:
            return
        values: dict[str, float] = {}
        loss_sum = torch.stack(self._losses).float().sum() if self._losses else torch.zeros((), device=self.device)
        packed = torch.stack([loss_sum, torch.tensor(float(self._loss_count), device=self.device)])
        loss_sum, count = self.strategy.all_reduce(packed).tolist()
        if count:
            values["train/loss"] = self._last_train_loss = loss_sum / count
        values["train/lr"] = float(self.optimizer.param_groups[0]["lr"])
        if self._grad_norm is not None:
            values["train/grad_norm"] = float(self._grad_norm)
        values["train/steps_per_s"] = steps / elapsed
        samples = self._interval_samples()
        values["train/samples_per_s"] = samples * self.strategy.world_size / elapsed
        values["train/loader_wait"] = min(1.0, self._wait / elapsed)
        if self.precision.name == "16-mixed":
            values["train/amp_skipped"] = float(self.precision.skipped)
        if self.guard.skipped:
            values["train/nonfinite_skipped"] = float(self.guard.skipped)
        self.log.log(self.step, self.epoch + 1, values, line=self.progress)
        self._callback("on_log", values)
        self._fit_samples += samples
        self._losses = []
        self._loss_count, self._wait, self._micro = 0, 0.0, 0
        self._interval_start, self._interval_step = time.perf_counter(), self.step

    def _interval_samples(self) -> int:
        """Samples in this interval: micro-batches times the batch size (a smaller last batch counts full)."""
        if not self._micro:
            return 0
        size = self._batch_size or batch_size_of(self._last_batch)
        return self._micro * size

    def _end_epoch(self, val: PreparedLoader | None) -> None:
        if self._loss_count:
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
                lower = any(tag in name.split("/")[-1].lower() for tag in _LOWER_IS_BETTER)
                old = self.best.get(name)
                if old is None or (value < old[0] if lower else value > old[0]):
                    self.best[name] = (value, self.epoch)
            self.log.log(self.step, self.epoch, values, line=self.progress)
        if self.scheduler is not None and self.scheduler_interval == "epoch":
            if isinstance(self.scheduler, torch.optim.lr_scheduler.ReduceLROnPlateau):
                monitor = values.get("val/loss", self._last_train_loss)
                if monitor is not None:
                    self.scheduler.step(monitor)
            else:
                self.scheduler.step()
        if self.checkpoint_dir is not None:
            self.save_checkpoint()
        self._callback("on_epoch_end", values)

    def _finish(self) -> FitResult:
        if self._loss_count:
            self._log_interval()
        if self.checkpoint_dir is not None and self._saved_at != self.step:
            self.save_checkpoint()
        self._fit_samples += self._interval_samples()
        seconds = time.perf_counter() - self._fit_start
        samples = self._fit_samples * self.strategy.world_size
        result = FitResult(
            steps=self.step, epochs=self.epoch, seconds=seconds, samples=samples, samples_per_s=samples / max(seconds, 1e-9),
            train_loss=self._last_train_loss, val=dict(self._last_val), best=dict(self.best), checkpoint=self.last_checkpoint,
            precision=self.precision.name, amp_skipped=self.precision.skipped, nonfinite_skipped=self.guard.skipped,
            oom_splits=self.oom.splits, events=list(self.events),
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
        lines.append(("checkpoint", str(self.last_checkpoint) if self.last_checkpoint else "none (no checkpoint_dir)"))
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


def _total_steps(n_batches: int | None, accumulate: int, epochs: int | None, max_steps: int | None) -> int | None:
    per_epoch = -(-n_batches // accumulate) if n_batches else None
    total = epochs * per_epoch if epochs and per_epoch else None
    if max_steps is not None:
        total = min(total, max_steps) if total else max_steps
    return total


def _check_optimizer_holds(model: nn.Module, optimizer: torch.optim.Optimizer) -> None:
    """Refuse an optimizer over none of the model's parameters; warn about partial coverage (TW115)."""
    in_opt = {id(p) for g in optimizer.param_groups for p in g["params"]}
    trainable = [(n, p) for n, p in model.named_parameters() if p.requires_grad]
    if not trainable:
        raise UsageError(f"{type(model).__name__} has no parameter that requires grad: nothing to train")
    held = [n for n, p in trainable if id(p) in in_opt]
    if not held:
        raise UsageError(
            f"the optimizer ({type(optimizer).__name__}) holds none of the model's {len(trainable)} trainable parameters: "
            "build it from this model, e.g. torch.optim.AdamW(model.parameters()) (after re-creating the model, re-create the optimizer)"
        )
    missing = [n for n, p in trainable if id(p) not in in_opt]
    if missing:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        warnings.warn(f"TW115: {len(missing)} trainable parameter(s) are not in the optimizer and will not be updated: {shown}", stacklevel=3)
