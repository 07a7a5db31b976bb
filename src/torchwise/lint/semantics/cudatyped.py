"""Tensors made by a CUDA typed constructor (for TW203): ``torch.cuda.FloatTensor(x)``, also
through a name bound to the class - ``TensorFloat = torch.cuda.FloatTensor if cuda else
torch.FloatTensor`` - so a ``TensorDataset`` of them already holds device tensors."""

from __future__ import annotations

import ast

from torchwise.lint.engine import AST, Context


def cuda_typed(ctx: Context, expr: AST | None, use: AST, depth: int = 3) -> bool:
    """Does ``expr`` hold a tensor built by ``torch.cuda.<T>Tensor(...)`` (directly, through a name
    bound to that class or to a choice between it and the CPU class, or a name bound to such a
    call - also by a tuple assignment ``X, Y = TensorFloat(X), TensorFloat(Y)``)?"""
    if expr is None or depth <= 0:
        return False
    if expr.__class__ is ast.Name:
        b = ctx.binding_at(expr.id, use)
        if b is None or b.value is None:
            return False
        value = b.value
        if b.kind == "unpack":
            if value.__class__ not in (ast.Tuple, ast.List) or not 0 <= b.index < len(value.elts):
                return False
            value = value.elts[b.index]
        elif b.kind != "assign":
            return False
        return cuda_typed(ctx, value, b.node, depth - 1)
    return expr.__class__ is ast.Call and _cuda_class(ctx, expr.func, expr, depth)


def _cuda_class(ctx: Context, func: AST, use: AST, depth: int) -> bool:
    """``torch.cuda.FloatTensor``, or a name bound to it (or to ``torch.cuda.X if cuda else torch.X``)."""
    q = ctx.qualname(func) or ""
    if q.startswith("torch.cuda.") and q.endswith("Tensor"):
        return True
    if func.__class__ is ast.Name and depth > 0:
        b = ctx.binding_at(func.id, use)
        if b is None or b.kind != "assign" or b.value is None:
            return False
        value = b.value
        if value.__class__ is ast.IfExp:
            value = value.body
        return _cuda_class(ctx, value, b.node, depth - 1)
    return False
