"""``forward`` taken off a module as a value and called later (TW103): ``forward_func =
self._overlap_crop_forward if self.use_chop else self.model.forward`` then ``SR = forward_func(x)``,
or ``forward_function = self.model.forward`` handed to a self-ensemble helper
(``self.forward_x8(x, forward_function=forward_function)``), as super-resolution solvers do: every
call through the name skips the module's hooks just as ``self.model.forward(x)`` would.

Only a bound method assigned to a plain name (either branch of a conditional) that the same function
then calls or hands to a call; not where the file assigns some ``X.forward = ...`` (a wrapper
patching the method keeps the original to call it on purpose)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import Context


def bound_forwards(ctx: Context) -> Iterator[ast.Attribute]:
    """Each ``<receiver>.forward`` taken as a value and run through a name (module doc)."""
    if ".forward\n" not in ctx.source and ".forward " not in ctx.source and ".forward)" not in ctx.source and ".forward," not in ctx.source:
        return
    attrs = [n for n in ctx.nodes.get(ast.Attribute, ()) if n.attr == "forward"]
    if any(n.ctx.__class__ is ast.Store for n in attrs):
        return  # `module.forward = patched`: the original is kept on purpose
    for node in attrs:
        holder = ctx.parent(node)
        if holder.__class__ is ast.IfExp and node is not holder.test:
            holder = ctx.parent(holder)
        if holder.__class__ is not ast.Assign or len(holder.targets) != 1 or holder.targets[0].__class__ is not ast.Name:
            continue
        name = holder.targets[0].id
        scope = ctx.scope_of(holder)
        if any(ctx.scope_of(c) is scope and (c.lineno, c.col_offset) > (holder.lineno, holder.col_offset)
               and _runs(c, name) for c in ctx.nodes.get(ast.Call, ())):
            yield node


def _runs(call: ast.Call, name: str) -> bool:
    """``name(...)``, or ``helper(x, name)`` / ``helper(x, forward_function=name)``."""
    if call.func.__class__ is ast.Name and call.func.id == name:
        return True
    return any(a.__class__ is ast.Name and a.id == name for a in [*call.args, *(k.value for k in call.keywords)])


__all__ = ["bound_forwards"]
