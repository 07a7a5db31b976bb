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

import dataclasses
import weakref
from collections import Counter
from dataclasses import dataclass
from typing import Any

import torch
from torch import nn

from torchwise.doctor.checks.tw109_eval_mode import mode_dependent
from torchwise.doctor.clock import both
from torchwise.doctor.record import LogCall, StepRecorder
from torchwise.doctor.script_nonfinite import NonFiniteEvidence
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
    loader: int | None = None  # id of the DataLoader whose batch it was fed (None: not a loader batch)
    modes: list[str] | None = None  # an evaluation candidate's Dropout/BatchNorm layers in training mode


class _OptimizerView:
    """The parameter groups of every optimizer that stepped, as one optimizer (TW115)."""

    def __init__(self, optimizers: list[torch.optim.Optimizer], names: dict[int, str] | None = None) -> None:
        self.param_groups = [g for opt in optimizers for g in opt.param_groups]
        names = names or {}
        keys = _unique([names.get(id(o)) or f"{i + 1} ({type(o).__name__})" for i, o in enumerate(optimizers)])
        self.optimizers = dict(zip(keys, optimizers)) if len(optimizers) > 1 else {}
        self.stepped = list(optimizers)  # every one, also when there is only one


class ScriptEvidence(NonFiniteEvidence):
    """Gathers, through the :class:`Watch`'s listeners, what the script's steps show."""

    def __init__(self, watch: Watch) -> None:
        self.watch = watch
        self.last: _Pass | None = None
        self.step_passes: list[_Pass] = []  # the forward passes with autograd on since the last step
        self.names: dict[int, str] = {}  # id(model) -> the script's variable holding it
        self.grad_roots: dict[int, nn.Module] = {}  # roots run forward with autograd on
        self.graph_params: dict[int, nn.Parameter] = {}  # parameters the first losses' graphs train (TW115)
        self.first_modes: dict[int, dict[str, bool]] = {}  # root -> module training flags at its first backward
        self.bn_before: dict[int, dict[str, tuple[torch.Tensor, torch.Tensor]]] = {}
        self.trained_in_eval: _Pass | None = None
        self.unbacked: list[_Pass] = []  # forward passes no backward went through (evaluation candidates)
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
        self._served_shapes: set[tuple[int, ...]] = set()  # shapes of the last batch a loader served
        self._served_loader: int | None = None
        self._last_iter: Any = None  # weakref to the iterator that served the last batch
        self._train_iter: Any = None  # ... the last batch before an optimizer step
        self._drain_counts: Counter = Counter()
        self.draining = False
        self._drain_step = 1 << 60  # the step count when the steps were done
        self.evaluated_after_steps = 0  # evaluation passes after the steps (see evaluation())
        self.clock = both  # (wall time, wall time less the time the thread waited for a core): clock.py
        self._since = self.clock()
        self._free_wait = 0.0
        self._counts: Counter = Counter()
        self.steps: list[Any] = []
        # non-finite
        self.nonfinite_step: int | None = None
        self.nonfinite: Any = None
        self.log_calls: list[LogCall] = []
        self._last_loss: torch.Tensor | None = None
        watch.on_root_pass = self.root_pass
        watch.on_root_done = self.root_done
        watch.on_loss_input = self.loss_input
        self._output: tuple[int | None, set[int]] = (None, set())  # the last model output: (id(model), its data pointers)
        self.supervised: set[int] = set()  # models whose output went straight into a loss function (TW139)
        watch.recorder = self.recorder
        watch.loss_calls = self.loss_calls
        watch.log_flags = []

    # -- forward passes --------------------------------------------------------------------------
    def root_pass(self, root: nn.Module, args: tuple) -> None:
        self._close_pass()
        grad = torch.is_grad_enabled()
        self.last = _Pass(root, args, grad, root.training, user_frame(), self.watch.step_index)
        if self._served_shapes and any(tuple(t.shape) in self._served_shapes for t in tensors_in(args)):
            self.last.loader = self._served_loader
        training_batch = grad and self.last.loader is not None and self.last.loader == self._train_loader_id()
        if (not grad or self.last.loader is not None) and not training_batch:
            # an evaluation candidate: its Dropout/BatchNorm modes now (TW139), not when it is judged
            self.last.modes = [n for n, m in root.named_modules() if mode_dependent(m) and m.training][:20]
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
        outs = list(tensors_in(output, floating_only=False))
        if self.last is not None and self.last.root is root:
            self.last.output_graph = any(t.requires_grad for t in outs)
        self._output = (id(root), {t.data_ptr() for t in outs if t.numel()})
        if self.watch.retained_on and torch.is_grad_enabled():
            for t in outs[:8]:
                self.watch.retained.made(t, self.watch.step_index)

    def loss_input(self, x: torch.Tensor) -> None:
        """A loss function got ``x``: if it is (a view of) the last model output, that model is supervised."""
        root, ptrs = self._output
        if root is not None and root not in self.supervised and x.numel() and x.data_ptr() in ptrs:
            self.supervised.add(root)

    def _close_pass(self) -> None:
        """A pass nothing was backpropagated through ends with the next: kept, judged at the end
        (which loader fed training is known only then)."""
        p = self.last
        if p is None or p.backpropagated or len(self.unbacked) >= 10_000:
            return
        self.unbacked.append(p)

    def evaluation(self) -> tuple[list[tuple[bool, bool]], str, list[dict[str, Any]]]:
        """Evaluation passes (eval mode, or fed by another loader than training's) as (grad enabled,
        graph built); where the first that built a graph (else the first) ran; and the
        loader-fed ones run with Dropout/BatchNorm training (TW139)."""
        train = self._train_loader_id()
        calls, line, graph_line, in_train_mode = [], "", "", []
        self.evaluated_after_steps = 0
        for p in self.unbacked:
            other = p.loader is not None and p.loader != train
            if not p.training or other:
                self.evaluated_after_steps += p.step >= self._drain_step
                calls.append((p.grad, p.output_graph))
                line = line or p.line
                if p.grad and p.output_graph:
                    graph_line = graph_line or p.line
            modes = p.modes
            data = p.loader is not None or id(p.root) in self.supervised  # fed data, not noise (a GAN's samples)
            if data and (other or not p.grad) and modes and len(in_train_mode) < 200:
                in_train_mode.append({"root": p.root, "line": p.line, "step": p.step, "grad": p.grad, "other_loader": other,
                                      "modules": modes, "draining": p.step >= self._drain_step})
        return calls, graph_line or line, in_train_mode

    def _train_loader_id(self) -> int | None:
        if self._counts:
            return self._counts.most_common(1)[0][0]
        return None

    def pass_roots(self) -> set[int]:
        """Ids of the models run forward with autograd on since the last optimizer step."""
        return {id(p.root) for p in self.step_passes}

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

    def before_step(self, optimizer: torch.optim.Optimizer | None, first: bool) -> None:
        """At each optimizer step (before it; None: weights updated by hand): gradients seen, and
        (first optimizer) finiteness."""
        for g in optimizer.param_groups if optimizer is not None else ():
            for t in g["params"]:
                if t.grad is not None:
                    self.grad_ids.add(id(t))
        for root in self.grad_roots.values():
            for t in root.parameters():
                if t.grad is not None:
                    self.grad_ids.add(id(t))
        if first:
            self._check_finite()

    def step_done(self) -> None:
        """Any optimizer step (or hand-updated backward) is done."""
        self.step_passes = []
        self.watch.log_flags = [] if self.nonfinite_step is None else None
        if self._last_iter is not None:
            self._train_iter = self._last_iter

    def start_evaluation(self, step: int) -> None:
        """The steps are done; what runs now until the next training step is the script's evaluation."""
        self.draining, self._drain_step = True, step

    def train_iterator(self) -> Any:
        """The DataLoader iterator that served the last training batch (None: not a DataLoader)."""
        return self._train_iter() if self._train_iter is not None else None

    def served_count(self, iterator: Any) -> int:
        """Batches ``iterator`` served since the steps were done (during the evaluation)."""
        return self._drain_counts[id(iterator)]

    def after_step(self, watched: bool) -> None:
        """The first optimizer's step is done: one StepRecord (loader wait, the rest of the step)."""
        from torchwise.doctor.probe import StepRecord

        now, free_now = self.clock()
        shapes = tuple(tuple(t.shape) for t in tensors_in(self.last.args)) if self.last is not None else ()
        index = len(self.steps)
        batch = shapes[0][0] if shapes and shapes[0] else 0
        self.steps.append(StepRecord(index, self._wait, max(0.0, now - self._since[0] - self._wait), shapes, batch, watched=watched,
                                     free_wait_s=self._free_wait, free_step_s=max(0.0, free_now - self._since[1] - self._free_wait)))
        if self._served is not None:
            self.loaders.setdefault(id(self._served), self._served)
            self._counts[id(self._served)] += 1
        self._wait, self._free_wait, self._served, self._since = 0.0, 0.0, None, (now, free_now)
        if index == 0:
            self.watch.recorder = None
            self.watch.loss_calls = None
            self.recorder.clear()
            self.cudnn_benchmark = bool(torch.backends.cudnn.benchmark)

    # -- loader ----------------------------------------------------------------------------------
    def loader_iter(self, loader: Any, iterator: Any) -> None:
        self.current_loader = loader
        self._iter_loader[id(iterator)] = loader
        if len(self._iter_loader) > 1000:
            self._iter_loader.pop(next(iter(self._iter_loader)))

    def loader_next(self, iterator: Any, seconds: tuple[float, float] | float, batch: Any = None) -> None:
        """A batch served by ``iterator`` after ``seconds`` of waiting: (wall, load-free), or one
        wall-clock figure for both."""
        if not isinstance(seconds, tuple):
            seconds = (seconds, seconds)
        loader = self._iter_loader.get(id(iterator))
        if loader is not None:
            self._wait += seconds[0]
            self._free_wait += seconds[1]
            self._served = loader
            self._served_loader = id(loader)
            try:
                self._last_iter = weakref.ref(iterator)
            except TypeError:
                self._last_iter = None
            if self.draining:
                self._drain_counts[id(iterator)] += 1
        if batch is not None:
            self._served_shapes = {tuple(t.shape) for t in tensors_in(batch, floating_only=False) if t.dim() >= 1}

    def training_loader(self) -> Any:
        if self._counts:
            return self.loaders[self._counts.most_common(1)[0][0]]
        return self.current_loader

    # -- the Context -----------------------------------------------------------------------------
    def models(self) -> list[nn.Module]:
        """The trained models: forward run with autograd on, trainable parameters that got gradients."""
        return [r for r in self.grad_roots.values() if any(id(p) in self.grad_ids for p in r.parameters() if p.requires_grad)]

    def context(self, subject: str, optimizers: list[torch.optim.Optimizer], steps_requested: int, failure: str | None,
                names: dict[int, str], opt_names: dict[int, str] | None = None) -> Any:
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
            subject=subject, model=model, optimizer=_OptimizerView(optimizers, opt_names),  # type: ignore[arg-type]
            optimizer_given=bool(optimizers), loss_fn=None, device=device, target_device_type=device.type,
            precision=self.precision, cudnn_benchmark=self.cudnn_benchmark, steps_requested=steps_requested,
            param_devices=placed, spread_over_devices=spread, initial_training=training,
            loader=loader, batch_given=loader is None,
        )
        ctx.script = True
        ctx.failure = failure
        ctx.watch = self.watch.result
        full = {id(m): _join(prefix[id(r)], n) for r in roots for n, m in r.named_modules()}
        ctx.module_calls = [dataclasses.replace(c, name=full[id(c.module)]) for c in self.module_calls if id(c.module) in full]
        ctx.conv_bn_pairs = [(full[id(c)], full[id(b)]) for c, b in self.recorder.pair_modules if id(c) in full and id(b) in full]
        ctx.loss_calls = list(self.loss_calls)
        ctx.steps = list(self.steps)
        ctx.backward_done = self.backward_done
        named = list(model.named_parameters())
        ctx.params_with_grad = {n for n, p in named if id(p) in self.grad_ids}
        ctx.tensors_with_grad = set(self.grad_ids)
        ctx.scratch["graph_params"] = list(self.graph_params.values())
        for r in roots:
            for n, stats in self.bn_before.get(id(r), {}).items():
                ctx.bn_stats_before[_join(prefix[id(r)], n)] = stats
        ctx.nonfinite_step, ctx.nonfinite, ctx.log_calls = self.nonfinite_step, self.nonfinite, list(self.log_calls)
        ctx.eval_calls, ctx.scratch["eval_line"], evals = self.evaluation()
        ctx.evaluate_given = bool(ctx.eval_calls)
        if self.trained_in_eval is not None:
            ctx.scratch["trained_in_eval"] = (self.trained_in_eval.line, self.trained_in_eval.step)
        ctx.scratch["train_mode_evals"] = [
            {**{k: v for k, v in e.items() if k != "root"}, "modules": [full[id(m)] for n, m in e["root"].named_modules() if n in e["modules"]]}
            for e in evals if id(e["root"]) in prefix
        ]
        ctx.scratch["model_names_by_index"] = {k: names.get(id(r)) or type(r).__name__ for k, r in enumerate(self.watch._roots)}
        return ctx

    def name_objectives(self, result: Any, optimizers: list[torch.optim.Optimizer]) -> None:
        """Each objective's models (the script's names) and whether it is coupled to another's."""
        roots = list(self.grad_roots.values())
        owner: dict[int, str] = {}
        for obj in result.objectives:
            if obj.optimizer is None or obj.optimizer >= len(optimizers):
                continue
            held = {id(p) for g in optimizers[obj.optimizer].param_groups for p in g["params"]}
            for r in roots:
                if any(id(p) in held for p in r.parameters()):
                    owner.setdefault(id(r), obj.key)
                    name = self.names.get(id(r)) or type(r).__name__
                    if name not in obj.models:
                        obj.models.append(name)
        self.watch.objectives.couple(owner)

    def finish(self) -> None:
        self._close_pass()


def _mode_dependent(root: nn.Module) -> bool:
    return any(mode_dependent(m) for m in root.modules())


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
