"""Loader settings (for TW203): a settings dict kept in a config module and named for the loader
(``loader=dict(batch_size=64, num_workers=4, pin_memory=False)``) that another module of the
project splats into a DataLoader (``DataLoader(dataset, **cfg.loader)``); and ``**`` splats that
cannot hold ``pin_memory`` at all (:func:`splat_without_pin`)."""

from __future__ import annotations

import ast
from typing import Iterator

from torchwise.lint.engine import AST, Context, last_name
from torchwise.lint.semantics.callers import parsed_file
from torchwise.lint.semantics.projecthelpers import project_function

DATALOADER = "torch.utils.data.DataLoader"


def _settings_key(ctx: Context, holder: AST) -> str | None:
    """The name a settings dict (``dict(...)`` or ``{...}``) is stored under: the keyword of an
    enclosing call (``loader=dict(...)``), the string key of an enclosing dict literal
    (``{"loader": {...}}``), or the name it is assigned to (``loader = dict(...)``)."""
    parent = ctx.parent(holder)
    if parent.__class__ is ast.keyword:
        return parent.arg
    if parent.__class__ is ast.Dict:
        for key, value in zip(parent.keys, parent.values):
            if value is holder and key.__class__ is ast.Constant and isinstance(key.value, str):
                return key.value
        return None
    if parent.__class__ is ast.Assign and len(parent.targets) == 1:
        return last_name(parent.targets[0])
    return None


def false_pin_settings(ctx: Context) -> Iterator[tuple[AST, str]]:
    """``(the False value, the settings' name)`` for every ``pin_memory=False`` (or
    ``"pin_memory": False``) written in a settings dict of this file that is not itself a
    DataLoader call."""
    for kw in ctx.nodes.get(ast.keyword, ()):
        if kw.arg != "pin_memory" or kw.value.__class__ is not ast.Constant or kw.value.value is not False:
            continue
        holder = ctx.parent(kw)
        if holder.__class__ is ast.Call and holder.func.__class__ is ast.Name and holder.func.id == "dict":
            key = _settings_key(ctx, holder)
            if key:
                yield kw.value, key
    for node in ctx.nodes.get(ast.Dict, ()):
        for key, value in zip(node.keys, node.values):
            if key.__class__ is ast.Constant and key.value == "pin_memory" and value.__class__ is ast.Constant \
                    and value.value is False:
                name = _settings_key(ctx, node)
                if name:
                    yield value, name


def _splats(call: ast.Call, key: str) -> bool:
    """``**cfg.<key>`` or ``**cfg["<key>"]`` among the call's keywords."""
    for kw in call.keywords:
        if kw.arg is None:
            v = kw.value
            if v.__class__ is ast.Attribute and v.attr == key:
                return True
            if v.__class__ is ast.Subscript and v.slice.__class__ is ast.Constant and v.slice.value == key:
                return True
    return False


def splatting_loaders(ctx: Context, key: str) -> list[tuple[Context, ast.Call]]:
    """DataLoader calls of the other modules of the project that splat a setting named ``key``
    (``DataLoader(dataset, **cfg.loader)``), each with its file's context."""
    out = []
    for path, text in ctx.project.files:
        if path == ctx.path or "DataLoader(" not in text or "**" not in text or key not in text:
            continue
        other = parsed_file(ctx.project, path, text)
        if other is not None:
            out += [(other, call) for call in other.calls_to(DATALOADER) if _splats(call, key)]
    return out


def splat_without_pin(ctx: Context, call: ast.Call) -> bool:
    """Every ``**`` splat of the call is a settings lookup that cannot hold ``pin_memory``: a
    config entry (``**self.params['train_args']``, ``**cfg.loader``) in a project whose text never
    names pin_memory, a local dict written out without that key (``args = dict(batch_size=64)``),
    or the result of a project function that returns only such dicts (``loader_kwargs =
    os_dependent_dataloader_kwargs()``, whose ``kwargs = {}`` or ``{"persistent_workers": True}``
    is returned). A function's own ``**kwargs`` (its callers may pass pin_memory) and ``*args``
    stay unknown."""
    if any(a.__class__ is ast.Starred for a in call.args) or "pin_memory" in ctx.source:
        return False  # (a dict of this file could get the key later: args.update(pin_memory=True))
    for kw in call.keywords:
        if kw.arg is not None:
            continue
        value = kw.value
        if value.__class__ in (ast.Subscript, ast.Attribute):
            if ctx.project.pins_memory:
                return False
        elif value.__class__ is ast.Name:
            bound = ctx.resolve(value, call)
            if bound is value or not (_dict_without_pin(bound) or _settings_function(ctx, bound)):
                return False
        else:
            return False
    return True


