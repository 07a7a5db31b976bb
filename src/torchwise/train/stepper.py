"""The step: one batch's forward and backward per phase, and the optimizer step at a window's end.

:class:`Steps` is what :meth:`Trainer.fit` calls for every batch. ``to_device`` checks the
batch's labels on the host and copies it; ``forward_backward`` runs one phase's forward, loss
and backward under the precision plug-in (``no_sync`` on non-final micro-steps, the other
phases' gradients set aside), adding the loss to the phase's window; ``optimizer_step`` ends a
window: average the gradients when the strategy asks for it, clip, let the non-finite guard
judge the step, step through the precision plug-in, clear the gradients (``set_to_none``).

The common case (float32, one optimizer, no deferred gradient sync: ``phase.plain``) enters no
context at all. Each step's loss is kept as ``kept(loss)``: a float where a host read is free
(one process on the CPU), a detached tensor elsewhere (read once per log interval). After a
CUDA out-of-memory error the window is replayed in smaller chunks (:mod:`.oom`).
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from torchwise.utils.batch import forward_names, model_call
from torchwise.utils.device import to_device
from torchwise.train.compiled import CompileOnce
from torchwise.train.labelcheck import LabelCheck
from torchwise.train.oom import OOM_ERRORS
from torchwise.train.phases import Phase, as_outputs, average_gradients

_PAIRS = (tuple, list)


class Steps:
    """Forward, backward and optimizer steps of the phases, for one Trainer (see the module)."""

    def __init__(self, trainer: Any, loss_fn: Any, clip_grad_norm: float | None, check_labels: bool) -> None:
        self.trainer = trainer
        self.strategy = trainer.strategy
        self.guard, self.oom, self.auto = trainer.guard, trainer.oom, trainer.auto
        self.loss_fn = loss_fn
        self.clip = clip_grad_norm
        self.labels = LabelCheck(check_labels and loss_fn is not None and trainer.step_fn is None, loss_fn)
        self.model: nn.Module | None = None  # the model as trained (DDP/compile wrapped), set at the first batch
        self.copy = False  # whether batches go to another device
        self.kept: Callable[[torch.Tensor], Any] = torch.Tensor.detach
        self.forward_names: Any = None
        self.inputs_as_is = False  # True once the "auto" settings are known to leave inputs alone
        self.average_phases = False
        self.window = 1  # micro-batches in the current accumulation window
        self.pending: list[Any] = []  # earlier batches of this window (replayed after an OOM)
        self.last_batch: Any = None

    def place(self, model: nn.Module) -> None:
        """After the strategy placed ``model``: how batches move and how losses are kept."""
        self.copy = self.strategy.device.type != "cpu"
        # a float where reading it is free (the CPU, one process: no detached tensor made), else detached
        self.kept = torch.Tensor.item if self.strategy.host_reads_free else torch.Tensor.detach
        self.forward_names = forward_names(model)

    def to_device(self, batch: Any) -> Any:
        """Check the batch's labels on the host (no device sync), then copy it to the device."""
        if self.labels.per_batch:
            t = self.trainer
            self.labels.host(batch, t.epoch, t.batch_in_epoch, t.step)
        return to_device(batch, self.strategy.device, non_blocking=True) if self.copy else batch

    def forward_backward(self, phase: Phase, batch: Any, sync: bool) -> None:
        """Forward + backward of one batch for one phase, its loss added to the window's; after an
        OOM, split smaller and redo the window."""
        try:
            loss = self.micro_step(phase, batch, 1.0 / self.window, sync)
        except OOM_ERRORS as exc:
            loss = self._recover(phase, batch, sync, exc)
        except IndexError:  # a CE/NLL target out of range (see labelcheck): name the batch and values
            if self.labels.width is not None:
                t = self.trainer
                self.labels.host(batch, t.epoch, t.batch_in_epoch, t.step)
            raise
        total = phase.window_loss
        phase.window_loss = loss if total is None else total + loss

    def _recover(self, phase: Phase, batch: Any, sync: bool, error: BaseException) -> Any:
        """Free memory, cut batches smaller, recompute this window's gradients (until it fits)."""
        t = self.trainer
        while True:
            t._event(f"step {t.step + 1}: {self.oom.recover(error, batch, self.strategy.device, t.step + 1)}")  # (several processes: stops)
            phase.clear_grads()
            try:
                for earlier in self.pending:
                    self.micro_step(phase, self._on_device(earlier), 1.0 / self.window, sync=False)
                return self.micro_step(phase, batch, 1.0 / self.window, sync)
            except OOM_ERRORS as exc:
                error = exc

    def _on_device(self, batch: Any) -> Any:
        return to_device(batch, self.strategy.device) if self.copy else batch

    def micro_step(self, phase: Phase, batch: Any, scale: float, sync: bool) -> Any:
        """Forward and backward of one batch (in chunks after an OOM); returns its mean loss as kept."""
        if self.model is None:
            self.first_batch(batch)
        if self.oom.splits > 1:
            return self._chunked(phase, batch, scale, sync)
        if phase.plain:  # float32, one optimizer, no gradient sync to put off: no context to enter
            loss = self.loss(phase, batch)
            (loss if scale == 1.0 else loss * scale).backward()
        else:
            with phase.own_gradients(), self.strategy.no_sync(self.model, skip_sync=not sync):
                with phase.precision.autocast():
                    loss = self.loss(phase, batch)
                phase.precision.backward(loss if scale == 1.0 else loss * scale)
        self.last_batch = batch
        return self.kept(loss)

    def _chunked(self, phase: Phase, batch: Any, scale: float, sync: bool) -> Any:
        """After an OOM: the batch in ``oom.splits`` chunks, each weighted by its share."""
        chunks = self.oom.chunks(batch)
        total: Any = None
        for k, (chunk, weight) in enumerate(chunks):
            with phase.own_gradients(), self.strategy.no_sync(self.model, skip_sync=not sync or k < len(chunks) - 1):
                with phase.precision.autocast():
                    loss = self.loss(phase, chunk)
                s = scale * weight
                phase.precision.backward(loss if s == 1.0 else loss * s)
            part = self.kept(loss) if weight == 1.0 else self.kept(loss) * weight
            total = part if total is None else total + part
        self.last_batch = batch
        return total

    def loss(self, phase: Phase, batch: Any) -> torch.Tensor:
        """The phase's loss on ``batch``: its step function, or ``loss_fn(model(inputs), targets)``."""
        if phase.step_fn is not None:
            loss, extras = as_outputs(phase.step_fn(self.model, batch), "step_fn")
            for key, value in extras.items():
                phase.extras.setdefault(key, []).append(value)
            return loss
        model = self.model
        if type(batch) in _PAIRS and len(batch) >= 2 and type(batch[0]) is torch.Tensor:  # (inputs, targets, ...): no ABC checks
            targets = batch[1]
            output = model(batch[0] if self.inputs_as_is else self._input(batch[0]))  # type: ignore[misc]
        else:
            args, kwargs, targets = model_call(batch, self.forward_names)
            output = model(self._input(args[0]), *args[1:], **kwargs) if args else model(**kwargs)  # type: ignore[misc]
        if self.labels.pending:
            self.labels.first(output, targets, self.copy)
        return self.loss_fn(output, targets)  # type: ignore[no-any-return]

    def _input(self, inputs: Any) -> Any:
        """The model's first input as the "auto" settings want it (channels_last; shapes watched)."""
        if self.auto.watching:
            self.auto.observe(inputs)
        return self.auto.prepare_input(inputs)

    def optimizer_step(self, phase: Phase) -> None:
        """The end of a phase's window: clip, guard, step, zero the gradients; the window's loss is logged."""
        norm = None
        if self.average_phases:
            average_gradients(phase.params, self.strategy.world_size)
        if self.clip is not None:
            phase.precision.unscale(phase.optimizer)
            norm = phase.grad_norm = self.strategy.clip_grad_norm(phase.params, self.clip)  # the pre-clip norm
        if phase.guarded:  # a gradient can go bad while the loss stays finite; one scalar read per optimizer step
            if not self.strategy.step_is_finite(phase.window_loss, phase.params, norm):
                self._skip(phase)
                return
            if self.guard.consecutive:
                self.guard.consecutive = 0  # a good step ends a run of bad ones
        phase.stepped = phase.precision.step(phase.optimizer)
        phase.clear_grads()
        phase.losses.append(phase.window_loss)  # type: ignore[arg-type]  # as kept, summed once per log interval
        phase.count += self.window
        phase.last_loss, phase.window_loss = phase.window_loss, None

    def _skip(self, phase: Phase) -> None:
        """A non-finite step: drop its gradients, name the culprit (raises after ``patience`` in a row)."""
        phase.clear_grads()
        phase.stepped = False
        phase.last_loss, phase.window_loss = phase.window_loss, None
        t = self.trainer
        where = f" (phase {phase.name!r})" if phase.name else ""
        t._event(self.guard.bad_step(t.step + 1, t.model, self.reruns(phase)) + where)

    def reruns(self, phase: Phase) -> list[Callable[[], Any]]:
        """Forward+loss closures over the window's batches, for naming the first bad module."""
        batches = [self._on_device(b) for b in self.pending] + [self.last_batch]
        model = self.trainer.model

        def make(b: Any) -> Callable[[], Any]:
            def run() -> Any:
                with phase.precision.autocast():
                    if phase.step_fn is not None:
                        return as_outputs(phase.step_fn(model, b), "step_fn")[0]
                    args, kwargs, targets = model_call(b, self.forward_names)
                    output = model(self.auto.prepare_input(args[0]), *args[1:], **kwargs) if args else model(**kwargs)
                    return self.loss_fn(output, targets)

            return run

        return [make(b) for b in batches]

    def first_batch(self, batch: Any) -> None:
        """Decide the "auto" settings from the first inputs, then wrap (DDP) and compile."""
        t = self.trainer
        inputs = None
        if t.step_fn is None:
            args, _, _ = model_call(batch, self.forward_names)
            inputs = args[0] if args else None
        self.auto.start(t.model, inputs)
        self.inputs_as_is = not (self.auto.watching or self.auto.channels_last)  # (observe() only switches things off)
        if t.tuned is not None:
            t.tuned.check_fits(t.model, inputs)  # reliability: warn when tuned for another model
        for note in ("channels_last", "cudnn_benchmark"):
            if getattr(self.auto, note):
                t._event(f"{note.replace('_', '.') if note == 'cudnn_benchmark' else note} on (4-D convolutional inputs)")
        if len(t.phases) > 1:  # several optimizers: no DDP wrapper (the phases average their gradients); FSDP: units per submodule
            model, self.average_phases = self.strategy.wrap_phases(t.model)
        else:
            model = self.strategy.wrap(t.model)
        self.model = CompileOnce(model, t._event) if t.compile else model
        for phase in t.phases:
            phase.plain = not phase.others and phase.precision.plain and not self.strategy.defers_sync
            phase.guarded = self.guard.enabled and not phase.precision.handles_nonfinite  # (fp16: the GradScaler skips inf steps)
