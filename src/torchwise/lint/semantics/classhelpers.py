"""Methods that only their own class calls, as a step of another of its methods."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Context


def helper_of_its_class(ctx: Context, func: AST, excluded: Callable[[str], bool]) -> bool:
    """Every call of the method is ``self.name(...)`` in another method of its class whose name
    ``excluded`` does not pick (``def policy_with_noise(...)`` calling
    ``self._sample_exploration_noise(a)``: the helper runs once per call of that method)."""
    klass = ctx.parent(func)
    calls = ctx.calls_named(func.name)
    if not calls or klass.__class__ is not ast.ClassDef:
        return False
    for call in calls:
        caller = ctx.function_of(call)
        if call.func.__class__ is not ast.Attribute or ctx.text(call.func.value) != "self" or caller is None \
                or caller is func or caller.__class__ is ast.Lambda or not ctx.contains(klass, call) or excluded(caller.name):
            return False
    return True
