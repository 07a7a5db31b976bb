"""Where a ``pin_memory`` value comes from when it is handed down: a parameter of the function
that builds the loaders (``def get_loaders(..., pin_memory)``, ``DataLoader(...,
pin_memory=pin_memory)``) whose every caller passes a command-line option that is off unless the
user sets it (``get_loaders(..., pin_memory=args.pin_memory)`` with ``parser.add_argument(
'--pin-memory', default=False)``), also one level further down. On the default path such a loader
is not pinned: TW203 reports it at the loader, and TW204 does not call its batches pinned."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import caller_arguments
from torchwise.lint.semantics.optionpins import option_off
from torchwise.lint.semantics.pinlookups import lookup_off


def handed_option_off(ctx: Context, pin: AST | None, use: AST, depth: int = 2) -> AST | None:
    """The off-by-default option (``args.pin_memory``) that ``pin`` - written at ``use`` - takes
    its value from: directly (:func:`option_off`), or through a parameter of the enclosing
    function (a module-level function or a method of the file) whose every caller hands one in
    (or ``False``). None when any caller passes something else or leaves it out, or there is none."""
    if pin is None:
        return None
    found = option_off(ctx, pin, use) or lookup_off(ctx, pin)
    if found is not None or pin.__class__ is not ast.Name or depth <= 0:
        return found
    b = ctx.binding_at(pin.id, use)
    func = ctx.function_of(use)
    if b is None or b.kind != "param" or func is None or func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef):
        return None
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if pin.id not in params:
        return None
    # this file's calls (not the function's own) and every caller in other modules ("every caller")
    handed = list(caller_arguments(ctx, func, pin.id, elsewhere="importers", keep=lambda c: ctx.function_of(c) is not func))
    if not handed or any(value is None for _, value, _ in handed):
        return None  # (a caller that leaves the parameter at its default: not an option)
    # callers that pass False outright (an auxiliary loader unpinned on purpose) agree with the option
    handed = [h for h in handed if h[1].__class__ is not ast.Constant or h[1].value is not False]
    options = [handed_option_off(other, value, call, depth - 1) for other, value, call in handed]
    return options[0] if options and all(o is not None for o in options) else None