def _dict_without_pin(node: AST | None) -> bool:
    """``{'batch_size': 64}`` or ``dict(batch_size=64)``: every key written out, none pin_memory."""
    if node.__class__ is ast.Dict:
        return all(k is not None and k.__class__ is ast.Constant and k.value != "pin_memory" for k in node.keys)
    if node.__class__ is ast.Call and node.func.__class__ is ast.Name and node.func.id == "dict" and not node.args:
        return all(kw.arg is not None and kw.arg != "pin_memory" for kw in node.keywords)
    return False


def _settings_function(ctx: Context, call: AST | None) -> bool:
    """A call, without arguments that could carry settings (``**``), of a function of this file or
    of the project module it is imported from whose every ``return`` hands back a dict written
    out without ``pin_memory`` - directly, or a name every assignment of which in the function is
    one and that is never changed in place (``kwargs["pin_memory"] = ...``, ``kwargs.update(...)``)."""
    if call.__class__ is not ast.Call or any(k.arg is None for k in call.keywords) or ctx.project.pins_memory:
        return False
    found = project_function(ctx, call)
    if found is None:
        return False
    where, func = found
    nodes = list(where.walk_body(func.body))
    returns = [n.value for n in nodes if n.__class__ is ast.Return]
    if not returns:
        return False
    for value in returns:
        if value.__class__ is ast.Name:
            changed = any(n.__class__ in (ast.Subscript, ast.Attribute) and n.value.__class__ is ast.Name
                          and n.value.id == value.id and (n.ctx.__class__ is ast.Store or n.__class__ is ast.Attribute)
                          for n in nodes)
            made = [n.value for n in nodes if n.__class__ is ast.Assign and any(
                t.__class__ is ast.Name and t.id == value.id for t in n.targets)]
            if changed or not made or not all(_dict_without_pin(m) for m in made):
                return False
        elif not _dict_without_pin(value):
            return False
    return True


def splatted_false(ctx: Context, call: ast.Call) -> AST | None:
    """The ``False`` of a settings dict of this file that the call splats and that turns pinning
    off (``kwargs = {'pin_memory': False, 'num_workers': 4}``, then ``DataLoader(ds, **kwargs)``);
    None when no splat is such a dict, or the dict may change in place (``kwargs.update(...)``,
    ``kwargs['pin_memory'] = ...``)."""
    for kw in call.keywords:
        if kw.arg is not None or kw.value.__class__ is not ast.Name:
            continue
        b = ctx.binding_at(kw.value.id, call)
        if b is None or b.kind != "assign" or ctx.enclosing_ifs(b.node) or not _only_binding(ctx, kw.value.id, b.node):
            continue  # a parameter, a dict chosen by a condition, or one of several
        bound = b.value
        value = None
        if bound.__class__ is ast.Dict:
            value = next((v for k, v in zip(bound.keys, bound.values) if k.__class__ is ast.Constant and k.value == "pin_memory"), None)
        elif bound.__class__ is ast.Call and bound.func.__class__ is ast.Name and bound.func.id == "dict":
            value = next((k.value for k in bound.keywords if k.arg == "pin_memory"), None)
        if value.__class__ is not ast.Constant or value.value is not False:
            continue
        name = kw.value.id
        if f"{name}.update(" in ctx.source or f"{name}.setdefault(" in ctx.source or any(
                n.value.__class__ is ast.Name and n.value.id == name and n.ctx.__class__ is ast.Store
                for n in ctx.nodes.get(ast.Subscript, ())):
            continue
        return value
    return None


def _only_binding(ctx: Context, name: str, node: AST) -> bool:
    """``name`` is bound once in the scope of ``node`` (no second assignment, parameter or loop)."""
    scope = ctx.scope_of(node)
    stores = [n for n in ctx.nodes.get(ast.Name, ()) if n.id == name and n.ctx.__class__ is not ast.Load
              and ctx.scope_of(n) is scope]
    params = scope.args.args + scope.args.kwonlyargs if scope.__class__ in (ast.FunctionDef, ast.AsyncFunctionDef) else []
    return len(stores) == 1 and not any(a.arg == name for a in params)
