"""Evaluation functions whose model comes frozen from every caller (TW104): ``model.requires_grad_(False)``
then ``evaluate_coco(..., model)``. With no parameter requiring grad, the passes inside record no
graph: autograd is already off for them, ``no_grad`` would change nothing."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context


def _frozen_before(ctx: Context, name: str, call: ast.Call) -> bool:
    """``name.requires_grad_(False)`` earlier in the scope of ``call``, and no ``requires_grad_()``
    turning it back on there."""
    scope = ctx.scope_of(call)
    frozen = False
    for c in ctx.calls_named("requires_grad_"):
        func = c.func
        if func.__class__ is not ast.Attribute or func.value.__class__ is not ast.Name or func.value.id != name \
                or ctx.scope_of(c) is not scope:
            continue
        off = bool(c.args) and c.args[0].__class__ is ast.Constant and c.args[0].value is False
        if not off:
            return False
        frozen = frozen or c.lineno < call.lineno
    return frozen


def frozen_by_every_caller(ctx: Context, func: AST) -> bool:
    """Every call of ``func`` in the file hands it a module its caller froze with
    ``requires_grad_(False)`` (the function is called at least once)."""
    if "requires_grad_(False)" not in ctx.source:
        return False
    calls = ctx.calls_named(func.name)
    return bool(calls) and all(any(a.__class__ is ast.Name and _frozen_before(ctx, a.id, c)
                                   for a in [*c.args, *(k.value for k in c.keywords)]) for c in calls)


__all__ = ["frozen_by_every_caller"]
