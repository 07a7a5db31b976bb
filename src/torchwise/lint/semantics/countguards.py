"""Branches that run for the first few passes of their loop only (TW207): ``if epoch == 0:`` in
``for epoch in range(n):``, ``if batch_idx < 5:`` in ``for batch_idx, data in enumerate(loader):``.
The counter is the loop's own index (a ``range`` or ``enumerate`` target of the innermost loop
around the read), compared with a number: equal to it (one pass), or below a small bound (a
handful of passes) - a sample taken at the start, not a read of every step."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context

_SMALL = 20  # `if i < 20`: at most this many passes of the loop
_BELOW = {ast.Lt: 0, ast.LtE: 1}
# `5 > batch_idx`: the same test written the other way round
_SWAPPED = {ast.Gt: ast.Lt, ast.GtE: ast.LtE, ast.Lt: ast.Gt, ast.LtE: ast.GtE}


def first_passes(ctx: Context, if_node: AST, node: AST) -> bool:
    """Is ``if_node`` (whose body holds ``node``) such a test of the index of the innermost loop
    around ``node``?"""
    test = if_node.test
    if test.__class__ is not ast.Compare or len(test.ops) != 1:
        return False
    op, left, right = test.ops[0].__class__, test.left, test.comparators[0]
    if left.__class__ is ast.Constant:  # `0 == epoch`, `5 > batch_idx`
        left, right = right, left
        op = _SWAPPED.get(op, op)
    if left.__class__ is not ast.Name or right.__class__ is not ast.Constant or right.value.__class__ is not int:
        return False
    if op is ast.Eq:
        pass
    elif op in _BELOW:
        if not 0 < right.value + _BELOW[op] <= _SMALL:
            return False
    else:
        return False
    loops = ctx.enclosing_loops(node)
    if not loops or loops[0].__class__ is not ast.For or not ctx.contains(loops[0], if_node):
        return False
    return _index_of(loops[0], left.id)


def _index_of(loop: ast.For, name: str) -> bool:
    """``name`` is the counter ``loop`` binds: ``for name in range(...)`` or the first item of
    ``for name, x in enumerate(...)`` - never rebound in the loop's body."""
    it, target = loop.iter, loop.target
    if it.__class__ is not ast.Call or it.func.__class__ is not ast.Name:
        return False
    if it.func.id == "range":
        bound = target.__class__ is ast.Name and target.id == name
    elif it.func.id == "enumerate":
        first = target.elts[0] if target.__class__ is ast.Tuple and target.elts else None
        bound = first.__class__ is ast.Name and first.id == name
    else:
        return False
    if not bound:
        return False
    return not any(n.__class__ is ast.Name and n.id == name and n.ctx.__class__ is ast.Store
                   for stmt in loop.body for n in ast.walk(stmt))
