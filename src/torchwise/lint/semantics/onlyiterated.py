"""A loader the file only loops over itself (for TW203): stored under one name that is only
iterated here, never handed to anything that could move its batches."""

from __future__ import annotations

import ast

from torchwise.lint.engine import Context, last_name

_WRAPPERS = frozenset({"enumerate", "iter", "next", "len", "tqdm", "zip"})


def only_iterated(ctx: Context, call: ast.Call) -> bool:
    """The name the loader is stored under (``loader = DataLoader(...)``, ``loaders = {x:
    DataLoader(...) for x in splits}``) is only looped over here (``for data in
    loaders[phase]``, through ``enumerate``/``tqdm``/``iter``/``len``), never handed to anything
    else - a function of another module could move its batches."""
    stmt = ctx.statement_of(call)
    names = {t.id for t in getattr(stmt, "targets", ()) if t.__class__ is ast.Name}
    if len(names) != 1 or ctx.parent(call) is not stmt and ctx.parent(ctx.parent(call)) is not stmt:
        return False
    name = names.pop()
    looped = False
    for use in ctx.nodes.get(ast.Name, ()):
        if use.id != name or use.ctx.__class__ is not ast.Load:
            continue
        node = use
        while ctx.parent(node).__class__ is ast.Subscript and ctx.parent(node).value is node:
            node = ctx.parent(node)
        parent = ctx.parent(node)
        while parent.__class__ is ast.Call and node in parent.args and last_name(parent.func) in _WRAPPERS:
            node, parent = parent, ctx.parent(parent)
        if parent.__class__ in (ast.For, ast.AsyncFor) and parent.iter is node:
            looped = True
        elif node is use or parent.__class__ is ast.Call:  # len(loader), next(iter(loader)) are no hand-off
            return False
    return looped
