"""Module globals set inside a function: ``global cuda; cuda = torch.device('cuda')`` in
``main()``, then ``x.to(cuda)`` in ``train()``. The use's scope and the module bind nothing (or
only a placeholder, ``cuda = None``), so the def-use queries find no value; the values the
functions that declare the name ``global`` assign to it are what the use sees."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Binding, Context


def global_values(ctx: Context, name: str) -> list[AST]:
    """The values assigned to ``name`` (a plain ``name = value``) in the functions of this file
    that declare it ``global``; empty when none does (cached per file)."""
    table = ctx._cache.get("sem:globalvalues")
    if table is None:
        table = {}
        if "global " in ctx.source:
            for decl in ctx.nodes.get(ast.Global, ()):
                func = ctx.function_of(decl)
                if func is None:
                    continue
                for node in ctx.walk_body(func.body):
                    if node.__class__ is ast.Assign and len(node.targets) == 1 and node.targets[0].__class__ is ast.Name \
                            and node.targets[0].id in decl.names:
                        table.setdefault(node.targets[0].id, []).append(node.value)
        ctx._cache["sem:globalvalues"] = table
    return table.get(name, [])


def every_global(ctx: Context, name: str, test: Callable[[AST], bool]) -> bool:
    """``name`` is assigned under ``global`` in some function, and every such value passes ``test``."""
    found = global_values(ctx, name)
    return bool(found) and all(test(v) for v in found)


def placeholder(ctx: Context, b: Binding) -> bool:
    """``cuda = None`` at the top of a module: a name set for real later, under ``global``."""
    return b.kind == "assign" and b.value.__class__ is ast.Constant and b.value.value is None and ctx.scope_of(b.node) is ctx.tree
