"""What the watch does at each class-loss call: labels out of range, and targets readable from
the input (the evidence of TW106 and TW136), as a mixin of :class:`~torchwise.doctor.watch.Watch`;
and the watch's ``TorchFunctionMode``, which sees every torch call while it is on."""

from __future__ import annotations

from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from torchwise.doctor.activations import record_activation
from torchwise.doctor.frames import user_frame
from torchwise.doctor.record import LOG_FUNCTIONS, LOSS_FUNCTIONS, loss_call

__all__ = ["LabelWatch", "WatchMode", "SUPERVISED_LOSSES"]

_RELU: dict[Callable, str] = {F.relu: "relu", torch.relu: "relu", torch.relu_: "relu", torch.Tensor.relu: "relu",
                               torch.Tensor.relu_: "relu", F.relu_: "relu"}
# (user code calls F.sigmoid and F.tanh as well as torch's: the watch must know them)
_SQUASH: dict[Callable, str] = {torch.sigmoid: "sigmoid", torch.Tensor.sigmoid: "sigmoid", F.sigmoid: "sigmoid",
                                torch.tanh: "tanh", torch.Tensor.tanh: "tanh", F.tanh: "tanh"}
_CLASS_LOSSES: dict[Callable, str] = {F.cross_entropy: "cross_entropy", F.nll_loss: "nll_loss"}
_REGRESSION_LOSSES = {F.mse_loss, F.l1_loss, F.smooth_l1_loss, F.huber_loss}
_BINARY_LOSSES = {F.binary_cross_entropy, F.binary_cross_entropy_with_logits}
# losses that compare a model's output with a target: a model whose output reaches one directly is
# a supervised model (its no-grad passes over data are evaluations, TW139); a GAN's generator is not
SUPERVISED_LOSSES = set(LOSS_FUNCTIONS) | {
    F.binary_cross_entropy, F.binary_cross_entropy_with_logits, F.kl_div, F.poisson_nll_loss, F.gaussian_nll_loss,
    F.soft_margin_loss, F.multilabel_soft_margin_loss, F.multilabel_margin_loss, F.multi_margin_loss,
    F.margin_ranking_loss, F.hinge_embedding_loss, F.cosine_embedding_loss, F.triplet_margin_loss, F.ctc_loss,
}


class LabelWatch:
    """The label checks of :class:`~torchwise.doctor.watch.Watch` (its attributes are the watch's)."""

    result: Any
    labels_on: bool
    order_on: bool
    step_index: int
    inside_own: bool
    _root_input: torch.Tensor | None
    _leak_pending: list[torch.Tensor]
    _label_pending: list[tuple[int, str, torch.Tensor, int]]
    order: Any

    def _labels(self, func: str, inp: Any, target: Any, ignore: int | None) -> None:
        from torchwise.utils.labels import is_class_target

        if not isinstance(inp, torch.Tensor) or not isinstance(target, torch.Tensor) or not is_class_target(inp, target):
            return
        self._leak(target)
        width = int(inp.shape[1] if inp.dim() >= 2 else inp.shape[0])
        if self.order_on and torch.is_grad_enabled():
            self.order.classes(self.step_index, target, width)
        if not self.labels_on:
            return
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
        self.result.token_input = not x.is_floating_point()
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


class WatchMode(TorchFunctionMode):
    def __init__(self, watch: Any) -> None:
        super().__init__()
        self.watch = watch

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        w = self.watch
        if w.paused:
            return func(*args, **kwargs)
        if w.on_loss_input is not None and func in SUPERVISED_LOSSES and args and isinstance(args[0], torch.Tensor):
            try:
                w.on_loss_input(args[0])
            except Exception:
                pass
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
        if w.order_on and len(args) >= 2 and torch.is_grad_enabled() and (func in _REGRESSION_LOSSES or func in _BINARY_LOSSES):
            try:
                if func in _BINARY_LOSSES:
                    w.order.binary(w.step_index, args[1])
                else:
                    w.order.regression(w.step_index, args[1])
            except Exception:
                pass
        out = func(*args, **kwargs)
        if w.activations_on and (func in _RELU or func in _SQUASH) and isinstance(out, torch.Tensor):
            try:
                record_activation(w, _RELU.get(func) or _SQUASH[func], out)
            except Exception:
                pass
        if w.retained_on and not w._stack and isinstance(out, torch.Tensor) and out.requires_grad:
            try:
                w.retained.op(func, args, out, w.step_index, lambda: user_frame(w.inside_own))
            except Exception:
                pass
        return out


