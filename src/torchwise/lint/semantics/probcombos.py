"""Probabilities that reach a ``log`` through the ways ranking and recommendation losses combine
them (TW105): an element of a tuple they were unpacked from (``pos, neg = probs[:, 0],
probs[:, 1:]``; ``pos.log()``), a ``torch.where`` that fills padding with ones or zeros around
them (``p = torch.where(mask == 1, p, torch.ones_like(p))``), and a weighted average of them
(``(score.sigmoid() * weights.softmax(1)).sum(-1)``: a product of probabilities, summed).

``kind_of`` is the rule's own test, ``(ctx, expr, use, depth) -> "softmax" | "sigmoid" | None``.
A ``where`` whose condition tests the probabilities themselves (``torch.where(p != 1, p, 0)``
before ``log(1 - p)``, ``torch.where(p > 0, p, 1)``) is a guard, not a fill: not followed.
"""

from __future__ import annotations

import ast
from typing import Callable

from torchwise.lint.engine import AST, Context

KindOf = Callable[[Context, AST, AST, int], "str | None"]
_FILLS = frozenset({"ones_like", "zeros_like", "full_like", "ones", "zeros", "full", "tensor"})
_AVERAGES = frozenset({"sum", "mean"})


def unpacked_probability(ctx: Context, name: ast.Name, use: AST, depth: int, kind_of: KindOf) -> str | None:
    """``pos, neg = probs[:, 0], probs[:, 1:]``: the element of the tuple ``name`` was unpacked from."""
    b = ctx.binding_at(name.id, use)
    if b is None or b.kind != "unpack" or b.value.__class__ not in (ast.Tuple, ast.List) or not 0 <= b.index < len(b.value.elts):
        return None
    return kind_of(ctx, b.value.elts[b.index], b.node, depth - 1)


def combined_probability(ctx: Context, expr: AST, use: AST, depth: int, kind_of: KindOf) -> str | None:
    """The kind of probabilities ``expr`` (a call, or a product) combines, else None."""
    if depth <= 0:
        return None
    if expr.__class__ is ast.BinOp and expr.op.__class__ is ast.Mult:
        left = kind_of(ctx, expr.left, use, depth)  # (parts of the expression: no name followed)
        return left if left is not None and kind_of(ctx, expr.right, use, depth) is not None else None
    if expr.__class__ is not ast.Call:
        return None
    func = expr.func
    q = ctx.qualname(func)
    if q is None and func.__class__ is ast.Attribute and func.attr in _AVERAGES:
        inner = func.value
        if inner.__class__ is ast.Name:  # w = p * weights; w.sum(-1)
            b = ctx.binding_at(inner.id, expr)
            inner = b.value if b is not None and b.kind == "assign" else inner
        return combined_probability(ctx, inner, expr, depth, kind_of) if inner.__class__ is ast.BinOp else None
    if q == "torch.where" and len(expr.args) == 3:
        cond, a, b = expr.args
        kinds = [kind_of(ctx, x, expr, depth) if not _fill(ctx, x) else "" for x in (a, b)]
        if None in kinds or not any(kinds):
            return None
        guarded = {ctx.text(x) for x, k in zip((a, b), kinds) if k} & {ctx.text(n) for n in ast.walk(cond) if isinstance(n, (ast.Name, ast.Attribute, ast.Subscript, ast.Call))}
        return None if guarded else next(k for k in kinds if k)  # torch.where(p != 1, p, 0): a guard on p
    return None


def _fill(ctx: Context, expr: AST) -> bool:
    """A constant fill of the padding: ``torch.ones_like(p)``, ``0``, ``1.0``."""
    if expr.__class__ is ast.Constant:
        return isinstance(expr.value, (int, float))
    if expr.__class__ is ast.Call:
        q = ctx.qualname(expr.func) or ""
        return q.startswith("torch.") and q.rsplit(".", 1)[1] in _FILLS
    return False
