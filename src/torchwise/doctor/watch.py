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
- reentrant activation checkpoints whose inputs do not require grad;
- one loss series per objective (:mod:`~torchwise.doctor.objectives`), the update/weight ratio of
  sampled steps (:mod:`~torchwise.doctor.updates`), each layer's scale at the first step
  (:mod:`~torchwise.doctor.init_scale`), what each batch holds (:mod:`~torchwise.doctor.batch_order`),
  graphs carried across steps (:mod:`~torchwise.doctor.retained`) and, in script mode, whether
  gradients were cleared between steps (:mod:`~torchwise.doctor.cleared`).

Device values are read to the host once per :data:`READ_EVERY` steps (one transfer), never per
step. The dynamics checks (``tw13x``) read :class:`WatchResult` only, so they run the same on a
Task and on a script.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

from torchwise.doctor import checkpoint_watch
from torchwise.doctor.activations import ActivationStats, summarise
from torchwise.doctor.batch_order import BatchOrder
from torchwise.doctor.cleared import ClearedGrads
from torchwise.doctor.frames import _OWN_DIR, _SKIP_DIRS, grad_norm_vector, host_floats, median, user_frame, user_frame_of  # noqa: F401 (re-exported)
from torchwise.doctor.init_scale import LAYERS, InitScale
from torchwise.doctor.objectives import Objective, Objectives
from torchwise.doctor.record import StepRecorder
from torchwise.doctor.retained import Retained
from torchwise.doctor.updates import UpdateSampler
from torchwise.doctor.watch_labels import LabelWatch, WatchMode
from torchwise.doctor.watch_result import WatchResult
from torchwise.utils.nonfinite import tensors_in

_WatchMode = WatchMode  # the name torchwise.watch (issue 20) imports

READ_EVERY = 25  # steps between two host reads of the on-device records
MIN_DYNAMICS_STEPS = 20  # fewer optimizer steps than this: the dynamics checks are skipped

_DELTA_LAYERS = (nn.Linear, nn.modules.conv._ConvNd)  # layers whose output gradient is watched (TW130)


