"""Loader-building helpers that forward their own arguments (for TW202/TW203/TW406): a helper's
``*args``/``**kwargs`` handed on to the DataLoader it builds, judged by what the helper's callers
(in this file and in the modules of the project that import it) pass; and the loader class taken
as a parameter (``def loader(dataset, *args, klass=DataLoader, **kwargs): return klass(dataset,
*args, **kwargs)``), whose calls build DataLoaders when no caller passes another class."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.values import local_function

DATALOADER = "torch.utils.data.DataLoader"
_DEFAULT_LOADER = lazy_compile(r"=[ \t]*(?:[\w.]+\.)?DataLoader\b[ \t]*[,)]")  # klass=DataLoader in a signature
_CHANGES = frozenset({"update", "setdefault", "__setitem__"})


def _callers(ctx: Context, func: AST) -> list[tuple[Context, ast.Call]] | None:
    """Every call of ``func`` in this file and, for a module-level function, in the modules that
    import it; None when there is none (the helper's users are not in view)."""
    key = ("sem:helper-callers", id(func))
    if key in ctx._cache:
        return ctx._cache[key]
    found = [(ctx, c) for c in ctx.calls_named(func.name) if local_function(ctx, c) is func and ctx.function_of(c) is not func]
    if ctx.parent(func) is ctx.tree and ctx.project.files:
        found += list(project_calls(ctx, func.name))
    ctx._cache[key] = found or None
    return ctx._cache[key]


def _forwarded(ctx: Context, func: AST, call: ast.Call) -> bool:
    """Every ``*``/``**`` of ``call`` is ``func``'s own ``*args``/``**kwargs``, never changed in it."""
    star = func.args.vararg.arg if func.args.vararg else None
    kw = func.args.kwarg.arg if func.args.kwarg else None
    for a in call.args:
        if a.__class__ is ast.Starred and not (a.value.__class__ is ast.Name and a.value.id == star):
            return False
    for k in call.keywords:
        if k.arg is None and not (k.value.__class__ is ast.Name and k.value.id == kw):
            return False
    for node in ctx.walk_body(func.body):
        if node.__class__ is ast.Name and node.id in (star, kw) and node.ctx.__class__ is not ast.Load:
            return False  # rebound
        if node.__class__ is ast.Subscript and node.value.__class__ is ast.Name and node.value.id == kw \
                and node.ctx.__class__ is ast.Store:
            return False  # kwargs["pin_memory"] = ...
        if node.__class__ is ast.Attribute and node.value.__class__ is ast.Name and node.value.id == kw and node.attr in _CHANGES:
            return False  # kwargs.update(...)
    return True


def forwarded_key(ctx: Context, call: ast.Call, key: str) -> bool | None:
    """For a loader call whose ``*``/``**`` are its helper's own ``*args``/``**kwargs``
    (``def get_loader(ds, bs, **kwargs): return DataLoader(ds, bs, **kwargs)``): True when some
    caller of the helper passes ``key`` (by keyword), False when none does - every caller is in
    view, passes no ``*``/``**`` of its own and no positional argument beyond the helper's named
    ones. None when it cannot be told."""
    func = ctx.function_of(call)
    if func is None or func.__class__ is ast.Lambda or not _forwarded(ctx, func, call):
        return None
    callers = _callers(ctx, func)
    if not callers:
        return None
    named = len(func.args.posonlyargs) + len(func.args.args)
    method = ctx.parent(func).__class__ is ast.ClassDef and [a.arg for a in func.args.args[:1]] in (["self"], ["cls"])
    for _, c in callers:
        if any(a.__class__ is ast.Starred for a in c.args) or any(k.arg is None for k in c.keywords):
            return None
        if any(k.arg == key for k in c.keywords):
            return True
        if len(c.args) + (1 if method and c.func.__class__ is ast.Attribute else 0) > named:
            return None  # extra positional arguments land in *args
    return False


def loader_class_calls(ctx: Context) -> list[ast.Call]:
    """Calls of a parameter whose default is the DataLoader class (``klass(dataset, *args,
    **kwargs)`` in ``def loader(dataset, *args, klass=DataLoader, **kwargs)``) when no caller of
    the helper passes another class for it."""
    key = "sem:loader-class-calls"
    found = ctx._cache.get(key)
    if found is not None:
        return found
    found = []
    if "DataLoader" in ctx.source and _DEFAULT_LOADER.search(ctx.source):
        for func in [*ctx.nodes.get(ast.FunctionDef, ()), *ctx.nodes.get(ast.AsyncFunctionDef, ())]:
            for name in _loader_class_params(ctx, func):
                callers = _callers(ctx, func)
                if callers and any(k.arg == name for _, c in callers for k in c.keywords):
                    continue  # some caller hands in its own class
                found += [n for n in ctx.walk_body(func.body) if n.__class__ is ast.Call
                          and n.func.__class__ is ast.Name and n.func.id == name]
    ctx._cache[key] = found
    return found


def _loader_class_params(ctx: Context, func: AST) -> list[str]:
    args = func.args
    pairs = list(zip(args.args[len(args.args) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return [a.arg for a, d in pairs if ctx.qualname(d) == DATALOADER]


def is_loader_call(ctx: Context, call: AST) -> bool:
    """A DataLoader built by ``call``: ``DataLoader(...)``, or a loader-class parameter's call."""
    return call.__class__ is ast.Call and (ctx.qualname(call.func) == DATALOADER or call in loader_class_calls(ctx))
