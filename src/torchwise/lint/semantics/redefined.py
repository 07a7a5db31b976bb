"""Definitions a later one replaces: ``def load_checkpoint(model, path)`` at the top of a module
and ``def load_checkpoint(config, model, ...)`` further down. Python binds the name to the last
definition once the module has run, so every call - from another function of the module, or from
another module importing it - reaches the second one; the first runs only if module-level code
between the two calls it. Dead code (ruling R5)."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def redefined_later(ctx: Context, top: AST | None) -> bool:
    """``top`` (a module-level def or class) is bound again by a later module-level def or class
    of the same name, and no module-level statement between the two names it (a decorator, a
    default value, a call run at import)."""
    if top is None or top.__class__ not in _DEFS or ctx.parent(top) is not ctx.tree:
        return False
    twice = ctx._cache.get("redefined:names")
    if twice is None:  # the names the module defines more than once at its top level (usually none)
        seen: set[str] = set()
        twice = ctx._cache["redefined:names"] = {s.name for s in ctx.tree.body if s.__class__ in _DEFS
                                                 and (s.name in seen or seen.add(s.name))}
    if top.name not in twice:
        return False
    body = ctx.tree.body
    name = top.name
    start = body.index(top)
    for stmt in body[start + 1:]:
        if stmt.__class__ in _DEFS and stmt.name == name:
            return True
        parts = [*stmt.decorator_list, *getattr(stmt, "bases", ()), *_defaults(stmt)] if stmt.__class__ in _DEFS else [stmt]
        if any(n.__class__ is ast.Name and n.id == name for p in parts for n in ast.walk(p)):
            return False
        if stmt.__class__ is ast.ClassDef and any(n.__class__ is ast.Name and n.id == name for s in stmt.body
                                                   if s.__class__ not in _DEFS for n in ast.walk(s)):
            return False  # a class body runs at import
    return False


def _defaults(stmt: AST) -> list[AST]:
    args = getattr(stmt, "args", None)
    return [*args.defaults, *(d for d in args.kw_defaults if d is not None)] if args is not None else []
