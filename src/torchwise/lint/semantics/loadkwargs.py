"""What a ``**kwargs`` handed to a call can hold, when the code shows every key (for TW401).

Two shapes show them all: a dict the function builds itself (``kw = {}``, then
``kw['map_location'] = 'cpu'``, then ``torch.load(path, **kw)``), and the ``**kwargs`` parameter of a
loading helper whose every caller in the project passes plain keywords
(``def load_state_dict(path, **kwargs): return th.load(f, **kwargs)`` called as
``load_state_dict(p, map_location="cpu")``). Anything else (``kw.update(...)``, a key from a
variable, a caller passing ``**opts``, a helper nobody calls) may carry any key.
"""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.callers import project_calls


def visible_keys(ctx: Context, call: ast.Call) -> frozenset[str] | None:
    """Every keyword ``call`` can receive through its one ``**name`` argument, when the code shows
    them all (plus the keywords written in the call itself); None when it cannot tell."""
    if any(a.__class__ is ast.Starred for a in call.args):
        return None
    stars = [k.value for k in call.keywords if k.arg is None]
    if len(stars) != 1 or stars[0].__class__ is not ast.Name:
        return None
    written = frozenset(k.arg for k in call.keywords if k.arg is not None)
    name = stars[0].id
    b = ctx.binding_at(name, call)
    if b is None:
        return None
    if b.kind == "assign":
        keys = _local_dict_keys(ctx, name, b.value, b.node, stars[0])
    elif b.kind == "param":
        keys = _caller_keys(ctx, name, b.node)
    else:
        keys = None
    return None if keys is None else keys | written


def _literal_keys(value: AST) -> frozenset[str] | None:
    if value.__class__ is ast.Dict:
        if not all(k is not None and k.__class__ is ast.Constant and isinstance(k.value, str) for k in value.keys):
            return None
        return frozenset(k.value for k in value.keys)  # type: ignore[union-attr]
    if value.__class__ is ast.Call and value.func.__class__ is ast.Name and value.func.id == "dict" and not value.args:
        if any(k.arg is None for k in value.keywords):
            return None
        return frozenset(k.arg for k in value.keywords)  # type: ignore[misc]
    return None


def _local_dict_keys(ctx: Context, name: str, value: AST, bound: AST, use: AST) -> frozenset[str] | None:
    """``kw = {}`` ... ``kw['map_location'] = 'cpu'`` ... ``f(**kw)``: every key, when the function
    binds the dict once and only ever stores constant keys into it."""
    keys = _literal_keys(value)
    scope = ctx.scope_of(use)
    if keys is None or len(ctx.bindings(scope).get(name, ())) != 1:
        return None
    found = set(keys)
    for node in ctx.nodes.get(ast.Name, ()):
        if node.id != name or node is use or ctx.scope_of(node) is not scope:
            continue
        parent = ctx.parent(node)
        if parent is bound and node.ctx.__class__ is ast.Store:
            continue
        if parent.__class__ is ast.Subscript and parent.value is node and parent.ctx.__class__ is ast.Store \
                and parent.slice.__class__ is ast.Constant and isinstance(parent.slice.value, str):
            found.add(parent.slice.value)
            continue
        return None  # read, updated, handed on, or stored under a key we cannot read
    return frozenset(found)


def _caller_keys(ctx: Context, name: str, param: AST) -> frozenset[str] | None:
    """The ``**kwargs`` parameter of a module-level function: the keywords its callers pass (in this
    file and in the project's other modules), when there is at least one call and none passes
    ``**something`` or more positional arguments than the function has."""
    func = ctx.parent(ctx.parent(param))
    if func.__class__ not in (ast.FunctionDef, ast.AsyncFunctionDef) or func.args.kwarg is not param \
            or ctx.parent(func) is not ctx.tree or func.args.vararg is not None:
        return None
    calls = [c for c in ctx.calls_named(func.name) if c.func.__class__ is ast.Name]
    calls += [c for _, c in project_calls(ctx, func.name)]
    if not calls:
        return None
    keys: set[str] = set()
    for c in calls:
        if any(k.arg is None for k in c.keywords) or any(a.__class__ is ast.Starred for a in c.args):
            return None
        keys.update(k.arg for k in c.keywords if k.arg is not None)
    return frozenset(keys)
