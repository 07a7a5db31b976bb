"""Arrays an object keeps on ``self`` and code a model runs every step (TW206).

``self.frames = np.zeros((k, h, w))`` in ``__init__`` (every store of the attribute in its class an
array): ``torch.tensor(self.frames[:n])`` in a method copies an array. And the ``forward`` of an
``nn.Module`` runs every step: ``torch.tensor(np.zeros(...), dtype=torch.float32)`` there builds an
array and copies it on every call."""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Context
from torchwise.lint.semantics.deadcode import dead_code
from torchwise.lint.semantics.projecthelpers import module_class


def per_forward(ctx: Context, node: AST) -> bool:
    """``node`` is in a ``forward``-named method of an ``nn.Module`` class that is not dead code."""
    func = ctx.function_of(node)
    if func is None or func.__class__ is ast.Lambda or "forward" not in func.name.lower():
        return False
    klass = ctx.parent(func)
    return klass.__class__ is ast.ClassDef and module_class(ctx, klass) and not dead_code(ctx, func)


def self_array(ctx: Context, attr: ast.Attribute, is_array: Callable[[AST, AST], bool], kind: str = "") -> bool:
    """``self.<name>`` in a method, where the class stores the attribute at least once and every
    store of it (``self.<name> = value`` in any method) is an array by ``is_array(value, store)``;
    ``kind`` names the test (and its depth) in the cache key, so two tests never share an answer."""
    if attr.value.__class__ is not ast.Name or attr.value.id != "self":
        return False
    klass = ctx.class_of(attr)
    if klass is None:
        return False
    key = ("sem:self-array", id(klass), attr.attr, kind)
    found = ctx._cache.get(key)
    if found is None:
        ctx._cache[key] = False  # a store whose value reads the attribute itself: no loop
        stores = _stores(ctx, klass).get(attr.attr, [])
        found = ctx._cache[key] = bool(stores) and all(is_array(value, stmt) for value, stmt in stores)
    return found


def _stores(ctx: Context, klass: ast.ClassDef) -> dict[str, list[tuple[AST, AST]]]:
    """``{attribute: [(value, statement)]}`` for every ``self.x = value`` of the class (a tuple
    unpacked into ``self.x, self.y = ...`` stores an unknown value: ``None``)."""
    key = ("sem:self-stores", id(klass))
    found = ctx._cache.get(key)
    if found is not None:
        return found
    found = {}
    for node in ast.walk(klass):
        if node.__class__ in (ast.Assign, ast.AnnAssign, ast.AugAssign):
            targets = node.targets if node.__class__ is ast.Assign else [node.target]
            for target in targets:
                for t in target.elts if target.__class__ in (ast.Tuple, ast.List) else [target]:
                    if t.__class__ is ast.Attribute and t.value.__class__ is ast.Name and t.value.id == "self":
                        whole = t is target and node.__class__ is not ast.AugAssign
                        found.setdefault(t.attr, []).append((node.value if whole else None, node))
    ctx._cache[key] = found
    return found
