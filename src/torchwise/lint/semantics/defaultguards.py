"""Device guards that are always on (for TW403): ``if cuda:`` where ``cuda`` is a parameter of its
function that defaults to True and that no call passes (``def one_hot(idx, size, cuda=True)``,
called as ``one_hot(t, n)``)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, param_default
from torchwise.lint.semantics.fallback import device_flag_ifs


def only_default_guards(ctx: Context, node: ast.AST) -> bool:
    """Every device ``if`` around ``node`` tests a parameter that defaults to True and that no call
    passes (``def one_hot(idx, size, cuda=True): ... if cuda: v = v.cuda()``, called as
    ``one_hot(t, n)``): the guard is always on, whatever device the script chose."""
    ifs = device_flag_ifs(ctx, node, moves_too=True)
    return bool(ifs) and all(_always_true_parameter(ctx, i) for i in ifs)


def _always_true_parameter(ctx: Context, if_node: ast.AST) -> bool:
    test, func = if_node.test, ctx.function_of(if_node)
    if test.__class__ is not ast.Name or func is None:
        return False
    params = [*func.args.posonlyargs, *func.args.args]
    default = param_default(func.args, test.id)
    if default is None or default.__class__ is not ast.Constant or default.value is not True:
        return False
    index = [a.arg for a in params].index(test.id) if test.id in [a.arg for a in params] else None
    if index is not None and params and params[0].arg in ("self", "cls"):
        index -= 1
    calls = [c for c in ctx.calls_named(func.name) if c is not None]
    if not calls or any((index is not None and len(c.args) > index) or any(k.arg in (test.id, None) for k in c.keywords)
                        for c in calls):
        return False
    return not any(p != ctx.path and f"{func.name}(" in t and f"{test.id}=" in t for p, t in ctx.project.files)
