"""Tests that read a name every run binds to the same constant (for :mod:`.unrunbranches`).

A tutorial or script switches blocks on and off by hand::

    flag = 0            # flag = 1
    if flag:            # never runs
        ...
    flag = 1
    if flag:            # runs
        ...

    ngpu = 0                                    # 0 for CPU mode
    IS_PARALLEL = True if ngpu > 1 else False
    if IS_PARALLEL and torch.cuda.device_count() > 1:   # never runs
        net = nn.DataParallel(net)

:func:`folded_test` gives the value of such a test. A name's value is the one of the binding that
reaches the test on every path: the last binding before it in the same scope, a plain ``name =
expr`` whose statement sits in a statement list that also holds the test (not in a branch of its
own), with no other binding of the name inside a loop around the test, and no ``global name``
in the file. A name a function reads from the module must be bound once in the module. Folded:
constants, ``not``, ``and``/``or``, one comparison of numbers or strings, ``a if t else b``.
"""

from __future__ import annotations

import ast
import re

from torchwise.lint.engine import AST, Context

UNKNOWN = object()
_STMT_LISTS = ("body", "orelse", "finalbody")
_CMP = {
    ast.Eq: lambda a, b: a == b, ast.NotEq: lambda a, b: a != b, ast.Lt: lambda a, b: a < b,
    ast.LtE: lambda a, b: a <= b, ast.Gt: lambda a, b: a > b, ast.GtE: lambda a, b: a >= b,
}


def folded_test(ctx: Context, test: AST) -> object:
    """The truth value (True/False) of ``test`` on every run, or :data:`UNKNOWN`."""
    value = fold(ctx, test, 3, truth=True)
    return UNKNOWN if value is UNKNOWN else bool(value)


def fold(ctx: Context, expr: AST, depth: int, truth: bool = False) -> object:
    """The value of ``expr`` on every run, or :data:`UNKNOWN`; with ``truth``, only its truth value
    counts (``x and False`` is false whatever ``x`` is, though its value is not known)."""
    cls = expr.__class__
    if cls is ast.Constant:
        return expr.value if expr.value is None or isinstance(expr.value, (bool, int, float, str)) else UNKNOWN
    if cls is ast.Name:
        return _name_value(ctx, expr, depth) if depth > 0 else UNKNOWN
    if cls is ast.UnaryOp and expr.op.__class__ is ast.Not:
        v = fold(ctx, expr.operand, depth, truth=True)
        return UNKNOWN if v is UNKNOWN else not v
    if cls is ast.BoolOp:
        decisive = expr.op.__class__ is ast.Or  # `or` decided by a true operand, `and` by a false one
        values = [fold(ctx, v, depth, truth) for v in expr.values]
        if truth:
            if any(v is not UNKNOWN and bool(v) is decisive for v in values):
                return decisive
            return UNKNOWN if any(v is UNKNOWN for v in values) else (not decisive)
        for v in values:  # the value itself: Python's left-to-right short circuit
            if v is UNKNOWN or bool(v) is decisive:
                return v
        return values[-1]
    if cls is ast.Compare and len(expr.ops) == 1 and expr.ops[0].__class__ in _CMP:
        a, b = fold(ctx, expr.left, depth), fold(ctx, expr.comparators[0], depth)
        if a is UNKNOWN or b is UNKNOWN or a is None or b is None or isinstance(a, str) != isinstance(b, str):
            return UNKNOWN
        return _CMP[expr.ops[0].__class__](a, b)
    if cls is ast.IfExp:
        t = fold(ctx, expr.test, depth, truth=True)
        return UNKNOWN if t is UNKNOWN else fold(ctx, expr.body if t else expr.orelse, depth, truth)
    return UNKNOWN


def _name_value(ctx: Context, name: ast.Name, depth: int) -> object:
    if re.search(rf"\b(?:global|nonlocal)\b[^\n]*\b{re.escape(name.id)}\b", ctx.source):
        return UNKNOWN
    scope = ctx.scope_of(name)
    chain = ctx.bindings(scope).get(name.id)
    if not chain:
        if scope is ctx.tree:
            return UNKNOWN
        chain = ctx.bindings(ctx.tree).get(name.id)  # a module constant a function reads
        if not chain or len(chain) != 1 or ctx.scope_of(scope) is not ctx.tree:
            return UNKNOWN
        b = chain[0]
        if b.kind != "assign" or b.index != -1 or not _plain(b.node, name.id) or ctx.parent(b.node) is not ctx.tree:
            return UNKNOWN
        return fold(ctx, b.value, depth - 1)
    pos = (name.lineno, name.col_offset)
    before = [b for b in chain if b.pos < pos]
    if not before:
        return UNKNOWN
    b = before[-1]
    if b.kind != "assign" or b.index != -1 or not _plain(b.node, name.id) or not _dominates(ctx, b.node, name):
        return UNKNOWN
    for loop in ctx.enclosing_loops(name):
        first, last = loop.lineno, loop.end_lineno or loop.lineno
        if any(other is not b and first <= other.pos[0] <= last for other in chain):
            return UNKNOWN  # rebound in a loop around the test: another pass may see that value
    return fold(ctx, b.value, depth - 1)


def _plain(stmt: AST, name: str) -> bool:
    """``name = expr`` (one target, the name itself)."""
    return stmt.__class__ is ast.Assign and len(stmt.targets) == 1 and stmt.targets[0].__class__ is ast.Name \
        and stmt.targets[0].id == name


def _dominates(ctx: Context, stmt: AST, use: AST) -> bool:
    """``stmt`` sits in a statement list that also holds ``use`` or a statement around it."""
    parent = ctx.parent(stmt)
    if parent is None or parent.__class__ is ast.Try or getattr(parent, "handlers", None):
        return False
    body = next((getattr(parent, f) for f in _STMT_LISTS if stmt in getattr(parent, f, ())), None)
    if body is None:
        return False
    ids = {id(s) for s in body}
    node = use
    while node is not None and node is not parent:
        if id(node) in ids:
            return True
        node = ctx.parent(node)
    return False
