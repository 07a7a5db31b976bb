"""``it.next()`` on an iterator of a DataLoader: the Python-2 alias of the loader iterator classes,
gone since PyTorch 1.13 (AttributeError), for TW501.

Only a receiver that is evidently such an iterator counts: ``iter(X)`` (or ``X.__iter__()``) called
on the spot, or a name / ``self`` attribute bound to one, where ``X`` is a ``DataLoader(...)`` built
in the file or a name that says it is a loader (``train_loader``, ``dset_loaders["source"]``).
Another object's own ``next()`` (a data provider, a prefetcher, a sampler class) is not one; nor is
a "loader" of a project that defines ``next`` methods itself, unless the file builds it with
torch's ``DataLoader``.
"""

from __future__ import annotations

import ast
from ast import AST
from typing import Iterator

from torchwise.lint.engine import Context, last_name

_OWN_NEXT = ("def next(self", "next = __next__")


def loader_iterator_nexts(ctx: Context) -> Iterator[ast.Call]:
    """Each ``recv.next()`` (no arguments) whose receiver is an iterator of a DataLoader."""
    if ".next()" not in ctx.source:
        return
    for call in ctx.calls_named("next"):
        func = call.func
        if func.__class__ is not ast.Attribute or call.args or call.keywords:
            continue
        if _loader_iterator(ctx, func.value, call):
            yield call


def _iter_of_loader(ctx: Context, value: AST | None, use: ast.AST) -> bool:
    """``iter(X)`` / ``X.__iter__()`` with ``X`` a DataLoader."""
    if value.__class__ is not ast.Call:
        return False
    func = value.func
    if func.__class__ is ast.Name and func.id == "iter" and len(value.args) == 1 and not value.keywords:
        return _loader(ctx, value.args[0], use)
    if func.__class__ is ast.Attribute and func.attr == "__iter__" and not value.args:
        return _loader(ctx, func.value, use)
    return False


def _loader_iterator(ctx: Context, recv: ast.AST, use: ast.AST) -> bool:
    if recv.__class__ is ast.Call:
        return _iter_of_loader(ctx, recv, use)
    return any(_iter_of_loader(ctx, v, use) for v in _values(ctx, recv, use))


def _values(ctx: Context, expr: ast.AST, use: ast.AST) -> list[ast.AST]:
    """What a name or ``self.attr`` is bound to (every assignment of it in its scope / class)."""
    if expr.__class__ is ast.Name:
        scope = ctx.scope_of(use)
        chain = ctx.bindings(scope).get(expr.id) or (ctx.bindings(ctx.tree).get(expr.id) if scope is not ctx.tree else None)
        return [b.value for b in chain or () if b.kind == "assign" and b.value is not None]
    if expr.__class__ is ast.Attribute and expr.value.__class__ is ast.Name and expr.value.id == "self":
        cls = ctx.class_of(use)
        return ctx.self_attr_values(cls, expr.attr) if cls is not None else []
    return []


def _torch_loader_call(ctx: Context, value: ast.AST | None) -> bool:
    return value.__class__ is ast.Call and (ctx.qualname(value.func) or "").startswith("torch.utils.data") \
        and last_name(value.func) == "DataLoader"


def _loader(ctx: Context, expr: ast.AST, use: ast.AST) -> bool:
    """``expr`` is a DataLoader: built with torch's ``DataLoader`` here, or named as a loader in a
    project that defines no ``next`` methods of its own."""
    if _torch_loader_call(ctx, expr):
        return True
    values = _values(ctx, expr, use)
    if any(_torch_loader_call(ctx, v) for v in values):
        return True
    named = expr.value if expr.__class__ is ast.Subscript else expr
    name = named.id if named.__class__ is ast.Name else named.attr if named.__class__ is ast.Attribute else ""
    if "loader" not in name.lower():
        return False
    if any(v.__class__ is ast.Call and (ctx.qualname(v.func) or "").startswith("torch.") for v in values):
        return False  # a torch object that is not a DataLoader
    return not _own_next(ctx)


def _own_next(ctx: Context) -> bool:
    """The file or project defines a ``next`` method (a data provider of its own)."""
    key = "iternext:own"
    found = ctx._cache.get(key)
    if found is None:
        texts = [ctx.source] + [t for _, t in ctx.project.files]
        found = ctx._cache[key] = any(n in t for t in texts for n in _OWN_NEXT)
    return found
