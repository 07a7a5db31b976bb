"""Watch training as it runs: cheap per-step records, kept on the device, read back in batches.

The :class:`Watch` is shared by the two ways the doctor trains: the Task mode (``run_steps`` on a
copy) and the script mode (a user's unmodified training script run in a child process). It sees

- every module call, through the global module hooks (a module stack, BatchNorm fed one sample);
- every ReLU / sigmoid / tanh call, module or functional, through a ``TorchFunctionMode`` on the
  *watched* steps (dead units; saturated units), and the class labels given to ``cross_entropy``
  / ``nll_loss`` (script mode: every call);
- every loss and every gradient: after each backward the loss and the per-parameter gradient
  norms are stacked on the device (no sync);
- how far each parameter moved between the first and the last step;
- reentrant activation checkpoints whose inputs do not require grad.

Device values are read to the host once per :data:`READ_EVERY` steps (one transfer), never per
step. The dynamics checks (``tw13x``) read :class:`WatchResult` only, so they run the same on a
Task and on a script.
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch import nn
from torch.overrides import TorchFunctionMode

from torchwise.doctor.record import LOG_FUNCTIONS, LOSS_FUNCTIONS, StepRecorder, loss_call
from torchwise.utils.nonfinite import tensors_in

READ_EVERY = 25  # steps between two host reads of the on-device records
MIN_DYNAMICS_STEPS = 20  # fewer optimizer steps than this: the dynamics checks are skipped

_RELU: dict[Callable, str] = {F.relu: "relu", torch.relu: "relu", torch.relu_: "relu", torch.Tensor.relu: "relu",
                               torch.Tensor.relu_: "relu", F.relu_: "relu"}
_SQUASH: dict[Callable, str] = {torch.sigmoid: "sigmoid", torch.Tensor.sigmoid: "sigmoid", F.sigmoid: "sigmoid",
                                torch.tanh: "tanh", torch.Tensor.tanh: "tanh", F.tanh: "tanh"}
_CLASS_LOSSES: dict[Callable, str] = {F.cross_entropy: "cross_entropy", F.nll_loss: "nll_loss"}
_DELTA_LAYERS = (nn.Linear, nn.modules.conv._ConvNd)  # layers whose output gradient is watched (TW130)
_SKIP_DIRS = tuple(os.path.dirname(m.__file__) + os.sep for m in (torch,) if m.__file__)
_OWN_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep


def user_frame(inside_own: bool = False) -> str:
    """``file.py:LINE`` of the innermost caller outside torch and torchwise ("" if none).

    ``inside_own``: only a caller *inside* torchwise's own call (the model's forward run by the
    doctor's steps), never the code that called the doctor.
    """
    frame = sys._getframe(1)
    left_own = False
    while frame is not None:
        path = frame.f_code.co_filename
        own = path.startswith(_OWN_DIR)
        if own and left_own and inside_own:
            return ""
        left_own = left_own or not own
        if not own and not path.startswith(_SKIP_DIRS) and not path.startswith("<"):
            rel = os.path.relpath(path)
            return f"{path if rel.startswith('..') else rel}:{frame.f_lineno}"
        frame = frame.f_back
    return ""


def user_frame_of(tb: Any) -> str:
    """``file.py:LINE`` of the innermost traceback entry outside torch and torchwise ("" if none)."""
    found = ""
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename
        if not path.startswith(_SKIP_DIRS + (_OWN_DIR,)) and not path.startswith("<") and "runpy" not in path:
            rel = os.path.relpath(path)
            found = f"{path if rel.startswith('..') else rel}:{tb.tb_lineno}"
        tb = tb.tb_next
    return found


@dataclass
class ActivationStats:
    """One ReLU/sigmoid/tanh call site: module path, function, how often it ran, what it saw."""

    key: str
    func: str
    module: str
    line: str
    calls: int = 0
    units: int = 0
    alive: torch.Tensor | None = None  # relu: unit was > 0 at least once (device bool)
    saturated_sum: torch.Tensor | None = None  # sigmoid/tanh: sum of saturated shares (device)
    is_output: bool = False  # the model returns it (a classifier's final sigmoid): not a hidden unit
    is_module: bool = True  # called by an activation module (nn.ReLU ...), not functionally in a forward
    dead_units: int | None = None  # filled at read time
    saturated_share: float | None = None


@dataclass
class WatchResult:
    """What the watch saw, on the host. Lists are per optimizer step unless said otherwise."""

    steps: int = 0
    losses: list[float] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)  # in forward (depth) order
    param_shapes: list[tuple[int, ...]] = field(default_factory=list)
    param_kinds: list[str] = field(default_factory=list)  # owning module's class name
    grad_norms: list[list[float]] = field(default_factory=list)  # step -> per parameter
    weight_norms: list[float] = field(default_factory=list)  # per parameter, at the start
    moved: list[float] = field(default_factory=list)  # per parameter: ||w_end - w_start||
    lrs: list[float | None] = field(default_factory=list)  # per parameter: its group's lr (None: not in an optimizer)
    group_of: list[int | None] = field(default_factory=list)
    requires_grad: list[bool] = field(default_factory=list)
    activations: list[ActivationStats] = field(default_factory=list)
    activation_watched_steps: int = 0
    bn_single: list[tuple[str, tuple[int, ...], int, str]] = field(default_factory=list)  # (module, shape, step, line)
    checkpoint_no_grad: list[tuple[str, str, int]] = field(default_factory=list)  # (function, line, step)
    label_problems: list[dict[str, Any]] = field(default_factory=list)
    distinct_batches: int | None = None  # steps within the first pass over the data (None: unknown)
    batches_repeat: bool = False  # the same batch every step (doctor(batch=...))
    thread_timing: dict[str, Any] | None = None
    backward_line: str = ""  # script mode: where loss.backward() is called
    target_in_input: list[float] = field(default_factory=list)  # per watched loss call: share of targets equal to the input
    # the gradient reaching each Linear/conv layer's output (the backpropagated signal), per watched
    # backward: RMS over its elements, layers in forward order (name, values over the watched steps)
    output_grad_layers: list[str] = field(default_factory=list)
    output_grad_rms: list[list[float]] = field(default_factory=list)


class _WatchMode(TorchFunctionMode):
    def __init__(self, watch: "Watch") -> None:
        super().__init__()
        self.watch = watch

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        w = self.watch
        if w.paused:
            return func(*args, **kwargs)
        if w.loss_calls is not None and func in LOSS_FUNCTIONS and len(w.loss_calls) < 16 and torch.is_grad_enabled():
            try:
                call = loss_call(func, args, kwargs, user_frame(w.inside_own))
                if call is not None and not any(c.func == call.func and c.line == call.line for c in w.loss_calls):
                    w.loss_calls.append(call)  # one call per loss and line (accumulation repeats them)
            except Exception:
                pass
        if w.log_flags is not None and func in LOG_FUNCTIONS and args and isinstance(args[0], torch.Tensor) \
                and args[0].is_floating_point() and len(w.log_flags) < 64:
            try:  # on the device, no sync: read only when the step turns out non-finite
                x = args[0].detach()
                w.log_flags.append((LOG_FUNCTIONS[func], w.stack_name(), (x == 0).sum(), (x < 0).sum(), x.numel(),
                                    user_frame(w.inside_own)))
            except Exception:
                pass
        if (w.labels_on or w.activations_on) and func in _CLASS_LOSSES and len(args) >= 2:
            try:  # before the call: a bad label makes it raise
                w._labels(_CLASS_LOSSES[func], args[0], args[1], kwargs.get("ignore_index", -100))
            except Exception:  # watching must never break the user's step
                pass
        out = func(*args, **kwargs)
        if w.activations_on and (func in _RELU or func in _SQUASH) and isinstance(out, torch.Tensor):
            try:
                w._activation(_RELU.get(func) or _SQUASH[func], out)
            except Exception:
                pass
        return out


class Watch:
    """Collects the per-step records; ``attach()`` installs the global hooks, ``close()`` removes them."""

    def __init__(self, *, labels: bool = False, inside_own: bool = False) -> None:
        self.result = WatchResult()
        self.labels_on = labels
        self.activations_on = False
        self.inside_own = inside_own  # Task mode: lines only from the model's own code
        self._stack: list[nn.Module] = []
        self._names: dict[int, str] = {}
        self._roots: list[nn.Module] = []
        self._occurrence: dict[tuple[int, str], int] = {}
        self._pass_outputs: dict[int, tuple[torch.Tensor, ActivationStats]] = {}
        self._acts: dict[str, ActivationStats] = {}
        self._order: list[nn.Module] = []
        self._seen: set[int] = set()
        self._params: list[torch.Tensor] | None = None
        self._start: list[torch.Tensor] | None = None
        self._pending_norms: list[torch.Tensor] = []
        self._pending_losses: list[torch.Tensor] = []
        self._label_pending: list[tuple[int, str, torch.Tensor, int]] = []
        self._handles: list[Any] = []
        self._mode: _WatchMode | None = None
        self._ckpt_original: Any = None
        self.step_index = 0
        self._root_input: torch.Tensor | None = None
        self._leak_pending: list[torch.Tensor] = []
        self._delta_index: dict[int, int] = {}  # module id -> index in result.output_grad_layers
        self._delta_sums: dict[int, list[Any]] = {}  # index -> [sum of squares (device), elements] this backward
        self._delta_pending: list[tuple[int, torch.Tensor]] = []
        # script mode: the evidence of the Task-mode checks (see torchwise.doctor.record)
        self.paused = False  # the doctor's own replays: not watched
        self.recorder: StepRecorder | None = None  # module calls and conv -> BatchNorm pairs
        self.loss_calls: list[Any] | None = None  # LossCall of each loss function call, while not None
        self.log_flags: list[tuple[str, str, torch.Tensor, torch.Tensor, int, str]] | None = None
        self.on_root_pass: Callable[[nn.Module, tuple], None] | None = None  # a model's forward starts
        self.on_root_done: Callable[[nn.Module, Any], None] | None = None  # ... and returns

    # -- hooks ---------------------------------------------------------------------------------
    def attach(self, mode: bool = True) -> "Watch":
        """Install the hooks; ``mode=False`` leaves the function mode off until :meth:`watching`."""
        from torch.nn.modules import module as module_mod

        self._handles = [
            module_mod.register_module_forward_pre_hook(self._pre),
            module_mod.register_module_forward_hook(self._post),
        ]
        if mode:
            self._mode = _WatchMode(self)
            self._mode.__enter__()
        self._patch_checkpoint()
        return self

    def watching(self, on: bool) -> None:
        """Task mode: the function mode (activations, leak check) only on the watched steps, so
        the plain steps run (and are timed) without it."""
        self.activations_on = on
        if on and self._mode is None:
            self._mode = _WatchMode(self)
            self._mode.__enter__()
        elif not on and self._mode is not None:
            self._mode.__exit__(None, None, None)
            self._mode = None

    def close(self) -> None:
        for h in self._handles:
            h.remove()
        self._handles = []
        if self._mode is not None:
            try:
                self._mode.__exit__(None, None, None)
            except Exception:
                pass
            self._mode = None
        self._unpatch_checkpoint()

    def _name(self, module: nn.Module) -> str:
        name = self._names.get(id(module))
        if name is None:
            root = self._stack[0] if self._stack else module
            for n, m in root.named_modules():
                self._names.setdefault(id(m), n)
            name = self._names.get(id(module), type(module).__name__)
        return name or type(module).__name__

    def stack_name(self) -> str:
        """The name of the innermost module running now ("" outside any)."""
        return self._name(self._stack[-1]) if self._stack else ""

    def _pre(self, module: nn.Module, args: tuple) -> None:
        if self.paused:
            return
        if not self._stack:
            if self._stack_reset_for(module):
                if args and isinstance(args[0], torch.Tensor):
                    self._root_input = args[0]
                if self.on_root_pass is not None:
                    self.on_root_pass(module, args)
        self._stack.append(module)
        if self.recorder is not None and torch.is_grad_enabled():
            self.recorder.pre(module, args, self._name(module))
        if id(module) not in self._seen and any(True for _ in module.parameters(recurse=False)):
            self._seen.add(id(module))
            self._order.append(module)
        if isinstance(module, nn.modules.batchnorm._BatchNorm) and module.training and args:
            x = args[0]
            if isinstance(x, torch.Tensor) and x.dim() >= 2 and x.shape[0] == 1:
                res = self.result
                if len(res.bn_single) < 20:
                    res.bn_single.append((self._name(module), tuple(x.shape), self.step_index, user_frame(self.inside_own)))

    def _stack_reset_for(self, root: nn.Module) -> bool:
        """A new forward pass of a model (a root module holding parameters): True."""
        if any(True for _ in root.parameters()):
            self._occurrence.clear()
            self._pass_outputs.clear()
            if all(r is not root for r in self._roots):
                self._roots.append(root)
                for n, m in root.named_modules():
                    self._names[id(m)] = n
            return True
        return False

    def _post(self, module: nn.Module, args: tuple, output: Any) -> None:
        if self.paused:
            return
        if self.recorder is not None and torch.is_grad_enabled():
            self.recorder.post(module, args, output, self._name(module))
        if self.activations_on and isinstance(module, _DELTA_LAYERS) and isinstance(output, torch.Tensor) and output.requires_grad:
            try:
                self._watch_output_grad(module, output)
            except Exception:  # watching must never break the user's step
                pass
        if self._stack and self._stack[-1] is module:
            self._stack.pop()
        elif module in self._stack:  # an exception skipped some posts
            del self._stack[self._stack.index(module):]
        if not self._stack and self.on_root_done is not None and any(r is module for r in self._roots):
            self.on_root_done(module, output)
        if not self._stack and self._pass_outputs:
            for t in tensors_in(output, floating_only=False):
                hit = self._pass_outputs.get(id(t))
                if hit is not None and hit[0] is t:
                    hit[1].is_output = True

    def reset_stack(self) -> None:
        self._stack.clear()

    def _watch_output_grad(self, module: nn.Module, output: torch.Tensor) -> None:
        """A tensor hook on a Linear/conv output: the sum of squares of the gradient reaching it."""
        i = self._delta_index.get(id(module))
        if i is None:
            i = self._delta_index[id(module)] = len(self.result.output_grad_layers)
            self.result.output_grad_layers.append(self._name(module))
            self.result.output_grad_rms.append([])
        sums = self._delta_sums

        def hook(grad: torch.Tensor) -> None:
            sq = grad.detach().float().pow(2).sum()
            slot = sums.get(i)
            if slot is None:
                sums[i] = [sq, grad.numel()]
            else:
                slot[0] = slot[0] + sq
                slot[1] += grad.numel()

        output.register_hook(hook)

    # -- activations ---------------------------------------------------------------------------
    def _activation(self, func: str, out: torch.Tensor) -> None:
        if not out.is_floating_point() or out.dim() < 2 or not self._stack:
            return
        owner = self._stack[-1]
        k = self._occurrence.get((id(owner), func), 0) + 1
        self._occurrence[(id(owner), func)] = k
        module = self._name(owner)
        key = f"{module}|{func}|{k}"
        st = self._acts.get(key)
        if st is None:
            st = ActivationStats(key, func, module, user_frame(self.inside_own),
                                 is_module=isinstance(owner, (nn.ReLU, nn.Sigmoid, nn.Tanh)))
            self._acts[key] = st
        y = out.detach()
        st.calls += 1
        if func == "relu":
            unit_dim = y.dim() - 1 if y.dim() == 3 else 1
            alive = (y > 0).transpose(0, unit_dim).reshape(y.shape[unit_dim], -1).any(dim=1)
            if st.alive is None or st.alive.shape != alive.shape:
                st.alive = alive
            else:
                st.alive |= alive
            st.units = int(alive.shape[0])
        else:
            sat = (y.abs() > 0.99) if func == "tanh" else ((y < 0.01) | (y > 0.99))
            share = sat.float().mean()
            st.saturated_sum = share if st.saturated_sum is None else st.saturated_sum + share
            st.units = int(y.shape[-1])
        self._pass_outputs[id(out)] = (out, st)

    # -- labels --------------------------------------------------------------------------------
    def _labels(self, func: str, inp: Any, target: Any, ignore: int | None) -> None:
        from torchwise.utils.labels import is_class_target

        if not isinstance(inp, torch.Tensor) or not isinstance(target, torch.Tensor) or not is_class_target(inp, target):
            return
        self._leak(target)
        if not self.labels_on:
            return
        width = int(inp.shape[1] if inp.dim() >= 2 else inp.shape[0])
        t = target.detach().reshape(-1)
        bad = (t < 0) | (t >= width)
        if ignore is not None:
            bad &= t != ignore
        if t.device.type == "cpu":
            self.note_bad_labels(self.step_index, func, t[bad], width, int(t.numel()), user_frame(self.inside_own))
        elif len(self._label_pending) < 64:
            self._label_pending.append((self.step_index, func, bad.sum(), width))

    def _leak(self, target: torch.Tensor) -> None:
        """Share of the targets readable from the model's input: equal token by token (an LM whose
        targets were not shifted), or one input column equal to the labels."""
        x = self._root_input
        if x is None or x.device != target.device or len(self._leak_pending) >= 64:
            return
        t = target.detach()
        if not x.is_floating_point() and x.numel() == t.numel() and x.numel() > 1:
            self._leak_pending.append((x.reshape(-1) == t.reshape(-1)).float().mean())
        elif x.dim() == 2 and t.dim() == 1 and x.shape[0] == t.shape[0] and x.shape[0] > 1:
            varied = (t != t[0]).any()  # one label in the batch: any constant column would "match"
            self._leak_pending.append(((x == t[:, None].to(x.dtype)).all(0).any() & varied).float())

    def note_bad_labels(self, step: int, func: str, bad_values: torch.Tensor, width: int, total: int, line: str = "") -> None:
        if bad_values.numel() and len(self.result.label_problems) < 20:
            self.result.label_problems.append({
                "step": step, "loss": func, "output_width": width, "bad_count": int(bad_values.numel()),
                "bad_values": sorted({int(v) for v in bad_values.tolist()})[:10], "targets": total, "line": line,
            })

    # -- steps ---------------------------------------------------------------------------------
    def track(self, params: list[torch.Tensor], optimizers: list[torch.optim.Optimizer]) -> None:
        """Fix the parameters to watch (before the first update) and snapshot them."""
        if self._params is not None:
            return
        order = {id(p): i for i, m in enumerate(self._order) for p in m.parameters(recurse=False)}
        params = sorted(dict.fromkeys(params), key=lambda p: order.get(id(p), len(order)))
        names: dict[int, tuple[str, str]] = {}
        for root in self._roots:
            for mn, m in root.named_modules():
                for pn, p in m.named_parameters(recurse=False):
                    names.setdefault(id(p), (f"{mn}.{pn}" if mn else pn, type(m).__name__))
        group: dict[int, tuple[int, float]] = {}
        for opt in optimizers:
            for gi, g in enumerate(opt.param_groups):
                for p in g["params"]:
                    group.setdefault(id(p), (gi, float(g.get("lr", 0.0))))
        self._params = params
        self._optimizers = optimizers
        res = self.result
        res.param_names = [names.get(id(p), ("?", "?"))[0] for p in params]
        res.param_kinds = [names.get(id(p), ("?", "?"))[1] for p in params]
        res.param_shapes = [tuple(p.shape) for p in params]
        res.requires_grad = [p.requires_grad for p in params]
        res.group_of = [group[id(p)][0] if id(p) in group else None for p in params]
        with torch.no_grad():
            self._start = [p.detach().clone() for p in params]
            res.weight_norms = host_floats([p.float().norm() for p in self._start])

    def after_backward(self, loss: torch.Tensor | None) -> None:
        """Note the loss and every watched parameter's gradient norm (on the device)."""
        if self._delta_sums and len(self._delta_pending) < 100_000:
            self._delta_pending.extend((i, (sq / max(n, 1)).sqrt()) for i, (sq, n) in self._delta_sums.items())
        self._delta_sums.clear()
        if loss is not None:
            self._pending_losses.append(loss.detach().float().reshape(-1)[:1].reshape(()))
        if self._params:
            grads = [p.grad for p in self._params]
            present = [g for g in grads if g is not None]
            if present:
                norms = iter(torch._foreach_norm([(g.coalesce()._values() if g.is_sparse else g).float() for g in present]))
                zero = torch.zeros((), device=present[0].device)
                if all(g.device == zero.device for g in present):  # model parallel: not watched
                    self._pending_norms.append(torch.stack([next(norms) if g is not None else zero for g in grads]))

    def after_step(self) -> None:
        self.step_index += 1
        self.result.steps = self.step_index
        if self.step_index % READ_EVERY == 0:
            self.read()

    def read(self) -> None:
        """Bring the pending device records to the host (one transfer each)."""
        res = self.result
        if self._pending_losses:
            res.losses.extend(float(v) for v in torch.stack(self._pending_losses).cpu())
            self._pending_losses = []
        if self._pending_norms:
            res.grad_norms.extend(torch.stack(self._pending_norms).cpu().tolist())
            self._pending_norms = []
        if self._delta_pending:
            try:
                values = torch.stack([v for _, v in self._delta_pending]).cpu().tolist()
            except RuntimeError:  # model parallel: values on several devices, not compared
                values = []
            for (i, _), v in zip(self._delta_pending, values):
                res.output_grad_rms[i].append(v)
            self._delta_pending = []
        if self._leak_pending:
            res.target_in_input.extend(torch.stack(self._leak_pending).cpu().tolist())
            self._leak_pending = []
        if self._label_pending:
            counts = torch.stack([c.cpu() for _, _, c, _ in self._label_pending]).tolist()
            for (step, func, _, width), n in zip(self._label_pending, counts):
                if n:
                    res.label_problems.append({"step": step, "loss": func, "output_width": width, "bad_count": int(n), "bad_values": [], "line": ""})
            self._label_pending = []

    def finish(self) -> WatchResult:
        """Final read: movement of every parameter, activation summaries, learning rates."""
        self.read()
        res = self.result
        if self._params and self._start is not None:
            with torch.no_grad():
                res.moved = host_floats([(p.detach().float() - s.float()).norm() for p, s in zip(self._params, self._start)])
            lr_of: dict[int, float] = {}
            for opt in self._optimizers:
                for g in opt.param_groups:
                    for p in g["params"]:
                        lr_of.setdefault(id(p), float(g.get("lr", 0.0)))
            res.lrs = [lr_of.get(id(p)) for p in self._params]
        acts = list(self._acts.values())
        for st in acts:
            if st.alive is not None:
                st.dead_units = int((~st.alive).sum())
            if st.saturated_sum is not None and st.calls:
                st.saturated_share = float(st.saturated_sum) / st.calls
            st.alive = None
            st.saturated_sum = None
        res.activations = acts
        return res

    # -- reentrant checkpoint ------------------------------------------------------------------
    def _patch_checkpoint(self) -> None:
        try:
            from torch.utils.checkpoint import CheckpointFunction
        except ImportError:
            return
        original = CheckpointFunction.__dict__.get("apply")
        watch = self

        def apply(cls, function, preserve, *args):
            if torch.is_grad_enabled():
                tensors = [a for a in args if isinstance(a, torch.Tensor)]
                if tensors and not any(t.requires_grad for t in tensors):
                    res = watch.result
                    if len(res.checkpoint_no_grad) < 20:
                        name = getattr(function, "__qualname__", None) or type(function).__name__
                        res.checkpoint_no_grad.append((name, user_frame(watch.inside_own), watch.step_index))
            return super(CheckpointFunction, cls).apply(function, preserve, *args)

        self._ckpt_original = (CheckpointFunction, original)
        CheckpointFunction.apply = classmethod(apply)

    def _unpatch_checkpoint(self) -> None:
        if self._ckpt_original is None:
            return
        cls, original = self._ckpt_original
        if original is None:
            try:
                del cls.apply
            except AttributeError:
                pass
        else:
            cls.apply = original
        self._ckpt_original = None


def host_floats(values: list[torch.Tensor]) -> list[float]:
    """0-d tensors to floats with one transfer per device (meta tensors give NaN)."""
    out = [math.nan] * len(values)
    by_device: dict[torch.device, list[int]] = {}
    for i, v in enumerate(values):
        if v.device.type != "meta":
            by_device.setdefault(v.device, []).append(i)
    for idx in by_device.values():
        for i, x in zip(idx, torch.stack([values[i] for i in idx]).cpu().tolist()):
            out[i] = float(x)
    return out


def median(values: list[float]) -> float:
    vals = sorted(v for v in values if math.isfinite(v))
    if not vals:
        return float("nan")
    mid = len(vals) // 2
    return vals[mid] if len(vals) % 2 else 0.5 * (vals[mid - 1] + vals[mid])


__all__ = ["Watch", "WatchResult", "ActivationStats", "READ_EVERY", "MIN_DYNAMICS_STEPS", "user_frame", "user_frame_of", "median"]
