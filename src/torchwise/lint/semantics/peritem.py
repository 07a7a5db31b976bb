"""Code a data pipeline runs for every item or batch: a function named for producing one
(``__getitem__``, ``collate_fn``, ``next_batch``, ``sample``), a transform's ``__call__``, or a
helper one of them calls - in this file or from another module of the project
(``nx_to_graph_data_obj(context_G, 0)`` in a transform's ``__call__``). Set-up code that builds
the whole dataset once (a ``process()`` looping over every molecule) is not."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context, argument
from torchwise.lint.semantics.callers import project_calls
from torchwise.lint.semantics.deadcode import dead_code
from torchwise.lint.semantics.values import local_function

BATCH_WORDS = ("batch", "getitem", "next", "collate", "sample")


def item_function(func: AST | None) -> bool:
    """A function named for producing a batch or an item, or the ``__call__`` of a class (a
    dataset transform, a collator)."""
    if func is None or func.__class__ is ast.Lambda:
        return False
    name = func.name.lower()
    return name == "__call__" or any(w in name for w in BATCH_WORDS)


def per_item_function(ctx: Context, node: AST) -> AST | None:
    """The function around ``node`` when it runs per item or batch: named so (:func:`item_function`),
    or a helper of the file that such a function calls, or a module-level function that one in
    another module of the project calls - where every such call leaves the branch ``node`` sits in
    open (``if labels:`` on a parameter those calls leave at its ``None`` default is skipped)."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda:
        return None
    if item_function(func):
        return func if _in_use(ctx, func) else None
    key = ("sem:per-item-callers", id(func))
    sites = ctx._cache.get(key)
    if sites is None:
        sites = [(ctx, c) for c in ctx.calls_named(func.name) if local_function(ctx, c) is func
                 and ctx.function_of(c) is not func and item_function(ctx.function_of(c))]
        if ctx.parent(func) is ctx.tree and ctx.project.files:
            sites += [(where, c) for where, c in project_calls(ctx, func.name) if item_function(where.function_of(c))]
        sites = [(where, c) for where, c in sites if _in_use(where, where.function_of(c))]
        ctx._cache[key] = sites
    if not sites:
        return None
    closed = _unset_guards(ctx, func, node)
    if closed and all(all(_left_unset(func, call, p) for p in closed) for _, call in sites):
        return None
    return func


def _in_use(ctx: Context, func: AST) -> bool:
    """The per-item caller runs: not dead code, and for a ``__call__``, its class is built somewhere
    in the project outside a ``__main__`` block (a transform only a module's self-test builds
    transforms nothing in training)."""
    if dead_code(ctx, func):
        return False
    klass = ctx.parent(func)
    if func.name != "__call__" or klass.__class__ is not ast.ClassDef or not ctx.project.files:
        return True
    needle = f"{klass.name}("
    for _, text in ctx.project.files:
        at = text.find(needle)
        main = text.find("__main__")
        while at >= 0:
            line = text[text.rfind("\n", 0, at) + 1:at]
            if not line.lstrip().startswith("class ") and (main < 0 or at < main) and (at == 0 or not (
                    text[at - 1].isalnum() or text[at - 1] == "_")):
                return True
            at = text.find(needle, at + 1)
    return False


def _unset_guards(ctx: Context, func: AST, node: AST) -> list[str]:
    """Parameters with a ``None``/``False`` default that an ``if <param>:`` around ``node`` tests."""
    params = [a.arg for a in func.args.args]
    defaults = dict(zip(params[len(params) - len(func.args.defaults):], func.args.defaults))
    out = []
    for if_node, in_body in ctx.enclosing_ifs(node):
        test = if_node.test
        if in_body and test.__class__ is ast.Name and test.id in defaults:
            default = defaults[test.id]
            if default.__class__ is ast.Constant and not default.value:
                out.append(test.id)
    return out


def _left_unset(func: AST, call: ast.Call, param: str) -> bool:
    params = [a.arg for a in func.args.args]
    shift = 1 if params[:1] in (["self"], ["cls"]) and call.func.__class__ is ast.Attribute else 0
    if any(a.__class__ is ast.Starred for a in call.args) or any(k.arg is None for k in call.keywords):
        return False
    given = argument(call, param, params.index(param) - shift)
    return given is None or given.__class__ is ast.Constant and not given.value
