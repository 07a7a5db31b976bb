"""Results a training step computes on the host by design (TW207): a loss or metric call whose
inputs the function moved to the CPU itself (``embeds.to(cpu_device)``) or whose first input is a
model's output copied there (``preds = model(x).cpu()`` for a CTC loss on the CPU) - reading them
waits for no accelerator."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.devices import device_move_target, is_cpu_device, is_device_tensor


def from_host_inputs(ctx: Context, subject: AST | None, use: AST) -> bool:
    """A name bound from a call whose arguments are all names this scope moved to the CPU
    (``embeds_loss = embeds.view(n, m, -1).to(loss_device)``, ``loss_device = torch.device("cpu")``;
    ``loss, eer = model.loss(embeds_loss)``), or whose first argument is a model's output copied
    to the host and none of whose others is evidently a device tensor (``preds = model(x).cpu()``;
    ``loss = criterion(preds, text, sizes, lengths)``): its results live on the host."""
    if subject.__class__ is not ast.Name:
        return False
    b = ctx.binding_at(subject.id, use)
    value = b.value if b is not None and b.kind in ("assign", "unpack") else None
    if value.__class__ is not ast.Call or not value.args or value.keywords:
        return False
    pulled = 0
    for arg in value.args:
        a = ctx.binding_at(arg.id, value) if arg.__class__ is ast.Name else None
        moved = a.value if a is not None and a.kind == "assign" else None
        target = device_move_target(ctx, moved) if moved.__class__ is ast.Call else None
        if target is not None and target is not True and is_cpu_device(ctx, target, moved) or _pulled(moved):
            pulled += 1
        elif is_device_tensor(ctx, arg, value):
            return False
    return pulled == len(value.args) or pulled > 0 and _pulled(_binding_value(ctx, value.args[0], value))


def _binding_value(ctx: Context, arg: AST, use: AST) -> AST | None:
    b = ctx.binding_at(arg.id, use) if arg.__class__ is ast.Name else None
    return b.value if b is not None and b.kind == "assign" else None


def _pulled(value: AST | None) -> bool:
    """``preds = model(x).cpu()``: a model's output copied to the host (the CTC loss then runs there)."""
    return value.__class__ is ast.Call and value.func.__class__ is ast.Attribute and value.func.attr == "cpu" \
        and not value.args and value.func.value.__class__ is ast.Call
