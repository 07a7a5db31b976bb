"""Draws that run in DataLoader worker processes (TW301).

Each worker of a ``DataLoader`` with ``num_workers > 0`` seeds Python's ``random``, torch and
(since PyTorch 1.9) NumPy from a base seed that the main process draws from torch's generator
when the loader's iterator starts. So where the run seeds torch, the draws of a dataset's
``__getitem__`` and of the transforms it applies (``GaussianBlur.__call__`` drawing
``random.random()``, a masking transform's ``random.sample``) are reproducible in the workers,
whatever the script seeds besides: they are no unseeded use.

The evidence that the project's loaders run workers is textual: a ``num_workers=`` (or a
``'num_workers':`` key of the loader's keyword dict) that is not the literal 0, and no ``--num_workers``/``--workers`` option whose default is 0.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context
from torchwise.lint.engine.lazyre import lazy_compile
from torchwise.lint.semantics.callers import project_calls

_WORKER_METHODS = frozenset({"__getitem__", "__call__", "__getitems__"})
_WORKERS = lazy_compile(r"""num_workers(?:[ \t]*=|["'][ \t]*:)[ \t]*([^,)}\n]+)""")  # num_workers=4, {'num_workers': opt.num_workers}
_NO_WORKERS_OPTION = lazy_compile(r"""["']--?(?:num_)?workers["'][^)]*?default[ \t]*=[ \t]*0\b""", re.S)


def loaders_use_workers(ctx: Context) -> bool:
    """Does some DataLoader of the project (of the file, linted alone) run worker processes?"""
    key = "workerseeds:workers"
    found = ctx.project.answers.get(key) if ctx.project.files else ctx._cache.get(key)
    if found is None:
        texts = [t for _, t in ctx.project.files] if ctx.project.files else [ctx.source]
        values = [m.group(1).strip() for t in texts if "num_workers" in t for m in _WORKERS.finditer(t)]
        found = any(v != "0" for v in values) and not any(_NO_WORKERS_OPTION.search(t) for t in texts if "workers" in t)
        (ctx.project.answers if ctx.project.files else ctx._cache)[key] = found
    return found


def in_worker_code(ctx: Context, node: AST, depth: int = 2) -> bool:
    """``node`` is in a dataset's ``__getitem__`` or a transform's ``__call__`` (a method of a class
    that is no ``nn.Module``): code a DataLoader runs in its workers. Also in a helper only such
    code calls (``depth`` levels): a method of the class named only by its worker methods
    (``ColorJitter.get_params`` called from ``__call__``), or a module-level function every call of
    which, here or in the project's modules that import it, is worker code (``common.add_noise(lr)``
    in a dataset's ``__getitem__``)."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda:
        return False
    klass = ctx.parent(func)
    if func.name in _WORKER_METHODS:
        return klass.__class__ is ast.ClassDef and not any(b.startswith("torch.nn.") for b in ctx.local_class_bases(klass.name))
    if depth <= 0 or func.name.startswith("__"):
        return False
    key = ("workerseeds:helper", id(func), depth)
    found = ctx._cache.get(key)
    if found is None:
        ctx._cache[key] = False  # (recursion: not worker code while it is worked out)
        found = ctx._cache[key] = _only_called_by_workers(ctx, func, klass, depth)
    return found


def _own_call(ctx: Context, call: ast.Call, name: str) -> bool:
    """``self.get_params(...)`` in another class of the file that defines its own ``get_params``
    (each transform of a module has one): a call of that class's method, not of ours."""
    other = ctx.class_of(call)
    func = call.func
    return other is not None and func.__class__ is ast.Attribute and func.value.__class__ is ast.Name \
        and func.value.id in ("self", "cls") and any(
            s.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) and s.name == name for s in other.body)


def _only_called_by_workers(ctx: Context, func: ast.FunctionDef, klass: AST, depth: int) -> bool:
    name = func.name
    calls = [c for c in ctx.calls_named(name) if c is not None]
    if klass.__class__ is ast.ClassDef:  # self.get_params(...) / ColorJitter.get_params(...) in the class
        inside = [c for c in calls if ctx.class_of(c) is klass]
        if ctx.text(klass).count(name) != len(inside) + 1 or any(not _own_call(ctx, c, name) for c in calls if c not in inside):
            return False  # named otherwise too (a reference, another class's call of this one)
        return bool(inside) and all(in_worker_code(ctx, c, depth - 1) for c in inside)
    if klass is not ctx.tree or not ctx.project.files:
        return False
    local = [c for c in calls if c.func.__class__ is ast.Name]
    remote = list(project_calls(ctx, name))
    if len(local) != len(calls) or not local and not remote:
        return False
    return all(in_worker_code(ctx, c, depth - 1) for c in local) and all(in_worker_code(o, c, depth - 1) for o, c in remote)