class Watch(LabelWatch):
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
        self._mode: WatchMode | None = None
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
        self.on_loss_input: Callable[[torch.Tensor], None] | None = None  # a loss function gets this input
        # root-cause evidence (objectives.py, updates.py, init_scale.py, batch_order.py, retained.py, cleared.py)
        self.objectives = Objectives()
        self.updates = UpdateSampler()
        self.init = InitScale()
        self.init_on = True  # the first step's forward passes
        self.order = BatchOrder()
        self.order_on = labels  # script mode: every step's first loss
        self.retained = Retained()
        self.retained_on = False  # script mode: results carried across steps
        self.cleared = ClearedGrads()
        self._optimizers: list[Any] = []
        self._latest: list[torch.Tensor | None] = []  # script mode: each parameter's last gradient norm

    # -- hooks ---------------------------------------------------------------------------------
    def attach(self, mode: bool = True) -> "Watch":
        """Install the hooks; ``mode=False`` leaves the function mode off until :meth:`watching`."""
        from torch.nn.modules import module as module_mod

        self._handles = [
            module_mod.register_module_forward_pre_hook(self._pre),
            module_mod.register_module_forward_hook(self._post),
        ]
        if mode:
            self._mode = WatchMode(self)
            self._mode.__enter__()
        self._ckpt_original = checkpoint_watch.patch(self)
        return self

    def watching(self, on: bool) -> None:
        """Task mode: the function mode (activations, leak check) only on the watched steps, so
        the plain steps run (and are timed) without it."""
        self.activations_on = on
        if on and self._mode is None:
            self._mode = WatchMode(self)
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
        checkpoint_watch.unpatch(self._ckpt_original)
        self._ckpt_original = None

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
        if self.init_on and isinstance(module, LAYERS) and torch.is_grad_enabled():
            try:
                self.init.layer(self._name(module), module, args, output)
            except Exception:  # watching must never break the user's step
                pass
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
            root = self._stack[0] if self._stack else None
            self.result.output_grad_models.append(next((k for k, r in enumerate(self._roots) if r is root), -1))
        sums = self._delta_sums

        def hook(grad: torch.Tensor) -> None:
            sq = grad.detach().float().pow(2).sum()
            slot = sums.get(i)
            if slot is None:
                sums[i] = [sq, grad.shape[0] if grad.dim() else 1]
            else:
                slot[0] = slot[0] + sq
                slot[1] += grad.shape[0] if grad.dim() else 1

        output.register_hook(hook)

    # -- steps ---------------------------------------------------------------------------------
    def track(self, params: list[torch.Tensor], optimizers: list[torch.optim.Optimizer]) -> None:
        """Fix the parameters to watch (before the first update) and snapshot them."""
        if self._params is not None:
            return
        self._params, self._start = [], []
        self.track_more(params, optimizers)

    def track_more(self, params: list[torch.Tensor], optimizers: list[torch.optim.Optimizer] = ()) -> list[int]:
        """Watch these parameters too (another optimizer's, before its first step); their positions."""
        if self._params is None:
            self._params, self._start = [], []
        for opt in optimizers:
            if all(o is not opt for o in self._optimizers):
                self._optimizers.append(opt)
        known = {id(p): i for i, p in enumerate(self._params)}
        order = {id(p): i for i, m in enumerate(self._order) for p in m.parameters(recurse=False)}
        new = sorted((p for p in dict.fromkeys(params) if id(p) not in known), key=lambda p: order.get(id(p), len(order)))
        if new:
            names: dict[int, tuple[str, str, int]] = {}
            for r, root in enumerate(self._roots):
                for mn, m in root.named_modules():
                    for pn, p in m.named_parameters(recurse=False):
                        names.setdefault(id(p), (f"{mn}.{pn}" if mn else pn, type(m).__name__, r))
            group = {id(p): gi for opt in self._optimizers for gi, g in enumerate(opt.param_groups) for p in g["params"]}
            res = self.result
            res.param_names += [names.get(id(p), ("?", "?", -1))[0] for p in new]
            res.param_kinds += [names.get(id(p), ("?", "?", -1))[1] for p in new]
            res.param_models += [names.get(id(p), ("?", "?", -1))[2] for p in new]
            res.param_shapes += [tuple(p.shape) for p in new]
            res.requires_grad += [p.requires_grad for p in new]
            res.group_of += [group.get(id(p)) for p in new]
            with torch.no_grad():
                start = [p.detach().clone() for p in new]
            assert self._start is not None
            self._start += start
            res.weight_norms += host_floats([p.float().norm() for p in start])
            self._params += new
            self._latest += [None] * len(new)
        position = {id(p): i for i, p in enumerate(self._params)}
        if optimizers:  # parameters tracked before their optimizer first stepped (script mode): their groups now
            group = {id(p): gi for opt in optimizers for gi, g in enumerate(opt.param_groups) for p in g["params"]}
            for p in params:
                i = position.get(id(p))
                if i is not None and self.result.group_of[i] is None:
                    self.result.group_of[i] = group.get(id(p))
        return [position[id(p)] for p in params if id(p) in position]

    def after_backward(self, loss: torch.Tensor | None) -> None:
        """Note the loss and every watched parameter's gradient norm (on the device)."""
        self._close_output_grads()
        if loss is not None:
            self._pending_losses.append(loss.detach().float().reshape(-1)[:1].reshape(()))
        if self._params:
            norms = grad_norm_vector(self._params)
            if norms is not None:  # None: no gradient, or model parallel (not watched)
                self._pending_norms.append(norms)

    def _close_output_grads(self) -> None:
        if self._delta_sums and len(self._delta_pending) < 100_000:
            self._delta_pending.extend((i, (sq / max(n, 1)).sqrt()) for i, (sq, n) in self._delta_sums.items())
        self._delta_sums.clear()

    def note_grads(self, positions: list[int]) -> None:
        """Script mode, before an optimizer step: the gradient norms of its parameters."""
        if not self._params or not positions:
            return
        norms = grad_norm_vector([self._params[i] for i in positions])
        if norms is not None:
            for j, i in enumerate(positions):
                self._latest[i] = norms[j]

    def push_grads(self) -> None:
        """Script mode, once per round of steps: one row of every parameter's latest gradient norm."""
        self._close_output_grads()
        present = [v for v in self._latest if v is not None]
        if not present or any(v.device != present[0].device for v in present):
            return
        zero = torch.zeros((), device=present[0].device)
        self._pending_norms.append(torch.stack([zero if v is None else v for v in self._latest]))

    def after_step(self) -> None:
        self.step_index += 1
        self.result.steps = self.step_index
        self.init_on = False
        if self.step_index % READ_EVERY == 0:
            self.read()

    def read(self) -> None:
        """Bring the pending device records to the host (one transfer each)."""
        res = self.result
        if self._pending_losses:
            res.losses.extend(float(v) for v in torch.stack(self._pending_losses).cpu())
            self._pending_losses = []
        if self._pending_norms:
            width = len(self._params or ())
            rows = [r if r.numel() == width else torch.cat([r, r.new_zeros(width - r.numel())]) for r in self._pending_norms]
            res.grad_norms.extend(torch.stack(rows).cpu().tolist())
            self._pending_norms = []
        for rec in (self.objectives, self.updates, self.init, self.order):
            rec.read()
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
        width = len(self._params or ())
        res.grad_norms = [r + [0.0] * (width - len(r)) for r in res.grad_norms]
        if self._params and self._start is not None:
            with torch.no_grad():
                res.moved = host_floats([(p.detach().float() - s.float()).norm() for p, s in zip(self._params, self._start)])
            lr_of: dict[int, float] = {}
            for opt in self._optimizers:
                for g in opt.param_groups:
                    for p in g["params"]:
                        lr_of.setdefault(id(p), float(g.get("lr", 0.0)))
            res.lrs = [lr_of.get(id(p)) for p in self._params]
            res.update_ratios = [self.updates.ratios.get(i, []) for i in range(len(self._params))]
        res.activations = summarise(list(self._acts.values()))
        res.objectives = self.objectives.items or [Objective("training loss", "training loss", 0 if self._optimizers else None,
                                                             [res.backward_line] if res.backward_line else [], res.losses, res.steps)]
        main = self.objectives.main()
        if main is not None:
            res.losses = main.losses
        res.init_layers = self.init.layers
        res.batch_order = self.order
        res.retained = self.retained.evidence()
        return res


__all__ = ["Watch", "WatchResult", "ActivationStats", "READ_EVERY", "MIN_DYNAMICS_STEPS", "user_frame", "user_frame_of", "median"]
