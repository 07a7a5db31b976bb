"""Who calls an evaluation function, as TW104 reads it in one file: a function handed on as a value
(passed to an evaluator, returned) rather than called, and one this file calls only under no_grad."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context
from torchwise.lint.semantics.autograd import under_no_grad
from torchwise.lint.semantics.evalcallers import bare_live_call


def handed_over(ctx: Context, func: ast.AST) -> bool:
    """Never called in this file, but handed on as a value: passed as an argument
    (``inference_on_dataset(eval_fn, ...)``) or returned (``return eval_wrapper``)."""
    if ctx.calls_named(func.name):
        return False
    for name in ctx.nodes.get(ast.Name, ()):
        if name.id == func.name and name.ctx.__class__ is ast.Load:
            parent = ctx.parent(name)
            if parent.__class__ is ast.Return or (parent.__class__ is ast.Call and name is not parent.func) or (
                parent.__class__ is ast.keyword
            ):
                return True
    return False


def only_called_without_grad(ctx: Context, func: ast.AST) -> bool:
    """This file calls ``func`` under no_grad, and nowhere bare on a path that runs (``if
    args.evaluate: validate(...)`` beside ``with torch.no_grad(): validate(...)`` runs it bare)."""
    calls = ctx.calls_named(func.name)
    if not any(under_no_grad(ctx, c) for c in calls):
        return False
    return not any(bare_live_call(ctx, func, c) for c in calls if not under_no_grad(ctx, c))
