"""A worker count handed down from a command-line option (TW202): ``def get_loaders(dataset, ...,
num_workers=1)`` builds ``DataLoader(..., num_workers=num_workers)``, and every call of it in the
project passes ``num_workers=args.workers`` where the calling script declares ``-j/--workers``
with ``default=0`` - so the loaders load in the main process unless the user sets the option."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import caller_arguments
from torchwise.lint.semantics.optiondefaults import zero_by_default


def zero_through_callers(ctx: Context, value: AST) -> bool:
    """``value`` is a parameter of the module-level function around it, which the project calls
    (at least once, from another module too) and always with an option that is 0 by default, or
    with nothing where the parameter's own default is 0; at least one call passes such an option."""
    if value.__class__ is not ast.Name:
        return False
    func = ctx.function_of(value)
    if func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) or ctx.parent(func) is not ctx.tree:
        return False
    params = [*func.args.posonlyargs, *func.args.args]
    names = [a.arg for a in params]
    bound = ctx.binding_at(value.id, value)
    if value.id not in names or bound is None or bound.kind != "param":
        return False  # not a parameter, or reassigned before the loader
    index = names.index(value.id)
    defaults = [*[None] * (len(params) - len(func.args.defaults)), *func.args.defaults]
    default = defaults[index]
    calls = list(caller_arguments(ctx, func, value.id, elsewhere="importers", keep=lambda c: c.func.__class__ is ast.Name))
    if not calls:
        return False
    optioned = False
    for where, passed, call in calls:
        if passed is None:
            if any(k.arg is None for k in call.keywords) or any(a.__class__ is ast.Starred for a in call.args):
                return False  # **kwargs or *args: may carry it
            if not (default.__class__ is ast.Constant and default.value == 0):
                return False
        elif zero_by_default(where, passed):
            optioned = True
        elif not (passed.__class__ is ast.Constant and passed.value == 0):
            return False
    return optioned


__all__ = ["zero_through_callers"]
