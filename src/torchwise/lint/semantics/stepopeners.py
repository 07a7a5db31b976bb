"""Methods that open a training step without finishing it (TW207): a model's ``process(images,
masks)`` that zeroes its optimizers' gradients, computes the step's losses and hands them back
for a ``backward()`` that its caller runs (``outputs, gen_loss, dis_loss, logs =
self.model.process(...)``; ``self.model.backward(gen_loss, dis_loss)``). Every call is a training
step, so what it reads on the host it reads every step: its ``.item()`` of its own losses for a
log list is reported where it is (not at its callers: one finding per read), like a loss
function's."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.argreads import opens_step_text
from torchwise.lint.semantics.hostreads import own_loss_reads


def opens_step(ctx: Context, func: AST) -> bool:
    """``func`` zeroes gradients (``self.gen_optimizer.zero_grad()``), runs no backward pass of
    its own, and returns a loss (a name with "loss" in it, alone or in a tuple)."""
    return func.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and opens_step_text(func)


def step_opener_reads(ctx: Context, func: AST) -> list[ast.Call]:
    """The ``.item()`` reads of its own losses in a method of a class that opens a training step."""
    if ctx.parent(func).__class__ is not ast.ClassDef or not opens_step(ctx, func):
        return []
    return own_loss_reads(ctx, func)


__all__ = ["opens_step", "step_opener_reads"]
