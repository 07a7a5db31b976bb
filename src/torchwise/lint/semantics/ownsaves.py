"""Loads that read back what the same run saved a moment before through a save helper of the
file (TW402): the script's ``save_checkpoint(False)`` in its training loop writes
``checkpoint_path``, and after the loop ``torch.load(checkpoint_path)`` restores the best model;
an ensemble's ``to_file(path)`` / ``from_file(path)`` pair, where every call of ``from_file``
follows a ``to_file`` of the same path. The same process restores onto the device that saved
it: no ``map_location`` is needed."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, argument, last_name
from torchwise.lint.semantics.values import functions_by_name


def _save_targets(ctx: Context, func: AST) -> list[ast.AST]:
    """The path arguments of the ``torch.save`` calls in ``func``'s own body."""
    return [t for c in ctx.calls_to("torch.save") if ctx.function_of(c) is func
            for t in [argument(c, "f", 1)] if t is not None]


def _param_argument(func: AST, call: ast.Call, name: str) -> ast.AST | None:
    params = [a.arg for a in [*func.args.posonlyargs, *func.args.args]]
    if name not in params:
        return None
    index = params.index(name) - (1 if params and params[0] in ("self", "cls") else 0)
    return argument(call, name, index)


def _saves_path(ctx: Context, call: ast.Call, text: str) -> bool:
    """``call`` writes the path whose source text is ``text``: ``torch.save(obj, text)``, or a
    call of a function of this file (one definition) that saves to that global name or to the
    parameter this call fills with ``text``."""
    if ctx.qualname(call.func) == "torch.save":
        target = argument(call, "f", 1)
        return target is not None and ctx.text(target) == text
    defs = functions_by_name(ctx).get(last_name(call.func) or "")
    if not defs or len(defs) != 1:
        return False
    for target in _save_targets(ctx, defs[0]):
        if target.__class__ is ast.Name:
            value = _param_argument(defs[0], call, target.id)
            if value is not None and ctx.text(value) == text or value is None and target.id == text:
                return True
        elif ctx.text(target) == text:
            return True
    return False


def _savers(ctx: Context) -> list[ast.Call]:
    """``torch.save`` calls and calls of the file's functions that call ``torch.save`` (once per file)."""
    found = ctx._cache.get("ownsaves:savers")
    if found is None:
        saves = ctx.calls_to("torch.save")
        names = {f.name for f in map(ctx.function_of, saves) if f is not None}
        found = ctx._cache["ownsaves:savers"] = saves + [c for c in ctx.calls_named(*names) if c not in saves] if names else saves
    return found


def _saved_before(ctx: Context, node: ast.AST, text: str) -> bool:
    scope = ctx.scope_of(node)
    return any(ctx.scope_of(c) is scope and (c.lineno, c.col_offset) < (node.lineno, node.col_offset)
               and _saves_path(ctx, c, text) for c in _savers(ctx))


def reloads_own_save(ctx: Context, load: ast.Call) -> bool:
    """The load reads a path that the same scope saved earlier through a save helper of the file,
    or the load helper's every call (in this file; no other file names it) passes a path saved
    earlier in the caller's scope (see the module doc)."""
    path = argument(load, "f", 0)
    if path is None or "save" not in ctx.source:
        return False
    if _saved_before(ctx, load, ctx.text(path)):
        return True
    func = ctx.function_of(load)
    if func is None or func.__class__ is ast.Lambda or path.__class__ is not ast.Name:
        return False
    calls = [c for c in ctx.calls_named(func.name) if ctx.function_of(c) is not func]
    if not calls or any(p != ctx.path and f"{func.name}(" in t for p, t in ctx.project.files):
        return False
    for call in calls:
        value = _param_argument(func, call, path.id)
        if value is None or not _saved_before(ctx, call, ctx.text(value)):
            return False
    return True


__all__ = ["reloads_own_save"]
