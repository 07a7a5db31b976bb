"""What the watch saw, on the host: the record every dynamics check reads (see :mod:`.watch`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from torchwise.doctor.activations import ActivationStats
from torchwise.doctor.batch_order import BatchOrder
from torchwise.doctor.objectives import Objective

__all__ = ["WatchResult"]


@dataclass
class WatchResult:
    """What the watch saw, on the host. Lists are per optimizer step unless said otherwise."""

    steps: int = 0
    losses: list[float] = field(default_factory=list)
    param_names: list[str] = field(default_factory=list)  # in forward (depth) order
    param_shapes: list[tuple[int, ...]] = field(default_factory=list)
    param_kinds: list[str] = field(default_factory=list)  # owning module's class name
    param_models: list[int] = field(default_factory=list)  # which model (root module, in order of first forward) holds it; -1: none
    grad_norms: list[list[float]] = field(default_factory=list)  # step -> per parameter
    weight_norms: list[float] = field(default_factory=list)  # per parameter, at the start
    moved: list[float] = field(default_factory=list)  # per parameter: ||w_end - w_start||
    lrs: list[float | None] = field(default_factory=list)  # per parameter: its group's lr at the end (None: not in an optimizer)
    lr_history: list[tuple[int, int, list[float]]] = field(default_factory=list)  # script mode: (optimizer, step, each group's lr) before its steps
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
    # backward: its norm per sample (sqrt of the sum of squares over the batch, divided by the batch size:
    # comparable between a conv map and a Linear output), layers in forward order (name, values per watched step)
    output_grad_layers: list[str] = field(default_factory=list)
    output_grad_rms: list[list[float]] = field(default_factory=list)
    output_grad_models: list[int] = field(default_factory=list)  # the model of each of those layers (as param_models)
    objectives: list[Objective] = field(default_factory=list)  # one loss series per objective; ``losses`` is the main one's
    update_ratios: list[list[float]] = field(default_factory=list)  # per parameter: ||step update|| / ||w|| of sampled steps
    init_layers: list[dict[str, Any]] = field(default_factory=list)  # Linear/conv scale at the first step (init_scale.py)
    batch_order: BatchOrder | None = None  # what each training batch held (batch_order.py)
    retained: dict[str, Any] | None = None  # a graph carried across steps (retained.py)
    not_cleared: dict[str, Any] | None = None  # script mode: parameters whose gradient was never cleared (cleared.py)
    hand_updated: bool = False  # script mode: weights changed by hand after backward (no torch.optim step)
    never_updated: bool = False  # script mode: backwards ran, no optimizer stepped and no weight changed
    token_input: bool = False  # the model's input is integer (tokens), seen at a class loss
