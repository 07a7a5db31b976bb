"""A forward pass that bypasses the ``DistributedDataParallel`` wrapper (TW215): the loop runs
the model through its ``.module`` (``raw = model.module if isinstance(model,
DistributedDataParallel) else model`` ... ``raw(x)``, or ``model.module(x)``) and never calls the
wrapper itself. DDP's backward hooks are armed only by the wrapper's forward, so the backward
pass all-reduces nothing and ``no_sync()`` would change nothing."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context


def _unwrapped_of(value: ast.AST) -> str | None:
    """``X`` for ``X.module`` or ``X.module if <test> else X`` (either arm), else None."""
    if value.__class__ is ast.IfExp:
        arms = (value.body, value.orelse)
        names = {a.id for a in arms if a.__class__ is ast.Name}
        inner = [_unwrapped_of(a) for a in arms if a.__class__ is ast.Attribute]
        return inner[0] if len(inner) == 1 and inner[0] in names else None
    if value.__class__ is ast.Attribute and value.attr == "module" and value.value.__class__ is ast.Name:
        return value.value.id
    return None


def forward_bypasses_wrapper(ctx: Context, bw: AST, loop_id: int) -> bool:
    """Does the loop around ``bw`` (the one whose id is ``loop_id``) run a forward through a name bound (in its function) to a wrapper's
    ``.module`` - or call ``X.module(...)`` itself - while no wrapper so unwrapped is called
    in the loop?"""
    if ".module" not in ctx.source:
        return False
    loop = next((lp for lp in ctx.enclosing_loops(bw) if id(lp) == loop_id), None)
    if loop is None:
        return False
    scope = ctx.function_of(loop) or ctx.tree
    aliases: dict[str, str] = {}
    for node in ast.walk(scope):
        if node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Name:
            wrapped = _unwrapped_of(node.value)
            if wrapped is not None:
                aliases[node.targets[0].id] = wrapped
    bypass, wrappers_called = False, set()
    for node in ast.walk(loop):
        if node.__class__ is not ast.Call:
            continue
        func = node.func
        if func.__class__ is ast.Name and func.id in aliases:
            bypass = True
        elif _unwrapped_of(func) is not None:
            bypass = True
        elif func.__class__ is ast.Name:
            wrappers_called.add(func.id)
    wrapped = set(aliases.values()) | {n.value.id for n in ast.walk(loop) if n.__class__ is ast.Attribute
                                       and n.attr == "module" and n.value.__class__ is ast.Name}
    return bypass and not wrapped & wrappers_called
