"""Script mode: the evidence of the Task-mode checks, gathered from an unmodified training script.

A Task hands the doctor its model, optimizer and loader; a script does not, so they are found
from what the hooks of :mod:`torchwise.doctor.script` see, and a
:class:`~torchwise.doctor.probe.Context` is filled from them, the same object the Task mode
fills, so every check reads one kind of evidence whichever way the steps ran:

- *the model*: the modules whose forward ran as the outermost call with autograd on and whose
  trainable parameters then received gradients (a frozen teacher, an EMA copy run under
  ``no_grad`` and evaluation-only passes are left out); several such models (a GAN) are named
  by the script's variables that hold them;
- *the optimizer*: every optimizer that stepped, their parameter groups together;
- *the loader*: the DataLoader whose batches preceded most optimizer steps, with the time spent
  waiting in ``next()`` before each step;
- the first step's module calls, conv -> BatchNorm pairs and loss calls (``record.py``);
- which parameters got gradients, the modes the models were trained and evaluated in, the
  running statistics of BatchNorm before training, and where a step first went non-finite.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from torchwise.doctor.record import LogCall, StepRecorder
from torchwise.doctor.watch import Watch, user_frame
from torchwise.utils.nonfinite import tensors_in

MAX_MODELS = 8


@dataclass
class _Pass:
    """One forward pass of a model (a root module) seen in the script."""

    root: nn.Module
    args: tuple
    grad: bool
    training: bool
    line: str
    step: int = 0
    output_graph: bool = False  # its output requires grad (an autograd graph was built)
    backpropagated: bool = False


class _OptimizerView:
    """The parameter groups of every optimizer that stepped, as one optimizer (TW115)."""

    def __init__(self, optimizers: list[torch.optim.Optimizer]) -> None:
        self.param_groups = [g for opt in optimizers for g in opt.param_groups]


class ScriptEvidence:
    """Gathers, through the :class:`Watch`'s listeners, what the script's steps show."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.last: _Pass | None = None
        self.step_passes: list[_Pass] = []  # the forward passes with autograd on since the last step
        self.names: dict[int, str] = {}  # id(model) -> the script's variable holding it
        self.grad_roots: dict[int, nn.Module] = {}  # roots run forward with autograd on
        self.first_modes: dict[int, dict[str, bool]] = {}  # root -> module training flags at its first backward
        self.bn_before: dict[int, dict[str, tuple[torch.Tensor, torch.Tensor]]] = {}
        self.trained_in_eval: _Pass | None = None
        self.eval_passes: list[tuple[bool, bool]] = []  # (grad enabled, output requires grad), not trained
        self.eval_line = ""  # where the first evaluation pass that built a graph (else the first) ran
        self._eval_graph_seen = False
        self.grad_ids: set[int] = set()  # trainable tensors that got a gradient at some step
        self.backward_done = 0
        self.module_calls: list[Any] = []
        self.conv_bn_pairs: list[tuple[str, str]] = []
        self.recorder = StepRecorder(self.module_calls, self.conv_bn_pairs)
        self.loss_calls: list[Any] = []
        self.precision = "32"
        self.cudnn_benchmark = bool(torch.backends.cudnn.benchmark)
        # loader timing
        self.loaders: dict[int, Any] = {}
        self.current_loader: Any = None
        self._iter_loader: dict[int, Any] = {}
        self._wait = 0.0
        self._served: Any = None
        self._since = time.perf_counter()
        self._counts: Counter = Counter()
        self.steps: list[Any] = []
        # non-finite
        self.nonfinite_step: int | None = None
        self.nonfinite: Any = None
        self.log_calls: list[LogCall] = []
        self._last_loss: torch.Tensor | None = None
        watch.on_root_pass = self.root_pass
        watch.on_root_done = self.root_done
        watch.recorder = self.recorder
        watch.loss_calls = self.loss_calls
        watch.log_flags = []

    # -- forward passes --------------------------------------------------------------------------
    def root_pass(self, root: nn.Module, args: tuple) -> None:
        self._close_pass()
        grad = torch.is_grad_enabled()
        self.last = _Pass(root, args, grad, root.training, user_frame(), self.watch.step_index)
        if grad and len(self.step_passes) < 16:
            self.step_passes.append(self.last)
        if grad and id(root) not in self.grad_roots and len(self.grad_roots) < MAX_MODELS:
            self.grad_roots[id(root)] = root
            self.bn_before[id(root)] = {
                n: (m.running_mean.detach().clone(), m.running_var.detach().clone())
                for n, m in root.named_modules()
                if isinstance(m, nn.modules.batchnorm._BatchNorm) and m.running_mean is not None and m.running_var is not None
            }
        if grad and self.watch.step_index == 0:
            device = next((p.device for p in root.parameters()), torch.device("cpu"))
            if torch.is_autocast_enabled(device.type):
                dtype = torch.get_autocast_dtype(device.type)
                self.precision = "bf16-mixed" if dtype == torch.bfloat16 else "16-mixed" if dtype == torch.float16 else self.precision

    def root_done(self, root: nn.Module, output: Any) -> None:
        if self.last is not None and self.last.root is root:
            self.last.output_graph = any(t.requires_grad for t in tensors_in(output, floating_only=False))

    def _close_pass(self) -> None:
        """An evaluation pass (eval mode, nothing backpropagated through it) ends with the next."""
        p = self.last
        if p is not None and not p.training and not p.backpropagated and len(self.eval_passes) < 10_000:
            self.eval_passes.append((p.grad, p.output_graph))
            if p.grad and p.output_graph and not self._eval_graph_seen:
                self.eval_line, self._eval_graph_seen = p.line, True
            elif not self.eval_line:
                self.eval_line = p.line

    # -- backward and steps ----------------------------------------------------------------------
    def after_backward(self, loss: torch.Tensor) -> None:
        self.backward_done += 1
        self._last_loss = loss
        p = self.last
        if p is not None and p.grad:
            p.backpropagated = True
            if id(p.root) not in self.first_modes:  # the modes it trains in (not those of an attack pass before)
                self.first_modes[id(p.root)] = {n: m.training for n, m in p.root.named_modules()}
            if not p.training and self.trained_in_eval is None and _mode_dependent(p.root):
                self.trained_in_eval = p

    def gradients_taken(self) -> None:
        """``torch.autograd.grad`` went through the last pass (not an evaluation pass)."""
        if self.last is not None:
            self.last.backpropagated = True

    def before_step(self, optimizer: torch.optim.Optimizer, first: bool) -> None:
        """At each optimizer step (before it): gradients seen, and (first optimizer) finiteness."""
        for g in optimizer.param_groups:
            for t in g["params"]:
                if t.grad is not None:
                    self.grad_ids.add(id(t))
        for root in self.grad_roots.values():
            for t in root.parameters():
                if t.grad is not None:
                    self.grad_ids.add(id(t))
        if first:
            self._check_finite()

    def after_step(self, watched: bool) -> None:
        """The first optimizer's step is done: one StepRecord (loader wait, the rest of the step)."""
        from torchwise.doctor.probe import StepRecord

        now = time.perf_counter()
        shapes = tuple(tuple(t.shape) for t in tensors_in(self.last.args)) if self.last is not None else ()
        index = len(self.steps)
        batch = shapes[0][0] if shapes and shapes[0] else 0
        self.steps.append(StepRecord(index, self._wait, max(0.0, now - self._since - self._wait), shapes, batch, watched=watched))
        if self._served is not None:
            self.loaders.setdefault(id(self._served), self._served)
            self._counts[id(self._served)] += 1
        self._wait, self._served, self._since = 0.0, None, now
        self.step_passes = []
        if index == 0:
            self.watch.recorder = None
            self.watch.loss_calls = None
            self.recorder.clear()
            self.cudnn_benchmark = bool(torch.backends.cudnn.benchmark)
        self.watch.log_flags = [] if self.nonfinite_step is None else None

    # -- loader ----------------------------------------------------------------------------------
    def loader_iter(self, loader: Any, iterator: Any) -> None:
        self.current_loader = loader
        self._iter_loader[id(iterator)] = loader
        if len(self._iter_loader) > 1000:
            self._iter_loader.pop(next(iter(self._iter_loader)))

    def loader_next(self, iterator: Any, seconds: float) -> None:
        loader = self._iter_loader.get(id(iterator))
        if loader is not None:
            self._wait += seconds
            self._served = loader

    def training_loader(self) -> Any:
        if self._counts:
            return self.loaders[self._counts.most_common(1)[0][0]]
        return self.current_loader

    # -- non-finite ------------------------------------------------------------------------------
    def _check_finite(self) -> None:
        if self.nonfinite_step is not None or self._last_loss is None:
            return
        finite = torch.isfinite(self._last_loss.detach()).all()
        norms = self.watch._pending_norms[-1] if self.watch._pending_norms else None
        if norms is not None:
            finite = finite & torch.isfinite(norms).all()
        if bool(finite):  # one host read a step (the loss is on the host in most loops anyway)
            self.watch.log_flags = []
            return
        self.nonfinite_step = self.watch.step_index
        flags, self.watch.log_flags = self.watch.log_flags or [], None
        for func, module, zeros, negatives, total, line in flags:
            z, n = int(zeros), int(negatives)
            if z or n:
                self.log_calls.append(LogCall(func, module, z, n, total, line))
        self.nonfinite = self._replay()

    def _replay(self) -> Any:
        """The step's forward passes replayed in order on the same inputs: the first module whose
        output went non-finite (or the first pass's non-finite input: bad data)."""
        from torchwise.utils.nonfinite import NonFiniteReport, find_nonfinite

        if not self.step_passes:
            return None
        several = len({id(p.root) for p in self.step_passes}) > 1 or len(self.grad_roots) > 1
        self.watch.paused = True
        try:
            for i, p in enumerate(self.step_passes):
                try:
                    with torch.no_grad():
                        report = find_nonfinite(p.root, lambda p=p: p.root(*p.args), check_grads=False)
                except Exception:
                    continue
                if report is None or (report.kind == "input" and i > 0):
                    continue  # finite, or fed by an earlier pass that went bad
                name = self.names.get(id(p.root), "")
                if several and name:
                    report = NonFiniteReport(f"{name}.{report.module}" if report.module else name,
                                             report.module_type, report.kind, report.detail)
                return report
        finally:
            self.watch.paused = False
        where = f" at {self.watch.result.backward_line}" if self.watch.result.backward_line else ""
        root = self.step_passes[-1].root
        return NonFiniteReport("", type(root).__name__, "loss",
                               f"the model's outputs were finite; the loss computed from them (or its gradients) was not{where}")

    # -- the Context -----------------------------------------------------------------------------
    def models(self) -> list[nn.Module]:
        """The trained models: forward run with autograd on, trainable parameters that got gradients."""
        return [r for r in self.grad_roots.values() if any(id(p) in self.grad_ids for p in r.parameters() if p.requires_grad)]

    def context(self, subject: str, optimizers: list[torch.optim.Optimizer], steps_requested: int, failure: str | None,
                names: dict[int, str]) -> Any:
        """A :class:`~torchwise.doctor.probe.Context` over the trained model(s) (an empty module when
        none was trained: the script failed first, e.g. in its loader)."""
        from torchwise.doctor.probe import Context, resolve_device

        roots = self.models()
        if not roots:
            model, prefix = nn.Module(), {}
        elif len(roots) == 1:
            model, prefix = roots[0], {id(roots[0]): ""}
        else:
            keys = _unique([names.get(id(r)) or type(r).__name__ for r in roots])
            model = nn.ModuleDict(dict(zip(keys, roots)))
            prefix = {id(r): k + "." for r, k in zip(roots, keys)}
        training = {"": True}
        for r in roots:
            training.update({_join(prefix[id(r)], n): t for n, t in self.first_modes.get(id(r), {}).items()})
        if self.trained_in_eval is not None and any(r is self.trained_in_eval.root for r in roots):
            r = self.trained_in_eval.root
            training.update({_join(prefix[id(r)], n): m.training for n, m in r.named_modules()})
            training[""] = False
        device, placed, spread = resolve_device(model, "auto")
        loader = self.training_loader()
        ctx = Context(
            subject=subject, model=model, optimizer=_OptimizerView(optimizers),  # type: ignore[arg-type]
            optimizer_given=bool(optimizers), loss_fn=None, device=device, target_device_type=device.type,
            precision=self.precision, cudnn_benchmark=self.cudnn_benchmark, steps_requested=steps_requested,
            param_devices=placed, spread_over_devices=spread, initial_training=training,
            loader=loader, batch_given=loader is None,
        )
        ctx.script = True
        ctx.failure = failure
        ctx.watch = self.watch.result
        ctx.module_calls = [c for c in self.module_calls if any(c.module is m for r in roots for m in r.modules())]
        ctx.conv_bn_pairs = list(self.conv_bn_pairs)
        ctx.loss_calls = list(self.loss_calls)
        ctx.steps = list(self.steps)
        ctx.backward_done = self.backward_done
        named = list(model.named_parameters())
        ctx.params_with_grad = {n for n, p in named if id(p) in self.grad_ids}
        ctx.tensors_with_grad = set(self.grad_ids)
        for r in roots:
            for n, stats in self.bn_before.get(id(r), {}).items():
                ctx.bn_stats_before[_join(prefix[id(r)], n)] = stats
        ctx.nonfinite_step, ctx.nonfinite, ctx.log_calls = self.nonfinite_step, self.nonfinite, list(self.log_calls)
        ctx.eval_calls = list(self.eval_passes)
        ctx.evaluate_given = bool(self.eval_passes)
        ctx.scratch["eval_line"] = self.eval_line
        if self.trained_in_eval is not None:
            ctx.scratch["trained_in_eval"] = (self.trained_in_eval.line, self.trained_in_eval.step)
        return ctx

    def finish(self) -> None:
        self._close_pass()


def _mode_dependent(root: nn.Module) -> bool:
    from torchwise.doctor.checks.tw109_eval_mode import MODE_DEPENDENT

    return any(isinstance(m, MODE_DEPENDENT) for m in root.modules())


def _join(prefix: str, name: str) -> str:
    return (prefix + name) if name else prefix.rstrip(".")


def _unique(keys: list[str]) -> list[str]:
    seen: Counter = Counter()
    out = []
    for k in keys:
        seen[k] += 1
        out.append(k if seen[k] == 1 else f"{k}{seen[k]}")
    return out


__all__ = ["ScriptEvidence"]
