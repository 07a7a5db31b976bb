"""Fallbacks for an argument that every call passes: ``if x_mask is None: x_mask = torch.ones(...)``
(or the ``else`` of ``if z is not None:``) in a function whose parameter defaults to None, when
every call of it in the project passes a value for that parameter - ``commons.squeeze(x, x_mask,
n)`` from the one module that uses it, ``self.vae.decode(state, z)`` and ``self.decode(state, z)``
for a VAE's ``decode(self, state, z=None)``. The fallback never runs (ruling R5 of issue 22).

Only where every call can be seen: a module-level function called by its name in its file and in
the modules importing it (a reference that is not a call - a callback - or a star import of the
module says nothing), or a method (not ``forward``/``__call__``, which a module's ``__call__``
reaches) called as ``something.name(...)`` in its file and in the modules importing it, whatever
the receiver (a method of another class with that name must pass the argument too). No call at
all says nothing either (a library function's callers are not in the project).
"""

from __future__ import annotations

import ast
import os

from torchwise.lint.engine import AST, Context, has_star_args
from torchwise.lint.semantics.callers import MAX_CALLER_FILES, imports_module, parsed_file


def fallback_never_taken(ctx: Context, node: AST) -> bool:
    """``node`` lies in the ``P is None`` branch of a parameter ``P=None`` that every call of
    its function passes (see the module doc)."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda or func.decorator_list:
        return False
    for if_node, in_body in ctx.enclosing_ifs(node):
        param = _none_branch(if_node.test, in_body)
        if param is None or not _defaults_to_none(func, param):
            continue
        b = ctx.binding_at(param, if_node)
        if b is not None and b.kind == "param" and ctx.scope_of(if_node) is func and _always_passed(ctx, func, param):
            return True
    return False


def _none_branch(test: AST, in_body: bool) -> str | None:
    """``P`` of ``if P is None:`` (its body) or ``if P is not None:`` (its ``else``)."""
    if test.__class__ is not ast.Compare or len(test.ops) != 1 or test.left.__class__ is not ast.Name:
        return None
    right = test.comparators[0]
    if right.__class__ is not ast.Constant or right.value is not None:
        return None
    op = test.ops[0].__class__
    return test.left.id if (op is ast.Is and in_body) or (op is ast.IsNot and not in_body) else None


def _defaults_to_none(func: AST, param: str) -> bool:
    args = func.args
    positional = [*args.posonlyargs, *args.args]
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return any(a.arg == param and d.__class__ is ast.Constant and d.value is None for a, d in pairs)


def _position(ctx: Context, func: AST, param: str) -> int | None:
    names = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if param not in names:
        return None  # keyword-only
    index = names.index(param)
    method = ctx.parent(func).__class__ is ast.ClassDef and not any(
        getattr(d, "id", None) == "staticmethod" for d in func.decorator_list)
    return index - 1 if method else index


def _passes(call: ast.Call, param: str, index: int | None) -> bool:
    """The call passes a value other than None for ``param``; False when it cannot be seen."""
    if has_star_args(call):
        return False
    for kw in call.keywords:
        if kw.arg == param:
            return not (kw.value.__class__ is ast.Constant and kw.value.value is None)
    if index is not None and len(call.args) > index:
        value = call.args[index]
        return not (value.__class__ is ast.Constant and value.value is None)
    return False


def _always_passed(ctx: Context, func: AST, param: str) -> bool:
    key = ("passedalways", id(func), param)
    found = ctx._cache.get(key)
    if found is None:
        found = ctx._cache[key] = _every_call_passes(ctx, func, param)
    return found


def _every_call_passes(ctx: Context, func: AST, param: str) -> bool:
    owner = ctx.parent(func)
    method = owner.__class__ is ast.ClassDef
    if method and (func.name in ("forward", "__call__") or func.name.startswith("__")):
        return False  # called through the module's __call__ or by Python itself: the calls are not by name
    if not method and owner is not ctx.tree:
        return False  # a nested function: handed around more often than not
    index = _position(ctx, func, param)
    stem = os.path.splitext(os.path.basename(ctx.path))[0]
    contexts = [ctx]
    if ctx.project.files:
        others = [(p, t) for p, t in ctx.project.files if p != ctx.path and func.name in t and imports_module(t, stem)]
        if len(others) > MAX_CALLER_FILES or any(f"{stem} import *" in t for _, t in others):
            return False
        for path, text in others:
            other = parsed_file(ctx.project, path, text)
            if other is None:
                return False
            contexts.append(other)
    calls = 0
    for where in contexts:
        sites = _method_sites(where, func.name) if method else _function_sites(where, func, stem, where is ctx)
        if sites is None:
            return False
        for call in sites:
            if not _passes(call, param, index):
                return False
        calls += len(sites)
    return calls > 0


def _method_sites(where: Context, name: str) -> list[ast.Call] | None:
    """Every ``x.name(...)`` call of the file; None when ``x.name`` is also used other than called
    (a bound method handed on)."""
    sites = []
    for node in where.nodes.get(ast.Attribute, ()):
        if node.attr != name:
            continue
        parent = where.parent(node)
        if parent.__class__ is not ast.Call or parent.func is not node:
            if node.ctx.__class__ is ast.Load:
                return None
            continue
        sites.append(parent)
    return sites


def _function_sites(where: Context, func: AST, stem: str, home: bool) -> list[ast.Call] | None:
    """The calls of the module-level function ``func`` in ``where`` (its own file when ``home``,
    else a module importing it: by its imported name or as ``stem.name``); None when the name is
    also used other than called there."""
    name = func.name
    sites = []
    for node in where.nodes.get(ast.Name, ()):
        if node.id != name or node.ctx.__class__ is not ast.Load:
            continue
        if not home and not _imported_from(where, name, stem):
            continue  # a name of its own in that module
        parent = where.parent(node)
        if parent.__class__ is not ast.Call or parent.func is not node:
            return None
        sites.append(parent)
    if not home:
        for node in where.nodes.get(ast.Attribute, ()):
            if node.attr != name or node.value.__class__ is not ast.Name:
                continue
            target = where.imports.get(node.value.id) or ""
            if node.value.id != stem and target.rsplit(".", 1)[-1] != stem:
                continue  # x.squeeze(1): a method of something else
            parent = where.parent(node)
            if parent.__class__ is not ast.Call or parent.func is not node:
                return None
            sites.append(parent)
    return sites


def _imported_from(where: Context, name: str, stem: str) -> bool:
    parts = (where.imports.get(name) or "").split(".")
    if len(parts) >= 2 and parts[-2] == stem:
        return True
    return any(node.level and (node.module or "").rsplit(".", 1)[-1] == stem and any(
        (a.asname or a.name) == name for a in node.names) for node in where.nodes.get(ast.ImportFrom, ()))
